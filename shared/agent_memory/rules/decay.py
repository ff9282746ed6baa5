"""Read-time importance (docs/memory-care.md, "Decay").

Importance is never rewritten as a fact ages: a reader weighs the stored importance by

    factor = 0.5 ** (age_days / half_life_days) * (1 + boost * reinforced), capped at 1

where ``age_days`` counts from the last time the value was stated (``lastSeenAt``, else
``validFrom``, else ``createdAt``) and ``reinforced`` is how many times it was stated again.
The same fact read twice at the same instant weighs the same, so decay is idempotent.
"""

from __future__ import annotations

from datetime import datetime

SECONDS_PER_DAY = 86_400.0


def decay_factor(age_days: float, reinforced: int, *, half_life_days: float, boost: float) -> float:
    if half_life_days <= 0:
        return 1.0
    factor = 0.5 ** (max(0.0, age_days) / half_life_days) * (1.0 + boost * max(0, reinforced))
    return min(1.0, factor)


def age_days(last_stated: datetime, now: datetime) -> float:
    return max(0.0, (now - last_stated).total_seconds() / SECONDS_PER_DAY)


def effective_importance(importance: float, age: float, reinforced: int, *, half_life_days: float,
                         boost: float) -> float:
    return round(importance * decay_factor(age, reinforced, half_life_days=half_life_days, boost=boost), 4)

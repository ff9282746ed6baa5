"""Which search hits are still current, read from the record store.

An OpenSearch index shows a write only after its next refresh (on Serverless, seconds, with
no refresh API and no external versions), so for a while it can hold an older copy of a unit
next to, or instead of, the current one: a superseded fact still open-ended, a turn the
thread's reader list no longer admits, a unit already forgotten. Filters run inside the
search on whatever copy is visible, so the only sound check is against the source of truth:
a hit is live when the record it projects still exists, still projects to that unit, and has
exactly the hit's revision (the record's version). One consistent batched read per search.

Units without a record key (indexed before units carried one) cannot be checked and count as
live; ``agent-memory reindex`` stamps them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from agent_memory.ports import Record, RecordStore, SearchUnit
from agent_memory.services.operations.projection import change_for


class StoreRevisions:
    """``LiveRevisions`` over a record store (consistent ``batch_get``)."""

    def __init__(self, store: RecordStore, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self._clock = clock

    def live(self, units: Sequence[SearchUnit]) -> list[bool]:
        keys = list(dict.fromkeys(_key(u) for u in units if u.record_key))
        records: dict[tuple[str, str], Record] = {}
        if keys:
            records = {(r.pk, r.sk): r for r in self.store.batch_get(keys)}
        now = self._clock()
        current: dict[tuple[str, str], set[tuple[str, str]]] = {}
        verdicts = []
        for unit in units:
            if not unit.record_key:
                verdicts.append(True)
                continue
            key = _key(unit)
            record = records.get(key)
            expired = record is not None and record.expires_at is not None and record.expires_at <= now
            if record is None or expired or record.version != unit.revision:
                verdicts.append(False)
                continue
            if key not in current:  # the units the record projects to now (deleted/inactive: none)
                current[key] = {(u.context_id, u.id) for u in change_for(record, None).upserts}
            verdicts.append((unit.context_id, unit.id) in current[key])
        return verdicts


def _key(unit: SearchUnit) -> tuple[str, str]:
    pk, sk = unit.record_key  # type: ignore[misc]
    return pk, sk

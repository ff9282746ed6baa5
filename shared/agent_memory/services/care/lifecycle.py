"""``POST /lifecycle/decay`` and ``POST /lifecycle/expire`` (docs/memory-care.md).

**Decay.** Importance is a read-time factor (``rules/decay.py``: a half-life of
``limits.decay_half_life_days`` since the value was last stated, plus
``limits.decay_reinforcement_boost`` per reinforcement), so nothing is rewritten in place;
no adjustment is stored either, so decay applies none and answers, as ``affected``, how many
current facts the caller can read now weigh less than their stored importance. Idempotent.

**Expire.** Removes, as forget does (soft delete, text emptied, search units, cached
responses and stored idempotency replies that derive from them, and entities left with
nothing), the rows the caller can write that are past an explicit end: an attribute or
relation whose event-time ``validUntil`` a statement gave (not a supersession's: superseded
rows and their chains stay, as the spec says, until forget purges them) and lies in the past;
and, with ``limits.retention_days`` set, turns and actions older than it. ``dryRun`` answers
the ids and removes nothing. A second run finds nothing: expired rows are gone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import deadline, timeutil
from agent_memory.kernel import storage_keys as keys
from agent_memory.ports import Record, RecordStore
from agent_memory.rules.decay import age_days, effective_importance
from agent_memory.services import paging
from agent_memory.services.care.common import current_rows, iter_turns, rows_of, writable
from agent_memory.services.facts.readable import Readable


@dataclass
class LifecycleResult:
    affected: int
    ids: list[str] = field(default_factory=list)
    dry_run: bool = False


class LifecycleService:
    def __init__(self, store: RecordStore, forget, *, half_life_days: float, boost: float, retention_days: int,
                 scan_cap: int):
        self.store = store
        self.forget = forget
        self.half_life_days = half_life_days
        self.boost = boost
        self.retention_days = retention_days
        self.scan_cap = scan_cap

    # --- decay ----------------------------------------------------------------------------

    def importance_now(self, data: dict, now=None) -> float:
        now = now or timeutil.now()
        stated = data.get("lastSeenAt") or data.get("validFrom") or data.get("createdAt")
        age = age_days(timeutil.parse(stated), now) if stated else 0.0
        return effective_importance(float(data.get("importance", 0.8)), age, int(data.get("reinforced") or 0),
                                    half_life_days=self.half_life_days, boost=self.boost)

    def decay(self, ctx: RequestContext) -> LifecycleResult:
        now = timeutil.now()
        affected = 0
        for kind in ("attribute", "relation"):
            for r in current_rows(self.store, ctx, kind, self.scan_cap):
                if self.importance_now(r.data, now) < round(float(r.data.get("importance", 0.8)), 4):
                    affected += 1
        return LifecycleResult(affected)

    # --- expire ---------------------------------------------------------------------------

    def expired(self, ctx: RequestContext) -> list[Record]:
        now = timeutil.now_iso()
        keep = Readable(self.store, ctx, kinds=["attribute", "relation"])
        out: list[Record] = []
        entities = rows_of(self.store, ctx, keys.entities_pk(ctx), ["entity"], self.scan_cap)
        for entity in entities:
            deadline.check("expiry")
            eid = entity.data["id"]
            for pk in (keys.attrs_pk(ctx, eid), keys.rels_pk(ctx, eid)):
                rows = keep(list(paging.scan(self.store, paging.Source(pk, prefix="a#"), batch=500)))
                out += [r for r in rows if r.data.get("validUntil") and r.data["validUntil"] <= now
                        and not r.data.get("supersededBy")
                        and (r.data.get("source") or {}).get("kind") != "observation"]
        if self.retention_days > 0:
            cutoff = timeutil.iso(timeutil.now() - timedelta(days=self.retention_days))
            out += [t for t in iter_turns(self.store, ctx, self.scan_cap)
                    if (t.data.get("observedAt") or t.data.get("createdAt") or now) < cutoff]
            out += [a for a in rows_of(self.store, ctx, keys.actions_pk(ctx), ["action"], self.scan_cap)
                    if (a.data.get("occurredAt") or a.data.get("createdAt") or now) < cutoff]
        return [r for r in out if writable(ctx, r.data.get("scopes") or [])]

    def expire(self, ctx: RequestContext, dry_run: bool) -> LifecycleResult:
        from agent_memory.services.facts.forget import OrphanedEntities

        rows = self.expired(ctx)
        ids = sorted(r.data.get("id") or r.sk for r in rows)
        if dry_run or not rows:
            return LifecycleResult(len(rows), ids, dry_run)
        orphans = OrphanedEntities(self.forget, ctx).find(rows)
        removed = self.forget.remove(rows, False)
        if orphans:
            removed |= self.forget.remove(orphans, False)
        self.forget.after_removal(ctx, removed)
        return LifecycleResult(len(rows), ids, False)

"""The read filters every read of the memory graph applies, and the typed form of a stored
memory record (its wire shape: ``agent_memory.presenters.facts``).

A record is *readable* when it is not deleted (forgotten or soft-deleted), lies in the
caller's read region, and, for facts and actions, every entity it names still exists (an
entity that was deleted hides the facts about it even if a concurrent write added one
after the delete swept them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent_memory.access import scopes
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.models.facts import Action, Attribute, Entity, Instruction, Relation, Uncertainty
from agent_memory.ports import Record, RecordStore
from agent_memory.services.facts.fact_kinds import BY_KIND


def memory_record(record: Record) -> Entity | Attribute | Relation | Action | Instruction | Uncertainty:
    """The typed form of any memory record, by its ``data["kind"]`` (``fact_kinds``)."""
    kind = BY_KIND.get(record.data.get("kind"))  # type: ignore[arg-type]
    if kind is None:
        raise ValueError(f"not a memory record: {record.data.get('kind')!r}")
    return kind.record_type.from_dict(record.data)


def named_entities(data: dict[str, Any]) -> list[str]:
    kind = BY_KIND.get(data.get("kind"))  # type: ignore[arg-type]
    return kind.entities_in(data) if kind is not None else []


class Readable:
    """The batch filter for one request: drops deleted records, records outside the read
    region, rows of other kinds, and facts about deleted entities (looked up once each)."""

    def __init__(self, store: RecordStore, ctx: RequestContext, kinds: Iterable[str] | None = None):
        self.store = store
        self.ctx = ctx
        self.kinds = set(kinds) if kinds is not None else None
        self._live: dict[str, bool] = {}

    def visible(self, data: dict[str, Any]) -> bool:
        if data.get("deleted"):
            return False
        if self.kinds is not None and data.get("kind") not in self.kinds:
            return False
        region = self.ctx.read_region
        return region is None or scopes.visible(data.get("scopes") or [], list(region))

    def entities_live(self, ids: Iterable[str]) -> dict[str, bool]:
        missing = sorted({i for i in ids if i and i not in self._live})
        pk = keys.entities_pk(self.ctx)
        for start in range(0, len(missing), 100):
            chunk = missing[start:start + 100]
            found = {r.sk: r for r in self.store.batch_get([(pk, keys.entity_sk(i)) for i in chunk])}
            for eid in chunk:
                rec = found.get(keys.entity_sk(eid))
                # A fact whose entity row is missing is kept: only an explicit delete hides.
                self._live[eid] = rec is None or not rec.data.get("deleted")
        return self._live

    def __call__(self, records: list[Record]) -> list[Record]:
        kept = [r for r in records if self.visible(r.data)]
        live = self.entities_live(e for r in kept for e in named_entities(r.data))
        return [r for r in kept if all(live.get(e, True) for e in named_entities(r.data) if e)]

"""Wire shapes of stored memory (camelCase: docs/decisions.md, "Wire case", "State and diffs"), built through
the response models the SDK parses (``agent_memory.models.wire``), and the read filters
every read of the memory graph applies.

A record is *readable* when it is not deleted (forgotten or soft-deleted), lies in the
caller's read region, and, for facts and actions, every entity it names still exists (an
entity that was deleted hides the facts about it even if a concurrent write added one
after the delete swept them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent_memory import keys, scopes
from agent_memory.models import wire
from agent_memory.models.memory import Action, Attribute, Entity, Instruction, Relation, Source, Uncertainty
from agent_memory.ports import Record, RecordStore
from agent_memory.request_context import RequestContext


def source_wire(source: Source) -> dict[str, Any]:
    return _source(source).to_wire()


def _source(source: Source) -> wire.FactSource:
    return wire.FactSource(kind=source.kind, ref=source.ref, session_id=source.session_id)


def entity_wire(e: Entity) -> dict[str, Any]:
    return wire.MemoryEntity(id=e.id, name=e.name, entity_type=e.entity_type, memory_category=e.category,
                             importance=e.importance, created_at=e.created_at,
                             updated_at=e.updated_at or e.created_at).to_wire()


def attribute_wire(a: Attribute) -> dict[str, Any]:
    return wire.MemoryAttribute(id=a.id, entity=a.entity_id, key=a.key, value=a.value, memory_category=a.category,
                                importance=a.importance, valid_from=a.valid_from, valid_until=a.valid_until,
                                supersedes=a.supersedes, superseded_by=a.superseded_by, source=_source(a.source),
                                created_at=a.created_at).to_wire()


def relation_wire(r: Relation) -> dict[str, Any]:
    return wire.MemoryRelation(id=r.id, subject=r.subject, label=r.label, object=r.object,
                               memory_category=r.category, importance=r.importance, valid_from=r.valid_from,
                               valid_until=r.valid_until, supersedes=r.supersedes, superseded_by=r.superseded_by,
                               source=_source(r.source), created_at=r.created_at).to_wire()


def action_wire(a: Action) -> dict[str, Any]:
    return wire.MemoryAction(id=a.id, actor=a.actor, verb=a.verb, object=a.object, occurred_at=a.occurred_at,
                             summary=a.summary, memory_category=a.category, importance=a.importance,
                             source=_source(a.source), created_at=a.created_at).to_wire()


def instruction_wire(i: Instruction, *, full: bool = False) -> dict[str, Any]:
    if full:
        return wire.MemoryInstruction(id=i.id, label=i.label, description=i.description, source=_source(i.source),
                                      created_at=i.created_at).to_wire()
    return wire.StateInstruction(id=i.id, label=i.label, description=i.description).to_wire()


def uncertainty_wire(u: Uncertainty, data: dict[str, Any] | None = None) -> dict[str, Any]:
    data = data or {}
    return wire.MemoryUncertainty(id=u.id, about=u.about, reason=u.reason, entity=u.entity_id, key=u.key,
                                  proposed_value=u.proposed_value, resolved=u.resolved,
                                  resolved_at=data.get("resolvedAt"), accepted_value=data.get("acceptedValue"),
                                  note=data.get("note"), created_at=u.created_at).to_wire()


def render(record: Record) -> dict[str, Any]:
    """The wire shape of any memory record, by its ``data["kind"]``."""
    kind = record.data.get("kind")
    if kind == "entity":
        return entity_wire(Entity.from_dict(record.data))
    if kind == "attribute":
        return attribute_wire(Attribute.from_dict(record.data))
    if kind == "relation":
        return relation_wire(Relation.from_dict(record.data))
    if kind == "action":
        return action_wire(Action.from_dict(record.data))
    if kind == "instruction":
        return instruction_wire(Instruction.from_dict(record.data), full=True)
    if kind == "uncertainty":
        return uncertainty_wire(Uncertainty.from_dict(record.data), record.data)
    raise ValueError(f"not a memory record: {kind!r}")


def named_entities(data: dict[str, Any]) -> list[str]:
    kind = data.get("kind")
    if kind == "attribute":
        return [data.get("entityId", "")]
    if kind == "relation":
        return [data.get("subject", ""), data.get("object", "")]
    if kind == "action":
        return [data["actor"]] if data.get("actor") else []
    return []


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

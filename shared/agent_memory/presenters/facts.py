"""The memory graph on the wire: facts, entities, the paged collections, /state and /profile,
and what a write extracted (``ExtractionResultJson``). Built through the response models the
SDK parses (``agent_memory.models.wire``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

# models.wire_memory, not models.wire: wire's other models, which no function presenting facts
# uses, would be built at every cold start of chat, entities and state.
from agent_memory.models import wire_memory as wire
from agent_memory.models.extraction import ExtractionResult
from agent_memory.models.facts import Action, Attribute, Entity, Instruction, Relation, Source, Uncertainty

if TYPE_CHECKING:
    from agent_memory.services.facts.collections import ResolvedUncertainty
    from agent_memory.services.facts.edits import CorrectedFact
    from agent_memory.services.facts.entities import EntityView
    from agent_memory.services.facts.forget import ForgetOutcome
    from agent_memory.services.facts.inspect import Inspection
    from agent_memory.services.facts.state import ProfileView, StateView
    from agent_memory.services.facts.write import BatchWriteOutcome, WriteOutcome
    from agent_memory.services.paging import Paged


# --- one record ---------------------------------------------------------------------------


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
                                created_at=a.created_at, labels=list(a.labels),
                                scopes=[list(c) for c in a.scopes], retracted=a.retracted).to_wire()


def relation_wire(r: Relation) -> dict[str, Any]:
    return wire.MemoryRelation(id=r.id, subject=r.subject, label=r.label, object=r.object,
                               memory_category=r.category, importance=r.importance, valid_from=r.valid_from,
                               valid_until=r.valid_until, supersedes=r.supersedes, superseded_by=r.superseded_by,
                               source=_source(r.source), created_at=r.created_at, labels=list(r.labels),
                               scopes=[list(c) for c in r.scopes]).to_wire()


def action_wire(a: Action) -> dict[str, Any]:
    return wire.MemoryAction(id=a.id, actor=a.actor, verb=a.verb, object=a.object, occurred_at=a.occurred_at,
                             summary=a.summary, memory_category=a.category, importance=a.importance,
                             source=_source(a.source), created_at=a.created_at).to_wire()


def instruction_wire(i: Instruction, *, full: bool = False) -> dict[str, Any]:
    if full:
        return wire.MemoryInstruction(id=i.id, label=i.label, description=i.description, source=_source(i.source),
                                      created_at=i.created_at).to_wire()
    return wire.StateInstruction(id=i.id, label=i.label, description=i.description).to_wire()


def uncertainty_wire(u: Uncertainty) -> dict[str, Any]:
    return wire.MemoryUncertainty(id=u.id, about=u.about, reason=u.reason, entity=u.entity_id, key=u.key,
                                  proposed_value=u.proposed_value, resolved=u.resolved,
                                  resolved_at=u.resolved_at, accepted_value=u.accepted_value,
                                  note=u.note, created_at=u.created_at).to_wire()


def _full_instruction(i: Instruction) -> dict[str, Any]:
    return instruction_wire(i, full=True)


#: The wire shape of each memory record type (a collection item, a history row).
RECORD_WIRE: dict[type, Callable[[Any], dict[str, Any]]] = {
    Entity: entity_wire, Attribute: attribute_wire, Relation: relation_wire, Action: action_wire,
    Instruction: _full_instruction, Uncertainty: uncertainty_wire,
}


def record_wire(item: Any) -> dict[str, Any]:
    """The wire shape of any memory record (``RECORD_WIRE``, by its type)."""
    return RECORD_WIRE[type(item)](item)


# --- pages, entities, collections ---------------------------------------------------------------


def page(p: Paged, items_key: str = "items", item: Callable[[Any], dict[str, Any]] = record_wire) -> dict[str, Any]:
    """``{items, page: {hasMore, nextCursor, totalSize?}}`` (docs/decisions.md, "Cursors")."""
    body: dict[str, Any] = {"hasMore": p.next_cursor is not None, "nextCursor": p.next_cursor}
    if p.total is not None:
        body["totalSize"] = p.total
    return {items_key: [item(i) for i in p.items], "page": body}


def entity_view(v: EntityView) -> dict[str, Any]:
    return {"entity": entity_wire(v.entity),
            "attributes": [attribute_wire(a) for a in v.attributes],
            "relations": [relation_wire(r) for r in v.relations],
            "asOf": v.as_of,
            "truncated": {"attributes": v.attributes_truncated, "relations": v.relations_truncated}}


def history(rows: Sequence[Attribute]) -> dict[str, Any]:
    return {"history": [attribute_wire(a) for a in rows]}


def resolved_uncertainty(r: ResolvedUncertainty) -> dict[str, Any]:
    return {"uncertainty": uncertainty_wire(r.uncertainty),
            "fact": record_wire(r.fact) if r.fact is not None else None}


# --- /state and /profile ---------------------------------------------------------------------


def state(v: StateView) -> dict[str, Any]:
    out: dict[str, Any] = {c: {"entities": [], "attributes": [], "relations": [], "actions": []}
                           for c in v.categories}
    for table, items, present in (("entities", v.entities, entity_wire), ("attributes", v.attributes, attribute_wire),
                                  ("relations", v.relations, relation_wire), ("actions", v.actions, action_wire)):
        for item in items:
            out[v.category_of(item.category)][table].append(present(item))
    out["instructions"] = [instruction_wire(i) for i in v.instructions]
    out["unknowns"] = [{"about": u.about, "reason": u.reason} for u in v.unknowns]
    out["truncated"] = dict(v.truncated)
    return out


def profile(v: ProfileView) -> dict[str, Any]:
    out: dict[str, Any] = {section: [{"entity": f.entity, "entityType": f.entity_type, "key": f.key,
                                      "value": f.value} for f in facts]
                           for section, facts in v.sections.items()}
    return {**out, "instructions": [instruction_wire(i) for i in v.instructions]}


# --- writes and forget ---------------------------------------------------------------------------


def extraction(result: ExtractionResult | None) -> dict[str, Any] | None:
    return result.to_wire() if result is not None else None


def write(o: WriteOutcome) -> dict[str, Any]:
    return {"mode": o.mode, "sessionId": o.session_id, "turnId": o.turn_id, "extraction": extraction(o.extraction),
            "memoryCategory": o.memory_category}


def write_batch(o: BatchWriteOutcome) -> dict[str, Any]:
    return {"sessionId": o.session_id, "turnIds": list(o.turn_ids),
            "extractions": [extraction(e) for e in o.extractions], "memoryCategory": o.memory_category}


def forget(o: ForgetOutcome, receipt: dict[str, Any] | None = None) -> dict[str, Any]:
    extra = {"receipt": receipt} if receipt is not None else {}
    return {**extra, "deleted": o.deleted,
            "items": [{"id": i.id, "kind": i.kind, "text": i.text, "score": i.score} for i in o.items],
            "entities": [{"id": e.id, "name": e.name} for e in o.entities],
            "derivedFacts": [{"id": d.id, "kind": d.kind, "text": d.text, "sourceId": d.source}
                             for d in o.derived]}


def corrected(c: CorrectedFact) -> dict[str, Any]:
    """``PATCH /{ctx}/attributes/{id}`` (and relations): ``CorrectFactResponse``."""
    return {"fact": record_wire(c.fact), "previous": record_wire(c.previous),
            "corrections": [x.model_dump(by_alias=True, mode="json") for x in c.corrections],
            "turnId": c.turn_id}


# --- GET /inspect ---------------------------------------------------------------------------


def inspection(i: Inspection) -> dict[str, Any]:
    """``Inspection``: discriminated by ``kind``; ``provenance`` groups the history's rows by
    the source that stated them (in the order each source first stated one)."""
    sources: dict[tuple[Any, ...], dict[str, Any]] = {}
    for fact in i.history:
        key = (fact.source.kind, fact.source.ref, fact.source.session_id)
        entry = sources.setdefault(key, {"source": source_wire(fact.source), "factIds": [],
                                         "firstStatedAt": fact.created_at})
        entry["factIds"].append(fact.id)
        if fact.created_at and (not entry["firstStatedAt"] or fact.created_at < entry["firstStatedAt"]):
            entry["firstStatedAt"] = fact.created_at
    return {"kind": i.ref.kind, "ref": i.ref.text(), "view": i.view.wire(),
            "entity": entity_wire(i.entity) if i.entity is not None else None,
            "attributes": [attribute_wire(a) for a in i.attributes],
            "relations": [relation_wire(r) for r in i.relations],
            "history": [record_wire(f) for f in i.history],
            "provenance": sorted(sources.values(), key=lambda e: e["firstStatedAt"] or ""),
            "truncated": i.truncated, "trace": i.trace}

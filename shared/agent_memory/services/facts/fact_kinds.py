"""The fact kinds, declared once: entities, attributes, relations, actions, instructions and
uncertainties (docs/architecture.md, "Adding a seventh fact kind").

Each ``FactKind`` names its stored ``kind`` (also the search unit's kind), its plural
``field`` (the list in an extraction, in a write's ``ExtractionResultJson`` and on the
wire), the id prefix of its records, its stored record type and extracted claim type, the
entities a claim or a stored record names, its projection builder (stored record -> search
units), its forget rule (search unit -> stored record, and its history for purge), its
reconcile step (extracted claims -> new records, or ``slotted``: the slot planner) and its
summary in a write's ``ExtractionResultJson``.

What iterates over ``FACT_KINDS``: reconciliation (``reconcile.reconcile``: plan steps,
entity references, ``ReconcilePlan.created`` and ``to_result``), the projection (``projection.build_units``), forget
(``forget.FORGETTERS``, ``forget.entity_refs``), the read filter and typed reads
(``readable``), the write path's claim splitting (``facts``), and the checks that the
extraction and result models and the wire mapping cover every kind
(tests/facts/test_fact_kinds.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from agent_memory.access.request_context import RequestContext
from agent_memory.access.scopes import Dnf
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel import timeutil
from agent_memory.kernel.ids import new_id
from agent_memory.models.facts import Action, Attribute, Entity, Instruction, Relation, Source, Uncertainty
from agent_memory.ports import Record, RecordStore, SearchUnit
from agent_memory.rules import vocabulary as vocab
from agent_memory.rules.event_time import resolve_event_time
from agent_memory.rules.self_entity import EntityResolver
from agent_memory.rules.vocabulary import normalise_value
from agent_memory.services import paging

if TYPE_CHECKING:
    from agent_memory.models.extraction import (
        ActionSummary,
        AttributeSummary,
        EntitySummary,
        ExtractedAction,
        ExtractedInstruction,
        ExtractedUncertainty,
        InstructionSummary,
        RelationSummary,
        UncertaintySummary,
    )
    from agent_memory.services.conversation.sessions import SessionService

UnitBuilder = Callable[[dict[str, Any], int], list[SearchUnit]]
PlanStep = Callable[[list[Any], "PlanInputs"], list[Any]]
Summariser = Callable[[Any], Any]
StoreKey = Callable[[RequestContext, Any], tuple[str, str]]


# --- forget rules -----------------------------------------------------------------------------


class ForgetSources(Protocol):
    """What a forget rule reads and removes with (``ForgetService`` provides it)."""

    store: RecordStore
    sessions: SessionService

    def remove(self, records: list[Record], purge: bool) -> set[str]: ...


class Forgetter:
    """Finds the stored record behind a search unit, and (for purge) its history.

    ``locate`` returns ``None`` when the record no longer exists (the unit is stale). Records
    are removed generically (``ForgetSources.remove``: ``deleted: true``, or a hard delete on
    purge); a kind whose records need more overrides ``remove``.
    """

    def locate(self, svc: ForgetSources, ctx: RequestContext, unit: SearchUnit) -> Record | None:
        raise NotImplementedError

    def history(self, svc: ForgetSources, ctx: RequestContext, record: Record) -> list[Record]:
        return []

    def remove(self, svc: ForgetSources, ctx: RequestContext, records: list[Record], purge: bool) -> set[str]:
        return svc.remove(records, purge)

    def derived(self, svc: Any, ctx: RequestContext, record: Record) -> list[tuple[Forgetter, Record]]:
        """Records learned from this one that go with it (a chunk's facts); none by default."""
        return []


def live(record: Record | None) -> Record | None:
    return record if record is not None and not record.data.get("deleted") else None


def _slot_records(store: RecordStore, pk: str, key: str) -> list[Record]:
    return [r for r in paging.scan(store, paging.Source(pk, prefix=f"a#{key}#"), batch=500)
            if r.data.get("kind") in ("attribute", "relation")]


def fact_history(store: RecordStore, record: Record) -> list[Record]:
    """The superseded history of one fact row (``services/facts/forget.py``, step 3)."""
    data = record.data
    if data.get("kind") == "attribute":
        fact: Attribute | Relation = Attribute.from_dict(data)
        slot, value, multi = fact.key, fact.value, vocab.cardinality(fact.key) == "multi"
    else:
        fact = Relation.from_dict(data)
        slot, value, multi = fact.label, fact.object, vocab.label_cardinality(fact.label) == "multi"
    rows = _slot_records(store, record.pk, slot)
    by_id = {r.data.get("id"): r for r in rows}
    chosen: dict[str, Record] = {}
    for r in rows:
        same_scope = (r.data.get("scopes") or []) == (data.get("scopes") or [])
        other = r.data.get("value") if r.data.get("kind") == "attribute" else r.data.get("object")
        if same_scope and (not multi or normalise_value(other or "") == normalise_value(value)):
            chosen[r.data["id"]] = r
    todo = [data["id"]]
    while todo:  # plus everything linked to the row, in either direction
        current = by_id.get(todo.pop())
        if current is None:
            continue
        chosen.setdefault(current.data["id"], current)
        for link in (current.data.get("supersedes"), current.data.get("supersededBy")):
            if link and link not in chosen and link in by_id:
                todo.append(link)
                chosen[link] = by_id[link]
    chosen.pop(data["id"], None)
    return list(chosen.values())


class AttributeForgetter(Forgetter):
    def locate(self, svc: ForgetSources, ctx: RequestContext, unit: SearchUnit) -> Record | None:
        entity, key = unit.metadata.get("entity"), unit.metadata.get("key")
        if not entity or not key:
            return None
        return live(svc.store.get(keys.attrs_pk(ctx, entity), keys.fact_sk(key, unit.id)))

    def history(self, svc: ForgetSources, ctx: RequestContext, record: Record) -> list[Record]:
        return fact_history(svc.store, record)


class RelationForgetter(Forgetter):
    def locate(self, svc: ForgetSources, ctx: RequestContext, unit: SearchUnit) -> Record | None:
        subject, label = unit.metadata.get("subject"), unit.metadata.get("label")
        if not subject or not label:
            return None
        return live(svc.store.get(keys.rels_pk(ctx, subject), keys.fact_sk(label, unit.id)))

    def history(self, svc: ForgetSources, ctx: RequestContext, record: Record) -> list[Record]:
        return fact_history(svc.store, record)


class ActionForgetter(Forgetter):
    def locate(self, svc: ForgetSources, ctx: RequestContext, unit: SearchUnit) -> Record | None:
        pk = keys.actions_pk(ctx)
        if unit.occurred_at:
            found = svc.store.get(pk, f"{unit.occurred_at}#{unit.id}")
            if found is not None:
                return live(found)
        # An action without an event time is keyed by its creation time: look it up.
        return live(next((r for r in paging.scan(svc.store, paging.Source(pk), batch=500)
                          if r.data.get("id") == unit.id), None))


class InstructionForgetter(Forgetter):
    def locate(self, svc: ForgetSources, ctx: RequestContext, unit: SearchUnit) -> Record | None:
        return live(svc.store.get(keys.instructions_pk(ctx), unit.id))


# --- projection builders ------------------------------------------------------------------------

# Entity labels. Every unit carries the ids of the entities it is about (a turn: its speaker;
# a fact: its entity, subject and object; an action: its actor) as labels, so retrieval can
# run a leg restricted to one entity *inside* the search (``SearchFilter.labels``) on either
# index, with no index schema change. Entity ids (``entity:<type>/<name>``) cannot collide
# with ordinary labels by accident.

def with_entities(labels: list[str], entity_ids: list[str]) -> list[str]:
    return sorted({*labels, *(e for e in entity_ids if e)})


def _fact_unit(data: dict[str, Any], version: int, kind: str, text: str, entity_ids: list[str],
               **extra: Any) -> SearchUnit:
    source = data.get("source") or {}
    return SearchUnit(
        id=data["id"], context_id=data["contextId"], kind=kind, text=text, revision=version,
        partition=data.get("partition", "default"), scopes=data.get("scopes", []),
        labels=with_entities(data.get("labels", []), entity_ids),
        session_id=source.get("sessionId"), entity_ids=entity_ids,
        source_ids=[source["ref"]] if source.get("ref") else [], **extra,
    )


def _words(key: str) -> str:
    return key.replace("_", " ")


def _attribute_units(data: dict[str, Any], version: int) -> list[SearchUnit]:
    name = data.get("entityName") or data.get("entityId", "")
    text = f"{name} {_words(data['key'])}: {data['value']}"
    return [_fact_unit(data, version, "attribute", text, [data["entityId"]],
                       valid_from=data.get("validFrom"), valid_until=data.get("validUntil"),
                       occurred_at=data.get("validFrom"),
                       metadata={"entity": data["entityId"], "key": data["key"], "value": data["value"]})]


def _relation_units(data: dict[str, Any], version: int) -> list[SearchUnit]:
    text = f"{data.get('subjectName') or data['subject']} {_words(data['label'])}: {data.get('objectName') or data['object']}"
    return [_fact_unit(data, version, "relation", text, [data["subject"], data["object"]],
                       valid_from=data.get("validFrom"), valid_until=data.get("validUntil"),
                       occurred_at=data.get("validFrom"),
                       metadata={"subject": data["subject"], "label": data["label"], "object": data["object"]})]


def _action_units(data: dict[str, Any], version: int) -> list[SearchUnit]:
    actor = data.get("actorName") or data.get("actor", "")
    text = data.get("summary") or " ".join(p for p in (actor, data.get("verb"), data.get("object")) if p)
    return [_fact_unit(data, version, "action", text, [data["actor"]] if data.get("actor") else [],
                       occurred_at=data.get("occurredAt"),
                       metadata={"actor": data.get("actor"), "verb": data.get("verb"), "object": data.get("object")})]


def _instruction_units(data: dict[str, Any], version: int) -> list[SearchUnit]:
    if not data.get("active", True):
        return []
    return [_fact_unit(data, version, "instruction", data.get("description", ""), [],
                       metadata={"label": data.get("label")})]


# --- reconcile steps and summaries ---------------------------------------------------------------
# How an extraction's claims of a kind become new records (``services/facts/reconcile.py`` runs each
# kind's ``plan`` step in registry order), and how a created record is summarised in a write's
# ``ExtractionResultJson`` (``ReconcilePlan.to_result``). Attributes and relations compete for
# slots (supersession, negation, out-of-order history): their kinds are ``slotted`` and the
# slot planner in ``reconcile.py`` plans them; entities are planned last, from every name the
# extraction's claims mention (``FactKind.claim_names``).


@dataclass(frozen=True)
class ReconcileSettings:
    confidence_floor: float = 0.5
    reinforce_step: float = 0.1


@dataclass
class Write:
    """One write's provenance and clock, shared by every record its plan creates."""

    source: Source
    scopes: Dnf
    labels: list[str]
    context_id: str
    created_by: str | None
    observed: datetime
    now: str
    settings: ReconcileSettings

    def event_time(self, phrase: str | None) -> datetime:
        return resolve_event_time(phrase, self.observed) or self.observed

    def timed(self, phrase: str | None) -> bool:
        return resolve_event_time(phrase, self.observed) is not None

    def provenance(self) -> dict[str, Any]:
        """The fields every created record carries from the write."""
        return dict(source=dataclasses.replace(self.source), scopes=[list(c) for c in self.scopes],
                    labels=list(self.labels), created_at=self.now, created_by=self.created_by)


@dataclass
class PlanInputs:
    """What a kind's ``plan`` step reads: the write, the entity resolver (shared with the slot
    planner) and the stored records of a kind the caller loaded (``current["instruction"]``)."""

    write: Write
    resolver: EntityResolver
    current: Mapping[str, Sequence[Any]]


def _plan_actions(claims: list[ExtractedAction], inputs: PlanInputs) -> list[Action]:
    write, resolver = inputs.write, inputs.resolver
    actions = []
    for a in claims:
        actor = resolver.resolve(a.actor, a.actor_type)
        if not actor or not a.verb.strip():
            continue
        cat = vocab.known_category(a.category or "context")
        summary = a.summary.strip() or " ".join(p for p in (resolver.names.get(actor, ""), a.verb, a.object or "") if p)
        actions.append(Action(
            id=new_id("act"), context_id=write.context_id, actor=actor, verb=a.verb.strip(),
            object=(a.object or "").strip() or None, occurred_at=timeutil.iso(write.event_time(a.occurred_at)),
            summary=summary, category=cat, importance=vocab.initial_importance(cat), **write.provenance()))
    return actions


def _plan_instructions(claims: list[ExtractedInstruction], inputs: PlanInputs) -> list[Instruction]:
    current: Sequence[Instruction] = inputs.current.get("instruction", ())
    seen = {normalise_value(i.description) for i in current if i.active and not i.deleted}
    out = []
    for ins in claims:
        description = ins.description.strip()
        if not description or normalise_value(description) in seen:
            continue
        seen.add(normalise_value(description))
        label = vocab.snake_case(ins.label) or "instruction"
        out.append(Instruction(id=new_id("instr"), context_id=inputs.write.context_id, label=label,
                               description=description, **inputs.write.provenance()))
    return out


def _plan_uncertainties(claims: list[ExtractedUncertainty], inputs: PlanInputs) -> list[Uncertainty]:
    return [Uncertainty(id=new_id("unc"), context_id=inputs.write.context_id, about=u.about.strip(),
                        reason=u.reason.strip(), **inputs.write.provenance())
            for u in claims if u.about.strip()]


def _entity_summary(touch: Any) -> EntitySummary:  # a reconcile.EntityTouch
    e = touch.entity
    return _extraction().EntitySummary(id=e.id, name=e.name, entity_type=e.entity_type,
                         memory_category=vocab.known_category(e.category), is_new=touch.is_new)


def _attribute_summary(a: Attribute) -> AttributeSummary:
    return _extraction().AttributeSummary(id=a.id, entity_id=a.entity_id, key=a.key, value=a.value,
                            memory_category=vocab.known_category(a.category))


def _relation_summary(r: Relation) -> RelationSummary:
    return _extraction().RelationSummary(subject=r.subject, label=r.label, object=r.object,
                           memory_category=vocab.known_category(r.category))


def _action_summary(a: Action) -> ActionSummary:
    return _extraction().ActionSummary(actor=a.actor, verb=a.verb, object=a.object, occurred_at=a.occurred_at,
                         summary=a.summary, memory_category=vocab.known_category(a.category))


def _instruction_summary(i: Instruction) -> InstructionSummary:
    return _extraction().InstructionSummary(id=i.id, label=i.label, description=i.description)


def _uncertainty_summary(u: Uncertainty) -> UncertaintySummary:
    return _extraction().UncertaintySummary(about=u.about, reason=u.reason)


def _extraction() -> Any:
    from agent_memory.models import extraction

    return extraction


# --- the registry -------------------------------------------------------------------------------


@dataclass(frozen=True)
class FactKind:
    kind: str                      # stored ``data["kind"]`` and search unit kind
    field: str                     # the list's name in extractions, results and on the wire
    id_prefix: str | None          # of the records' ids (``attr_...``); None: ids are not prefixed
    record_type: type              # models.memory
    # models.extraction's class of what a model or a triple states, by name: that module (its
    # pydantic models) loads only where claims are read, not where units are projected (recall)
    extracted_name: str
    claim_names: tuple[str, ...] = ()    # fields of an extracted claim that name entities (each
                                         # with its entity type in ``<field>_type``)
    record_entities: tuple[str, ...] = ()  # fields of a stored record that hold entity ids
    project: UnitBuilder | None = None   # stored record -> search units; None: not searchable
    forgetter: Forgetter | None = None   # forget rule; None: forget does not find it
    summarise: Summariser | None = None  # created record -> its summary in ExtractionResultJson
    plan: PlanStep | None = None         # extracted claims -> new records (reconcile)
    slotted: bool = False                # planned by reconcile's slot planner (supersession)
    # Where a created record is stored (pk, sk), written create-only by ``memory_repo``; None:
    # entities and the slotted kinds, whose rows the repository writes with their slot heads.
    store_key: StoreKey | None = None
    # Fields of an extracted claim whose text a document window's split looks for in the
    # passages when the model did not say which passage states it (extraction/windows.py).
    text_fields: tuple[str, ...] = ()

    @property
    def extracted_type(self) -> type:
        return getattr(_extraction(), self.extracted_name)

    def names_in(self, claim: Any) -> list[str]:
        """The entity names an extracted claim of this kind refers to."""
        return [getattr(claim, f) for f in self.claim_names]

    def entities_in(self, data: dict[str, Any]) -> list[str]:
        """The entity ids a stored record of this kind names (empty ones left out)."""
        return [data[f] for f in self.record_entities if data.get(f)]


FACT_KINDS: tuple[FactKind, ...] = (
    FactKind("entity", "entities", None, Entity, "ExtractedEntity", summarise=_entity_summary,
             text_fields=("name",)),
    FactKind("attribute", "attributes", "attr", Attribute, "ExtractedAttribute", claim_names=("entity",),
             record_entities=("entityId",), project=_attribute_units, forgetter=AttributeForgetter(),
             summarise=_attribute_summary, slotted=True, text_fields=("value", "entity")),
    FactKind("relation", "relations", "rel", Relation, "ExtractedRelation", claim_names=("subject", "object"),
             record_entities=("subject", "object"), project=_relation_units, forgetter=RelationForgetter(),
             summarise=_relation_summary, slotted=True, text_fields=("object", "subject")),
    FactKind("action", "actions", "act", Action, "ExtractedAction", claim_names=("actor",),
             record_entities=("actor",), project=_action_units, forgetter=ActionForgetter(),
             summarise=_action_summary, plan=_plan_actions, text_fields=("object", "summary", "verb", "actor"),
             store_key=lambda ctx, a: (keys.actions_pk(ctx), f"{a.occurred_at or a.created_at}#{a.id}")),
    FactKind("instruction", "instructions", "instr", Instruction, "ExtractedInstruction",
             project=_instruction_units, forgetter=InstructionForgetter(),
             summarise=_instruction_summary, plan=_plan_instructions, text_fields=("description", "label"),
             store_key=lambda ctx, i: (keys.instructions_pk(ctx), i.id)),
    # An uncertainty's entity is the claim it doubts, not a reference that keeps the entity.
    FactKind("uncertainty", "uncertainties", "unc", Uncertainty, "ExtractedUncertainty",
             summarise=_uncertainty_summary, plan=_plan_uncertainties, text_fields=("about", "reason"),
             store_key=lambda ctx, u: (keys.uncertainties_pk(ctx), u.id)),
)

BY_KIND: dict[str, FactKind] = {k.kind: k for k in FACT_KINDS}
_BY_EXTRACTED_NAME: dict[str, FactKind] = {k.extracted_name: k for k in FACT_KINDS}


def kind_of_claim(claim: Any) -> FactKind:
    """The kind of an extracted claim (an instance of one of models.extraction's classes)."""
    return _BY_EXTRACTED_NAME[type(claim).__name__]
#: The kinds a write creates records of (everything but the entities, which it touches).
RECORD_KINDS: tuple[FactKind, ...] = tuple(k for k in FACT_KINDS if k.kind != "entity")
#: The lists of an extraction that are claims (everything but the entities themselves).
CLAIM_FIELDS: tuple[str, ...] = tuple(k.field for k in FACT_KINDS if k.kind != "entity")

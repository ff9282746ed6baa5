"""``POST /elaborate``: relations memory implies but does not state.

Targets: the entity ``entityRef`` names (``type/name``, ``entity:type/name`` or a name), or
(``sweep``, also the default with no ``entityRef``) the entities the caller may read with the
fewest current relations first, one model call each while the budget lasts (``budget``,
default ``DEFAULT_BUDGET``, capped by ``limits.care_model_calls_per_call``).

For a target, the data block holds its current attributes and relations and those of its
neighbours: entities it is related to (either direction), and entities sharing one of its
attribute values (the same employer). A target with no neighbour costs no call. The model
(``ElaborationOutput``) proposes relations; a proposal is kept only when both ends are
entities of the block, one end is the target, the ends differ and memory does not already
state it. Kept proposals are stored (unless ``dryRun``) as relations with
``source.kind: "elaboration"`` (``ref``: the trace id), reconciled like any relation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import deadline
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import NotFound
from agent_memory.kernel.ids import ENTITY_TYPES, normalise_entity_name, split_entity_id
from agent_memory.models.care import ElaborateRequest, ElaborationOutput
from agent_memory.models.extraction import ExtractedEntity, ExtractedRelation, ExtractionOutput
from agent_memory.ports import LanguageModel, RecordStore
from agent_memory.rules import vocabulary as vocab
from agent_memory.rules.care_data import data_block
from agent_memory.rules.vocabulary import normalise_value
from agent_memory.services import paging
from agent_memory.services.care.common import (
    TRACE_OUTCOMES,
    CareTrace,
    ModelBudget,
    call_model,
    current_rows,
    rows_of,
    writable,
)
from agent_memory.services.operations.traces import TraceStore
from agent_memory.services.prompts.elaboration import SYSTEM

DEFAULT_BUDGET = 3
# Labels that say the same read either way: stated one way, the reverse is not proposed.
SYMMETRIC = frozenset({"colleague", "friend", "sibling", "spouse", "partner", "neighbour", "roommate"})
MAX_PROPOSALS = 10


@dataclass
class Proposal:
    subject: str
    label: str
    object: str
    rationale: str
    relation_id: str | None = None  # the emitted relation (none on a dry run)


@dataclass
class ElaborateOutcome:
    entity_id: str
    entity_name: str
    entity_type: str
    proposals: list[Proposal] = field(default_factory=list)
    emitted: int = 0
    dry_run: bool = False
    trace_id: str = ""


@dataclass
class ElaborateResult:
    outcomes: list[ElaborateOutcome]

    @property
    def emitted(self) -> int:
        return sum(o.emitted for o in self.outcomes)


class ElaborationService:
    def __init__(self, store: RecordStore, facts, model: Callable[[], LanguageModel],
                 budget: Callable[[], ModelBudget], traces: TraceStore, *, scan_cap: int):
        self.store = store
        self.traces = traces
        self.facts = facts
        self.model = model
        self.budget = budget
        self.scan_cap = scan_cap

    def elaborate(self, ctx: RequestContext, req: ElaborateRequest, budget_cap: int) -> ElaborateResult:
        budget = self.budget()
        budget.per_call = min(budget_cap, req.budget if req.budget is not None else DEFAULT_BUDGET)
        entities = {r.data["id"]: r.data for r in rows_of(self.store, ctx, keys.entities_pk(ctx), ["entity"],
                                                              self.scan_cap)}
        attrs = [r.data for r in current_rows(self.store, ctx, "attribute", self.scan_cap)]
        rels = [r.data for r in current_rows(self.store, ctx, "relation", self.scan_cap)]
        if req.entity_ref:
            targets = [self._resolve(req.entity_ref, entities)]
        else:
            degree = Counter(e for r in rels for e in (r["subject"], r["object"]))
            targets = sorted(entities, key=lambda eid: (degree[eid], eid))
        # One trace for the request: every outcome names it, and so do the relations it emits.
        trace = CareTrace("elaborate", read={"entityRef": req.entity_ref, "sweep": not req.entity_ref,
                                             "budget": budget.per_call, "dryRun": req.dry_run,
                                             "entitiesRead": len(entities), "targets": targets[:TRACE_OUTCOMES]})
        outcomes: list[ElaborateOutcome] = []
        try:
            for target in targets:
                if budget.left() == 0:
                    break
                deadline.check("elaboration")
                outcome = self._one(ctx, target, entities, attrs, rels, budget, req.dry_run, trace.trace_id)
                if outcome is not None:
                    outcomes.append(outcome)
        except Exception as exc:
            if any(o.emitted for o in outcomes):  # what was emitted before the failure names this trace
                trace.store(self.store, self.traces, ctx, self._did(outcomes, budget, req.dry_run,
                                                                    failed=f"{type(exc).__name__}: {exc}"))
            raise
        trace.store(self.store, self.traces, ctx, self._did(outcomes, budget, req.dry_run))
        return ElaborateResult(outcomes)

    @staticmethod
    def _did(outcomes: list[ElaborateOutcome], budget: ModelBudget, dry_run: bool, **extra: Any) -> dict[str, Any]:
        return {"dryRun": dry_run, "modelCalls": budget.used, "relationsEmitted": sum(o.emitted for o in outcomes),
                "outcomes": [{"entity": o.entity_id, "relationsEmitted": o.emitted,
                              "proposed": [{"subject": p.subject, "label": p.label, "object": p.object,
                                            "relationId": p.relation_id} for p in o.proposals]}
                             for o in outcomes[:TRACE_OUTCOMES]], **extra}

    @staticmethod
    def _resolve(ref: str, entities: dict[str, dict[str, Any]]) -> str:
        raw = ref.strip().removeprefix("entity:")
        if "/" in raw and raw.split("/", 1)[0] in ENTITY_TYPES:
            etype, name = raw.split("/", 1)
            eid = f"entity:{etype}/{normalise_entity_name(name)}"
            if eid in entities:
                return eid
        wanted = normalise_entity_name(raw)
        found = sorted(eid for eid in entities if split_entity_id(eid)[1] == wanted)
        if not found:
            raise NotFound(f"entityRef: no entity {ref!r} in memory the caller can read")
        return found[0]

    def _one(self, ctx: RequestContext, target: str, entities: dict[str, dict[str, Any]], attrs: list[dict],
             rels: list[dict], budget: ModelBudget, dry_run: bool, trace_id: str) -> ElaborateOutcome | None:
        own_values = {(a["key"], normalise_value(a["value"])) for a in attrs if a["entityId"] == target}
        around = {r["object"] for r in rels if r["subject"] == target} | {r["subject"] for r in rels
                                                                           if r["object"] == target}
        around |= {a["entityId"] for a in attrs if (a["key"], normalise_value(a["value"])) in own_values}
        # A neighbour's own neighbours (the team's project), so two-step implications are visible.
        around |= {r["object"] for r in rels if r["subject"] in around} | {r["subject"] for r in rels
                                                                            if r["object"] in around}
        around = {e for e in around if e in entities and e != target}
        data = entities.get(target, {})
        etype, name = split_entity_id(target)
        outcome = ElaborateOutcome(target, data.get("name") or name, data.get("entityType") or etype,
                                   dry_run=dry_run, trace_id=trace_id)
        if not around:
            return outcome
        shown = {target, *around}
        block = {
            "target": target,
            "entities": [{"id": e, "name": entities[e].get("name") or split_entity_id(e)[1],
                          "type": entities[e].get("entityType") or split_entity_id(e)[0]} for e in sorted(shown)],
            "attributes": [{"entity": a["entityId"], "key": a["key"], "value": a["value"]}
                           for a in attrs if a["entityId"] in shown],
            "relations": [{"subject": r["subject"], "label": r["label"], "object": r["object"]}
                          for r in rels if r["subject"] in shown or r["object"] in shown],
        }
        budget.spend("elaborate")
        model = self.model()
        out: ElaborationOutput = call_model(
            lambda: model.structured(system=SYSTEM, user=data_block(block), schema=ElaborationOutput), "elaboration")
        stated = {(r["subject"], vocab.normalise_label(r["label"]), r["object"]) for r in rels}
        seen: set[tuple[str, str, str]] = set()
        for p in out.relations:
            label = vocab.normalise_label(p.label)
            triple = (p.subject, label, p.object)
            mirror = (p.object, label, p.subject) if label in SYMMETRIC else triple
            if (not label or p.subject not in shown or p.object not in shown or p.subject == p.object
                    or target not in (p.subject, p.object) or triple in stated or triple in seen
                    or mirror in stated or mirror in seen):
                continue
            seen.update((triple, mirror))
            outcome.proposals.append(Proposal(p.subject, label, p.object, p.rationale.strip()))
            if len(outcome.proposals) >= MAX_PROPOSALS:
                break
        if outcome.proposals and not dry_run:
            outcome.emitted = self._emit(ctx, outcome, entities)
        return outcome

    def _emit(self, ctx: RequestContext, outcome: ElaborateOutcome, entities: dict[str, dict[str, Any]]) -> int:
        scopes = ctx.write_scopes([])
        if not writable(ctx, scopes):
            return 0
        extraction = ExtractionOutput()
        for p in outcome.proposals:
            (stype, sname), (otype, oname) = split_entity_id(p.subject), split_entity_id(p.object)
            sname = entities[p.subject].get("name") or sname
            oname = entities[p.object].get("name") or oname
            extraction.entities += [ExtractedEntity(name=sname, type=stype), ExtractedEntity(name=oname, type=otype)]
            extraction.relations.append(ExtractedRelation(subject=sname, subject_type=stype, label=p.label,
                                                          object=oname, object_type=otype, category="knowledge"))
        results = self.facts.write_derived_facts(ctx, extraction, source_kind="elaboration", ref=outcome.trace_id,
                                                 scopes=scopes, labels=[])
        for p in outcome.proposals:
            p.relation_id = self._emitted_id(ctx, p, outcome.trace_id)
        return sum(len(r.relations) for r in results)

    def _emitted_id(self, ctx: RequestContext, p: Proposal, trace_id: str) -> str | None:
        """The id of the current relation this request stored for ``p`` (read back from the
        subject's partition; the mirror's for a symmetric label the write stored reversed)."""
        ends = [(p.subject, p.object)] + ([(p.object, p.subject)] if p.label in SYMMETRIC else [])
        for subject, obj in ends:
            for r in paging.scan(self.store, paging.Source(keys.rels_pk(ctx, subject), prefix=f"a#{p.label}#"),
                                 batch=200):
                d = r.data
                if (d.get("object") == obj and not d.get("deleted") and d.get("supersededBy") is None
                        and (d.get("source") or {}).get("ref") == trace_id):
                    return d.get("id")
        return None



"""``POST /reflect``: a synthesised answer about what memory holds on a topic.

1. Retrieval (the caller's read region) finds up to ``EVIDENCE_K`` hits for ``query``; those
   sharing a content word with it (or found by a structured read) are the evidence.
2. No evidence: the reflection says nothing is known, with empty evidence and no model call.
3. Otherwise one ``structured`` call of the response model (``ReflectionOutput``) over the
   evidence as a data block; ``evidence`` is the ids it cites among those it was shown (all
   of them when it cites none), never another id.
4. ``persist: true`` stores its conclusions (entity, key, value) as attributes whose source
   is the reflection (``source.kind: "reflection"``, ``ref``: the trace id), reconciled like
   any fact. A model failure answers 502/504 before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.ids import ENTITY_TYPES, entity_name_fits, key_fits
from agent_memory.lexicon import OVERLAP_STOP_WORDS
from agent_memory.models.care import ReflectionOutput, ReflectRequest
from agent_memory.models.extraction import ExtractedAttribute, ExtractedEntity, ExtractionOutput
from agent_memory.models.facts import Attribute
from agent_memory.ports import LanguageModel, RecordStore
from agent_memory.rules import vocabulary as vocab
from agent_memory.rules.care_data import data_block
from agent_memory.services.care.common import CareTrace, ModelBudget, call_model
from agent_memory.services.operations.traces import TraceStore
from agent_memory.services.prompts.reflection import SYSTEM

EVIDENCE_K = 8
MAX_CONCLUSIONS = 8
NOTHING_KNOWN = "Nothing is known in memory about that."
_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in OVERLAP_STOP_WORDS and len(w) > 1}


@dataclass
class ReflectResult:
    reflection: str
    evidence: list[str]
    persisted: list[Attribute] = field(default_factory=list)
    trace_id: str = ""
    model_calls: int = 0


class ReflectionService:
    def __init__(self, store: RecordStore, retrieval, facts, model: Callable[[], LanguageModel],
                 budget: Callable[[], ModelBudget], traces: TraceStore):
        self.store = store
        self.traces = traces
        self.retrieval = retrieval
        self.facts = facts
        self.model = model
        self.budget = budget

    def reflect(self, ctx: RequestContext, req: ReflectRequest) -> ReflectResult:
        trace = CareTrace("reflect", read={"query": req.query, "persist": req.persist})
        trace_id = trace.trace_id
        retrieved = self.retrieval.retrieve(ctx, req.query, k=EVIDENCE_K)
        hits = retrieved.hits
        asked = _words(req.query)
        evidence = [h for h in hits if h.structured or (asked & _words(h.text))]
        trace.read.update(tier=retrieved.tier, hits=[{"id": h.id, "kind": h.kind} for h in hits],
                          evidence=[h.id for h in evidence])
        if not evidence:
            nothing = ReflectResult(NOTHING_KNOWN, [], [], trace_id)
            self._trace(ctx, trace, nothing)
            return nothing
        lines = []
        for h in evidence:
            item = {"id": h.id, "kind": h.kind, "text": h.text}
            meta = h.metadata or {}
            if h.kind == "attribute" and meta.get("entity"):
                item.update(entity=meta["entity"], key=meta.get("key"), value=meta.get("value"))
            lines.append(item)
        user = f"# Topic\n{req.query}\n\n" + data_block({"query": req.query, "evidence": lines})
        budget = self.budget()
        budget.spend("reflect")
        model = self.model()
        out: ReflectionOutput = call_model(
            lambda: model.structured(system=SYSTEM, user=user, schema=ReflectionOutput), "reflection")
        shown = [h.id for h in evidence]
        cited = [i for i in dict.fromkeys(out.evidence) if i in set(shown)] or shown
        result = ReflectResult(out.reflection.strip() or NOTHING_KNOWN, cited, [], trace_id, budget.used)
        if req.persist:
            result.persisted = self._persist(ctx, out, trace_id)
        self._trace(ctx, trace, result)
        return result

    def _trace(self, ctx: RequestContext, trace: CareTrace, result: ReflectResult) -> None:
        trace.store(self.store, self.traces, ctx, {
            "reflection": result.reflection, "evidence": result.evidence, "modelCalls": result.model_calls,
            "persistedAttributes": [a.id for a in result.persisted]})

    def _persist(self, ctx: RequestContext, out: ReflectionOutput, trace_id: str) -> list[Attribute]:
        extraction = ExtractionOutput()
        for c in out.conclusions[:MAX_CONCLUSIONS]:
            name, key, value = c.entity.strip(), vocab.normalise_key(c.key), c.value.strip()
            if not name or not entity_name_fits(name) or not key or not key_fits(key) or not value:
                continue
            etype = c.entity_type if c.entity_type in ENTITY_TYPES else "other"
            extraction.entities.append(ExtractedEntity(name=name, type=etype, category="knowledge"))
            extraction.attributes.append(ExtractedAttribute(entity=name, entity_type=etype, key=key, value=value,
                                                            category="knowledge"))
        if not extraction.attributes:
            return []
        results = self.facts.write_derived_facts(ctx, extraction, source_kind="reflection", ref=trace_id,
                                                 scopes=ctx.write_scopes([]), labels=[])
        stored: list[Attribute] = []
        for res in results:
            for a in res.attributes:
                record = self.store.get(keys.attrs_pk(ctx, a.entity_id), keys.fact_sk(a.key, a.id))
                if record is not None:
                    stored.append(Attribute.from_dict(record.data))
        return stored

"""One remembered fact by its id: ``GET``/``DELETE /{ctx}/{attributes|relations|actions|instructions}/{id}``
and ``PATCH /{ctx}/{attributes|relations}/{id}``.

- **Locate.** An id names its kind (``attr_``, ``rel_``, ``act_``, ``instr_``), not where its
  row lives (attributes and relations are stored under their entity). The search unit of a
  current fact carries that (``fact_kinds``' projection metadata), so one unit read and one
  row read find it; a fact the index does not hold yet (an id minted within the projection's
  lag, an index that is down or not configured) is found by reading the kind's current-facts
  index (gsi1) or the actions partition, at most ``LOCATE_SCAN_ROWS`` rows. Instructions are keyed by id. A superseded fact is found while the index keeps
  its unit (it does, for ``asOf`` reads); the fallback reads only current facts, so without
  search a superseded row is read through its entity's history.
- **Regions.** A fact outside the caller's read region, deleted, or about a deleted entity is
  404, exactly as if it did not exist (nothing is disclosed or changed). A readable fact in
  a scope the caller cannot write is 403 for a delete or a correction, as for forget.
- **Delete** is forget of that one record (``ForgetService.forget_record``): a soft delete
  (``?purge=true``: hard delete with the fact's superseded history), entities left with
  nothing removed with it, search units, stored replies and cached responses that derive
  from it removed.
- **Correct** never edits in place. The new value is written through the write path as an
  authoritative triple (``source.kind: upsert``, role ``system``) in the fact's own scopes
  and labels, so it supersedes the current row as any correction does: one transaction,
  chain links, history kept, the correction reported. A multi-valued key (``likes``) has no
  single current value to supersede, so the same write also negates the old value (closing
  its row); the two are reported as one correction, old value to new.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_memory.access import grants
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import Conflict, NotFound, Unprocessable
from agent_memory.kernel.ids import entity_id, split_entity_id, ulid_ms
from agent_memory.models.extraction import CorrectionSummary, ExtractedAttribute, ExtractedRelation
from agent_memory.models.facts import Action, Attribute, Instruction, Relation
from agent_memory.ports import Record, RecordStore, SearchUnavailable
from agent_memory.rules import vocabulary as vocab
from agent_memory.rules.vocabulary import normalise_value
from agent_memory.services import paging
from agent_memory.services.facts.fact_kinds import BY_KIND, live
from agent_memory.services.facts.readable import Readable, memory_record

if TYPE_CHECKING:
    from agent_memory.models.extraction import ExtractionOutput
    from agent_memory.models.reads import CorrectFactRequest
    from agent_memory.models.requests import WriteFactsRequest
    from agent_memory.ports import SearchIndex
    from agent_memory.services.facts.forget import ForgetOutcome, ForgetService
    from agent_memory.services.facts.write import WriteOutcome

#: The kinds addressable by id, by the path segment that names them.
EDITABLE = {"attributes": "attribute", "relations": "relation", "actions": "action", "instructions": "instruction"}
CORRECTABLE = ("attribute", "relation")
# Without a search unit a fact is found by reading its kind's current index, which grows with
# the context: only for ids young enough to be within the projection's lag (or when the index
# cannot answer), and never past this many rows.
PROJECTION_LAG_S = 900
LOCATE_SCAN_ROWS = 10_000

WriteFacts = Callable[[RequestContext, "WriteFactsRequest", "ExtractionOutput | None"], "WriteOutcome"]


@dataclass
class CorrectedFact:
    """A correction by id: the row now current, the row it replaced (as it reads now), and
    the corrections the write reported (one, old value to new)."""

    fact: Attribute | Relation
    previous: Attribute | Relation
    corrections: list[CorrectionSummary]
    turn_id: str | None


def _is_current(data: dict[str, Any]) -> bool:
    return data.get("supersededBy") is None and data.get("validUntil") is None


class FactEdits:
    """Reads, deletes and corrects one fact by id. ``forget`` removes records the way forget
    does; ``write_facts(ctx, request, extraction)`` is the write path (``FactsService.write``,
    ``extraction`` replacing the triples' when given)."""

    def __init__(self, store: RecordStore, search: SearchIndex | None, forget: ForgetService,
                 write_facts: WriteFacts):
        self.store = store
        self.search = search
        self._forget = forget
        self._write_facts = write_facts

    # --- public operations ------------------------------------------------------------

    def get(self, ctx: RequestContext, kind: str, fact_id: str) -> Attribute | Relation | Action | Instruction:
        return memory_record(self._visible(ctx, kind, fact_id))  # type: ignore[return-value]

    def delete(self, ctx: RequestContext, kind: str, fact_id: str, *, purge: bool = False) -> ForgetOutcome:
        record = self._visible(ctx, kind, fact_id)
        grants.check_writable(record.data.get("scopes") or [], ctx.write_region, kind)
        return self._forget.forget_record(ctx, record, purge=purge)

    def correct(self, ctx: RequestContext, kind: str, fact_id: str, req: CorrectFactRequest) -> CorrectedFact:
        if kind not in CORRECTABLE:
            raise Unprocessable(f"a {kind} cannot be corrected; delete it and state the new one", field="kind")
        record = self._visible(ctx, kind, fact_id)
        grants.check_writable(record.data.get("scopes") or [], ctx.write_region, kind)
        if not _is_current(record.data):
            raise Conflict(f"{fact_id} is no longer current; correct the fact that replaced it",
                           code="fact_not_current")
        old = memory_record(record)
        if kind == "attribute":
            assert isinstance(old, Attribute)
            triple, negation, new_value = self._attribute_edit(old, req)
            slot_entity, slot = old.entity_id, old.key
        else:
            assert isinstance(old, Relation)
            triple, negation, new_value = self._relation_edit(old, req)
            slot_entity, slot = old.subject, old.label
        # Loaded by the first correction only (reads and deletes never need the write path).
        from agent_memory.models.requests import WriteFactsRequest
        from agent_memory.services.facts.extraction.triples import triples_to_extraction

        extraction = triples_to_extraction([triple])
        if isinstance(negation, ExtractedAttribute):
            extraction.attributes.insert(0, negation)
        elif isinstance(negation, ExtractedRelation):
            extraction.relations.insert(0, negation)
        text = f"Correction of {fact_id}: {triple_text(old)} -> {new_value}." + (f" {req.note}" if req.note else "")
        write = WriteFactsRequest(text=text, infer="triples", triples=[triple], role="system",
                                  scopes=record.data.get("scopes") or [], labels=record.data.get("labels") or [],
                                  observed_at=req.observed_at)
        outcome = self._write_facts(ctx, write, extraction)
        if kind == "relation" and outcome.extraction is not None:
            # The object as the write resolved it (an existing entity the name matches).
            new_value = next((r.object for r in outcome.extraction.relations
                              if r.subject == slot_entity and r.label == slot), new_value)
        # The write committed: answer with its row even if a concurrent write already moved on.
        current = self._current_row(ctx, kind, slot_entity, slot, new_value) \
            or self._current_row(ctx, kind, slot_entity, slot, new_value, current_only=False)
        if current is None:  # removed concurrently (a forget or delete won the race)
            raise Conflict(f"{fact_id} changed while it was being corrected; read it and retry",
                           code="fact_not_current")
        previous = memory_record(self.store.get(record.pk, record.sk) or record)
        # The corrections the write path reported; a multi-valued key's negation (old -> "")
        # and its new value are one correction to the caller (old -> new).
        old_value = old.value if isinstance(old, Attribute) else old.object
        reported = []
        for c in outcome.extraction.corrections if outcome.extraction is not None else []:
            if negation is not None and (c.entity_id, c.key, c.old_value, c.new_value) == \
                    (slot_entity, slot, old_value, ""):
                c = CorrectionSummary(entity_id=slot_entity, key=slot, old_value=old_value, new_value=new_value)
            reported.append(c)
        return CorrectedFact(current, previous, reported, outcome.turn_id)  # type: ignore[arg-type]

    # --- the correcting write -------------------------------------------------------------

    @staticmethod
    def _attribute_edit(old: Attribute, req: CorrectFactRequest) -> tuple[dict[str, Any], Any, str]:
        value = req.value.strip()
        if not value:
            raise Unprocessable("value must not be blank", field="value")
        if normalise_value(value) == normalise_value(old.value):
            raise Unprocessable(f"{old.id} already has the value {old.value!r}", field="value")
        etype, name = split_entity_id(old.entity_id)
        triple: dict[str, Any] = {"entity": {"type": etype, "name": name}, "key": old.key, "value": value,
                                  "memoryCategory": old.category, "confidence": 1.0}
        negation = None
        if vocab.cardinality(old.key) == "multi":
            negation = ExtractedAttribute(entity=name, entity_type=etype, key=old.key, value=old.value, negated=True,
                                          cardinality="multi", category=old.category, confidence=1.0)
        return triple, negation, value

    @staticmethod
    def _relation_edit(old: Relation, req: CorrectFactRequest) -> tuple[dict[str, Any], Any, str]:
        from agent_memory.services.facts.collections import _target

        if not req.value.strip():
            raise Unprocessable("value must not be blank", field="value")
        ttype, tname = _target(req.value, old.object)
        new_object = entity_id(ttype, tname)
        stype, sname = split_entity_id(old.subject)
        if normalise_value(tname) == normalise_value(split_entity_id(old.object)[1]) \
                and ttype == split_entity_id(old.object)[0]:
            raise Unprocessable(f"{old.id} already points at {old.object}", field="value")
        triple: dict[str, Any] = {"entity": {"type": stype, "name": sname}, "key": old.label,
                                  "target": {"type": ttype, "name": tname}, "memoryCategory": old.category}
        negation = None
        if vocab.label_cardinality(old.label) == "multi":
            otype, oname = split_entity_id(old.object)
            negation = ExtractedRelation(subject=sname, subject_type=stype, label=old.label, object=oname,
                                         object_type=otype, negated=True, category=old.category)
        return triple, negation, new_object

    def _current_row(self, ctx: RequestContext, kind: str, entity: str, slot: str,
                     value: str, *, current_only: bool = True) -> Attribute | Relation | None:
        """The slot's row holding ``value`` (current, or with ``current_only=False`` the newest)."""
        pk = keys.attrs_pk(ctx, entity) if kind == "attribute" else keys.rels_pk(ctx, entity)
        rows = list(paging.scan(self.store, paging.Source(pk, prefix=f"a#{slot}#"), batch=500))
        rows.sort(key=lambda r: r.data.get("createdAt") or "", reverse=True)
        for r in rows:
            d = r.data
            if d.get("deleted") or (current_only and not _is_current(d)):
                continue
            if kind == "attribute" and normalise_value(d.get("value", "")) == normalise_value(value):
                return Attribute.from_dict(d)
            if kind == "relation" and d.get("object") == value:
                return Relation.from_dict(d)
        return None

    # --- finding the row behind an id -----------------------------------------------------

    def _visible(self, ctx: RequestContext, kind: str, fact_id: str) -> Record:
        record = self._locate(ctx, kind, fact_id)
        if record is None or not Readable(self.store, ctx, {kind})([record]):
            raise NotFound(f"{kind} {fact_id} does not exist")
        return record

    def _locate(self, ctx: RequestContext, kind: str, fact_id: str) -> Record | None:
        fact_kind = BY_KIND[kind]
        if not fact_id.startswith(f"{fact_kind.id_prefix}_"):
            return None
        if kind == "instruction":
            return live(self.store.get(keys.instructions_pk(ctx), fact_id))
        unit, searched = None, False
        if self.search is not None:
            try:
                unit, searched = self.search.get(ctx.context_id, fact_id), True
            except SearchUnavailable:
                unit = None  # the store still answers: read the index rows below
        if unit is not None and unit.partition == ctx.partition and fact_kind.forgetter is not None:
            found = fact_kind.forgetter.locate(self._forget, ctx, unit)
            if found is not None and found.data.get("id") == fact_id:
                return found
        if searched and not _recent(fact_id):
            return None  # the index answered and holds no unit: not a current fact
        if kind == "action":
            source = paging.Source(keys.actions_pk(ctx))
        else:
            source = paging.Source(keys.current_gsi(ctx, kind), index="gsi1")
        for n, r in enumerate(paging.scan(self.store, source, batch=500)):
            if n >= LOCATE_SCAN_ROWS:
                return None
            if r.data.get("id") == fact_id:
                if kind == "action":
                    return live(r)
                # gsi1 rows are projections: read the row itself (its version is the base's).
                return live(self.store.get(r.pk, r.sk))
        return None


def _recent(fact_id: str) -> bool:
    """Minted within the projection's lag, so the index may not hold it yet."""
    minted = ulid_ms(fact_id)
    return minted is not None and time.time() * 1000 - minted < PROJECTION_LAG_S * 1000


def triple_text(fact: Attribute | Relation) -> str:
    if isinstance(fact, Attribute):
        return f"{split_entity_id(fact.entity_id)[1]} {fact.key.replace('_', ' ')}: {fact.value}"
    return f"{split_entity_id(fact.subject)[1]} {fact.label.replace('_', ' ')}: {split_entity_id(fact.object)[1]}"

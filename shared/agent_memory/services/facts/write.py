"""The write path: POST /facts and /facts/batch.

One write = store the turn, extract what it states (one model call, or the caller's
``triples``), reconcile that against current memory, and commit the turn and every fact
change in ONE transaction. Nothing is written when extraction fails (502, or 504 on a
model timeout) or the input is invalid. A transaction that loses a race (another write
changed the same slot) is re-reconciled against the fresh state and retried, without a
second model call.

Modes: ``full`` (model extraction), ``triples`` (caller-supplied facts, authoritative,
no model call), ``preview`` (extract and reconcile, write nothing, report what would
change), ``none`` (store the turn only).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import deadline, timeutil
from agent_memory.kernel.errors import (
    Conflict,
    PayloadTooLarge,
    Unprocessable,
    UpstreamModelError,
    UpstreamModelTimeout,
)
from agent_memory.kernel.ids import (
    MAX_ENTITY_NAME_BYTES,
    MAX_KEY_BYTES,
    entity_name_fits,
    key_fits,
    normalise_entity_name,
)
from agent_memory.kernel.stored_item import TRANSACT_BATCH_BYTES, batches, fits_one_transaction, op_bytes
from agent_memory.models.conversation_records import Session
from agent_memory.models.extraction import (
    ExtractedAction,
    ExtractedAttribute,
    ExtractedEntity,
    ExtractedRelation,
    ExtractedUncertainty,
    ExtractionOutput,
    ExtractionResult,
)
from agent_memory.models.facts import Source
from agent_memory.models.records import Turn
from agent_memory.models.requests import Triple, WriteFactsBatchRequest, WriteFactsRequest
from agent_memory.ports import (
    MAX_TRANSACT_OPS,
    ConditionFailed,
    LanguageModel,
    ModelOutputInvalid,
    ModelTimeout,
    WriteOp,
)
from agent_memory.ports import ModelError as PortModelError
from agent_memory.rules.speaker import EntityResolver
from agent_memory.services.conversation.sessions import (
    NewTurn,
    backoff,
    planned_session_bytes,
    planned_turn_bytes,
)
from agent_memory.services.events import DomainEvents, EventPublisher, FactsChanged
from agent_memory.services.facts import reconcile as rec
from agent_memory.services.facts.extraction.windows import split_by_passage
from agent_memory.services.facts.fact_kinds import CLAIM_FIELDS, kind_of_claim
from agent_memory.services.facts.repository import MemoryRepository, PartitionReads
from agent_memory.services.facts.speakers import attribute_to_speaker, is_other_speaker, speaker_record
from agent_memory.services.prompts.extraction import build_extraction_prompt, build_window_prompt

if TYPE_CHECKING:
    from agent_memory.ports import RecordStore
    from agent_memory.services.conversation.sessions import SessionService

log = logging.getLogger("agent_memory.facts")

RECONCILE_ATTEMPTS = 12
TRIPLES_PER_WRITE = 16  # worst case 5 operations each (two entities, row, head, old row)
TRUNCATED_ABOUT = "facts left out of this turn"


@dataclass
class PendingTurn:
    """One turn of a write, with what its extraction produced (before reconciliation)."""

    role: str
    text: str
    observed_at: str | None
    infer: str
    extraction: ExtractionOutput | None
    source_kind: str = "turn"
    speaker: dict[str, str] | None = None  # stored form (services/facts/speakers.py)
    unsupported: bool = False  # a chat reply that cited no memory: stored, never evidence


@dataclass
class WriteOutcome:
    """One ``POST /facts``: the turn stored (``None`` in preview) and what its facts changed."""

    mode: str
    session_id: str | None
    turn_id: str | None
    extraction: ExtractionResult | None
    memory_category: str | None = None  # the write's category as applied (a synonym mapped)


@dataclass
class BatchWriteOutcome:
    """One ``POST /facts/batch``: the turns stored (none in preview), each one's changes."""

    session_id: str | None
    turn_ids: list[str]
    extractions: list[ExtractionResult | None]
    memory_category: str | None = None


class FactsService:
    """The write path. ``language_model`` resolves a model by name (instances are cached by
    the caller) and ``extraction_model`` names the one that extracts facts; a write that
    changed entities' facts publishes ``FactsChanged`` on ``events``. Limits: a turn's text
    is at most ``text_bytes`` (``limits.facts_text_bytes``), a batch runs
    ``extraction_concurrency`` extraction calls at once (``limits.document_concurrency``), and
    a claim under ``confidence_floor`` (``limits.extraction_confidence_floor``) is not stored
    as a current value."""

    def __init__(self, store: RecordStore, sessions: SessionService,
                 language_model: Callable[[str], LanguageModel], events: DomainEvents | None = None, *,
                 extraction_model: str, text_bytes: int, extraction_concurrency: int, confidence_floor: float):
        self._store = store
        self._sessions = sessions
        self._language_model = language_model
        self._events = events if events is not None else EventPublisher()
        self._extraction_model = extraction_model
        self._text_bytes = text_bytes
        self._extraction_concurrency = extraction_concurrency
        self._reconcile_settings = rec.ReconcileSettings(confidence_floor=confidence_floor)
        self.repo = MemoryRepository(store)

    # --- public operations ------------------------------------------------------------

    def write(self, ctx: RequestContext, req: WriteFactsRequest,
              extraction_override: ExtractionOutput | None = None) -> WriteOutcome:
        """``extraction_override`` (with ``infer: triples``) replaces what the triples say, for
        callers that write claims a triple cannot state (a correction's negation: ``edits``)."""
        self._check_size(req.text)
        observed = req.observed_at
        extraction: ExtractionOutput | None = None
        source_kind = "turn"
        if req.infer == "triples":
            extraction = extraction_override or triples_to_extraction(req.triples or [])
            source_kind = "upsert"
        elif req.triples:
            raise Unprocessable("triples are only accepted with infer: triples", field="triples")
        sessions = self._sessions
        session, new_session = sessions.open_for_write(ctx, req.session_id, req.scopes, req.labels)
        scopes = _turn_scopes(req.scopes, session, req.session_id)
        speaker = speaker_record(req.speaker)
        reads = self.repo.partition_reads()  # the speaker's partition: read once for prompt and plan
        if req.infer in ("full", "preview"):
            extraction = self.extract(ctx, req.text, observed, speaker=speaker, reads=reads)
        extraction = with_category(extraction, req.memory_category, keep_own=req.infer == "triples")
        pending = PendingTurn(req.role, req.text, observed, req.infer, extraction, source_kind, speaker=speaker)
        if req.infer == "preview":
            result = self._reconcile_only(ctx, pending, session.id, scopes, req.labels)
            return WriteOutcome("preview", req.session_id, None, result, req.memory_category)
        turn_ids, results = self.commit_turns(ctx, session, [pending], scopes, req.labels, reads=reads,
                                              new_session=new_session)
        return WriteOutcome(req.infer, session.id, turn_ids[0], results[0], req.memory_category)

    def write_batch(self, ctx: RequestContext, req: WriteFactsBatchRequest) -> BatchWriteOutcome:
        for m in req.messages:
            self._check_size(m.content)
        if req.infer == "triples":
            raise Unprocessable("infer: triples is not available for batches; use POST /facts", field="infer")
        sessions = self._sessions
        session, new_session = sessions.open_for_write(ctx, req.session_id, req.scopes, req.labels)
        scopes = _turn_scopes(req.scopes, session, req.session_id)
        extract = req.infer in ("full", "preview")
        pending: list[PendingTurn] = []
        if extract and req.extract == "whole_conversation":
            transcript = "\n".join(f"{m.role}: {m.content}" for m in req.messages)
            whole = self.extract(ctx, transcript, req.messages[-1].ts)
            pending = [PendingTurn(m.role, m.content, m.ts, req.infer, None, speaker=speaker_record(m.speaker))
                       for m in req.messages]
            # The single extraction is attributed to the last turn (the one that completes it).
            pending[-1].extraction = whole
        else:
            speakers = [speaker_record(m.speaker) for m in req.messages]
            wanted = [i for i, m in enumerate(req.messages) if extract and m.role == "user"]
            extractions = self._extract_many(ctx, [(req.messages[i].content, req.messages[i].ts, speakers[i])
                                                   for i in wanted])
            by_index = dict(zip(wanted, extractions, strict=True))
            pending = [PendingTurn(m.role, m.content, m.ts, req.infer, by_index.get(i), speaker=speakers[i])
                       for i, m in enumerate(req.messages)]
        for p in pending:
            p.extraction = with_category(p.extraction, req.memory_category, keep_own=False)
        if req.infer == "preview":
            results = [self._reconcile_only(ctx, p, session.id, scopes, req.labels) for p in pending]
            return BatchWriteOutcome(req.session_id, [], results, req.memory_category)
        # Every model call is done before the first write. A turn with facts then commits in
        # its own transaction, so a later turn reconciles against what the earlier ones stored;
        # the turns between them (no facts) commit together, as many as one transaction holds.
        turn_ids: list[str] = []
        results: list[ExtractionResult | None] = []
        for i, group in enumerate(plan_turn_transactions(ctx, session, pending, scopes, req.labels)):
            ids, res = self.commit_turns(ctx, session, group, scopes, req.labels, new_session=new_session and i == 0)
            turn_ids += ids
            results += res
        return BatchWriteOutcome(session.id, turn_ids, results, req.memory_category)

    # --- extraction ---------------------------------------------------------------------

    def _extract_many(self, ctx: RequestContext, items: Sequence[tuple[str, str | None, dict[str, str] | None]]
                      ) -> list[ExtractionOutput]:
        """One extraction call per item, ``extraction_concurrency`` at once, all under the
        request's deadline. The first failure cancels the calls not yet started and is raised
        (nothing has been written yet)."""
        if len(items) <= 1:
            return [self.extract(ctx, text, ts, speaker=speaker) for text, ts, speaker in items]
        workers = min(len(items), max(1, self._extraction_concurrency))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="batch-extract") as pool:
            futures = [deadline.submit_in_context(pool, self._extract_one, ctx, text, ts, speaker)
                       for text, ts, speaker in items]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()
                raise

    def _extract_one(self, ctx: RequestContext, text: str, ts: str | None,
                     speaker: dict[str, str] | None) -> ExtractionOutput:
        return self.extract(ctx, text, ts, speaker=speaker)

    def extract(self, ctx: RequestContext, text: str, observed_at: str | None,
                speaker: dict[str, str] | None = None, reads: PartitionReads | None = None) -> ExtractionOutput:
        """One extraction model call (one retry on invalid output). Writes nothing. In a turn
        said by someone other than the context's user (``speaker``), "I" is that speaker.
        ``reads``: the write's partition reads, so its plan reuses the speaker's partition."""
        other = speaker["name"] if is_other_speaker(speaker) else None
        system, user = build_extraction_prompt(
            text, speaker_name=other or self.repo.speaker_name(ctx, reads),
            known_entities=self.repo.entity_names(ctx, reads=reads),
            observed_at=observed_at or timeutil.now_iso())
        output = self._structured_extraction(system, user)
        return attribute_to_speaker(output, other) if other else output

    def extract_window(self, ctx: RequestContext, passages: Sequence[str],
                       observed_at: str | None) -> list[ExtractionOutput]:
        """Consecutive document chunks in one extraction call: one output per passage, each
        item attributed to the passage it names (``extraction.windows.split_by_passage``).
        One passage is an ordinary ``extract``. Writes nothing."""
        if len(passages) == 1:
            return [self.extract(ctx, passages[0], observed_at)]
        system, user = build_window_prompt(
            list(passages), speaker_name=self.repo.speaker_name(ctx),
            known_entities=self.repo.entity_names(ctx), observed_at=observed_at or timeutil.now_iso())
        return split_by_passage(self._structured_extraction(system, user), passages)

    def _structured_extraction(self, system: str, user: str) -> ExtractionOutput:
        model: LanguageModel = self._language_model(self._extraction_model)
        for attempt in (1, 2):
            try:
                return model.structured(system=system, user=user, schema=ExtractionOutput)
            except ModelOutputInvalid as exc:
                if attempt == 2:
                    raise UpstreamModelError(f"extraction model returned invalid output twice: {exc}") from exc
                log.warning("extraction output invalid, retrying once: %s", exc)
            except ModelTimeout as exc:
                raise UpstreamModelTimeout(f"extraction model timed out: {exc}") from exc
            except PortModelError as exc:
                raise UpstreamModelError(f"extraction model failed: {exc}") from exc
        raise AssertionError("unreachable")

    # --- reconciliation and commit -------------------------------------------------------

    def _plan(self, ctx: RequestContext, pending: PendingTurn, turn_id: str, session_id: str,
              scopes: list[list[str]], labels: list[str],
              reads: PartitionReads | None = None) -> tuple[rec.ReconcilePlan, Any]:
        extraction = pending.extraction or ExtractionOutput()
        reads = reads if reads is not None else self.repo.partition_reads()
        speaker = self.repo.speaker_name(ctx, reads)
        names = _mentioned_names(extraction)
        loaded = self.repo.load_entities(ctx, names, reads)
        resolver = EntityResolver(loaded.entities.values(), speaker_name=speaker)
        slots = rec.slots(extraction, resolver)
        loaded = self.repo.load_for_write(ctx, slots.attributes, slots.relations, names, loaded, reads)
        observed = timeutil.parse(pending.observed_at) if pending.observed_at else None
        plan = rec.reconcile(
            extraction,
            source=Source(kind=pending.source_kind, ref=turn_id, session_id=session_id),
            current_attributes=loaded.attributes, current_relations=loaded.relations,
            current_instructions=self.repo.instructions(ctx) if extraction.instructions else (),
            existing_entities=loaded.entities.values(),
            resolver=resolver,
            speaker_name=speaker, scopes=scopes, labels=labels, context_id=ctx.context_id,
            created_by=ctx.principal, observed_at=observed,
            settings=self._reconcile_settings,
        )
        return plan, loaded

    def _reconcile_only(self, ctx: RequestContext, pending: PendingTurn, session_id: str,
                        scopes: list[list[str]], labels: list[str]) -> ExtractionResult | None:
        if pending.extraction is None:
            return None
        plan, _ = self._plan(ctx, pending, "turn_preview", session_id, scopes, labels)
        return plan.to_result("turn_preview")

    def commit_turns(self, ctx: RequestContext, session: Session, pending: Sequence[PendingTurn],
                scopes: list[list[str]], labels: list[str],
                reads: PartitionReads | None = None, new_session: bool | None = None,
                extra: Callable[[list[Turn], list[ExtractionResult | None]], list[WriteOp]] | None = None,
                ) -> tuple[list[str], list[ExtractionResult | None]]:
        """Append the turns and apply each turn's plan in one transaction; on a lost race,
        reload and re-plan (extraction output is reused, never re-requested). ``reads``: what
        the caller read for this write already, used by the first attempt only;
        ``new_session``: whether ``session`` is one ``resolve_for_write`` just made (None:
        read to tell); ``extra(rows, results)``: unconditioned puts that commit with the turns (chat's trace rows),
        built once before the facts are planned (``results`` empty, for the transaction's budget)
        and again after, with what each turn's facts do (the same rows, a few digits apart)."""
        sessions = self._sessions
        for attempt in range(RECONCILE_ATTEMPTS):
            planner = _TurnPlanner(self, ctx, session.id, pending, scopes, labels, reads if attempt == 0 else None,
                                   extra)
            try:
                rows = sessions.append_turns(ctx, session, [NewTurn(p.role, p.text, p.observed_at, p.infer, p.speaker,
                                                                    p.unsupported)
                                                            for p in pending], scopes, labels,
                                             extra_ops=planner.ops, is_new=new_session)
            except ConditionFailed:
                backoff(attempt)  # append_turns re-reads the stored session on each attempt
                continue
            self._publish_changes(ctx, planner.results)
            return [r.id for r in rows], list(planner.results)
        raise Conflict("memory is receiving too many concurrent corrections of the same facts; retry")

    def _publish_changes(self, ctx: RequestContext, results: Sequence[ExtractionResult | None]) -> None:
        """Publish ``FactsChanged`` for the entities whose facts this write changed."""
        changed: set[str] = set()
        for result in results:
            if result is None:
                continue
            changed.update(a.entity_id for a in result.attributes)
            changed.update(c.entity_id for c in result.corrections)
            for r in result.relations:
                changed.update((r.subject, r.object))
        if changed:
            self._events.publish(FactsChanged(ctx, frozenset(changed)))

    def write_document_facts(self, ctx: RequestContext, extractions: Sequence[tuple[str, ExtractionOutput]],
                             scopes: list[list[str]], labels: list[str],
                             observed_at: str | None) -> list[ExtractionResult]:
        """Commit facts extracted from document chunks as authoritative ``document`` facts
        (``Source(kind="document", ref=<chunk id>)``): a later conversational turn cannot
        supersede them, its contradiction becomes an uncertainty (``reconcile``).

        The caller made every model call before its first write; here each chunk's facts are
        reconciled and committed in their own transaction, so a later chunk sees what earlier
        ones stored, and a lost race re-plans against fresh state without re-extracting. A
        chunk whose plan would pass one transaction (``MAX_TRANSACT_OPS`` or 4 MB) is committed in halves.
        """
        results: list[ExtractionResult] = []
        for chunk_id, extraction in extractions:
            pending = PendingTurn("system", "", observed_at, "full", extraction, source_kind="document")
            results += self._commit_plan(ctx, pending, chunk_id, scopes, labels)
        self._publish_changes(ctx, results)
        return results

    def write_derived_facts(self, ctx: RequestContext, extraction: ExtractionOutput, *, source_kind: str,
                            ref: str, scopes: list[list[str]], labels: list[str]) -> list[ExtractionResult]:
        """Commit facts memory care derived (``reflection`` conclusions, ``elaboration``
        relations: ``Source(kind=source_kind, ref=<trace id>)``), reconciled like a turn's, so
        they supersede and are superseded like any fact; no turn is stored."""
        pending = PendingTurn("system", "", None, "full", extraction, source_kind=source_kind)
        results = self._commit_plan(ctx, pending, ref, scopes, labels)
        self._publish_changes(ctx, results)
        return results

    def _commit_plan(self, ctx: RequestContext, pending: PendingTurn, ref: str, scopes: list[list[str]],
                     labels: list[str]) -> list[ExtractionResult]:
        for attempt in range(RECONCILE_ATTEMPTS):
            plan, loaded = self._plan(ctx, pending, ref, None, scopes, labels)
            ops = self.repo.plan_ops(ctx, plan, loaded)
            fits = fits_one_transaction(ops)
            halves = None if fits else _halves(pending.extraction)
            if not fits and halves is None:
                raise PayloadTooLarge("one fact of this chunk needs more than one transaction")
            if halves is not None:
                return [r for half in halves
                        for r in self._commit_plan(ctx, replace(pending, extraction=half), ref, scopes, labels)]
            try:
                if ops:
                    self._store.transact(ops)
            except ConditionFailed:
                backoff(attempt)
                continue
            return [plan.to_result(ref)]
        raise Conflict("memory is receiving too many concurrent corrections of the same facts; retry")

    def _check_size(self, text: str) -> None:
        cap = self._text_bytes
        if len(text.encode("utf-8")) > cap:
            raise PayloadTooLarge(f"text is over the {cap}-byte limit")


def plan_turn_transactions(ctx: RequestContext, session: Session, pending: Sequence[PendingTurn],
                           scopes: list[list[str]], labels: list[str]) -> list[list[PendingTurn]]:
    """``pending`` in order, cut into the appends of one transaction each: a turn with an
    extraction alone (its facts are planned against what the earlier turns stored), the runs
    of turns without one together, each run within ``MAX_TRANSACT_OPS`` and
    ``TRANSACT_BATCH_BYTES`` with the session row (sizes as ``kernel.stored_item`` counts them)."""
    session_bytes = planned_session_bytes(ctx, session)
    groups: list[list[PendingTurn]] = []
    run: list[PendingTurn] = []

    def size(p: PendingTurn) -> int:
        return planned_turn_bytes(ctx, session, NewTurn(p.role, p.text, p.observed_at, p.infer, p.speaker, p.unsupported),
                                  scopes, labels)

    for p in pending:
        if p.extraction is not None:
            groups += batches(run, size, max_count=MAX_TRANSACT_OPS - 1,
                              max_bytes=TRANSACT_BATCH_BYTES - session_bytes) + [[p]]
            run = []
        else:
            run.append(p)
    return groups + batches(run, size, max_count=MAX_TRANSACT_OPS - 1, max_bytes=TRANSACT_BATCH_BYTES - session_bytes)


class _TurnPlanner:
    """Builds the fact operations for freshly numbered turns (called inside the append
    transaction attempt, so every retry re-plans against current state)."""

    def __init__(self, service: FactsService, ctx: RequestContext, session_id: str,
                 pending: Sequence[PendingTurn], scopes: list[list[str]], labels: list[str],
                 reads: PartitionReads | None = None,
                 extra: Callable[[list[Turn], list[ExtractionResult | None]], list[WriteOp]] | None = None):
        self.service, self.ctx, self.session_id = service, ctx, session_id
        self.pending, self.scopes, self.labels = pending, scopes, labels
        self.reads = reads
        self.extra = extra
        self.results: list[ExtractionResult | None] = []

    def ops(self, rows: list[Turn], own: Sequence[WriteOp] = ()) -> list:
        """The fact operations of ``rows`` (``own``: what the append commits with them, the
        session row and the turn rows), within what one transaction holds beside ``own``:
        ``MAX_TRANSACT_OPS`` operations and ``TRANSACT_BATCH_BYTES`` (``kernel.stored_item``)."""
        tail = self.extra(rows, []) if self.extra is not None else []
        ops: list = []
        self.results = []
        used_bytes = sum(op_bytes(op) for op in (*own, *tail))
        for row, p in zip(rows, self.pending, strict=True):
            if p.extraction is None:
                self.results.append(None)
                continue
            budget = MAX_TRANSACT_OPS - len(own) - len(tail) - len(ops)  # the turns, session row, extra
            byte_budget = TRANSACT_BATCH_BYTES - used_bytes
            extraction = p.extraction
            while True:
                plan, loaded = self.service._plan(self.ctx, replace(p, extraction=extraction), row.id,
                                                  self.session_id, self.scopes, self.labels, self.reads)
                turn_ops = self.service.repo.plan_ops(self.ctx, plan, loaded)
                turn_bytes = sum(op_bytes(op) for op in turn_ops)
                if len(turn_ops) <= budget and turn_bytes <= byte_budget:
                    break
                if p.source_kind != "turn":
                    raise PayloadTooLarge("these facts need more than one transaction; send fewer triples "
                                          "per request")
                # A model extracted more than one atomic write can hold: keep the first half
                # of its claims (statement order) and the entities they name, and say what
                # was left out. Each halving strictly shrinks the extraction, so this ends.
                smaller = _halve(extraction, p.extraction)
                if _size(smaller) >= _size(extraction):
                    raise PayloadTooLarge("this turn needs more than one transaction even without its facts; "
                                          "send fewer turns per request")
                extraction = smaller
            ops.extend(turn_ops)
            used_bytes += turn_bytes
            self.results.append(plan.to_result(row.id))
        if self.extra is not None:  # again, now that what the facts do is known (the same rows)
            tail = self.extra(rows, self.results)
        return ops + tail


CLAIM_KINDS = CLAIM_FIELDS


def _claim_names(claim: Any) -> list[str]:
    """The entity names one claim refers to (its entities must be written with it)."""
    return kind_of_claim(claim).names_in(claim)


def _with_entities(claims: list[tuple[str, Any]], free: list[ExtractedEntity],
                   entities: list[ExtractedEntity]) -> ExtractionOutput:
    """An extraction of ``claims``, the entities they name, and the unreferenced ``free`` ones."""
    named = {normalise_entity_name(n) for _, claim in claims for n in _claim_names(claim)}
    out = ExtractionOutput(entities=[e for e in entities if normalise_entity_name(e.name) in named] + free)
    for kind, item in claims:
        getattr(out, kind).append(item)
    return out


def _free_entities(extraction: ExtractionOutput) -> list[ExtractedEntity]:
    """Entities no claim names (they still cost one insert each)."""
    named = {normalise_entity_name(n) for kind in CLAIM_KINDS for claim in getattr(extraction, kind)
             for n in _claim_names(claim)}
    return [e for e in extraction.entities if normalise_entity_name(e.name) not in named]


def _size(extraction: ExtractionOutput) -> int:
    return len(extraction.entities) + sum(len(getattr(extraction, kind)) for kind in CLAIM_KINDS)


def _halve(current: ExtractionOutput, original: ExtractionOutput) -> ExtractionOutput:
    """The first half of ``current``'s claims with only the entities they name (entities
    no claim names are halved too), plus an uncertainty saying what was left out."""
    def half(items: list) -> list:
        return items[: len(items) // 2]

    claims = [(kind, item) for kind in CLAIM_KINDS if kind != "uncertainties"
              for item in half(getattr(current, kind))]
    claims += [("uncertainties", u) for u in current.uncertainties if u.about != TRUNCATED_ABOUT][:3]
    kept = _with_entities(claims, half(_free_entities(current)), current.entities)
    kept.uncertainties.append(ExtractedUncertainty(
        about=TRUNCATED_ABOUT,
        reason=f"this turn stated more facts than one write holds; kept {len(kept.attributes)} of "
               f"{len(original.attributes)} attributes and {len(kept.relations)} of {len(original.relations)} "
               "relations"))
    return kept


def _halves(extraction: ExtractionOutput | None) -> tuple[ExtractionOutput, ExtractionOutput] | None:
    """An extraction in two halves, each with only the entities its claims name (unnamed
    entities are shared out too), or None when it cannot be split further."""
    if extraction is None:
        return None
    claims = [(kind, item) for kind in CLAIM_KINDS for item in getattr(extraction, kind)]
    free = _free_entities(extraction)
    if len(claims) + len(free) < 2:
        return None
    middle, free_middle = len(claims) // 2, len(free) // 2
    return (_with_entities(claims[:middle], free[:free_middle], extraction.entities),
            _with_entities(claims[middle:], free[free_middle:], extraction.entities))


def _mentioned_names(extraction: ExtractionOutput) -> list[str]:
    names = [e.name for e in extraction.entities]
    names += [n for kind in CLAIM_KINDS for claim in getattr(extraction, kind) for n in _claim_names(claim)]
    return [n for n in names if n]


def triples_to_extraction(raw: list[dict[str, Any]]) -> ExtractionOutput:
    """Caller-supplied facts (``infer: triples``) as an extraction; 422 names a bad index."""
    out = ExtractionOutput()
    for i, item in enumerate(raw):
        where = f"triples[{i}]"
        try:
            triple = Triple.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise Unprocessable(f"{where}.{field}: {first['msg']}", field=f"{where}.{field}") from exc
        etype, name = _entity_ref(triple.entity, f"{where}.entity")
        if triple.key is not None and not key_fits(triple.key.strip()):
            raise Unprocessable(f"{where}.key: at most {MAX_KEY_BYTES} bytes", field=f"{where}.key")
        given = [k for k in ("value", "target", "verb") if getattr(triple, k) not in (None, "")]
        if len(given) > 1:
            raise Unprocessable(f"{where}: at most one of value, target or verb", field=where)
        if triple.confidence is not None and not 0 <= triple.confidence <= 1:
            raise Unprocessable(f"{where}.confidence: must be between 0 and 1", field=f"{where}.confidence")
        times = {}
        for key in ("occurred_at", "valid_from", "valid_until"):
            value = getattr(triple, key)
            if value is not None:
                try:
                    times[key] = timeutil.normalise(value)
                except ValueError as exc:
                    raise Unprocessable(f"{where}.{key}: must be RFC 3339", field=f"{where}.{key}") from exc
        category = triple.memory_category
        out.entities.append(ExtractedEntity(name=name, type=etype, category=category))
        if "value" in given:
            if not (triple.key or "").strip():
                raise Unprocessable(f"{where}.key: required with value", field=f"{where}.key")
            if not isinstance(triple.value, str | int | float | bool):
                raise Unprocessable(f"{where}.value: must be a string, number or boolean", field=f"{where}.value")
            out.attributes.append(ExtractedAttribute(
                entity=name, entity_type=etype, key=triple.key, value=str(triple.value), category=category,
                confidence=triple.confidence if triple.confidence is not None else 1.0,
                valid_from=times.get("valid_from"), valid_until=times.get("valid_until")))
        elif "target" in given:
            if not (triple.key or "").strip():
                raise Unprocessable(f"{where}.key: the relation label is required with target", field=f"{where}.key")
            ttype, tname = _entity_ref(triple.target, f"{where}.target")
            out.entities.append(ExtractedEntity(name=tname, type=ttype, category=category))
            out.relations.append(ExtractedRelation(
                subject=name, subject_type=etype, label=triple.key, object=tname, object_type=ttype,
                category=category, valid_from=times.get("valid_from"), valid_until=times.get("valid_until")))
        elif "verb" in given:
            out.actions.append(ExtractedAction(
                actor=name, actor_type=etype, verb=triple.verb, object=triple.object,
                occurred_at=times.get("occurred_at"), summary=triple.summary or
                " ".join(p for p in (name, triple.verb, triple.object or "") if p), category=category))
    return out


def with_category(extraction: ExtractionOutput | None, category: str | None, *,
                  keep_own: bool) -> ExtractionOutput | None:
    """``extraction`` with a write's ``memory_category`` on what it extracted (entities,
    attributes, relations, actions). Precedence: a triple's own category (``keep_own``), then
    the write's, then the model's, then the key's registered default (``rules.vocabulary``)."""
    if extraction is None or category is None:
        return extraction
    def filed(items: list[Any]) -> list[Any]:
        return [i if keep_own and i.category else i.model_copy(update={"category": category}) for i in items]
    return extraction.model_copy(update={"entities": filed(extraction.entities),
                                         "attributes": filed(extraction.attributes),
                                         "relations": filed(extraction.relations),
                                         "actions": filed(extraction.actions)})


def _entity_ref(ref: Any, where: str) -> tuple[str, str]:
    if not isinstance(ref, dict):
        raise Unprocessable(f"{where}: must be an object with type and name", field=where)
    name, etype = ref.get("name"), ref.get("type")
    if not isinstance(name, str) or not name.strip():
        raise Unprocessable(f"{where}.name: required", field=f"{where}.name")
    if not isinstance(etype, str) or not etype.strip():
        raise Unprocessable(f"{where}.type: required", field=f"{where}.type")
    if not entity_name_fits(name):
        raise Unprocessable(f"{where}.name: at most {MAX_ENTITY_NAME_BYTES} bytes once normalised",
                            field=f"{where}.name")
    return etype, name.strip()


def _turn_scopes(requested: list[list[str]], session: Session, session_id: str | None) -> list[list[str]]:
    """The scopes a write into a session stores: those the request names, else the session's
    own (as a chat turn in that session is scoped), so a session created for one user keeps
    what is written into it there."""
    if requested or session_id is None:
        return requested
    return [list(clause) for clause in (session.scopes or [])]

"""The write path: POST /facts and /facts/batch.

A write is one pipeline; each step is a method of ``FactsService``, in this order:

1. ``open_session``: the session the turns land in, read once (the append conditions on
   that read), and the scopes its turns store, checked once.
2. ``read_memory``: what the write reads before it extracts, once: the user's name and the
   entity partitions, shared by the prompt and the plan.
3. ``extract``: one model call (``infer: full | preview``), or the caller's ``triples``
   (``extraction.triples``), authoritative, with no model call.
4. ``_load_for_reconcile``: one load of what reconciliation needs: the entities the
   extraction names, the rows of every slot it touches, the instructions when it has some.
5. ``_reconcile``: the plan (``reconcile``): what is new, what supersedes what.
6. ``commit_turns``: the turns and every fact change in ONE transaction (``turn_transactions``
   keeps each within what a transaction holds). A transaction that loses a race (another
   write changed the same slot) repeats steps 4 and 5 against fresh state, without a second
   model call.
7. ``_publish_changes``: ``FactsChanged`` for the entities whose facts changed.

Nothing is written when extraction fails (502, or 504 on a model timeout) or the input is
invalid. Modes: ``full`` (model extraction), ``triples`` (caller-supplied facts),
``preview`` (steps 1 to 5: report what would change, write nothing), ``none`` (store the
turn only: steps 1 and 6). A chat turn takes the same steps (``ChatService``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agent_memory.access import grants
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import deadline, timeutil
from agent_memory.kernel.errors import (
    Conflict,
    PayloadTooLarge,
    Unprocessable,
    UpstreamModelError,
    UpstreamModelTimeout,
)
from agent_memory.kernel.stored_item import fits_one_transaction
from agent_memory.models.conversation_records import Session
from agent_memory.models.extraction import ExtractionOutput, ExtractionResult
from agent_memory.models.facts import Source
from agent_memory.models.records import Turn
from agent_memory.models.requests import WriteFactsBatchRequest, WriteFactsRequest
from agent_memory.ports import (
    ConditionFailed,
    LanguageModel,
    ModelOutputInvalid,
    ModelTimeout,
    WriteOp,
)
from agent_memory.ports import ModelError as PortModelError
from agent_memory.rules.self_entity import EntityResolver
from agent_memory.services.conversation.sessions import OpenedSession, backoff
from agent_memory.services.events import DomainEvents, EventPublisher, FactsChanged
from agent_memory.services.facts import reconcile as rec
from agent_memory.services.facts.extraction.halving import halves, mentioned_names
from agent_memory.services.facts.extraction.triples import triples_to_extraction
from agent_memory.services.facts.extraction.windows import split_by_passage
from agent_memory.services.facts.repository import Loaded, MemoryRepository, PartitionReads
from agent_memory.services.facts.speakers import attribute_to_speaker, is_other_speaker, speaker_record
from agent_memory.services.facts.turn_transactions import PendingTurn, TurnPlanner, plan_turn_transactions
from agent_memory.services.prompts.extraction import build_extraction_prompt, build_window_prompt

if TYPE_CHECKING:
    from agent_memory.ports import RecordStore
    from agent_memory.services.conversation.sessions import SessionService

__all__ = ["BatchWriteOutcome", "FactsService", "MemoryReads", "PendingTurn", "WriteOutcome", "WriteTarget",
           "plan_turn_transactions", "triples_to_extraction", "with_category"]

log = logging.getLogger("agent_memory.facts")

RECONCILE_ATTEMPTS = 12


@dataclass(frozen=True)
class WriteTarget:
    """Where a write's turns land (step 1): the session, opened once, and the scopes and
    labels the turns store, checked once."""

    opened: OpenedSession
    scopes: list[list[str]]
    labels: list[str]

    @property
    def session(self) -> Session:
        return self.opened.session

    def appended(self) -> WriteTarget:
        """The same target once a first transaction stored the session (a batch's later turns)."""
        return replace(self, opened=self.opened.appended())


@dataclass(frozen=True)
class MemoryReads:
    """What a write read of memory before extracting (step 2), once, passed down to the plan:
    the partitions as read (``PartitionReads``) and the user's name among them. A retry of the
    commit reads afresh (a new ``MemoryReads``)."""

    partitions: PartitionReads
    user_name: str | None


@dataclass
class ReconcileInputs:
    """Step 4's one load: what reconciling one extraction needs from memory."""

    user_name: str | None
    loaded: Loaded
    resolver: EntityResolver
    instructions: Sequence[Any]


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
        given = _given_extraction(req, extraction_override)
        target = self.open_session(ctx, req.session_id, req.scopes, req.labels)
        speaker = speaker_record(req.speaker)
        memory = self.read_memory(ctx) if req.infer != "none" else None
        extraction = (self.extract(ctx, req.text, req.observed_at, speaker=speaker, memory=memory)
                      if req.infer in ("full", "preview") else given)
        extraction = with_category(extraction, req.memory_category, keep_own=req.infer == "triples")
        pending = PendingTurn(req.role, req.text, req.observed_at, req.infer, extraction,
                              "upsert" if req.infer == "triples" else "turn", speaker=speaker)
        if req.infer == "preview":
            return WriteOutcome("preview", req.session_id, None, self._preview(ctx, pending, target, memory),
                                req.memory_category)
        turn_ids, results = self.commit_turns(ctx, target, [pending], memory)
        return WriteOutcome(req.infer, target.session.id, turn_ids[0], results[0], req.memory_category)

    def write_batch(self, ctx: RequestContext, req: WriteFactsBatchRequest) -> BatchWriteOutcome:
        for m in req.messages:
            self._check_size(m.content)
        if req.infer == "triples":
            raise Unprocessable("infer: triples is not available for batches; use POST /facts", field="infer")
        target = self.open_session(ctx, req.session_id, req.scopes, req.labels)
        pending = self._extract_batch(ctx, req)
        for p in pending:
            p.extraction = with_category(p.extraction, req.memory_category, keep_own=False)
        if req.infer == "preview":
            return BatchWriteOutcome(req.session_id, [], [self._preview(ctx, p, target) for p in pending],
                                     req.memory_category)
        # Every model call is done before the first write. A turn with facts then commits in
        # its own transaction, so a later turn reconciles against what the earlier ones stored;
        # the turns between them (no facts) commit together, as many as one transaction holds.
        turn_ids: list[str] = []
        results: list[ExtractionResult | None] = []
        for i, group in enumerate(plan_turn_transactions(ctx, target.session, pending, target.scopes,
                                                         target.labels)):
            ids, res = self.commit_turns(ctx, target if i == 0 else target.appended(), group)
            turn_ids += ids
            results += res
        return BatchWriteOutcome(target.session.id, turn_ids, results, req.memory_category)

    # --- 1. session ---------------------------------------------------------------------

    def open_session(self, ctx: RequestContext, session_id: str | None, scopes: list[list[str]],
                     labels: list[str], *, session_scopes: bool = False) -> WriteTarget:
        """The session the turns land in (``SessionService.open_for_append``: read once) and the
        scopes they store. ``scopes`` are the request's, already the caller's write scopes
        (``RequestContext.write_scopes``). A fact write's turns store them, or an existing
        session's own when the request names none (a session created for one user keeps what is
        written into it there); a chat turn's (``session_scopes``) always store the session's,
        so an existing session's must lie inside the write region too."""
        opened = self._sessions.open_for_append(ctx, session_id, scopes, labels)
        session = opened.session
        if session_scopes:
            if not opened.is_new:
                grants.check_writable(session.scopes or [], ctx.write_region, "session")
            return WriteTarget(opened, session.scopes, labels)
        if scopes or session_id is None:
            return WriteTarget(opened, scopes, labels)
        return WriteTarget(opened, [list(clause) for clause in (session.scopes or [])], labels)

    # --- 2. what the write reads before it extracts --------------------------------------

    def read_memory(self, ctx: RequestContext, partitions: PartitionReads | None = None) -> MemoryReads:
        """The partitions one write reads (each once; ``partitions``: into these, which reads
        before the write share) and the user's name among them."""
        partitions = partitions if partitions is not None else self.repo.partition_reads()
        return MemoryReads(partitions, self.repo.speaker_name(ctx, partitions))

    # --- 3. extraction ------------------------------------------------------------------

    def extract(self, ctx: RequestContext, text: str, observed_at: str | None,
                speaker: dict[str, str] | None = None, memory: MemoryReads | None = None) -> ExtractionOutput:
        """One extraction model call (one retry on invalid output). Writes nothing. In a turn
        said by someone other than the context's user (``speaker``), "I" is that speaker.
        ``memory``: what the write read already (its user's name, the entity list's partition),
        so the prompt and the plan share one read; without it both are read here."""
        other = speaker["name"] if is_other_speaker(speaker) else None
        system, user = build_extraction_prompt(
            text, speaker_name=other or (memory.user_name if memory is not None else self.repo.speaker_name(ctx)),
            known_entities=self.repo.entity_names(ctx, reads=memory.partitions if memory is not None else None),
            observed_at=observed_at or timeutil.now_iso())
        output = self._structured_extraction(system, user)
        return attribute_to_speaker(output, other) if other else output

    def read_and_extract(self, ctx: RequestContext, text: str, observed_at: str | None,
                         partitions: PartitionReads) -> tuple[MemoryReads, ExtractionOutput]:
        """``read_memory`` then ``extract``, as one step a caller can run beside other work
        (chat: after its retrieval read the partitions, while the reply is prepared)."""
        memory = self.read_memory(ctx, partitions)
        return memory, self.extract(ctx, text, observed_at, None, memory)

    def _extract_batch(self, ctx: RequestContext, req: WriteFactsBatchRequest) -> list[PendingTurn]:
        """A batch's turns with their extractions: one call over the whole conversation
        (``extract: whole_conversation``, attributed to the last turn, the one that completes
        it), else one per user turn."""
        extract = req.infer in ("full", "preview")
        if extract and req.extract == "whole_conversation":
            transcript = "\n".join(f"{m.role}: {m.content}" for m in req.messages)
            whole = self.extract(ctx, transcript, req.messages[-1].ts)
            pending = [PendingTurn(m.role, m.content, m.ts, req.infer, None, speaker=speaker_record(m.speaker))
                       for m in req.messages]
            pending[-1].extraction = whole
            return pending
        speakers = [speaker_record(m.speaker) for m in req.messages]
        wanted = [i for i, m in enumerate(req.messages) if extract and m.role == "user"]
        extractions = self._extract_many(ctx, [(req.messages[i].content, req.messages[i].ts, speakers[i])
                                               for i in wanted])
        by_index = dict(zip(wanted, extractions, strict=True))
        return [PendingTurn(m.role, m.content, m.ts, req.infer, by_index.get(i), speaker=speakers[i])
                for i, m in enumerate(req.messages)]

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

    # --- 4. one load of what reconciliation needs ---------------------------------------

    def _load_for_reconcile(self, ctx: RequestContext, extraction: ExtractionOutput,
                            memory: MemoryReads) -> ReconcileInputs:
        """The entities ``extraction`` names, then every row of the slots it touches (resolved
        against those entities), and the instructions when it states some: from ``memory``'s
        partitions where they were read whole."""
        names = mentioned_names(extraction)
        loaded = self.repo.load_entities(ctx, names, memory.partitions)
        resolver = EntityResolver(loaded.entities.values(), speaker_name=memory.user_name)
        slots = rec.slots(extraction, resolver)
        loaded = self.repo.load_for_write(ctx, slots.attributes, slots.relations, names, loaded, memory.partitions)
        instructions = self.repo.instructions(ctx) if extraction.instructions else ()
        return ReconcileInputs(memory.user_name, loaded, resolver, instructions)

    # --- 5. reconcile -------------------------------------------------------------------

    def _reconcile(self, ctx: RequestContext, pending: PendingTurn, source: Source, scopes: list[list[str]],
                   labels: list[str], inputs: ReconcileInputs) -> rec.ReconcilePlan:
        extraction = pending.extraction or ExtractionOutput()
        return rec.reconcile(
            extraction, source=source,
            current_attributes=inputs.loaded.attributes, current_relations=inputs.loaded.relations,
            current_instructions=inputs.instructions, existing_entities=inputs.loaded.entities.values(),
            resolver=inputs.resolver, speaker_name=inputs.user_name, scopes=scopes, labels=labels,
            context_id=ctx.context_id, created_by=ctx.principal,
            observed_at=timeutil.parse(pending.observed_at) if pending.observed_at else None,
            settings=self._reconcile_settings)

    def plan(self, ctx: RequestContext, pending: PendingTurn, turn_id: str, session_id: str | None,
             scopes: list[list[str]], labels: list[str],
             memory: MemoryReads | None = None) -> tuple[rec.ReconcilePlan, Loaded]:
        """Steps 4 and 5 for one turn (or chunk): ``memory`` as the write read it, else read now."""
        memory = memory if memory is not None else self.read_memory(ctx)
        inputs = self._load_for_reconcile(ctx, pending.extraction or ExtractionOutput(), memory)
        source = Source(kind=pending.source_kind, ref=turn_id, session_id=session_id)
        return self._reconcile(ctx, pending, source, scopes, labels, inputs), inputs.loaded

    def plan_ops(self, ctx: RequestContext, target: WriteTarget, memory: MemoryReads | None,
                 pending: PendingTurn, turn_id: str) -> tuple[rec.ReconcilePlan, list[WriteOp]]:
        """Steps 4 and 5 for a turn of ``target``, and the operations that commit the plan."""
        plan, loaded = self.plan(ctx, pending, turn_id, target.session.id, target.scopes, target.labels, memory)
        return plan, self.repo.plan_ops(ctx, plan, loaded)

    def _preview(self, ctx: RequestContext, pending: PendingTurn, target: WriteTarget,
                 memory: MemoryReads | None = None) -> ExtractionResult | None:
        """What ``pending`` would change (steps 4 and 5), written nowhere."""
        if pending.extraction is None:
            return None
        plan, _ = self.plan(ctx, pending, "turn_preview", target.session.id, target.scopes, target.labels, memory)
        return plan.to_result("turn_preview")

    # --- 6. commit ----------------------------------------------------------------------

    def commit_turns(self, ctx: RequestContext, target: WriteTarget, pending: Sequence[PendingTurn],
                     memory: MemoryReads | None = None,
                     extra: Callable[[list[Turn], list[ExtractionResult | None]], list[WriteOp]] | None = None,
                     ) -> tuple[list[str], list[ExtractionResult | None]]:
        """Append the turns to ``target`` and apply each turn's plan in one transaction, then
        publish what changed (step 7). On a lost race, reload and re-plan (the extraction is
        reused, never re-requested). ``memory``: what the write read already, used by the
        first attempt only; ``extra(rows, results)``: unconditioned puts that commit with the
        turns (chat's trace rows), built once before the facts are planned (``results`` empty,
        for the transaction's budget) and again after, with what each turn's facts do (the same
        rows, a few digits apart)."""
        opened = target.opened
        new_turns = [p.new_turn() for p in pending]
        for attempt in range(RECONCILE_ATTEMPTS):
            planner = TurnPlanner(pending, functools.partial(self.plan_ops, ctx, target,
                                                             memory if attempt == 0 else None), extra)
            try:
                rows = self._sessions.append_turns(ctx, opened.session, new_turns, target.scopes, target.labels,
                                                   extra_ops=planner.ops, is_new=opened.is_new,
                                                   row=opened.row if attempt == 0 else None)
            except ConditionFailed:
                backoff(attempt)  # append_turns re-reads the stored session on each attempt
                continue
            self._publish_changes(ctx, planner.results)
            return [r.id for r in rows], list(planner.results)
        raise Conflict("memory is receiving too many concurrent corrections of the same facts; retry")

    # --- 7. publish ---------------------------------------------------------------------

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

    # --- facts without a turn ------------------------------------------------------------

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
        """Steps 4 to 6 for facts without a turn (a document chunk's, derived ones), in halves
        when one transaction cannot hold them (``extraction.halving.halves``)."""
        for attempt in range(RECONCILE_ATTEMPTS):
            plan, loaded = self.plan(ctx, pending, ref, None, scopes, labels)
            ops = self.repo.plan_ops(ctx, plan, loaded)
            fits = fits_one_transaction(ops)
            parts = None if fits else halves(pending.extraction)
            if not fits and parts is None:
                raise PayloadTooLarge("one fact of this chunk needs more than one transaction")
            if parts is not None:
                return [r for half in parts
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


def _given_extraction(req: WriteFactsRequest, override: ExtractionOutput | None) -> ExtractionOutput | None:
    """The extraction a write brings (``infer: triples``): ``override``, else its triples
    read as one (``extraction.triples``); triples with another mode are a 422."""
    if req.infer == "triples":
        return override or triples_to_extraction(req.triples or [])
    if req.triples:
        raise Unprocessable("triples are only accepted with infer: triples", field="triples")
    return None

"""ChatService: one /chat turn.

1. Load the session's transcript window (``window``).
2. Retrieve context, skipping turns already in the window; keep the retrieval trace.
3. Tier 2: with an empty window and no ``bypassCache``, reuse a cached reply for a
   near-identical question in the same scope (0 response calls).
4. Tier 3: one response-model call, with the user turn's extraction running concurrently.
5. On success only: store the user turn (``infer: full``, its extraction committed now),
   the reply (``infer: none``) and both trace rows in one transaction, seed the cache. On
   failure: nothing but the retrieval trace is written (502, or 504 on timeout).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import deadline, timeutil
from agent_memory.kernel.errors import (
    DomainError,
    InvalidRequest,
    PayloadTooLarge,
    UpstreamModelError,
    UpstreamModelTimeout,
)
from agent_memory.models.extraction import ExtractionResult
from agent_memory.models.requests import ChatRequest
from agent_memory.ports import ChatMessage, Completion, ModelError, ModelTimeout, Put
from agent_memory.rules.questions import question_parts
from agent_memory.rules.self_entity import SELF_ENTITY_ID
from agent_memory.services.conversation.chat.citations import MarkerStream, resolve_markers
from agent_memory.services.conversation.chat.window import WINDOW_FETCH, WindowTurn, stored_window
from agent_memory.services.facts.speakers import self_speaker
from agent_memory.services.facts.write import PendingTurn, WriteTarget
from agent_memory.services.operations.traces import memory_counts
from agent_memory.services.prompts.chat import build_messages

if TYPE_CHECKING:
    from agent_memory.config_slices import ModelsConfig
    from agent_memory.ports import LanguageModel
    from agent_memory.services.conversation.chat.cache import ResponseCache
    from agent_memory.services.conversation.sessions import SessionService
    from agent_memory.services.facts.write import FactsService
    from agent_memory.services.operations.traces import TraceStore
    from agent_memory.services.retrieval.retrieval_service import RetrievalService

log = logging.getLogger("agent_memory.chat")

RETRIEVAL_K = 8
MAX_PARTS = 3  # parts of a multi-part question retrieved for separately


@dataclass
class PreparedTurn:
    """Everything decided before the response call."""

    ctx: RequestContext
    req: ChatRequest
    target: WriteTarget  # the session the turns land in, opened and checked once
    window: list[WindowTurn]
    hits: list[Any]
    sources: dict[str, Any]
    messages: list[ChatMessage]
    trace_id: str
    tier: int
    retrieval_ms: float
    model_name: str
    query_vector: Any = None
    cached: dict[str, Any] | None = None
    # The cache entry this turn may store, its id taken before retrieval (``ResponseCache.begin``).
    cache_entry: str | None = None
    # The user turn's reads and extraction (``FactsService.read_and_extract``), run beside the reply.
    extraction: Future | None = None
    degraded: str | None = None
    # Written with the commit (one transaction), or alone when the turn fails.
    retrieval_trace: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)


@dataclass
class Citation:
    """One memory the reply cites (``[S1]``), with the hit's snippet and score."""

    marker: str
    id: str
    kind: str
    snippet: str
    score: float
    document_title: str | None = None
    position_percent: Any = None
    document_id: str | None = None  # a chunk's document, so a reader opens that one (titles repeat)
    session_id: str | None = None  # a turn's session, so a reader opens that session at the turn
    occurred_at: str | None = None
    role: str | None = None
    page: int | None = None  # a PDF chunk's page

    def to_stored(self) -> dict[str, Any]:
        """The response cache's stored form."""
        return {"marker": self.marker, "id": self.id, "kind": self.kind, "snippet": self.snippet,
                "score": self.score, "documentTitle": self.document_title, "documentId": self.document_id,
                "sessionId": self.session_id,
                "positionPercent": self.position_percent, "occurredAt": self.occurred_at, "role": self.role,
                **({"page": self.page} if self.page is not None else {})}

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> Citation:
        return cls(marker=data["marker"], id=data["id"], kind=data["kind"], snippet=data["snippet"],
                   score=data["score"], document_title=data.get("documentTitle"),
                   position_percent=data.get("positionPercent"), occurred_at=data.get("occurredAt"),
                   role=data.get("role"), page=data.get("page"), document_id=data.get("documentId"),
                   session_id=data.get("sessionId"))


@dataclass
class ChatReply:
    """One answered turn: the reply, its citations and what the user turn taught memory."""

    reply: str
    session_id: str
    trace_id: str
    citations: list[Citation]
    memory_updates: ExtractionResult | None
    degraded: str | None = None  # answered without search (``RetrievalResult.degraded``)


@dataclass
class ChatDelta:
    """A piece of the streamed reply (markers already resolved or held back)."""

    text: str


@dataclass
class ChatDone:
    reply: ChatReply


@dataclass
class ChatFailed:
    """The model call failed after streaming began: nothing but the retrieval trace was written."""

    error: DomainError


ChatEvent = ChatDelta | ChatDone | ChatFailed


@dataclass
class ChatStream:
    """A streamed reply's events, and (known before the first event, so the response's
    headers can say it) whether its retrieval was degraded."""

    events: Iterator[ChatEvent]
    degraded: str | None = None

    def __iter__(self) -> Iterator[ChatEvent]:
        return self.events


class ChatService:
    """One chat turn. ``embed(texts)`` embeds the question for the response cache (built on
    first use); ``language_model`` resolves a model by name; ``count(metric)`` adds to an
    invocation metric. ``models`` says which model answers (``models.response``, or one of
    ``models.allowed`` a request names); a message is at most ``message_bytes``
    (``limits.chat_message_bytes``)."""

    def __init__(self, sessions: SessionService, retrieval: RetrievalService, facts: FactsService,
                 traces: TraceStore, cache: ResponseCache,
                 language_model: Callable[[str], LanguageModel], embed: Callable[[Sequence[str]], Any],
                 count: Callable[[str], None] = lambda metric: None, *,
                 models: ModelsConfig, message_bytes: int):
        self._models = models
        self._message_bytes = message_bytes
        self._sessions = sessions
        self._retrieval = retrieval
        self._facts = facts
        self._traces = traces
        self.cache = cache
        self._language_model = language_model
        self._embed = embed
        self._count = count
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="chat-extract")

    # --- public -----------------------------------------------------------------------

    def chat(self, ctx: RequestContext, req: ChatRequest) -> ChatReply:
        turn = self._prepare(ctx, req)
        if turn.cached is not None:
            return self._finish(turn, turn.cached["reply"], _cached_citations(turn.cached), None, from_cache=True)
        completion = self._complete(turn)
        resolved = resolve_markers(completion.text, turn.sources, suppress=bool(req.suppress_markers))
        citations = [self._citation(m, turn.sources[m]) for m in resolved.cited]
        return self._finish(turn, resolved.reply, citations, completion)

    def chat_stream(self, ctx: RequestContext, req: ChatRequest) -> ChatStream:
        """The reply as events. Validation and retrieval happen before the first event (so
        bad input is still a plain 4xx); model failures after that are a ``ChatFailed``."""
        turn = self._prepare(ctx, req)
        return ChatStream(self._stream_events(turn), None if turn.cached is not None else turn.degraded)

    # --- steps --------------------------------------------------------------------------

    def _prepare(self, ctx: RequestContext, req: ChatRequest) -> PreparedTurn:
        if len(req.message.encode("utf-8")) > self._message_bytes:
            raise PayloadTooLarge(f"message is over the {self._message_bytes}-byte limit")
        model_name = req.model or str(self._models.response)
        if req.model and not self._models.is_allowed(req.model):
            allowed = ", ".join(self._models.allowed_names())
            raise InvalidRequest(f"model {req.model!r} is not in models.allowed; allowed: {allowed}", field="model")
        # What this turn may touch, decided once: the session its turns land in, with the
        # scopes they store (the session's; a new one's the request's write scopes), and the
        # region it reads (the request's scopes narrow what it retrieves).
        target = self._facts.open_session(ctx, req.session_id, ctx.write_scopes(req.scopes), req.labels,
                                          session_scopes=True)
        reader = ctx.narrowed(req.scopes)
        session, is_new = target.session, target.opened.is_new
        window = [] if is_new else stored_window(self._sessions.latest_turns(ctx, session.id, WINDOW_FETCH))

        # Taken before retrieval: a write that commits while this turn answers outdates its entry.
        # Earlier writes' projections are awaited first (read-your-writes, bounded): the write
        # mark they move when they become searchable then precedes the entry, not follows it.
        cacheable = not window and not req.bypass_cache
        if cacheable:
            self._retrieval.await_projection(reader.context_id)
        cache_entry = self.cache.begin() if cacheable else None
        # The user turn's write reads each entity partition once: its entity list, read here for
        # retrieval too, and the self entity's facts (the user's name), which retrieval's tier-1
        # reads fetch beside the others in one round, so the write takes them from there.
        partitions = self._facts.repo.partition_reads()
        started = time.perf_counter()
        self._facts.repo.read_entities(ctx, partitions)
        result = self._retrieve(reader, req.message, [t.id for t in window], partitions)
        retrieval_ms = (time.perf_counter() - started) * 1000
        # The user turn's reads and extraction run while the prompt is built and the model
        # answers; they are committed only after the reply succeeds (or discarded).
        extraction = deadline.submit_in_context(self._pool, self._facts.read_and_extract, ctx, req.message,
                                                timeutil.now_iso(), partitions)
        try:
            hits = list(result.hits)
            messages, memory = build_messages(req.message, hits, window, self._instructions(reader))
            turn = PreparedTurn(ctx=ctx, req=req, target=target, window=window, hits=hits, sources=memory.markers,
                                messages=messages, trace_id=self._traces.new_id(), tier=3,
                                retrieval_ms=retrieval_ms, model_name=model_name,
                                degraded=result.degraded, cache_entry=cache_entry, extraction=extraction,
                                retrieval_trace=_retrieval_trace(req.message, None if is_new else session.id,
                                                                 window, result, memory.markers, retrieval_ms))
            if cache_entry is not None:
                self._look_up_reply(turn, reader)
        except BaseException:
            extraction.cancel()  # nothing is answered: the user turn is not stored
            raise
        return turn

    def _look_up_reply(self, turn: PreparedTurn, reader: RequestContext) -> None:
        """Tier 2: a cached reply to a near-identical question in the reader's region."""
        turn.query_vector = self._embed([turn.req.message])[0]
        hit = self.cache.lookup(reader, turn.model_name, turn.query_vector)
        if hit is not None:
            turn.cached, turn.tier = hit.response, 2
            self._count("CacheHits")

    def _retrieve(self, reader: RequestContext, message: str, exclude: list[str], reads: Any) -> Any:
        """The question's retrieval; a question in several parts (``rules.questions.question_parts``)
        retrieves for each part and takes their hits in turns (each part's best first), so every
        part has what answers it in the prompt."""
        parts = question_parts(message)[:MAX_PARTS]
        if len(parts) < 2:
            parts = [message]
        results = [self._retrieval.retrieve_resolved(reader, part, k=RETRIEVAL_K, exclude_ids=exclude, reads=reads)
                   for part in parts]
        if len(results) == 1:
            return results[0]
        merged: dict[str, Any] = {}
        for rank in range(RETRIEVAL_K):
            for result in results:
                if rank < len(result.hits):
                    merged.setdefault(result.hits[rank].id, result.hits[rank])
        first = results[0]
        trace = {**first.trace, "parts": parts,
                 "askedKeys": sorted({k for r in results for k in r.trace.get("askedKeys", [])})}
        return dataclasses.replace(first, hits=list(merged.values())[:RETRIEVAL_K * len(parts)], trace=trace,
                                   tier=1 if all(r.tier == 1 for r in results) else 3,
                                   degraded=next((r.degraded for r in results if r.degraded), None))

    def _instructions(self, ctx: RequestContext) -> list[str]:
        return [i.description for i in self._facts.repo.instructions(ctx, limit=20)]

    def _complete(self, turn: PreparedTurn) -> Completion:
        model = self._language_model(turn.model_name)
        try:
            return model.complete(turn.messages)
        except ModelTimeout as exc:
            self._discard(turn)
            raise UpstreamModelTimeout(f"response model timed out: {exc}") from exc
        except ModelError as exc:
            self._discard(turn)
            raise UpstreamModelError(f"response model failed: {exc}") from exc

    def _discard(self, turn: PreparedTurn) -> None:
        if turn.extraction is not None:
            turn.extraction.cancel()
        self._trace_failed(turn)

    def _trace_failed(self, turn: PreparedTurn) -> None:
        """A turn that stores nothing still leaves its retrieval trace (once)."""
        if turn.retrieval_trace:
            trace, turn.retrieval_trace = turn.retrieval_trace, {}
            try:
                self._traces.put(turn.ctx, turn.trace_id, "retrieval", trace)
            except Exception:  # noqa: BLE001 - the turn's own error is the one to report
                log.warning("could not write the retrieval trace of a failed chat turn", exc_info=True)

    def _stream_events(self, turn: PreparedTurn) -> Iterator[ChatEvent]:
        req = turn.req
        if turn.cached is not None:
            yield ChatDelta(turn.cached["reply"])
            yield ChatDone(self._finish(turn, turn.cached["reply"], _cached_citations(turn.cached), None,
                                        from_cache=True))
            return
        model = self._language_model(turn.model_name)
        markers = MarkerStream(turn.sources, suppress=bool(req.suppress_markers))
        pieces: list[str] = []
        try:
            for delta in model.stream(turn.messages):
                # A call timeout bounds each read, not a model that keeps writing: the stream
                # ends at the request deadline (an error frame; nothing is written).
                if deadline.expired():
                    raise UpstreamModelTimeout("the response model was still writing at the request deadline")
                pieces.append(delta)
                for ready in markers.feed(delta):
                    yield ChatDelta(ready)
            for ready in markers.close():
                yield ChatDelta(ready)
            text = "".join(pieces)
            resolved = resolve_markers(text, turn.sources, suppress=bool(req.suppress_markers))
            citations = [self._citation(m, turn.sources[m]) for m in resolved.cited]
            completion = Completion(text=text, model=turn.model_name,
                                    prompt_tokens=sum(len(m.content) for m in turn.messages) // 4,
                                    completion_tokens=len(text) // 4)
            reply = self._finish(turn, resolved.reply, citations, completion)
        except (ModelError, UpstreamModelError, UpstreamModelTimeout) as exc:
            self._discard(turn)
            timed_out = isinstance(exc, ModelTimeout | UpstreamModelTimeout)
            yield ChatFailed((UpstreamModelTimeout if timed_out else UpstreamModelError)(str(exc)))
            return
        yield ChatDone(reply)

    def _finish(self, turn: PreparedTurn, reply: str, citations: list[Citation],
                completion: Completion | None, *, from_cache: bool = False) -> ChatReply:
        ctx, req = turn.ctx, turn.req
        try:
            try:
                memory, extraction = turn.extraction.result(timeout=deadline.remaining())
            except (UpstreamModelError, UpstreamModelTimeout):
                raise  # the reply cannot be stored without its user turn's extraction
            except FutureTimeout as exc:  # the extraction's own call timeout fits the deadline; belt and braces
                raise UpstreamModelTimeout("the extraction model did not answer before the request deadline") from exc
            now = timeutil.now_iso()
            # The user turn's speaker is the context's own user; the assistant's role says who it is.
            speaker = self_speaker(memory.user_name)
            # A reply that cites no memory (a refusal) is kept in the transcript, never as evidence.
            pending = [PendingTurn("user", req.message, now, "full", extraction, speaker=speaker),
                       PendingTurn("assistant", reply, now, "none", None, unsupported=not citations)]

            def traces(rows: list[Any], results: list[Any]) -> list[Put]:
                """Both trace rows, committed with the turns (so one write, not two more), with
                what the turns' facts did (``traces.memory_counts``)."""
                elapsed = (time.perf_counter() - turn.started) * 1000
                response = {
                    "tier": turn.tier, "model": None if from_cache else turn.model_name,
                    "promptTokens": completion.prompt_tokens if completion else 0,
                    "completionTokens": completion.completion_tokens if completion else 0,
                    "hitsUsed": [c.id for c in citations], "latencyMs": round(elapsed, 2),
                    "turnIds": [r.id for r in rows], "cached": from_cache, **memory_counts(results)}
                return [Put(self._traces.record(ctx, turn.trace_id, "retrieval", turn.retrieval_trace)),
                        Put(self._traces.record(ctx, turn.trace_id, "response", response))]

            turn_ids, results = self._facts.commit_turns(ctx, turn.target, pending, memory, extra=traces)
        except BaseException:
            self._trace_failed(turn)
            raise
        memory_updates = results[0]
        # A degraded reply (search was down) never seeds the cache: it would outlive the outage.
        if not from_cache and not turn.window and not req.bypass_cache and turn.query_vector is not None \
                and turn.degraded is None:
            cited = [turn.sources[c.marker.strip("[]")] for c in citations]
            entities = {e for h in cited for e in cited_entities(h)}
            if any(h.kind == "turn" and (h.role or "user") == "user" for h in cited):
                entities.add(SELF_ENTITY_ID)  # a user's own statement is about the user
            self.cache.store_reply(ctx.narrowed(req.scopes), turn.model_name, req.message, turn.query_vector,
                                   {"reply": reply, "citations": [c.to_stored() for c in citations]}, entities,
                                   # its own turns too: forgetting the question (or the reply) drops the entry
                                   [h.id for h in cited] + list(turn_ids), entry_id=turn.cache_entry)
        return ChatReply(reply=reply, session_id=turn.target.session.id, trace_id=turn.trace_id, citations=citations,
                         memory_updates=memory_updates, degraded=None if from_cache else turn.degraded)

    @staticmethod
    def _citation(marker: str, hit: Any) -> Citation:
        meta = getattr(hit, "metadata", None) or {}
        return Citation(marker=f"[{marker}]", id=hit.id, kind=hit.kind, snippet=hit.text[:280],
                        score=round(float(hit.score), 6), document_title=meta.get("documentTitle"),
                        position_percent=meta.get("positionPercent"), occurred_at=getattr(hit, "occurred_at", None),
                        role=getattr(hit, "role", None) if hit.kind == "turn" else None,
                        page=meta.get("page") if hit.kind == "chunk" else None,
                        document_id=meta.get("documentId") if hit.kind == "chunk" else None,
                        session_id=getattr(hit, "session_id", None) if hit.kind == "turn" else None)


def _retrieval_trace(query: str, session_id: str | None, window: list[WindowTurn], result: Any,
                     sources: dict[str, Any], retrieval_ms: float) -> dict[str, Any]:
    """The turn's retrieval trace row (written with the commit, or alone when the turn fails)."""
    trace = {
        "query": query, "sessionId": session_id, "tier": result.tier,
        # the keys the question asks for and the one tier 1 answered with (None: no tier-1 answer)
        "askedKeys": result.trace.get("askedKeys", []), "tier1Key": result.trace.get("tier1Key"),
        "excluded": [t.id for t in window], "latencyMs": round(retrieval_ms, 2),
        "hits": [{"marker": m, "id": h.id, "kind": h.kind, "score": round(float(h.score), 6)}
                 for m, h in sources.items()]}
    if result.degraded is not None:
        trace["degraded"] = result.degraded
    if result.trace.get("projectionPending"):
        trace["projectionPending"] = True  # some writes were not searchable yet
    return trace


def _cached_citations(cached: dict[str, Any]) -> list[Citation]:
    return [Citation.from_stored(c) for c in cached["citations"]]


def cited_entities(hit: Any) -> list[str]:
    """Entities a cited fact is about (a later change to their facts invalidates the reply)."""
    meta = getattr(hit, "metadata", None) or {}
    return [v for k in ("entity", "subject", "object", "actor") if isinstance(v := meta.get(k), str)
            and v.startswith("entity:")]

# Generated from client/aio.py by tests/sdk/sync_from_async.py: do not edit. Change client/aio.py, then run
# `python tests/sdk/sync_from_async.py --write` (tests/sdk/test_sync_generated.py fails while this file differs).
"""``AgentMemory``: the synchronous client of the whole API.

    with AgentMemory("acme-prod", api_key=...) as memory:
        session = memory.sessions.create(scopes=["org/acme/user/alice"])
        result = memory.chat("What do you know about me?", session_id=session.id)
        print(result.reply, result.citations, result.memory_updates.corrections)
        session.close()

``AsyncAgentMemory`` (``agent_memory.client.aio``) has the same methods as coroutines.
Results are the service's own pydantic models (``agent_memory.models.wire``); errors are
``ApiError`` subclasses (``agent_memory.client.errors``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar, overload
from urllib.parse import quote

import httpx
from pydantic import BaseModel, PrivateAttr

from agent_memory.client import _common as common
from agent_memory.client._calls import (
    Calls,
    DocumentSource,
    ExportSource,
    Scopes,
    _document_content,
    export_bytes,
    job_failure,
    operation,
)
from agent_memory.client.errors import AgentMemoryError, NotFoundError
from agent_memory.client.streaming import ChatStream
from agent_memory.client.transport import Call, Transport
from agent_memory.models import wire

M = TypeVar("M", bound=BaseModel)


class AgentMemory:
    """One context (and partition, and principal) of an agent-memory service.

    ``base_url`` and ``api_key`` default to ``AGENT_MEMORY_URL`` / ``AGENT_MEMORY_API_KEY``;
    ``stream_url`` (default ``AGENT_MEMORY_STREAM_URL``: a deployed stack's ``ChatStreamUrl``) is
    where ``chat(..., stream=True)`` goes, so its deltas arrive as they are made; without it
    streamed chat goes to ``base_url`` (on AWS the HTTP API then delivers the frames at once).
    ``on_behalf_of`` sends ``X-Spectron-On-Behalf-Of`` on every call. ``timeout`` bounds each
    HTTP attempt; ``retry_budget_s`` bounds a call's retries (see ``transport``)."""

    def __init__(self, context: str, base_url: str | None = None, api_key: str | None = None,
                 partition: str | None = None, on_behalf_of: str | None = None,
                 timeout: float = common.DEFAULT_TIMEOUT_S, *, max_retries: int = common.DEFAULT_MAX_RETRIES,
                 retry_budget_s: float = common.DEFAULT_RETRY_BUDGET_S,
                 context_byte_budget: int = common.CONTEXT_BYTE_BUDGET,
                 download_concurrency: int = common.DOWNLOAD_CONCURRENCY, stream_url: str | None = None,
                 sleep: Callable[[float], None] | None = None,
                 http_transport: httpx.BaseTransport | None = None):
        self.context_id = context
        self.partition = partition
        self.context_byte_budget = context_byte_budget
        self.download_concurrency = download_concurrency
        self.stream_url = common.stream_url(stream_url)
        url, headers = common.connection(base_url, api_key, partition, on_behalf_of)
        self.base_url = url.rstrip("/")
        kwargs: dict[str, Any] = {"sleep": sleep} if sleep is not None else {}
        self._transport = Transport(url, headers, timeout=timeout, retry_budget_s=retry_budget_s,
                                    max_retries=max_retries, http_transport=http_transport, **kwargs)
        self._calls = Calls(context)
        self.sessions = Sessions(self)
        self.entities = Entities(self)
        self.attributes = Attributes(self)
        self.relations = Relations(self)
        self.actions = Actions(self)
        self.instructions = Instructions(self)
        self.uncertainty = Uncertainty(self)
        self.documents = Documents(self)
        self.traces = Traces(self)
        self.receipts = Receipts(self)

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> AgentMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, call: Call[Any]) -> Any:
        return self._transport.send(call)

    def _paged(self, path: str, params: dict[str, Any], key: str, item: type[M], page_size: int | None,
                 *, root: bool = False
                     ) -> Iterator[M]:
        cursor: str | None = None
        while True:
            page = self._send(self._calls.page(path, params, cursor, page_size, root=root))
            for row in page[key]:
                yield item.model_validate(row)
            cursor = common.next_cursor(page)
            if cursor is None:
                return

    # --- service ----------------------------------------------------------------------

    @operation("listContexts")
    def contexts(self, *, page_size: int | None = None) -> Iterator[wire.ContextInfo]:
        """The contexts this key may use, with their partitions (by name, following pages lazily)."""
        return self._paged("/api/v1/contexts", {}, "items", wire.ContextInfo, page_size, root=True)

    @operation("listThreads")
    def threads(self, *, page_size: int | None = None) -> Iterator[wire.Thread]:
        """The threads of this context and partition the caller may see, oldest first."""
        return self._paged("/threads", {}, "items", wire.Thread, page_size)

    @operation("mcp")
    def mcp_url(self) -> str:
        """The URL an MCP host registers for this context (``POST /api/v1/{context_id}/mcp``,
        streamable HTTP), called with this client's key as its bearer token (docs/mcp.md).
        No request is made."""
        return f"{self.base_url}/api/v1/{quote(self.context_id, safe='')}/mcp"

    @operation("getOpenApiJson")
    def openapi(self) -> dict[str, Any]:
        """The service's OpenAPI document (``GET /api/v1/openapi.json``)."""
        return self._send(self._calls.openapi())

    @operation("getOpenApiYaml")
    def openapi_yaml(self) -> str:
        """The same document as YAML text (``GET /api/v1/openapi.yaml``)."""
        return self._send(self._calls.openapi_yaml())

    @operation("health")
    def health(self) -> wire.Health:
        return self._send(self._calls.health())

    # --- writes -------------------------------------------------------------------------

    @operation("writeFacts")
    def remember(self, text: str, session_id: str | None = None, *, infer: str | None = None,
                 triples: list[dict[str, Any]] | None = None, scopes: Scopes | None = None,
                 labels: list[str] | None = None, memory_category: str | None = None, role: str | None = None,
                 observed_at: str | None = None, idempotency_key: str | None = None) -> wire.WriteFactsResponse:
        """Stores one turn and returns what it extracted (``result.extraction``); retried
        safely under one idempotency key (yours, or one made for this call)."""
        return self._send(self._calls.remember(
            text, session_id=session_id, infer=infer, triples=triples, scopes=scopes, labels=labels,
            memory_category=memory_category, role=role, observed_at=observed_at, idempotency_key=idempotency_key))

    @operation("writeFactsBatch")
    def remember_many(self, messages: Iterable[Any], session_id: str | None = None, *, extract: str | None = None,
                      infer: str | None = None, scopes: Scopes | None = None, labels: list[str] | None = None,
                      memory_category: str | None = None, idempotency_key: str | None = None
                      ) -> wire.WriteFactsBatchResponse:
        """Stores a conversation: messages are dicts (``role``, ``content``, ``ts``),
        ``(role, content)`` pairs or strings (user turns)."""
        return self._send(self._calls.remember_many(
            messages, session_id=session_id, extract=extract, infer=infer, scopes=scopes, labels=labels,
            memory_category=memory_category, idempotency_key=idempotency_key))

    @operation("forget")
    def forget(self, query: str, *, limit: int | None = None, min_score: float | None = None,
               dry_run: bool | None = None, purge: bool | None = None) -> wire.ForgetResponse:
        return self._send(self._calls.forget(query, limit=limit, min_score=min_score, dry_run=dry_run, purge=purge))

    # --- memory care (docs/memory-care.md) -----------------------------------------------

    @operation("consolidate")
    def consolidate(self, *, dry_run: bool | None = None, fact_limit: int | None = None,
                    observation_limit: int | None = None, idempotency_key: str | None = None
                    ) -> wire.ConsolidateResponse:
        """Repeated facts become observations (``result.outcomes``); ``dry_run`` writes nothing."""
        return self._send(self._calls.consolidate(dry_run=dry_run, fact_limit=fact_limit,
                                                   observation_limit=observation_limit,
                                                   idempotency_key=idempotency_key))

    @operation("reflect")
    def reflect(self, query: str, *, persist: bool | None = None,
                idempotency_key: str | None = None) -> wire.ReflectResponse:
        """What memory holds on ``query`` (``result.reflection``, ``result.evidence``)."""
        return self._send(self._calls.reflect(query, persist=persist, idempotency_key=idempotency_key))

    @operation("elaborate")
    def elaborate(self, *, entity_ref: str | None = None, budget: int | None = None, dry_run: bool | None = None,
                  sweep: bool | None = None, idempotency_key: str | None = None) -> wire.ElaborateResponse:
        """Relations memory implies but does not state (``result.outcomes``)."""
        return self._send(self._calls.elaborate(entity_ref=entity_ref, budget=budget, dry_run=dry_run, sweep=sweep,
                                                 idempotency_key=idempotency_key))

    @operation("lifecycleDecay")
    def decay(self) -> wire.LifecycleResponse:
        return self._send(self._calls.decay())

    @operation("lifecycleExpire")
    def expire(self, *, dry_run: bool | None = None) -> wire.LifecycleResponse:
        """Remove rows past their explicit end or the configured retention (``dry_run``: list them)."""
        return self._send(self._calls.expire(dry_run=dry_run))

    @operation("fsck")
    def fsck(self, *, check: str | None = None, duplicate_threshold: float | None = None,
             max_results: int | None = None, include_echoes: bool | None = None) -> wire.FsckReport:
        """Contradictions, duplicates and injection-like text in memory (read-only);
        ``include_echoes``: compare questions and assistant replies as duplicates too."""
        return self._send(self._calls.fsck(check=check, duplicate_threshold=duplicate_threshold,
                                            max_results=max_results, include_echoes=include_echoes))

    # --- reads --------------------------------------------------------------------------

    @operation("query")
    def query(self, query: str, *, k: int | None = None, mode: str | None = None, include: list[str] | None = None,
              as_of: str | None = None, session_id: str | None = None, labels: list[str] | None = None,
              at_instant: str | None = None, valid_from: str | None = None, valid_until: str | None = None,
              lens: Scopes | None = None, scope_view: str | None = None, source: str | None = None,
              location: dict[str, Any] | None = None) -> wire.QueryResponse:
        """Ranked memory for ``query`` (``result.hits``, best first). The recall filters:
        ``include`` (hit kinds, ``facts``, ``passages``), ``as_of`` / ``at_instant`` (the
        state at one instant), ``valid_from`` / ``valid_until`` (validity overlapping a
        window), ``lens`` + ``scope_view`` (a read narrowing), ``source`` (``turn``,
        ``chunk`` or a document source), ``location`` (``{"near": {"lat", "lng",
        "radiusKm"}}`` or ``{"within": WKT}``); see docs/http-api.md."""
        return self._send(self._calls.query(
            query, k=k, mode=mode, include=include, as_of=as_of, session_id=session_id, labels=labels,
            at_instant=at_instant, valid_from=valid_from, valid_until=valid_until, lens=lens, scope_view=scope_view,
            source=source, location=location))

    recall = query

    @operation("recallContext")
    def context(self, query: str, *, k: int | None = None, subject: str | None = None, include: list[str] | None = None,
              as_of: str | None = None, session_id: str | None = None, labels: list[str] | None = None,
              at_instant: str | None = None, valid_from: str | None = None, valid_until: str | None = None,
              lens: Scopes | None = None, scope_view: str | None = None, source: str | None = None,
              location: dict[str, Any] | None = None) -> wire.ContextResponse:
        """Retrieved memory formatted for a prompt (``result.context``, ``result.sources``), with
        the recall filters of ``query``."""
        return self._send(self._calls.context(
            query, k=k, subject=subject, include=include, as_of=as_of, session_id=session_id, labels=labels,
            at_instant=at_instant, valid_from=valid_from, valid_until=valid_until, lens=lens, scope_view=scope_view,
            source=source, location=location))

    @operation("getState")
    def state(self, limit: int | None = None) -> wire.State:
        return self._send(self._calls.state(limit=limit))

    @operation("inspect")
    def inspect(self, ref: str, *, as_of: str | None = None, at_instant: str | None = None,
                valid_from: str | None = None, valid_until: str | None = None) -> wire.Inspection:
        """One object by reference (``entity:<type>/<name>``, ``attribute:<type>/<name>/<key>``,
        ``relation:<type>/<name>/<label>/<type>/<name>``, ``trace:<id>``) with its history and
        provenance, current or as of an instant (``as_of``/``at_instant``) or over a window."""
        return self._send(self._calls.inspect(ref, as_of=as_of, at_instant=at_instant, valid_from=valid_from,
                                                valid_until=valid_until))

    @operation("listAudit")
    def audit(self, limit: int | None = None, cursor: str | None = None) -> wire.AuditPage:
        """One page of the audit trail (admin bypasses, delegated calls); needs an admin key."""
        return self._send(self._calls.audit(limit=limit, cursor=cursor))

    @operation("getProfile")
    def profile(self, limit: int | None = None) -> wire.Profile:
        return self._send(self._calls.profile(limit=limit))

    # --- administration ------------------------------------------------------------------

    @operation("whoami")
    def whoami(self) -> wire.Whoami:
        """Who this key is here: its principal, grants, and what a request may do."""
        return self._send(self._calls.whoami())

    @operation("createKey")
    def create_key(self, name: str | None = None, grants: dict[str, list[str]] | None = None,
                   ttl_seconds: int | None = None, contexts: list[str] | None = None) -> wire.MintedKey:
        """Mint a key for this principal, bound to this context (the secret is in the reply only)."""
        return self._send(self._calls.create_key(name=name, grants=grants, ttl_seconds=ttl_seconds,
                                                     contexts=contexts))

    @operation("listKeys")
    def list_keys(self) -> list[wire.KeyDetail]:
        return self._send(self._calls.list_keys())

    @operation("rotateKey")
    def rotate_key(self, name: str, ttl_seconds: int | None = None,
                   overlap_seconds: int | None = None) -> wire.MintedKey:
        return self._send(self._calls.rotate_key(name, ttl_seconds=ttl_seconds, overlap_seconds=overlap_seconds))

    @operation("deleteKey")
    def delete_key(self, name: str) -> None:
        return self._send(self._calls.delete_key(name))

    @operation("listPrincipals")
    def list_principals(self) -> list[wire.Principal]:
        return self._send(self._calls.list_principals())

    @operation("getPrincipal")
    def get_principal(self, principal_id: str) -> wire.Principal:
        return self._send(self._calls.get_principal(principal_id))

    @operation("grantPrincipal")
    def grant(self, principal_id: str, path: str, verbs: list[str]) -> wire.Principal:
        return self._send(self._calls.change_grant(principal_id, path, verbs, revoke=False))

    @operation("revokePrincipalGrant")
    def revoke_grant(self, principal_id: str, path: str, verbs: list[str]) -> wire.Principal:
        return self._send(self._calls.change_grant(principal_id, path, verbs, revoke=True))

    @operation("getEffectiveGrants")
    def effective_grants(self, principal_id: str, path: str, as_of: str | None = None) -> wire.EffectiveGrants:
        return self._send(self._calls.effective_grants(principal_id, path, as_of=as_of))

    @operation("registerScope")
    def register_scope(self, path: str, display_name: str | None = None,
                       description: str | None = None) -> wire.ScopeNode:
        return self._send(self._calls.register_scope(path, display_name=display_name, description=description))

    @operation("listScopes")
    def list_scopes(self) -> list[wire.ScopeNode]:
        return self._send(self._calls.list_scopes())

    @operation("deleteScope")
    def delete_scope(self, path: str) -> None:
        """Tombstone a registered scope (what was written under it stays)."""
        return self._send(self._calls.delete_scope(path))

    @operation("exportContext")
    def export_context(self, *, partition: str | None = None, include_principals: bool | None = None,
                       originals: bool | None = None) -> Iterator[str]:
        """The context's export (docs/export.md), one NDJSON line at a time as the service
        streams it. Needs the admin verb; ``include_principals`` adds grants (never keys)."""
        response = self._transport.response(self._calls.export_context(
            partition=partition, include_principals=include_principals, originals=originals), stream=True)
        try:
            for line in response.iter_lines():
                if line:
                    yield line
        finally:
            response.close()

    @operation("importContext")
    def import_context(self, source: ExportSource) -> wire.ImportResponse:
        """Write an export into this client's context (ids kept; re-keyed from another context).
        ``source``: bytes, text, a path, a binary file or lines. Idempotent."""
        return self._send(self._calls.import_context(export_bytes(source)))

    @operation("startExportJob")
    def start_export_job(self, *, partition: str | None = None, include_principals: bool | None = None,
                         originals: bool | None = None) -> wire.PortabilityJob:
        """Start an export as a job (docs/export.md "The job form"): for a context past what one
        response carries on a deployed stack. Poll ``get_export_job``; or use ``export_job``."""
        return self._send(self._calls.start_export_job(partition=partition, include_principals=include_principals,
                                                          originals=originals))

    @operation("getExportJob")
    def get_export_job(self, job_id: str) -> wire.PortabilityJob:
        """An export job's state and progress; once succeeded, its presigned ``download_url``."""
        return self._send(self._calls.get_export_job(job_id))

    @operation("createImportJob")
    def create_import_job(self, size: int) -> wire.PortabilityJob:
        """An import job awaiting its stream: PUT ``size`` bytes to its ``upload_url`` with its
        ``upload_headers``, then ``start_import_job``; or use ``import_job``."""
        return self._send(self._calls.create_import_job(size))

    @operation("startImportJob")
    def start_import_job(self, job_id: str) -> wire.PortabilityJob:
        return self._send(self._calls.start_import_job(job_id))

    @operation("getImportJob")
    def get_import_job(self, job_id: str) -> wire.PortabilityJob:
        """An import job's state and progress; once done, its ``result`` or ``error``."""
        return self._send(self._calls.get_import_job(job_id))

    def _wait_job(self, job: wire.PortabilityJob, read: Callable[[str], Any], poll_interval: float,
                   timeout: float, on_progress: Callable[[wire.PortabilityJob], None] | None) -> wire.PortabilityJob:
        deadline = time.monotonic() + timeout
        while job.state not in ("succeeded", "failed"):
            if time.monotonic() > deadline:
                raise AgentMemoryError(f"the {job.kind} job {job.id} is still {job.state} after {timeout} s")
            time.sleep(poll_interval)
            job = read(job.id)
            if on_progress is not None:
                on_progress(job)
        if job.state == "failed":
            raise job_failure(job)
        return job

    def export_job(self, *, partition: str | None = None, include_principals: bool | None = None,
                   originals: bool | None = None, poll_interval: float = 1.0, timeout: float = 3600.0,
                   on_progress: Callable[[wire.PortabilityJob], None] | None = None) -> bytes:
        """The export stream through the job form: start, wait (``on_progress`` sees each
        poll), download from the presigned URL (no API key goes there). Raises the job's
        problem as an ``ApiError`` when it failed."""
        job = self.start_export_job(partition=partition, include_principals=include_principals,
                                     originals=originals)
        job = self._wait_job(job, self.get_export_job, poll_interval, timeout, on_progress)
        with httpx.Client(timeout=timeout) as http:
            response = http.get(job.download_url or "")
        if response.status_code >= 300:
            raise AgentMemoryError(f"the export download answered {response.status_code}: {response.text[:300]}")
        return response.content

    def import_job(self, source: ExportSource, *, poll_interval: float = 1.0, timeout: float = 3600.0,
                   on_progress: Callable[[wire.PortabilityJob], None] | None = None) -> wire.ImportResponse:
        """``import_context`` through the job form: the stream PUT to a presigned URL, then
        checked whole and written by the service's worker. Raises the problem ``POST /import``
        would have answered (a bad line names it) as an ``ApiError``."""
        content = export_bytes(source)
        job = self.create_import_job(len(content))
        with httpx.Client(timeout=timeout) as http:
            response = http.put(job.upload_url or "", content=content, headers=job.upload_headers or {})
        if response.status_code >= 300:
            raise AgentMemoryError(f"the presigned upload answered {response.status_code}: {response.text[:300]}")
        job = self.start_import_job(job.id)
        job = self._wait_job(job, self.get_import_job, poll_interval, timeout, on_progress)
        return wire.ImportResponse.model_validate(job.result or {})

    @operation("forgetScope")
    def forget_scope(self, path: str, *, continuation: str | None = None) -> wire.ForgetScopeResponse:
        """Remove everything written under the subtree that this key may read and write; when
        the answer is not ``complete``, call again with its ``continuation``."""
        return self._send(self._calls.forget_scope(path, continuation))

    # --- chat ---------------------------------------------------------------------------

    @overload
    def chat(self, message: str, session_id: str | None = None, stream: Literal[False] = False, *,
             scopes: Scopes | None = None, labels: list[str] | None = None, model: str | None = None,
             bypass_cache: bool | None = None, suppress_markers: bool | None = None) -> wire.ChatResponse: ...

    @overload
    def chat(self, message: str, session_id: str | None = None, stream: Literal[True] = True, *,
             scopes: Scopes | None = None, labels: list[str] | None = None, model: str | None = None,
             bypass_cache: bool | None = None, suppress_markers: bool | None = None) -> ChatStream: ...

    @operation("chat")
    def chat(self, message: str, session_id: str | None = None, stream: bool = False, *,
             scopes: Scopes | None = None, labels: list[str] | None = None, model: str | None = None,
             bypass_cache: bool | None = None, suppress_markers: bool | None = None
             ) -> wire.ChatResponse | ChatStream:
        """One chat turn. With ``stream=True``, a ``ChatStream``: text deltas, then the
        final ``ChatResponse`` (reply, citations, memory updates)."""
        call = self._calls.chat(message, session_id=session_id, stream=stream, scopes=scopes, labels=labels,
                                model_name=model, bypass_cache=bypass_cache, suppress_markers=suppress_markers)
        if not stream:
            return self._send(call)
        streamed = common.on_stream_url(call, self.stream_url)
        return ChatStream(self._transport.response(streamed, stream=True))

    # --- threads ------------------------------------------------------------------------

    @operation("appendThreadTurn")
    def append_thread(self, thread_id: str, text: str, *, entity_id: str | None = None,
                      metadata: dict[str, Any] | None = None, acl_readers: list[str] | None = None,
                      idempotency_key: str | None = None) -> common.ThreadTurnRef:
        """Appends one turn. ``acl_readers=None`` sends no list (the thread's default
        applies); ``[]`` quarantines the turn. The idempotency key is reused across this
        call's retries; durable workers pass their own, persisted with the message."""
        response = self._send(self._calls.append_thread(
            thread_id, text, entity_id=entity_id, metadata=metadata, acl_readers=acl_readers,
            idempotency_key=idempotency_key))
        return common.turn_ref(response.status_code, response.json())

    @operation("listThreadTurns")
    def list_thread_turns(self, thread_id: str, *, after_index: int | None = None, entity_id: str | None = None,
                          page_size: int = 100) -> Iterator[wire.ThreadTurn]:
        """Every readable turn after ``after_index``, in order, following pages lazily."""
        params: dict[str, Any] = {"limit": page_size, "after_index": after_index, "entity_id": entity_id}
        while True:
            page = self._send(self._calls.thread_turns(thread_id, params))
            for row in page["items"]:
                yield wire.ThreadTurn.model_validate(row)
            cursor = common.next_cursor(page)
            if cursor is None:
                return
            params = {**params, "after_index": None, "cursor": cursor}

    @operation("getThreadTurn")
    def get_thread_turn(self, thread_id: str, turn_index: int) -> wire.ThreadTurn:
        return self._send(self._calls.get_thread_turn(thread_id, turn_index))

    @operation("getThread")
    def get_thread(self, thread_id: str) -> wire.Thread:
        return self._send(self._calls.get_thread(thread_id))

    @operation("setThreadAcl")
    def set_thread_acl(self, thread_id: str, acl_readers: list[str] | None) -> wire.Thread:
        return self._send(self._calls.set_thread_acl(thread_id, acl_readers))

    @operation("threadContext")
    def thread_context(self, thread_id: str, query: str, *, last_n_turns: int = 10, recent_first: bool = False,
                       entity_id: str | None = None) -> list[common.MemoryItem]:
        """The latest ``last_n_turns`` turns, then up to five older semantic matches, as one
        flat list. Text the service did not inline is downloaded eight turns at a time, and
        all text counts against ``context_byte_budget`` (16 MiB); past it no later batch is
        scheduled and ``AgentMemoryError`` is raised."""
        items = self._send(self._calls.thread_context(thread_id, query, last_n_turns=last_n_turns,
                                                      recent_first=recent_first, entity_id=entity_id))
        items = common.unique(items)
        budget = common.ByteBudget(self.context_byte_budget, len(items))
        out: list[common.MemoryItem] = []
        step = self.download_concurrency
        with ThreadPoolExecutor(max_workers=step, thread_name_prefix="memory-download") as pool:
            for lo in range(0, len(items), step):
                batch = items[lo:lo + step]
                texts = list(pool.map(lambda item: self._item_text(thread_id, item), batch))
                for item, text in zip(batch, texts, strict=True):
                    if text is None:  # gone or no longer readable since the context call
                        continue
                    budget.add(text)
                    out.append(common.memory_item(item, text))
                budget.check(lo + len(batch))
        return out

    def _item_text(self, thread_id: str, item: wire.ThreadContextItem) -> str | None:
        text = common.inline_text(item)
        if text is not None:
            return text
        try:
            turn = self.get_thread_turn(thread_id, item.turn_index)
        except NotFoundError:
            return None
        return common.check_download(thread_id, item, turn)


class Session(wire.Session):
    """A session (``id``, ``scopes``, ``labels``, ``created_at``, ``closed_at``) bound to its client."""

    _sessions: Sessions = PrivateAttr()

    def close(self) -> Session:
        return self._sessions.close(self.id)

    def delete(self) -> str | None:
        return self._sessions.delete(self.id)

    def context(self, query: str, *, k: int | None = None) -> wire.ContextResponse:
        return self._sessions.context(self.id, query, k=k)

    def turns(self, *, page_size: int | None = None) -> Iterator[wire.Turn]:
        return self._sessions.turns(self.id, page_size=page_size)

    def chat(self, message: str, *, stream: bool = False, **options: Any
                   ) -> wire.ChatResponse | ChatStream:
        return self._sessions._client.chat(message, session_id=self.id, stream=stream, **options)

    def remember(self, text: str, **options: Any) -> wire.WriteFactsResponse:
        return self._sessions._client.remember(text, session_id=self.id, **options)


class Sessions:
    def __init__(self, client: AgentMemory):
        self._client = client

    def _bind(self, data: wire.Session) -> Session:
        session = Session.model_validate(data.model_dump(by_alias=True))
        session._sessions = self
        return session

    @operation("createSession")
    def create(self, scopes: Scopes | None = None, labels: list[str] | None = None) -> Session:
        return self._bind(self._client._send(self._client._calls.create_session(scopes=scopes, labels=labels)))

    def handle(self, session_id: str) -> Session:
        """A handle on an existing session, to call its methods (no request is made)."""
        session = Session.model_construct(id=session_id, scopes=[], labels=[], created_at="", closed_at=None)
        session._sessions = self
        return session

    @operation("listSessions")
    def list(self, *, page_size: int | None = None) -> Iterator[wire.Session]:
        """The sessions the caller may see, oldest first, following pages lazily."""
        return self._client._paged("/sessions", {}, "items", wire.Session, page_size)

    @operation("closeSession")
    def close(self, session_id: str) -> Session:
        return self._bind(self._client._send(self._client._calls.close_session(session_id)))

    @operation("deleteSession")
    def delete(self, session_id: str) -> str | None:
        """Returns the removal's erasure receipt id (``receipts.get``)."""
        return self._client._send(self._client._calls.delete_session(session_id))

    @operation("sessionContext")
    def context(self, session_id: str, query: str, *, k: int | None = None) -> wire.ContextResponse:
        return self._client._send(self._client._calls.session_context(session_id, query, k=k))

    @operation("listSessionTurns")
    def turns(self, session_id: str, *, page_size: int | None = None) -> Iterator[wire.Turn]:
        """The session's turns, oldest first, following pages lazily."""
        cursor: str | None = None
        while True:
            page = self._client._send(self._client._calls.session_turns(session_id, limit=page_size,
                                                                        cursor=cursor))
            yield from page.turns
            if not page.page.has_more or not page.page.next_cursor:
                return
            cursor = page.page.next_cursor


class Entities:
    def __init__(self, client: AgentMemory):
        self._client = client

    @operation("listEntities")
    def list(self, type: str | None = None, *, page_size: int | None = None) -> Iterator[wire.MemoryEntity]:
        return self._client._paged("/entities", {"type": type}, "entities", wire.MemoryEntity, page_size)

    @operation("getEntity")
    def get(self, type: str, name: str, as_of: str | None = None, *, limit: int | None = None) -> wire.EntityDetail:
        """The entity with its current attributes and relations, or those valid at ``as_of``."""
        return self._client._send(self._client._calls.get_entity(type, name, as_of=as_of, limit=limit))

    @operation("getAttributeHistory")
    def history(self, type: str, name: str, key: str) -> list[wire.MemoryAttribute]:
        """One attribute's supersession chain, oldest to newest."""
        return (self._client._send(self._client._calls.attribute_history(type, name, key))).history

    @operation("listEntityHistory")
    def all_history(self, type: str, name: str, *, page_size: int | None = None) -> Iterator[wire.MemoryAttribute]:
        """Every attribute row of the entity, current and superseded, in key order."""
        path = self._client._calls.entity_path(type, name) + "/history"
        return self._client._paged(path, {}, "history", wire.MemoryAttribute, page_size)

    @operation("deleteEntity")
    def delete(self, type: str, name: str) -> str | None:
        """Returns the removal's erasure receipt id (``receipts.get``)."""
        return self._client._send(self._client._calls.delete_entity(type, name))


class Attributes:
    def __init__(self, client: AgentMemory):
        self._client = client

    @operation("listAttributes")
    def list(self, entity: str | None = None, key: str | None = None, *, page_size: int | None = None
             ) -> Iterator[wire.MemoryAttribute]:
        """Current attributes, optionally of one entity (``person/alice``) and key."""
        return self._client._paged("/attributes", {"entity": entity, "key": key}, "items", wire.MemoryAttribute,
                                   page_size)

    def __iter__(self) -> Iterator[wire.MemoryAttribute]:
        return self.list()

    @operation("getAttribute")
    def get(self, attribute_id: str) -> wire.MemoryAttribute:
        """One attribute by id (404: missing, deleted or outside the read region)."""
        return self._client._send(self._client._calls.get_fact("attributes", attribute_id))

    @operation("deleteAttribute")
    def delete(self, attribute_id: str, *, purge: bool | None = None) -> wire.ForgetResponse:
        """Forget this one attribute as forget does (``purge``: with its superseded history)."""
        return self._client._send(self._client._calls.delete_fact("attributes", attribute_id, purge=purge))

    @operation("correctAttribute")
    def update(self, attribute_id: str, value: str, *, note: str | None = None, observed_at: str | None = None,
               idempotency_key: str | None = None) -> wire.CorrectFactResponse:
        """Correct this attribute: the new value supersedes it (history kept) and the
        correction is reported."""
        return self._client._send(self._client._calls.correct_fact(
            "attributes", attribute_id, value, note=note, observed_at=observed_at, idempotency_key=idempotency_key))


class Relations:
    def __init__(self, client: AgentMemory):
        self._client = client

    @operation("listRelations")
    def list(self, src: str | None = None, dst: str | None = None, label: str | None = None, *,
             page_size: int | None = None) -> Iterator[wire.MemoryRelation]:
        return self._client._paged("/relations", {"src": src, "dst": dst, "label": label}, "items",
                                   wire.MemoryRelation, page_size)

    def __iter__(self) -> Iterator[wire.MemoryRelation]:
        return self.list()

    @operation("getRelation")
    def get(self, relation_id: str) -> wire.MemoryRelation:
        """One relation by id (404: missing, deleted or outside the read region)."""
        return self._client._send(self._client._calls.get_fact("relations", relation_id))

    @operation("deleteRelation")
    def delete(self, relation_id: str, *, purge: bool | None = None) -> wire.ForgetResponse:
        """Forget this one relation as forget does (``purge``: with its superseded history)."""
        return self._client._send(self._client._calls.delete_fact("relations", relation_id, purge=purge))

    @operation("correctRelation")
    def update(self, relation_id: str, value: str, *, note: str | None = None, observed_at: str | None = None,
               idempotency_key: str | None = None) -> wire.CorrectFactResponse:
        """Correct this relation: the new object (``person/erin``, or a name keeping the old type) supersedes it (history kept) and the
        correction is reported."""
        return self._client._send(self._client._calls.correct_fact(
            "relations", relation_id, value, note=note, observed_at=observed_at, idempotency_key=idempotency_key))


class Actions:
    def __init__(self, client: AgentMemory):
        self._client = client

    @operation("listActions")
    def list(self, actor: str | None = None, verb: str | None = None, *, since: str | None = None,
             until: str | None = None, page_size: int | None = None) -> Iterator[wire.MemoryAction]:
        return self._client._paged("/actions", {"actor": actor, "verb": verb, "since": since, "until": until},
                                   "items", wire.MemoryAction, page_size)

    def __iter__(self) -> Iterator[wire.MemoryAction]:
        return self.list()

    @operation("getAction")
    def get(self, action_id: str) -> wire.MemoryAction:
        """One action by id (404: missing, deleted or outside the read region)."""
        return self._client._send(self._client._calls.get_fact("actions", action_id))

    @operation("deleteAction")
    def delete(self, action_id: str, *, purge: bool | None = None) -> wire.ForgetResponse:
        """Forget this one action as forget does (``purge``: with its superseded history)."""
        return self._client._send(self._client._calls.delete_fact("actions", action_id, purge=purge))


class Instructions:
    def __init__(self, client: AgentMemory):
        self._client = client

    @operation("listInstructions")
    def list(self, *, page_size: int | None = None) -> Iterator[wire.MemoryInstruction]:
        return self._client._paged("/instructions", {}, "items", wire.MemoryInstruction, page_size)

    def __iter__(self) -> Iterator[wire.MemoryInstruction]:
        return self.list()

    @operation("getInstruction")
    def get(self, instruction_id: str) -> wire.MemoryInstruction:
        """One instruction by id (404: missing, deleted or outside the read region)."""
        return self._client._send(self._client._calls.get_fact("instructions", instruction_id))

    @operation("deleteInstruction")
    def delete(self, instruction_id: str, *, purge: bool | None = None) -> wire.ForgetResponse:
        """Forget this one instruction as forget does (``purge``: with its superseded history)."""
        return self._client._send(self._client._calls.delete_fact("instructions", instruction_id, purge=purge))


class Uncertainty:
    def __init__(self, client: AgentMemory):
        self._client = client

    @operation("listUncertainty")
    def list(self, entity: str | None = None, resolved: bool | None = None, *, page_size: int | None = None
             ) -> Iterator[wire.MemoryUncertainty]:
        return self._client._paged("/uncertainty", {"entity": entity, "resolved": resolved}, "items",
                                   wire.MemoryUncertainty, page_size)

    def __iter__(self) -> Iterator[wire.MemoryUncertainty]:
        return self.list()

    @operation("resolveUncertainty")
    def resolve(self, uncertainty_id: str, accepted_value: str, *, note: str | None = None
                ) -> wire.ResolveUncertaintyResponse:
        return self._client._send(self._client._calls.resolve_uncertainty(uncertainty_id, accepted_value, note=note))


class Documents:
    def __init__(self, client: AgentMemory):
        self._client = client

    @operation("uploadDocument")
    def upload(self, source: DocumentSource, title: str | None = None, *, filename: str | None = None,
               format: str | None = None, scopes: Scopes | None = None, labels: list[str] | None = None,
               observed_at: str | None = None, content_type: str | None = None) -> wire.UploadDocumentResponse:
        """Uploads a document (PDF, DOCX, HTML, Markdown or text) from a path, bytes or a file
        object; ``content_type`` defaults from the file name's suffix."""
        return self._client._send(self._client._calls.upload_document(
            source, title=title, filename=filename, format=format, scopes=scopes, labels=labels,
            observed_at=observed_at, content_type=content_type))

    @operation("createDocumentUpload")
    def create_upload(self, size: int, title: str | None = None, *, filename: str | None = None,
                      format: str | None = None, scopes: Scopes | None = None, labels: list[str] | None = None,
                      observed_at: str | None = None, content_type: str | None = None) -> wire.DocumentUploadTicket:
        """A presigned URL to PUT a large document (``size`` bytes) to; then ``complete_upload``."""
        return self._client._send(self._client._calls.create_document_upload(
            size, title=title, filename=filename, format=format, scopes=scopes, labels=labels,
            observed_at=observed_at, content_type=content_type))

    @operation("completeDocumentUpload")
    def complete_upload(self, document_id: str) -> wire.Document:
        """Queues an uploaded document for ingestion (after the PUT to its presigned URL)."""
        return self._client._send(self._client._calls.complete_document_upload(document_id))

    def upload_large(self, source: DocumentSource, title: str | None = None, *, filename: str | None = None,
                     format: str | None = None, scopes: Scopes | None = None, labels: list[str] | None = None,
                     observed_at: str | None = None, timeout: float = 300.0,
                     content_type: str | None = None) -> wire.Document:
        """A document over the synchronous body cap: ``create_upload``, the PUT of its bytes to
        the presigned URL (no API key goes there), then ``complete_upload``."""
        name, content = _document_content(source, filename)
        ticket = self.create_upload(len(content), title, filename=filename or name, format=format, scopes=scopes,
                                    labels=labels, observed_at=observed_at, content_type=content_type)
        with httpx.Client(timeout=timeout) as http:
            response = http.put(ticket.upload_url, content=content, headers=ticket.headers)
        if response.status_code >= 300:
            raise AgentMemoryError(f"the presigned upload answered {response.status_code}: {response.text[:300]}")
        return self.complete_upload(ticket.id)

    @operation("listDocuments")
    def list(self, *, page_size: int | None = None) -> Iterator[wire.Document]:
        """The documents the caller may see, oldest first, with their ingestion status."""
        return self._client._paged("/documents", {}, "documents", wire.Document, page_size)

    @operation("getDocument")
    def get(self, document_id: str) -> wire.Document:
        return self._client._send(self._client._calls.get_document(document_id))

    @operation("getDocumentRaw")
    def fetch_raw(self, document_id: str, *, timeout: float = 300.0) -> bytes:
        """The original bytes as uploaded. A large original kept in S3 comes from the presigned
        URL the API redirects to (fetched without the API key)."""
        response = self._client._send(self._client._calls.get_document_raw(document_id))
        if response.status_code == 303:
            with httpx.Client(timeout=timeout) as http:
                response = http.get(response.headers["location"])
            if response.status_code >= 300:
                raise AgentMemoryError(f"the original's URL answered {response.status_code}")
        return response.content

    @operation("listDocumentChunks")
    def chunks(self, document_id: str, *, page_size: int | None = None) -> Iterator[wire.DocumentChunk]:
        return self._client._paged(f"/documents/{quote(document_id, safe='')}/chunks", {}, "chunks",
                                   wire.DocumentChunk, page_size)

    @operation("reprocessDocument")
    def reprocess(self, document_id: str, *, idempotency_key: str | None = None
                  ) -> wire.ReprocessDocumentResponse:
        """Re-ingests the document from its stored original (same id; unchanged chunks keep
        theirs); then ``wait_ready``. ``queued`` is false when one was already running."""
        return self._client._send(self._client._calls.reprocess_document(document_id,
                                                                         idempotency_key=idempotency_key))

    @operation("recomputeDocumentLinks")
    def recompute_links(self, *, idempotency_key: str | None = None) -> wire.RecomputeLinksResponse:
        """Rebuilds the links between the documents' chunks and the entities they mention;
        ``continued``: the rest runs in the background."""
        return self._client._send(self._client._calls.recompute_document_links(idempotency_key=idempotency_key))

    @operation("queryDocuments")
    def query(self, query: str, *, k: int | None = None, mode: str | None = None, threshold: float | None = None,
              expand_graph: bool | None = None, filter: dict[str, Any] | None = None) -> wire.DocumentQueryResponse:
        """Corpus search: the best chunks for ``query``. ``threshold`` (0-1) drops chunks scoring
        below that share of the best; ``filter`` matches document metadata (``source``,
        ``mimeType``, ``labels``...); ``expand_graph`` adds chunks about the entities the top
        chunks mention."""
        return self._client._send(self._client._calls.query_documents(
            query, k=k, mode=mode, threshold=threshold, expand_graph=expand_graph, filter=filter))

    @operation("listDocumentKeywords")
    def keywords(self, *, q: str | None = None, min_document_count: int | None = None, sort: str | None = None,
                 page_size: int | None = None) -> Iterator[wire.Keyword]:
        """The context's keyword index (following pages lazily): most documents first, or
        alphabetical with ``sort="normalised"``; ``q`` keeps those containing it."""
        params = self._client._calls.keyword_params(q=q, min_document_count=min_document_count, sort=sort)
        return self._client._paged("/documents/keywords", params, "keywords", wire.Keyword, page_size)

    @operation("getDocumentKeyword")
    def keyword(self, normalised: str) -> wire.KeywordDetail:
        """One keyword with the documents that carry it."""
        return self._client._send(self._client._calls.get_document_keyword(normalised))

    @operation("searchDocumentKeywords")
    def search_keywords(self, query: str, *, k: int | None = None,
                        threshold: float | None = None) -> wire.KeywordSearchResponse:
        return self._client._send(self._client._calls.search_document_keywords(query, k=k, threshold=threshold))

    @operation("listKeywordsOfDocument")
    def document_keywords(self, document_id: str) -> wire.DocumentKeywords:
        """A document's keywords, best first."""
        return self._client._send(self._client._calls.keywords_of_document(document_id))

    @operation("deleteDocument")
    def delete(self, document_id: str) -> str | None:
        """Returns the removal's erasure receipt id (``receipts.get``)."""
        return self._client._send(self._client._calls.delete_document(document_id))

    def wait_ready(self, document_id: str, *, timeout: float = 300.0, poll_interval: float = 0.5,
                   on_progress: Callable[[wire.Document], None] | None = None) -> wire.Document:
        """Polls until the document is no longer ingesting; raises after ``timeout`` seconds.
        ``on_progress`` sees the document after each poll (``chunks_done`` of ``chunks_total``)."""
        deadline = time.monotonic() + timeout
        while True:
            document = self.get(document_id)
            if on_progress is not None:
                on_progress(document)
            if document.status not in ("ingesting", "uploading"):
                return document
            if time.monotonic() + poll_interval > deadline:
                raise AgentMemoryError(f"document {document_id} still ingesting after {timeout}s")
            time.sleep(poll_interval)


class Receipts:
    """Erasure receipts: what a removal took out of each place (ids and hashes only)."""

    def __init__(self, client: AgentMemory):
        self._client = client

    @operation("getReceipt")
    def get(self, receipt_id: str) -> wire.ErasureReceipt:
        return self._client._send(self._client._calls.receipt(receipt_id))

    @operation("verifyReceipt")
    def verify(self, receipt_id: str) -> wire.ReceiptVerification:
        """Look again in every place the receipt names; ``remaining`` lists what is still there."""
        return self._client._send(self._client._calls.verify_receipt(receipt_id))


class Traces:
    def __init__(self, client: AgentMemory):
        self._client = client

    @operation("getTrace")
    def get(self, trace_id: str) -> wire.Trace:
        return self._client._send(self._client._calls.trace(trace_id))

    @operation("listTraces")
    def list(self, limit: int | None = None) -> wire.TraceList:
        """The caller's most recent traces, newest first (every principal's for an admin key)."""
        return self._client._send(self._client._calls.traces(limit=limit))

    @operation("getTraceStats")
    def stats(self, window_hours: int | None = None) -> wire.TraceStats:
        """What the caller's traces of the last ``window_hours`` (24 by default) say."""
        return self._client._send(self._client._calls.trace_stats(window_hours=window_hours))

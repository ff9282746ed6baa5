"""HTTP glue shared by every function's ``app.py``: one resolver factory that maps domain
errors to problem documents once and resolves the caller of every context route before its
handler (writing the audit and catalogue records an access leaves), and helpers that read
a request (the resolved caller, body, query) so handlers stay thin: parse, call one
service, return."""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from agent_memory import observability
from agent_memory.access import grants
from agent_memory.access.request_context import RequestContext, resolve
from agent_memory.http.powertools_resolver import APIGatewayHttpResolver, Response
from agent_memory.http.request_input import (
    body,
    check_path_ids,
    header,
    idempotency_key,
    is_json_media_type,
    json_body,
    page_limit,
    path_id,
    query_bool,
    query_choice,
    query_instant,
    query_int,
    query_str,
    query_text,
    raw_body,
    referenced_ids,
    validate,
)
from agent_memory.http.responses import (
    DEGRADED_HEADER,
    DOWNLOAD_HEADERS,
    RECEIPT_HEADER,
    answer,
    bytes_response,
    empty_response,
    error_response,
    json_response,
    ndjson_response,
    openapi_response,
    problem_body,
    problem_response,
    raw_response,
    receipted_empty,
    redirect_response,
    sse_response,
    sse_stream,
)
from agent_memory.kernel import deadline, usage
from agent_memory.kernel.errors import (
    DomainError,
    InvalidRequest,
    NotFound,
    ServiceBusy,
    UpstreamModelError,
    UpstreamModelTimeout,
)
from agent_memory.ports import ModelError, ModelTimeout, SearchUnavailable
from agent_memory.runtime import get_runtime

log = logging.getLogger("agent_memory.http.api")

# The handlers' one import (``from agent_memory.http import api as http``): the resolver and the
# caller's resolution here, what a request carries (``request_input``) and what a handler
# answers with (``responses``).
__all__ = [
    "DEGRADED_HEADER",
    "DOWNLOAD_HEADERS",
    "RECEIPT_HEADER",
    "StreamSlot",
    "ThreadSafeHttpResolver",
    "answer",
    "attach_stream",
    "authenticate",
    "body",
    "bytes_response",
    "check_path_ids",
    "context",
    "empty_response",
    "error_response",
    "header",
    "idempotency_key",
    "idempotency_lease_s",
    "idempotent",
    "is_json_media_type",
    "json_body",
    "json_response",
    "make_resolver",
    "ndjson_response",
    "openapi_response",
    "page_limit",
    "path_id",
    "problem_body",
    "problem_response",
    "query_bool",
    "query_choice",
    "query_instant",
    "query_int",
    "query_str",
    "query_text",
    "raw_body",
    "raw_response",
    "receipted_empty",
    "record_access",
    "redirect_response",
    "referenced_ids",
    "request_budget_s",
    "request_origin",
    "resolve_caller",
    "sse_response",
    "sse_stream",
    "stream_in_request",
    "unreadable_contexts",
    "validate",
]


def request_origin(app: APIGatewayHttpResolver) -> str:
    """``scheme://host`` the caller reached this API at (a relative URL the service hands out
    is resolved against it). ``X-Forwarded-Host``/``-Proto`` count only when the service is
    configured to trust them (``AGENT_MEMORY_TRUST_FORWARDED=1``: behind a proxy that sets
    them); otherwise any caller could point an upload ticket at a host of its choosing."""
    event = app.current_event
    trusted = get_runtime().settings.trust_forwarded
    host = (trusted and header(app, "x-forwarded-host")) or header(app, "host") \
        or event.request_context.domain_name or "localhost"
    proto = ((trusted and header(app, "x-forwarded-proto")) or "").split(",", 1)[0].strip()
    if not proto:
        proto = "http" if host.split(":", 1)[0] in ("localhost", "127.0.0.1", "[::1]") else "https"
    return f"{proto}://{host.split(',', 1)[0].strip()}"


_request_state = threading.local()


class ThreadSafeHttpResolver(APIGatewayHttpResolver):
    """``APIGatewayHttpResolver`` whose per-request state is per thread.

    Powertools keeps the event being resolved in a class attribute
    (``BaseRouter.current_event``) and route state in ``self.context``. A Lambda instance
    resolves one request at a time, but the local server (and any threaded host) resolves
    several at once, where one request would read another's headers and body. Here both
    live in thread-local storage, so concurrent requests stay apart without a lock.
    """

    def _state(self) -> dict[str, Any]:
        per_resolver = getattr(_request_state, "by_resolver", None)
        if per_resolver is None:
            per_resolver = _request_state.by_resolver = {}
        return per_resolver.setdefault(id(self), {"context": {}})

    @property  # type: ignore[override]
    def current_event(self):
        return self._state().get("event")

    @property  # type: ignore[override]
    def lambda_context(self):
        return self._state().get("lambda_context")

    @property  # type: ignore[override]
    def context(self) -> dict:
        return self._state()["context"]

    @context.setter
    def context(self, value: dict) -> None:
        self._state()["context"] = value

    def resolve(self, event: dict[str, Any], lambda_context: Any) -> dict[str, Any]:
        state = self._state()
        state["event"] = self._to_proxy_event(event)
        state["lambda_context"] = lambda_context
        state["context"] = {}
        started = time.perf_counter()
        spending = usage.begin()
        cost: dict[str, Any] = {}
        cost_token = _cost.set(cost)
        try:
            response = super().resolve(event, lambda_context)
            elapsed_ms = (time.perf_counter() - started) * 1000
            route, status = str(event.get("routeKey") or "unknown"), response.get("statusCode", 0)
            if route == "$default":  # a function URL's event: the route it matched, as the API names it
                route = state.get("route") or route
            http_context = (event.get("requestContext") or {}).get("http") or {}
            caller, spent = state.get("caller"), usage.current()
            streamed = bool(cost.get("streamed"))

            def record() -> None:
                # A streamed response is done when its frames end: its line and latency are the
                # whole duration, with the time its headers took beside it.
                total_ms = (time.perf_counter() - started) * 1000 if streamed else elapsed_ms
                first_byte = elapsed_ms if streamed and getattr(lambda_context, "supports_streaming", False) else None
                observability.request_done(route, status, total_ms, first_byte_ms=first_byte,
                                           source_ip=http_context.get("sourceIp"),
                                           user_agent=http_context.get("userAgent"))
                _record_cost(caller, route, status, (time.perf_counter() - started) * 1000, spent)

            if streamed:
                cost["record"] = record  # when the stream's frames end (``stream_in_request``)
            else:
                record()
            return response
        finally:
            _cost.reset(cost_token)
            usage.end(spending)
            state.pop("event", None)
            state.pop("lambda_context", None)
            state.pop("caller", None)
            state.pop("route", None)

    def _call_route(self, route: Any, route_arguments: dict[str, str]) -> Any:
        # The matched route's key ("POST /api/v1/{context_id}/chat"): a function URL's events
        # all say "$default", and the request line and metrics group by route.
        self._state()["route"] = f"{route.method} {route.openapi_path}"
        return super()._call_route(route, route_arguments)

    def note_caller(self, ctx: RequestContext) -> None:
        """The request's resolved caller, for its cost row at the end (``_record_cost``)."""
        self._state()["caller"] = ctx


# The cost row of the current request, when its response streams: recorded as the frames end.
_cost: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("agent_memory_cost", default=None)


def _record_cost(ctx: RequestContext | None, route: str, status: int, elapsed_ms: float,
                 spent: usage.Usage | None) -> None:
    """A successful request's cost row (``AuditLog.usage``): handed to the audit sink, which
    writes it after the response (docs/decisions.md, "Audit costs"); never fails the request."""
    if ctx is None or spent is None or not 200 <= status < 300:
        return
    try:
        get_runtime().audit.usage(ctx, route, status, elapsed_ms, spent)
    except Exception:
        log.warning("could not hand the request's cost row to the audit sink", exc_info=True)


def request_budget_s(lambda_context: Any) -> float:
    """A request's time budget: ``limits.request_deadline_s``, and in Lambda no more than the
    invocation's remaining time less ``limits.deadline_margin_s`` (time to answer in)."""
    limits = get_runtime().settings.limits
    budget = limits.request_deadline_s
    remaining_ms = getattr(lambda_context, "get_remaining_time_in_millis", None)
    if callable(remaining_ms):
        budget = min(budget, remaining_ms() / 1000 - limits.deadline_margin_s)
    return max(0.0, budget)


def idempotency_lease_s(lambda_context: Any) -> float:
    """How long this request's idempotency claim holds its key: as long as the request can
    live (in Lambda the invocation's remaining time, which ends at the function's timeout;
    elsewhere its remaining budget and answer margin) plus ``limits.idempotency_lease_margin_s``."""
    limits = get_runtime().settings.limits
    remaining_ms = getattr(lambda_context, "get_remaining_time_in_millis", None)
    if callable(remaining_ms):
        live = remaining_ms() / 1000
    else:
        left = deadline.remaining()
        live = (limits.request_deadline_s if left is None else left) + limits.deadline_margin_s
    return max(0.0, live) + limits.idempotency_lease_margin_s


class _SlotLease:
    """One request's in-flight slot; a streamed response takes it over (``stream_in_request``)."""

    def __init__(self, limiter: Any):
        self.limiter = limiter
        self.handed_over = False


_lease: contextvars.ContextVar[_SlotLease | None] = contextvars.ContextVar("agent_memory_slot", default=None)


def _within_budget(app: APIGatewayHttpResolver, next_middleware: Any) -> Response:
    """Every route: one in-flight slot of the instance-wide cap (503 + Retry-After past it),
    held until the response is done (``finally``), and the request deadline around it all."""
    limiter = get_runtime().inflight
    limiter.acquire()
    lease = _SlotLease(limiter)
    token = _lease.set(lease)
    try:
        with deadline.within(request_budget_s(app.lambda_context)):
            return next_middleware(app)
    finally:
        _lease.reset(token)
        if not lease.handed_over:
            limiter.release()


def stream_in_request(frames: Iterator[str]) -> Iterator[str]:
    """A streamed response's frames, produced after the handler has returned: they keep the
    request's in-flight slot (released when the stream ends or is closed) and run under its
    deadline (each frame is produced in a copy of the handler's context variables)."""
    lease = _lease.get()
    if lease is not None:
        lease.handed_over = True
    cost = _cost.get()
    if cost is not None:
        cost["streamed"] = True  # the request's cost row waits for the last frame
    return _FramesInRequest(frames, lease, cost, contextvars.copy_context())


class _FramesInRequest:
    """The frames as an iterator whose ``close`` always ends the request (slot, request line,
    cost row): a generator closed before its first frame (a caller gone before the headers were
    written) would never run its ``finally`` and would hold the instance's slot for good."""

    def __init__(self, frames: Iterator[str], lease: _SlotLease | None, cost: dict[str, Any] | None,
                 request_vars: contextvars.Context):
        self._frames = frames
        self._lease = lease
        self._cost = cost
        self._vars = request_vars
        self._done = False

    def __iter__(self) -> _FramesInRequest:
        return self

    def __next__(self) -> str:
        if self._done:
            raise StopIteration
        try:
            return self._vars.run(next, self._frames)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            close = getattr(self._frames, "close", None)
            if close is not None:
                self._vars.run(close)
        finally:
            if self._lease is not None:
                self._lease.limiter.release()
            record = self._cost.get("record") if self._cost is not None else None
            if record is not None:
                record()


_CALLER = "caller"  # route state: the RequestContext resolved before the handler


def _resolve_and_record_caller(app: APIGatewayHttpResolver, next_middleware: Any) -> Response:
    """Every route under ``/api/v1/<context_id>/``, before its handler: resolve the caller
    (``context`` hands it to the handler), then write the records an access leaves
    (``record_access``). Authentication errors answer before the handler runs."""
    route_args = app.context.get("_route_args", {})
    context_id = route_args.get("context_id")
    if context_id is not None:
        ctx = resolve_caller(app, context_id)
        check_path_ids(route_args)
        record_access(app, ctx)
        app.append_context(**{_CALLER: ctx})
        if isinstance(app, ThreadSafeHttpResolver):
            app.note_caller(ctx)
    return next_middleware(app)


def make_resolver() -> APIGatewayHttpResolver:
    app = ThreadSafeHttpResolver()
    # The request deadline and in-flight slot cover the caller's resolution too.
    app.use(middlewares=[_within_budget, _resolve_and_record_caller])

    @app.exception_handler(DomainError)
    def _domain_error(exc: DomainError) -> Response:
        return error_response(exc)

    @app.exception_handler(ModelTimeout)
    def _model_timeout(exc: ModelTimeout) -> Response:
        # A model or embeddings call that no service translated (retrieval embeds the query).
        return error_response(UpstreamModelTimeout(f"model call timed out: {exc}"))

    @app.exception_handler(ModelError)
    def _model_error(exc: ModelError) -> Response:
        return error_response(UpstreamModelError(f"model call failed: {exc}"))

    @app.exception_handler(SearchUnavailable)
    def _search_unavailable(exc: SearchUnavailable) -> Response:
        # What cannot be done safely without search (forget, a thread's history) refuses
        # before it changes anything; reads that can degrade catch it in the service.
        return error_response(ServiceBusy(f"the search index is unavailable ({exc.reason}); retry later",
                                          code="search_unavailable", retry_after=exc.retry_after))

    @app.not_found
    def _not_found(_: Exception) -> Response:
        path = app.current_event.raw_path if app.current_event else "?"
        return error_response(NotFound(f"no route for {app.current_event.request_context.http.method} {path}"))

    @app.exception_handler(Exception)
    def _unexpected(exc: Exception) -> Response:
        log.exception("unhandled error")
        return problem_response(500, "Internal error", "an unexpected error occurred", "internal")

    return app


# --- request parsing ----------------------------------------------------------------


def context(app: APIGatewayHttpResolver, context_id: str) -> RequestContext:
    """The caller of this request in ``context_id``, as ``_resolve_and_record_caller``
    resolved it before the handler ran. Reads only."""
    ctx = app.context.get(_CALLER)
    if ctx is None or ctx.context_id != context_id:
        raise RuntimeError(f"no caller resolved for context {context_id!r}: not a /api/v1/<context_id>/ route")
    return ctx


def resolve_caller(app: APIGatewayHttpResolver, context_id: str) -> RequestContext:
    """Authenticate the request and resolve its ``RequestContext`` in ``context_id`` (the
    grants of the verb the route needs). Writes nothing; the log lines gain its keys."""
    event = app.current_event
    method, path = event.request_context.http.method, event.raw_path or ""
    ctx = resolve(context_id, dict(event.headers or {}),
                  default_principal=get_runtime().settings.default_principal,
                  request_id=event.request_context.request_id, authenticator=get_runtime().authenticator,
                  verb=grants.required_verb(method, path))
    observability.request_keys(context_id=ctx.context_id, principal=ctx.principal)
    return ctx


def record_access(app: APIGatewayHttpResolver, ctx: RequestContext) -> None:
    """The records a resolved caller leaves: the audit of a delegated call, and on a write
    the catalogue's note of the context and partition (the pickers list it from here on)."""
    event = app.current_event
    method, path = event.request_context.http.method, event.raw_path or ""
    if ctx.delegated_by is not None:
        get_runtime().audit.delegated(ctx, f"{method} {path}")
    if grants.required_verb(method, path) == grants.WRITE:
        get_runtime().catalogue.note(ctx)


def authenticate(app: APIGatewayHttpResolver, verb: str | None = None) -> Any:
    """Check the caller of a route that names no context (health, the context list): a
    deployed stack answers nothing to anonymous callers. Returns the caller's key (its
    grants), or ``None`` in single-user local mode (no keys: full access); with ``verb``,
    a key that does not hold it gets 403."""
    authenticator = get_runtime().authenticator
    if not authenticator.keys_required():
        return None
    headers = {k.lower(): v for k, v in (app.current_event.headers or {}).items()}
    caller = authenticator.authenticate(headers.get("authorization"))
    observability.request_keys(principal=caller.principal)
    if verb is not None:
        grants.check_verb(caller, verb)
    return caller


def unreadable_contexts(caller: Any) -> list[str]:
    """The contexts a caller's key may not read in, its principal's grants there considered
    (``GET /contexts`` leaves them out); none in single-user mode (``caller`` ``None``)."""
    from agent_memory.access.authority import unreadable_contexts

    return unreadable_contexts(caller)


def idempotent(app: APIGatewayHttpResolver, ctx: RequestContext, operation: str, req: BaseModel | dict[str, Any],
               run: Any, status: int = 200, *, body_key: str | None = None, refs: Any = None,
               ensure_ascii: bool = True) -> Response:
    """Run a write under the request's idempotency key (every route that takes one comes
    through here): a replay returns the stored response (200, ``Idempotent-Replayed: true``)
    without running ``run`` again; the same key with another body is a 409.

    ``run`` returns the wire body (what is stored for replay); ``req`` is what makes two
    requests "the same" (a model, dumped, or a payload dict). The key is the
    ``Idempotency-Key`` header, or ``body_key`` (a body field); when both are given they
    must agree. ``refs(body)`` lists the record ids the reply mentions, so forget can delete
    stored replies that would keep forgotten text (default: ids found in the body)."""
    key = idempotency_key(app)
    if key is not None and body_key is not None and key != body_key:
        raise InvalidRequest("Idempotency-Key header and idempotency_key differ", field="idempotency_key")
    key = key if key is not None else body_key
    payload = req.model_dump(mode="json") if isinstance(req, BaseModel) else req
    mentioned = refs if refs is not None else referenced_ids

    def call() -> tuple[dict[str, Any], int, list[str]]:
        body = run()
        return body, status, mentioned(body)

    outcome = get_runtime().idempotency.run(ctx, operation, key, payload, call,
                                            lease_s=idempotency_lease_s(app.lambda_context))
    headers = {"Idempotent-Replayed": "true"} if outcome.replayed else None
    return json_response(outcome.body, outcome.status, headers, ensure_ascii=ensure_ascii)


class StreamSlot:
    """Where a route leaves the frames of its SSE answer for the handler to attach after the
    resolver has built the response's status and headers (one slot per thread)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def hold(self, frames: Iterator[str]) -> None:
        self._local.frames = stream_in_request(frames)

    def resolve(self, app: APIGatewayHttpResolver, event: dict[str, Any], lambda_context: Any) -> dict[str, Any]:
        """``app.resolve``, with the frames a route held attached to a 200 answer."""
        self._local.frames = None
        try:
            response = app.resolve(event, lambda_context)
            frames = getattr(self._local, "frames", None)
        finally:
            self._local.frames = None
        if frames is not None and response.get("statusCode") == 200:
            return attach_stream(response, frames, streaming=getattr(lambda_context, "supports_streaming", False))
        return response


def attach_stream(response: dict[str, Any], frames: Any, *, streaming: bool) -> dict[str, Any]:
    """Give an SSE response its frames: as an iterator when the host streams (the local
    server), else joined into the body (API Gateway buffers the whole response anyway)."""
    if streaming:
        return {**response, "body": "", "stream": frames}
    return {**response, "body": "".join(frames)}

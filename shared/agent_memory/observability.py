"""Logs and metrics, with Powertools as it is meant to be used.

Every function's ``lambda_handler`` is wrapped by ``instrumented``: Powertools' Logger
injects the Lambda context and the request's correlation id (API Gateway's request id)
into every JSON log line, and Metrics flushes one EMF document per invocation. The
request's context id and principal join the log keys once the caller is known
(``http.resolve_caller``); keys, secrets and message text are never logged.

Metrics (namespace ``AgentMemory``), every one with the dimensions ``service`` and ``tenant``
only (the stack's ``TenantId``): ``Requests``, ``RequestLatency``, ``ServerErrors`` (5xx) and
``Unauthenticated`` (401) per API request (``http``; the route and status ride in the EMF document as properties, not
dimensions, so CloudWatch Logs Insights can still group by them),
``ModelCalls``/``ModelLatency``/``PromptTokens``/``CompletionTokens`` (``MeteredLanguageModel``),
``CacheHits`` (chat), ``ProjectionLag``, ``ProjectionFailures``, ``ProjectionRedriven`` and
``ProjectionReindexDue`` (projector), ``DocumentsIngested``/``DocumentsNotIngested``
(ingestion). One tenant is therefore one series per metric name: docs/deploying.md gives the
count and its monthly cost. Outside Lambda nothing is emitted: the local server and the CLI
keep plain logs.

Traces: each invocation, and in it each store, search and model call, is an X-Ray
subsegment on a deployed function (``agent_memory.tracing``, which says what and at what
cost); elsewhere tracing costs nothing and imports nothing.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit

from agent_memory import tracing
from agent_memory.kernel import usage
from agent_memory.tracing import span

SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "agent-memory")
NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "AgentMemory")

logger = Logger(service=SERVICE)
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)

_in_invocation = False


def _lambda() -> bool:
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


def instrumented(handler: Callable[[dict, Any], Any] | None = None, *, http: bool = True) -> Any:
    """A Lambda handler with Powertools' logger context, its invocation's subsegment and one
    metrics flush per invocation. Outside Lambda (the local server calls the same handlers) it
    is the handler itself. ``http=False`` for event sources without an API Gateway request id
    (the projector).

    A streamed response (``stream``: frames the host writes after the handler returned: the
    local server, our runtime loop behind the function URL) keeps the invocation open until its
    last frame: the model calls, tokens, spans and the request's own line and metrics made while
    the frames are written belong to it, as a buffered response's do, and are flushed then."""
    if handler is None:
        return functools.partial(instrumented, http=http)
    inject = logger.inject_lambda_context(
        correlation_id_path=correlation_paths.API_GATEWAY_HTTP if http else None, clear_state=True)
    injected = inject(handler)
    tenant = os.environ.get("AGENT_MEMORY_TENANT")
    if tenant:  # the stack's TenantId: tenant stacks in one account stay apart
        metrics.set_default_dimensions(tenant=tenant)
    span_name = f"## {handler.__name__}"
    if _lambda():
        # The decorator runs at the end of a handler module's import: what the import built
        # (modules, pydantic models, compiled patterns) lives as long as the container, so the
        # collector is told to stop scanning it. Without this every full collection of the first
        # request (boto3's client creation makes several) walks all of it again: about 20 ms of
        # CPU (docs/benchmarks.md). Objects made later are collected as before. The collector
        # was off during the import (agent_memory/__init__.py): it goes back on here.
        gc.freeze()
        gc.enable()

    @functools.wraps(handler)
    def wrapper(event: dict, lambda_context: Any) -> Any:
        if not _lambda():
            return handler(event, lambda_context)
        if not gc.isenabled():  # a module imported without a decorated handler after it
            gc.enable()
        _route_package_logs()
        invocation = _Invocation(span_name)
        try:
            result = injected(event, lambda_context)
        except BaseException as exc:
            invocation.close(exc)
            raise
        frames = result.get("stream") if isinstance(result, dict) else None
        if frames is None:
            invocation.close()
            return result
        return {**result, "stream": invocation.observe(frames)}

    return wrapper


class _Invocation:
    """One invocation's observability scope: open from the handler's start to its response's
    end (for a streamed one, its last frame or its closing)."""

    def __init__(self, span_name: str):
        global _in_invocation
        self.span = tracing.open_invocation(span_name) if tracing.begin_invocation() else None
        self.closed = False
        _in_invocation = True

    def observe(self, frames: Any) -> Iterator[Any]:
        if self.span is not None:
            self.span.detach()  # the frames enter it wherever they are made
        return _ObservedFrames(self, iter(frames))

    def inside(self) -> Any:
        return self.span.inside() if self.span is not None else contextlib.nullcontext()

    def close(self, error: BaseException | None = None) -> None:
        global _in_invocation
        if self.closed:
            return
        self.closed = True
        try:
            if self.span is not None:
                self.span.end(error)
            metrics.flush_metrics()
        finally:
            _in_invocation = False
            tracing.end_invocation()


class _ObservedFrames:
    """A streamed response's frames, each made inside its invocation; the invocation closes
    with the last frame, a failure or ``close`` (even before the first frame: a caller gone
    before the headers went), after the frames' own close has written the request's line."""

    def __init__(self, invocation: _Invocation, source: Iterator[Any]):
        self._invocation = invocation
        self._source = source
        self._done = False

    def __iter__(self) -> _ObservedFrames:
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        try:
            with self._invocation.inside():
                return next(self._source)
        except StopIteration:
            self._finish(None)
            raise
        except BaseException as exc:
            self._finish(exc)
            raise

    def close(self) -> None:
        self._finish(None)

    def _finish(self, error: BaseException | None) -> None:
        if self._done:
            return
        self._done = True
        try:
            close = getattr(self._source, "close", None)
            if close is not None:
                with self._invocation.inside():
                    close()  # the request's line and cost row are written as its frames close
        finally:
            self._invocation.close(error)


_package_logs_routed = False


def _route_package_logs() -> None:
    """The package's own ``logging`` loggers write through Powertools' JSON handler, so
    their lines carry the invocation's keys too (once per process)."""
    global _package_logs_routed
    if not _package_logs_routed:
        logging.getLogger("agent_memory")
        copy_config_to_registered_loggers(source_logger=logger, include={"agent_memory"})
        _package_logs_routed = True


def request_done(route: str, status: int, duration_ms: float, *, first_byte_ms: float | None = None,
                 source_ip: str | None = None, user_agent: str | None = None) -> None:
    """One INFO line and the ``Requests`` metric per API request (route and status only).
    The line names the caller's address and user agent (the function URL has no access log);
    a 401 is also counted in ``Unauthenticated``, which the stack alarms on. A streamed
    response's ``duration_ms`` is its whole duration, ``first_byte_ms`` when its headers went."""
    if _in_invocation:
        # Per-route detail as properties of the EMF document: searchable, never a new series.
        metrics.add_metadata(key="route", value=route)
        metrics.add_metadata(key="status", value=str(status))
        if first_byte_ms is not None:
            metrics.add_metadata(key="first_byte_ms", value=round(first_byte_ms, 1))
        metrics.add_metric(name="Requests", unit=MetricUnit.Count, value=1)
        metrics.add_metric(name="RequestLatency", unit=MetricUnit.Milliseconds, value=duration_ms)
        metrics.add_metric(name="ServerErrors", unit=MetricUnit.Count, value=1 if status >= 500 else 0)
        if status == 401:
            metrics.add_metric(name="Unauthenticated", unit=MetricUnit.Count, value=1)
        line: dict[str, Any] = {"route": route, "status": status, "duration_ms": round(duration_ms, 1)}
        if first_byte_ms is not None:
            line["first_byte_ms"] = round(first_byte_ms, 1)
        if source_ip:
            line["source_ip"] = source_ip[:64]
        if user_agent:
            line["user_agent"] = user_agent[:256]  # the caller's text: bounded, JSON-escaped by the logger
        logger.info("request", extra=line)
        # On the invocation's subsegment (a no-op untraced): traces searchable by route and status.
        tracing.annotate(route=route, status=status, tenant=os.environ.get("AGENT_MEMORY_TENANT") or None)


def count(name: str, value: float = 1, unit: str = "Count") -> None:
    """Add to a metric of the current invocation (no-op outside one)."""
    if _in_invocation:
        metrics.add_metric(name=name, unit=getattr(MetricUnit, unit), value=value)


def dimension(name: str, value: str) -> None:
    """A dimension on every metric of this invocation: each distinct value is a new billed
    series per metric, so only for bounded, low-cardinality values (never routes or ids)."""
    if _in_invocation:
        metrics.add_dimension(name=name, value=value)


def request_keys(**keys: Any) -> None:
    """Keys every later log line of this request carries (context id, principal)."""
    if _in_invocation:
        logger.append_keys(**{k: v for k, v in keys.items() if v is not None})


class MeteredLanguageModel:
    """A ``LanguageModel`` that counts calls, latency and tokens, each call in a span
    ``model.<call>`` annotated with the model's name."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.name = inner.name

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _timed(self, call: Callable[[], Any], operation: str) -> Any:
        started = time.perf_counter()
        try:
            with span(f"model.{operation}", model=self.name):
                return call()
        finally:
            count("ModelCalls")
            count("ModelLatency", (time.perf_counter() - started) * 1000, "Milliseconds")
            usage.add(model_calls=1, model=self.name)

    def structured(self, *, system: str, user: str, schema: type) -> Any:
        return self._timed(lambda: self.inner.structured(system=system, user=user, schema=schema), "structured")

    def complete(self, messages: Sequence[Any], *, max_tokens: int | None = None) -> Any:
        completion = self._timed(lambda: self.inner.complete(messages, max_tokens=max_tokens), "complete")
        count("PromptTokens", getattr(completion, "prompt_tokens", 0) or 0)
        count("CompletionTokens", getattr(completion, "completion_tokens", 0) or 0)
        usage.add(prompt_tokens=getattr(completion, "prompt_tokens", 0) or 0,
                  completion_tokens=getattr(completion, "completion_tokens", 0) or 0)
        return completion

    def stream(self, messages: Sequence[Any], *, max_tokens: int | None = None) -> Iterator[str]:
        started = time.perf_counter()
        count("ModelCalls")
        usage.add(model_calls=1, model=self.name)
        # The span covers opening the stream (errors on opening surface here), not the reading:
        # a subsegment left open by an unread stream would unbalance the invocation's trace.
        with span("model.stream", model=self.name):
            chunks = iter(self.inner.stream(messages, max_tokens=max_tokens))

        def timed() -> Iterator[str]:
            reported, written = None, 0
            try:
                while True:
                    try:
                        piece = next(chunks)
                    except StopIteration as end:
                        reported = end.value
                        break
                    written += len(piece)
                    yield piece
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()
                count("ModelLatency", (time.perf_counter() - started) * 1000, "Milliseconds")
                # The provider's count when it reported one, else the chat service's own estimate
                # (4 characters a token), so a streamed reply is counted as a completed one is.
                prompt, completion = reported if isinstance(reported, tuple) else (
                    sum(len(getattr(m, "content", "") or "") for m in messages) // 4, written // 4)
                count("PromptTokens", prompt)
                count("CompletionTokens", completion)
                usage.add(prompt_tokens=prompt, completion_tokens=completion)

        return timed()

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

import functools
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
    """A Lambda handler with Powertools' logger context and a metrics flush per invocation.
    Outside Lambda (the local server calls the same handlers) it is the handler itself.
    ``http=False`` for event sources without an API Gateway request id (the projector)."""
    if handler is None:
        return functools.partial(instrumented, http=http)
    inject = logger.inject_lambda_context(
        correlation_id_path=correlation_paths.API_GATEWAY_HTTP if http else None, clear_state=True)
    decorated = metrics.log_metrics(inject(handler))
    tenant = os.environ.get("AGENT_MEMORY_TENANT")
    if tenant:  # the stack's TenantId: tenant stacks in one account stay apart
        metrics.set_default_dimensions(tenant=tenant)

    traced_handler: list[Callable[[dict, Any], Any]] = []

    @functools.wraps(handler)
    def wrapper(event: dict, lambda_context: Any) -> Any:
        global _in_invocation
        if not _lambda():
            return handler(event, lambda_context)
        _route_package_logs()
        call = decorated
        if tracing.begin_invocation():
            if not traced_handler:  # the first traced invocation builds the Tracer (its import cost)
                traced_handler.append(tracing.capture_handler(decorated))
            call = traced_handler[0] or decorated
        _in_invocation = True
        try:
            return call(event, lambda_context)
        finally:
            _in_invocation = False
            tracing.end_invocation()

    return wrapper


_package_logs_routed = False


def _route_package_logs() -> None:
    """The package's own ``logging`` loggers write through Powertools' JSON handler, so
    their lines carry the invocation's keys too (once per process)."""
    global _package_logs_routed
    if not _package_logs_routed:
        logging.getLogger("agent_memory")
        copy_config_to_registered_loggers(source_logger=logger, include={"agent_memory"})
        _package_logs_routed = True


def request_done(route: str, status: int, duration_ms: float, *, source_ip: str | None = None,
                 user_agent: str | None = None) -> None:
    """One INFO line and the ``Requests`` metric per API request (route and status only).
    The line names the caller's address and user agent (the function URL has no access log);
    a 401 is also counted in ``Unauthenticated``, which the stack alarms on."""
    if _in_invocation:
        # Per-route detail as properties of the EMF document: searchable, never a new series.
        metrics.add_metadata(key="route", value=route)
        metrics.add_metadata(key="status", value=str(status))
        metrics.add_metric(name="Requests", unit=MetricUnit.Count, value=1)
        metrics.add_metric(name="RequestLatency", unit=MetricUnit.Milliseconds, value=duration_ms)
        metrics.add_metric(name="ServerErrors", unit=MetricUnit.Count, value=1 if status >= 500 else 0)
        if status == 401:
            metrics.add_metric(name="Unauthenticated", unit=MetricUnit.Count, value=1)
        line = {"route": route, "status": status, "duration_ms": round(duration_ms, 1)}
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
            chunks = self.inner.stream(messages, max_tokens=max_tokens)

        def timed() -> Iterator[str]:
            try:
                yield from chunks
            finally:
                count("ModelLatency", (time.perf_counter() - started) * 1000, "Milliseconds")

        return timed()

"""X-Ray traces of a deployed function, with Powertools' Tracer, at no cost elsewhere.

Every function has ``Tracing: Active`` (template.yaml). ``observability.instrumented`` wraps
each invocation in a subsegment ``## lambda_handler`` (``open_invocation``, annotated
``ColdStart`` and ``Service`` as Powertools' ``capture_lambda_handler`` does; API requests add
``route``, ``status`` and ``tenant``; a streamed response keeps it open until its last frame), the Tracer patches botocore (one subsegment per AWS call), and ``runtime``
wraps the record store, the search index and the embedder in ``traced``, so each of their
calls is a named subsegment (``store.query``, ``search.rank_rows``, ``model.embed``), the
language models' calls too (``model.structured``, ``model.complete``, ``model.stream``,
``observability.MeteredLanguageModel``). Annotations are low-cardinality names (adapter,
model, route, tenant); responses are never captured (they hold memory text). Spans made in
worker threads (parallel extraction) hang off the function's segment, beside the handler's
subsegment rather than under it: the X-Ray SDK's context is per thread.

Tracing is on only in a deployed function (Lambda sets ``LAMBDA_TASK_ROOT``) unless
``POWERTOOLS_TRACE_DISABLED`` is true or it runs under ``sam local``. Otherwise (the local
server, the CLI, tests) ``traced`` returns the adapter itself, ``span`` is a shared no-op,
and neither the Tracer nor ``aws_xray_sdk`` is ever imported: this module imports only the
standard library. Deployed, the Tracer is built on the first invocation rather than at
import, because building it imports ``aws_xray_sdk`` and botocore (docs/benchmarks.md,
"Tracing"). Services never import this module (.importlinter): they see only the ports.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import Any

log = logging.getLogger(__name__)

_TRUTHY = frozenset({"1", "y", "yes", "t", "true", "on"})  # Powertools' reading of its flags
# Modules the X-Ray SDK patches: every AWS call (DynamoDB, Bedrock, S3, SQS, Secrets Manager)
# becomes a subsegment under the span that made it. Not httpx or requests: the search and
# model spans already time those calls, and patching every library would import them all.
PATCHED_MODULES = ("botocore",)
SERVICE = os.environ.get("POWERTOOLS_SERVICE_NAME", "agent-memory")

_tracer: Any = None
_tracer_lock = threading.Lock()
_active = False  # a traced invocation is in progress (observability.instrumented sets it)
_unavailable = False  # the Tracer could not be built (say, aws_xray_sdk missing): run untraced
_NO_SPAN = contextlib.nullcontext()


def enabled() -> bool:
    """X-Ray tracing applies: in a deployed function, unless ``POWERTOOLS_TRACE_DISABLED``
    is true or under ``sam local``; the test Powertools' Tracer makes, without importing it."""
    if _unavailable or os.environ.get("POWERTOOLS_TRACE_DISABLED", "false").strip().lower() in _TRUTHY:
        return False
    return bool(os.environ.get("LAMBDA_TASK_ROOT") and os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
                and not os.environ.get("AWS_SAM_LOCAL"))


def tracer() -> Any:
    """Powertools' Tracer, built once, on first use: building it imports ``aws_xray_sdk``
    (and botocore) and patches ``PATCHED_MODULES``. Only called when tracing is enabled."""
    global _tracer, _unavailable
    if _tracer is None:
        with _tracer_lock:
            if _tracer is None:
                try:
                    from aws_lambda_powertools import Tracer

                    _tracer = Tracer(service=SERVICE, patch_modules=PATCHED_MODULES)
                except Exception:
                    # A function that cannot trace still serves: this process runs untraced.
                    _unavailable = True
                    log.warning("X-Ray tracing unavailable; running untraced", exc_info=True)
                    raise
    return _tracer


def begin_invocation() -> bool:
    """Called at the start of each invocation: whether this one is traced."""
    global _active
    _active = enabled()
    return _active


_cold_start = True


class InvocationSpan:
    """The invocation's subsegment (``## lambda_handler``), annotated ``ColdStart`` and
    ``Service`` as Powertools' ``capture_lambda_handler`` annotates it (never the response: it
    holds memory text). Unlike that decorator it can outlive the handler: a streamed response's
    frames are made after it returned, on another thread (the X-Ray SDK's context is per
    thread), and ``inside`` makes this subsegment the parent of their spans there too."""

    def __init__(self, recorder: Any, subsegment: Any):
        self._recorder = recorder
        self.subsegment = subsegment

    def _make_current(self) -> None:
        self._recorder.context.set_trace_entity(self.subsegment)

    def detach(self) -> None:
        """This thread leaves the subsegment open (its frames will enter it elsewhere)."""
        try:
            self._recorder.context.set_trace_entity(self.subsegment.parent_segment)
        except Exception:  # noqa: BLE001 - tracing is best effort
            log.debug("invocation span not detached", exc_info=True)

    @contextlib.contextmanager
    def inside(self) -> Any:
        """This thread's spans nest under the invocation's subsegment for the block."""
        try:
            self._make_current()
        except Exception:  # noqa: BLE001
            log.debug("invocation span not entered", exc_info=True)
        try:
            yield
        finally:
            self.detach()

    def end(self, error: BaseException | None = None) -> None:
        try:
            self._make_current()
            if error is not None:
                import traceback

                self.subsegment.add_exception(error, traceback.extract_tb(error.__traceback__))
            self._recorder.end_subsegment()
        except Exception:  # noqa: BLE001
            log.debug("invocation span not closed", exc_info=True)


def open_invocation(name: str) -> InvocationSpan | None:
    """The invocation's subsegment, begun on this thread; ``None`` (and this invocation
    untraced) when the Tracer cannot be built."""
    global _active, _cold_start
    try:
        recorder = tracer().provider
        subsegment = recorder.begin_subsegment(name)
        subsegment.put_annotation("ColdStart", _cold_start)
        subsegment.put_annotation("Service", SERVICE)
    except Exception:  # noqa: BLE001 - logged by tracer(); the invocation runs untraced
        _active = False
        return None
    _cold_start = False
    return InvocationSpan(recorder, subsegment)


def end_invocation() -> None:
    global _active
    _active = False


def annotate(**annotations: Any) -> None:
    """Annotations (indexed, searchable) on the current subsegment; a no-op when not tracing."""
    if not _active:
        return
    provider = tracer().provider
    for key, value in annotations.items():
        if value is not None:
            try:
                provider.put_annotation(key, value)
            except Exception:  # noqa: BLE001 - tracing is best effort
                log.debug("annotation %s not recorded", key, exc_info=True)


class _Span:
    """One subsegment; a failure of the tracer itself never fails the call it times."""

    __slots__ = ("name", "annotations", "_manager")

    def __init__(self, name: str, annotations: dict[str, Any]):
        self.name = name
        self.annotations = annotations
        self._manager: Any = None

    def __enter__(self) -> Any:
        try:
            self._manager = tracer().provider.in_subsegment(self.name)
            subsegment = self._manager.__enter__()
            if subsegment is not None:
                for key, value in self.annotations.items():
                    if value is not None:
                        subsegment.put_annotation(key, value)
            return subsegment
        except Exception:  # noqa: BLE001 - tracing is best effort
            log.debug("span %s not recorded", self.name, exc_info=True)
            return None

    def __exit__(self, *exc: Any) -> bool:
        if self._manager is not None:
            try:
                self._manager.__exit__(*exc)  # records the exception, if any, on the subsegment
            except Exception:  # noqa: BLE001
                log.debug("span %s not closed", self.name, exc_info=True)
        return False


def span(name: str, **annotations: Any) -> contextlib.AbstractContextManager[Any]:
    """A subsegment ``name`` around a block, annotated (low-cardinality values only: adapter
    and model names, never ids or text). Outside a traced invocation, a shared no-op."""
    if not _active:
        return _NO_SPAN
    return _Span(name, annotations)


class Traced:
    """``inner`` with each call of one of ``methods`` in a span ``{kind}.{method}``;
    everything else passes through (attributes, other methods, and ``isinstance`` against
    the runtime-checkable ports, which look attributes up)."""

    def __init__(self, inner: Any, kind: str, methods: frozenset[str], **annotations: Any):
        self.inner = inner
        self._kind = kind
        self._methods = methods
        self._annotations = annotations

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if name not in self._methods or not callable(value):
            return value
        label = f"{self._kind}.{name}"
        annotations = self._annotations

        def call(*args: Any, **kwargs: Any) -> Any:
            with span(label, **annotations):
                return value(*args, **kwargs)

        return call


def traced(inner: Any, kind: str, methods: frozenset[str] | set[str], **annotations: Any) -> Any:
    """``inner`` wrapped in ``Traced`` when tracing is enabled, else ``inner`` itself (no
    wrapper and no cost: locally, in tests, with ``POWERTOOLS_TRACE_DISABLED``)."""
    if not enabled():
        return inner
    return Traced(inner, kind, frozenset(methods), **annotations)

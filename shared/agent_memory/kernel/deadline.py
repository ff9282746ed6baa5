"""Request deadlines: every request runs under a time budget, and every outbound call fits in it.

The budget is set once per request (``agent_memory.http.api``'s resolver: the Lambda
invocation's remaining time minus a margin, capped by ``limits.request_deadline_s``) and
read by the adapters that make outbound calls (models, embeddings, OpenSearch): each
call's timeout is ``min(configured, remaining - margin)``. Past the deadline a call is
not started at all: the request ends with a problem document (504 when a model is what
ran out of time, 503 otherwise) instead of a hang or a platform timeout.

The deadline lives in a ``ContextVar`` so it follows the request through the threads that
copy its context (``submit_in_context``) and stays apart between concurrent requests.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from typing import Any, TypeVar

from agent_memory.kernel.errors import DomainError

T = TypeVar("T")

# Time kept back from an outbound call for what follows it (mapping the error, writing the
# response): a call that may use every last millisecond leaves none to answer with.
CALL_MARGIN_S = 0.25
# The shortest timeout worth starting a call with; less and the call is refused at once.
MIN_CALL_S = 0.05

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("agent_memory_deadline", default=None)


class DeadlineExceeded(DomainError):
    status = 503
    title = "Request deadline exceeded"
    type_slug = "deadline-exceeded"

    def __init__(self, detail: str = "the request ran out of time", **kw: Any):
        kw.setdefault("code", "deadline_exceeded")
        kw.setdefault("headers", {"Retry-After": "1"})
        super().__init__(detail, **kw)


@contextmanager
def within(seconds: float) -> Iterator[float]:
    """Run the block under a deadline ``seconds`` from now (an enclosing, earlier deadline
    wins). Yields the absolute deadline (``time.monotonic()`` clock)."""
    at = time.monotonic() + max(0.0, seconds)
    outer = _deadline.get()
    if outer is not None:
        at = min(at, outer)
    token = _deadline.set(at)
    try:
        yield at
    finally:
        _deadline.reset(token)


def remaining() -> float | None:
    """Seconds left before the current request's deadline; ``None`` outside any request."""
    at = _deadline.get()
    return None if at is None else at - time.monotonic()


def expired() -> bool:
    left = remaining()
    return left is not None and left <= 0


def check(what: str = "the request") -> None:
    """Raise ``DeadlineExceeded`` (503) when the deadline has passed: a cheap checkpoint
    before work that should not start late (a commit, another model round)."""
    if expired():
        raise DeadlineExceeded(f"{what} ran past the request deadline")


def timeout_for(configured: float, *, on_expired: Callable[[str], BaseException] | None = None,
                what: str = "outbound call") -> float:
    """The timeout for one outbound call: ``min(configured, remaining - margin)``.

    When too little time is left to start the call, raises ``on_expired(detail)`` (a model
    adapter passes its ``ModelTimeout``, which maps to 504) or ``DeadlineExceeded`` (503).
    """
    left = remaining()
    if left is None:
        return configured
    budget = left - CALL_MARGIN_S
    if budget < MIN_CALL_S:
        detail = f"no time left for the {what} before the request deadline"
        raise on_expired(detail) if on_expired else DeadlineExceeded(detail)
    return min(configured, budget)


def submit_in_context(pool: Executor, fn: Callable[..., T], *args: Any) -> Future[T]:
    """``pool.submit`` that runs ``fn`` in a copy of the caller's context, so work handed to
    another thread keeps the request's deadline."""
    caller_vars = contextvars.copy_context()
    return pool.submit(caller_vars.run, fn, *args)

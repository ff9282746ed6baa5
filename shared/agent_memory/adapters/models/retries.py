"""Retries of model and embeddings calls, shared by every provider: transient failures retried
with full-jitter exponential backoff, never past the request deadline (``kernel.deadline``),
and a call's timeout cut to the time the request has left."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_any, wait_random_exponential

from agent_memory.kernel import deadline
from agent_memory.ports import ModelTimeout

T = TypeVar("T")


def call_with_retries(
    fn: Callable[[], T],
    *,
    is_transient: Callable[[BaseException], bool],
    max_retries: int,
    backoff: float = 0.5,
) -> T:
    """Call ``fn``, retrying transient failures ``max_retries`` times (so at most
    ``max_retries + 1`` attempts) with full-jitter exponential backoff.

    Jitter spreads the retries of many concurrent Lambdas hit by the same throttling
    burst. The last exception is re-raised unchanged so the caller can translate it.
    """
    backoff_wait = wait_random_exponential(multiplier=backoff, max=max(backoff * 16, backoff))

    def no_time_for_another(_: Any) -> bool:
        left = deadline.remaining()
        return left is not None and left - deadline.CALL_MARGIN_S < 2 * deadline.MIN_CALL_S

    def wait_within_deadline(state: Any) -> float:
        # A retry's back-off never sleeps past the request deadline.
        pause = backoff_wait(state)
        left = deadline.remaining()
        return pause if left is None else max(0.0, min(pause, left - deadline.CALL_MARGIN_S - deadline.MIN_CALL_S))

    retrying = Retrying(
        stop=stop_any(stop_after_attempt(max(0, max_retries) + 1), no_time_for_another),
        wait=wait_within_deadline,
        retry=retry_if_exception(is_transient),
        reraise=True,
    )
    return retrying(fn)


def model_call_timeout(configured: float) -> float:
    """A model or embeddings call's timeout: the configured one, cut to the request deadline
    (``ModelTimeout``, so HTTP 504, when no time is left to start it)."""
    return deadline.timeout_for(configured, on_expired=ModelTimeout, what="model call")

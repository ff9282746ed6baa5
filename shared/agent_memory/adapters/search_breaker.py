"""A circuit breaker in front of a search index: after ``failures_to_open`` consecutive
``SearchUnavailable`` failures it stops calling the index for ``cool_down_s`` and raises
``SearchUnavailable("circuit-open")`` at once, so a failing index costs one timeout per
cool-down instead of one per request. After the cool-down the next call goes through (a
probe): success closes the circuit, failure opens it again for another cool-down."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

from agent_memory.ports import SearchUnavailable

# The index calls that reach the service; anything else (attributes, helpers) passes through.
GUARDED = frozenset({"upsert", "delete", "write", "delete_context", "get", "search", "rank_rows"})


class CircuitBreakingSearchIndex:
    def __init__(self, inner: Any, *, failures_to_open: int = 3, cool_down_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic):
        self.inner = inner
        self.failures_to_open = failures_to_open
        self.cool_down_s = cool_down_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._open_until: float | None = None
        self.calls_refused = 0  # calls answered by the open circuit without reaching the index

    @property
    def is_open(self) -> bool:
        return self._open_until is not None and self._clock() < self._open_until

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if name not in GUARDED or not callable(value):
            return value

        def guarded(*args: Any, **kwargs: Any) -> Any:
            self._admit()
            try:
                result = value(*args, **kwargs)
            except SearchUnavailable:
                self._failed()
                raise
            self._succeeded()
            return result

        return guarded

    def _admit(self) -> None:
        with self._lock:
            if self._open_until is None:
                return
            left = self._open_until - self._clock()
            if left <= 0:
                return  # cool-down over: this call probes the index
            self.calls_refused += 1
        raise SearchUnavailable("circuit-open", "the search index failed recently",
                                retry_after=max(1, math.ceil(left)))

    def _failed(self) -> None:
        with self._lock:
            self._failures += 1
            if self._failures >= self.failures_to_open:
                self._open_until = self._clock() + self.cool_down_s

    def _succeeded(self) -> None:
        with self._lock:
            self._failures = 0
            self._open_until = None

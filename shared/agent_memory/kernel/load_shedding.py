"""Per-instance in-flight cap: past ``limits.inflight_cap`` concurrent requests an
instance answers 503 with ``Retry-After`` at once instead of queueing work it cannot
finish in time. One limiter per process (``Runtime.inflight``) covers every route
(``agent_memory.http.api``'s resolver middleware). A Lambda instance serves one request at a
time, so there it never sheds; the local server and any multi-threaded host serve many."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from agent_memory.kernel.errors import ServiceBusy


class InflightLimiter:
    def __init__(self, cap: int, retry_after_s: int = 1):
        self.cap = cap
        self.retry_after_s = retry_after_s
        self._count = 0
        self._lock = threading.Lock()

    def acquire(self) -> None:
        with self._lock:
            if self._count >= self.cap:
                raise ServiceBusy(f"more than {self.cap} requests in flight on this instance; retry shortly",
                                  retry_after=self.retry_after_s, code="inflight_cap")
            self._count += 1

    def release(self) -> None:
        with self._lock:
            self._count -= 1

    @contextmanager
    def slot(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()

"""HTTP transport of the SDK: one httpx client, bounded retries.

What is retried, and why it is safe:

- 503 and 429 always: the service sheds or defers the request before doing anything
  (``thread_projection_pending``, load shedding, append contention). A ``Retry-After`` is
  honoured; when it would end past the retry budget the error is raised at once instead of
  sleeping for nothing.
- transport errors, 502 and 504 only for requests marked ``idempotent`` (reads, and writes
  that carry an idempotency key the server deduplicates on).
- 409 ``idempotency_in_progress`` only for keyed writes: the first attempt with the key is
  still running, and the retry will replay its reply.

Every retry loop is bounded twice: ``max_retries`` attempts after the first, and
``retry_budget_s`` seconds of wall time from the first attempt.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from typing import Any

import httpx

from agent_memory.client.errors import ApiError, MemoryError

_RETRY_ALWAYS = {429, 503}
_RETRY_IF_IDEMPOTENT = {502, 504}


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _problem(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        return body
    return {"title": response.reason_phrase, "status": response.status_code, "detail": response.text[:500]}


class Transport:
    def __init__(self, base_url: str, headers: dict[str, str], *, timeout: float, retry_budget_s: float,
                 max_retries: int, sleep: Callable[[float], None] = time.sleep,
                 http_transport: httpx.BaseTransport | None = None):
        self.retry_budget_s = retry_budget_s
        self.max_retries = max_retries
        self._sleep = sleep
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout,
                                  transport=http_transport)

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None,
                headers: dict[str, str] | None = None, idempotent: bool = False,
                keyed_write: bool = False) -> httpx.Response:
        deadline = time.monotonic() + self.retry_budget_s
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, json=json, params=params, headers=headers)
            except httpx.TransportError as exc:
                if not idempotent:
                    raise MemoryError(f"{method} {path} failed: {exc}") from exc
                delay, failure = self._backoff(attempt), MemoryError(f"{method} {path} failed: {exc}")
                failure.__cause__ = exc
            else:
                if response.status_code < 400:
                    return response
                failure = ApiError(response.status_code, _problem(response),
                                   parse_retry_after(response.headers.get("retry-after")))
                if not self._retryable(failure, idempotent, keyed_write):
                    raise failure
                delay = failure.retry_after if failure.retry_after is not None else self._backoff(attempt)
            if attempt >= self.max_retries or time.monotonic() + delay > deadline:
                raise failure
            self._sleep(delay)
            attempt += 1

    @staticmethod
    def _retryable(error: ApiError, idempotent: bool, keyed_write: bool) -> bool:
        if error.status in _RETRY_ALWAYS:
            return True
        if error.status in _RETRY_IF_IDEMPOTENT:
            return idempotent
        return error.status == 409 and keyed_write and error.code == "idempotency_in_progress"

    @staticmethod
    def _backoff(attempt: int) -> float:
        return random.uniform(0, min(2.0, 0.1 * 2 ** attempt))

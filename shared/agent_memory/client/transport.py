"""HTTP transport of the SDK: one httpx client (sync or async), bounded retries.

What is retried, and why it is safe:

- 503 and 429 always: the service sheds or defers the request before doing anything
  (``thread_projection_pending``, load shedding, the chat in-flight cap, append contention).
- transport errors, 502 and 504 only for calls marked ``idempotent``: reads, and writes that
  carry an ``Idempotency-Key`` the service deduplicates on. The key is made once per logical
  call and reused by every retry of it, so a retry after a lost reply replays the first
  reply instead of writing twice.
- a DELETE whose retry finds the record gone (404) succeeded on an earlier attempt whose
  reply was lost.
- 409 ``idempotency_in_progress`` only for keyed writes: the first attempt with the key is
  still running, and the retry will replay its reply.

Waits are 250 ms, 500 ms, 1 s (each with +-20% jitter), or the server's ``Retry-After``
when it sends one. Every call is bounded twice: ``max_retries`` attempts after the first
(3 by default), and ``retry_budget_s`` seconds from the first attempt; a wait that would end
past that deadline raises the last error at once instead of sleeping for nothing.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx

from agent_memory.client.errors import AgentMemoryError, ApiError, error_for

T = TypeVar("T")

_RETRY_ALWAYS = {429, 503}
_RETRY_IF_IDEMPOTENT = {502, 504}
_TRACE_HEADERS = ("x-trace-id", "x-amzn-trace-id", "apigw-requestid", "x-request-id")
BACKOFF_S = (0.25, 0.5, 1.0)


@dataclass
class Call(Generic[T]):
    """One logical API call: the request, how it may be retried, and how to read its reply."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: dict[str, Any] | None = None
    json: Any = None
    files: Any = None
    data: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    idempotent: bool = False
    keyed_write: bool = False
    content: bytes | None = None  # a raw body (an NDJSON import), instead of json/files/data

    def build(self, http: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        params = {k: v for k, v in (self.params or {}).items() if v is not None}
        params = {k: ("true" if v is True else "false" if v is False else v) for k, v in params.items()}
        return http.build_request(self.method, self.path, params=params or None, json=self.json,
                                  files=self.files, data=self.data, headers=self.headers, content=self.content)


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


def api_error(response: httpx.Response) -> ApiError:
    """The typed error of an error response (its body must have been read)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {"title": response.reason_phrase, "status": response.status_code, "detail": response.text[:500]}
    trace_id = next((response.headers[h] for h in _TRACE_HEADERS if h in response.headers), None)
    return error_for(response.status_code, body, parse_retry_after(response.headers.get("retry-after")), trace_id)


class RetryPolicy:
    def __init__(self, max_retries: int, retry_budget_s: float):
        self.max_retries = max_retries
        self.retry_budget_s = retry_budget_s

    def delay(self, call: Call[Any], failure: AgentMemoryError, attempt: int, deadline: float) -> float | None:
        """Seconds to wait before retrying ``call`` after ``failure``, or ``None`` to give up."""
        if isinstance(failure, ApiError):
            if not self._retryable(call, failure):
                return None
            wait = failure.retry_after if failure.retry_after is not None else self.backoff(attempt)
        elif call.idempotent:
            wait = self.backoff(attempt)
        else:
            return None
        if attempt >= self.max_retries or time.monotonic() + wait > deadline:
            return None
        return wait

    @staticmethod
    def _retryable(call: Call[Any], error: ApiError) -> bool:
        if error.status in _RETRY_ALWAYS:
            return True
        if error.status in _RETRY_IF_IDEMPOTENT:
            return call.idempotent
        return error.status == 409 and call.keyed_write and error.code == "idempotency_in_progress"

    @staticmethod
    def backoff(attempt: int) -> float:
        nominal = BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]
        return nominal * random.uniform(0.8, 1.2)


def _deleted_by_an_earlier_attempt(call: Call[Any], response: httpx.Response, attempt: int) -> bool:
    """A DELETE retried after a lost reply finds the record gone: that is its success."""
    return call.method == "DELETE" and response.status_code == 404 and attempt > 0


def _gave_up(failure: AgentMemoryError, attempts: int) -> AgentMemoryError:
    """The last 429 or 503 of a call retried until its retries or budget ran out says so: on a
    stack's streaming URL a 429 is Lambda's own once the URL's reserved concurrency is in use
    (docs/deploying.md, "Streaming chat"), answered before the service runs."""
    if isinstance(failure, ApiError) and failure.status in _RETRY_ALWAYS and attempts > 1:
        failure.args = (f"{failure.args[0]} (gave up after {attempts} attempts)",)
    return failure


def _transport_failure(call: Call[Any], exc: Exception) -> AgentMemoryError:
    failure = AgentMemoryError(f"{call.method} {call.path} failed: {exc}")
    failure.__cause__ = exc
    return failure


class Transport:
    """The synchronous transport."""

    def __init__(self, base_url: str, headers: dict[str, str], *, timeout: float, retry_budget_s: float,
                 max_retries: int, sleep: Callable[[float], None] = time.sleep,
                 http_transport: httpx.BaseTransport | None = None):
        self.policy = RetryPolicy(max_retries, retry_budget_s)
        self._sleep = sleep
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout,
                                  transport=http_transport)

    def close(self) -> None:
        self._http.close()

    def send(self, call: Call[T]) -> T:
        return call.parse(self.response(call))

    def response(self, call: Call[Any], *, stream: bool = False) -> httpx.Response:
        """The first successful response; with ``stream`` its body is left unread (close it)."""
        deadline = time.monotonic() + self.policy.retry_budget_s
        attempt = 0
        while True:
            failure: AgentMemoryError
            try:
                response = self._http.send(call.build(self._http), stream=stream)
            except httpx.TransportError as exc:
                failure = _transport_failure(call, exc)
            else:
                if response.status_code < 400 or _deleted_by_an_earlier_attempt(call, response, attempt):
                    return response
                response.read()
                response.close()
                failure = api_error(response)
            wait = self.policy.delay(call, failure, attempt, deadline)
            if wait is None:
                raise _gave_up(failure, attempt + 1)
            self._sleep(wait)
            attempt += 1


class AsyncTransport:
    """The asynchronous transport: the same policy over ``httpx.AsyncClient``."""

    def __init__(self, base_url: str, headers: dict[str, str], *, timeout: float, retry_budget_s: float,
                 max_retries: int, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 http_transport: httpx.AsyncBaseTransport | None = None):
        self.policy = RetryPolicy(max_retries, retry_budget_s)
        self._sleep = sleep
        self._http = httpx.AsyncClient(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout,
                                       transport=http_transport)

    async def close(self) -> None:
        await self._http.aclose()

    async def send(self, call: Call[T]) -> T:
        return call.parse(await self.response(call))

    async def response(self, call: Call[Any], *, stream: bool = False) -> httpx.Response:
        deadline = time.monotonic() + self.policy.retry_budget_s
        attempt = 0
        while True:
            failure: AgentMemoryError
            try:
                response = await self._http.send(call.build(self._http), stream=stream)
            except httpx.TransportError as exc:
                failure = _transport_failure(call, exc)
            else:
                if response.status_code < 400 or _deleted_by_an_earlier_attempt(call, response, attempt):
                    return response
                await response.aread()
                await response.aclose()
                failure = api_error(response)
            wait = self.policy.delay(call, failure, attempt, deadline)
            if wait is None:
                raise _gave_up(failure, attempt + 1)
            await self._sleep(wait)
            attempt += 1

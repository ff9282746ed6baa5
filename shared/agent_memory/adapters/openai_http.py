"""A thin OpenAI-compatible HTTP client on urllib3: what the Lambda functions' model calls use.

Why it exists: ``import openai`` costs 0.4-0.6 s of CPU, nearly all of it the package's type
modules, which its ``__init__`` and its client both import, so no import path of the library is
cheap, and every new container's first model call paid it (docs/decisions.md,
"First requests: a persisted view, model clients before the first chat"). urllib3 is already loaded on a function by then
(botocore, for DynamoDB, imports it), so this client's import and set-up cost almost nothing.

It speaks the part of the API the adapters use (chat completions, plain, structured and
streamed as server-sent events; embeddings) and mirrors the ``openai`` client's shape
(``client.chat.completions.create(...)``, ``client.embeddings.create(...)``; responses read
by attribute), so ``OpenAIChatModel`` and ``OpenAIEmbedder`` run either client unchanged.
Its errors mirror the library's classification: ``APITimeoutError`` (connect or read timeout,
a stalled stream included), ``APIConnectionError`` (refused, reset, cut off) and
``APIStatusError`` (an HTTP error status, with the server's message). Retries are not here:
the adapters retry 429, 5xx and connection errors themselves (``call_with_retries``), as they
do with the library's own retries switched off.

``timeout`` applies as the library applies a number: to connecting and to each read, so a
stream that goes quiet for longer than it fails as a timeout. Proxy variables are not read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

__all__ = ["APIConnectionError", "APIError", "APIStatusError", "APITimeoutError", "OpenAIHTTPClient"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class APIError(Exception):
    """A model call failed (the base of this client's errors)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class APIConnectionError(APIError):
    """The server could not be reached, or the connection broke mid-answer."""


class APITimeoutError(APIConnectionError):
    """Connecting, or a read (a streamed chunk included), took longer than the timeout."""


class APIStatusError(APIError):
    """The server answered with an HTTP error status."""

    def __init__(self, message: str, *, status_code: int, body: Any = None):
        super().__init__(message)
        self.status_code = status_code
        self.body = body


def _namespace(data: bytes | str) -> Any:
    """JSON with every object readable by attribute, as the library's response models are."""
    return json.loads(data, object_hook=lambda d: SimpleNamespace(**d))


class OpenAIHTTPClient:
    """``base_url`` as the library takes it (``.../v1``); ``api_key`` sent as a bearer token."""

    def __init__(self, *, api_key: str, base_url: str | None = None, timeout: float = 30.0, max_connections: int = 8):
        import urllib3

        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.timeout = timeout
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json",
                         "Accept": "application/json", "User-Agent": "agent-memory"}
        # A chat's reply and its extraction run at once, on two connections kept for the next.
        self._pool = urllib3.PoolManager(maxsize=max_connections, retries=False, ca_certs=_ca_bundle())
        self.chat = SimpleNamespace(completions=_Completions(self))
        self.embeddings = _Embeddings(self)

    def close(self) -> None:
        self._pool.clear()

    def post(self, path: str, body: Mapping[str, Any], *, timeout: float | None = None, stream: bool = False) -> Any:
        """POST ``body`` as JSON; the response object, or for ``stream`` an iterator of events."""
        import urllib3
        from urllib3.exceptions import HTTPError, NewConnectionError, TimeoutError

        seconds = self.timeout if timeout is None else timeout
        headers = self._headers if not stream else {**self._headers, "Accept": "text/event-stream",
                                                    "Accept-Encoding": "identity"}
        try:
            resp = self._pool.request("POST", self.base_url + path, body=json.dumps(body).encode(), headers=headers,
                                      timeout=urllib3.Timeout(connect=seconds, read=seconds), retries=False,
                                      preload_content=not stream)
        except NewConnectionError as exc:  # refused or unresolved: urllib3 makes it a ConnectTimeoutError too
            raise APIConnectionError(f"connection error: {exc}") from exc
        except TimeoutError as exc:
            raise APITimeoutError(f"request timed out: {exc}") from exc
        except HTTPError as exc:
            raise APIConnectionError(f"connection error: {exc}") from exc
        if resp.status >= 400:
            raise _status_error(resp, stream)
        if stream:
            return _EventStream(resp)
        try:
            return _namespace(resp.data)
        except ValueError as exc:
            raise APIError(f"the model's answer is not JSON: {resp.data[:200]!r}") from exc


def _ca_bundle() -> str | None:
    # The library's HTTP stack trusts certifi's bundle; so does this client where it is installed.
    try:
        import certifi
    except ImportError:  # pragma: no cover - certifi ships with botocore's dependencies
        return None
    return certifi.where()


def _status_error(resp: Any, stream: bool) -> APIStatusError:
    from urllib3.exceptions import HTTPError

    try:
        raw = resp.read() if stream else resp.data
    except HTTPError:
        raw = b""
    finally:
        if stream:
            resp.release_conn()
    body: Any = None
    message = raw[:500].decode("utf-8", "replace")
    try:
        body = json.loads(raw)
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and error.get("message"):
            message = str(error["message"])
        elif isinstance(error, str):
            message = error
    except ValueError:
        pass
    return APIStatusError(f"Error code: {resp.status} - {message}", status_code=resp.status, body=body)


class _EventStream:
    """Server-sent events of a streamed completion: each ``data:`` payload as an object, to
    ``data: [DONE]`` or the end of the body. An event carrying ``error`` raises ``APIError``."""

    def __init__(self, resp: Any):
        self._resp = resp

    def __iter__(self) -> Iterator[Any]:
        from urllib3.exceptions import HTTPError, TimeoutError

        buffer, finished = b"", False
        try:
            while True:
                try:
                    # read1: what has arrived, so each delta is handed on as soon as it comes.
                    chunk = self._resp.read1(65536)
                except TimeoutError as exc:
                    raise APITimeoutError(f"stream stalled: {exc}") from exc
                except HTTPError as exc:
                    raise APIConnectionError(f"stream broken: {exc}") from exc
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    event = self._event(line)
                    if event is _DONE:
                        finished = True
                        return
                    if event is not None:
                        yield event
            event = self._event(buffer)
            if event is not None and event is not _DONE:
                yield event
            finished = True
        finally:
            self.close(reuse=finished)

    @staticmethod
    def _event(line: bytes) -> Any:
        line = line.rstrip(b"\r")
        if not line.startswith(b"data:"):
            return None  # comments, event names, ids and the blank line between events
        payload = line[5:].strip()
        if payload == b"[DONE]":
            return _DONE
        try:
            event = _namespace(payload)
        except ValueError as exc:
            raise APIError(f"a streamed event is not JSON: {payload[:200]!r}") from exc
        error = getattr(event, "error", None)
        if error is not None:
            raise APIError(str(getattr(error, "message", None) or error))
        return event

    def close(self, reuse: bool = False) -> None:
        """Read to its end, the connection goes back to the pool; otherwise it is dropped, never
        returned half-read."""
        from urllib3.exceptions import HTTPError

        if reuse:
            try:
                self._resp.drain_conn()
            except HTTPError:
                reuse = False
        if not reuse and not self._resp.isclosed():
            self._resp.close()
        self._resp.release_conn()


_DONE = object()


class _Completions:
    def __init__(self, client: OpenAIHTTPClient):
        self._client = client

    def create(self, *, model: str, messages: list[dict[str, Any]], timeout: float | None = None,
               stream: bool = False, **fields: Any) -> Any:
        body = {"model": model, "messages": messages, **fields}
        if stream:
            body["stream"] = True
        return self._client.post("/chat/completions", body, timeout=timeout, stream=stream)


class _Embeddings:
    def __init__(self, client: OpenAIHTTPClient):
        self._client = client

    def create(self, *, model: str, input: Any, timeout: float | None = None, **fields: Any) -> Any:  # noqa: A002
        return self._client.post("/embeddings", {"model": model, "input": input, **fields}, timeout=timeout)

"""A Lambda runtime loop of our own, so the chat function can stream (docs/decisions.md,
"Streaming chat on AWS"). Python's managed runtime posts one buffered response per
invocation; this loop takes its place (``AWS_LAMBDA_EXEC_WRAPPER`` names
``lambda_stream_bootstrap`` beside this file, which starts ``python -m
agent_memory.http.lambda_runtime`` with the same interpreter and paths) and speaks the
Runtime API itself:

* ``GET /2018-06-01/runtime/invocation/next`` for each invocation (no timeout: the
  environment may be frozen between invocations), its headers made into the handler's
  context (request id, deadline, function ARN, X-Ray trace id);
* a function URL request (``requestContext.domainName`` ``….lambda-url.…``, the URL in
  ``InvokeMode: RESPONSE_STREAM``) is answered in streaming mode:
  ``POST …/invocation/<id>/response`` with ``Lambda-Runtime-Function-Response-Mode:
  streaming``, ``Transfer-Encoding: chunked`` and content type
  ``application/vnd.awslambda.http-integration-response``: first the JSON prelude
  (``statusCode``, ``headers``, ``cookies``) and 8 NUL bytes, then the body, each SSE frame
  of a ``stream`` response (``http.api.attach_stream``) in its own chunk as it is made. A
  failure after the prelude is reported in the trailers ``Lambda-Runtime-Function-Error-Type``
  and ``Lambda-Runtime-Function-Error-Body`` (base64 JSON);
* every other invocation (the HTTP API's buffered routes) is answered as the managed runtime
  does: one JSON document, or ``…/error`` when the handler raised.

Limits the stream keeps (docs/deploying.md, "Streaming chat"): a frame producer that has
said nothing for ``keepalive_s`` gets an SSE comment written (``: keep-alive``, which SSE
clients skip) so no idle timeout on the way cuts a slow first token; the whole response stops
``deadline_margin_s`` before the invocation's deadline (the request deadline has normally
ended it already with an ``event: error`` frame; past it the loop ends the stream with the
error trailers rather than let Lambda kill it mid-chunk). When a write fails (the client
went away and Lambda closed the response), the frames are closed: the model call stops and
nothing is written, as for a failed synthesis.

The loop never imports the function's libraries: the handler (``_HANDLER``, ``app.lambda_handler``)
is imported once at start, an import failure posted to ``/runtime/init/error``.
"""

from __future__ import annotations

import base64
import http.client
import importlib
import json
import logging
import os
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("agent_memory.http.lambda_runtime")

API_VERSION = "/2018-06-01"
PRELUDE_CONTENT_TYPE = "application/vnd.awslambda.http-integration-response"
DELIMITER = b"\0" * 8
ERROR_TYPE_TRAILER = "Lambda-Runtime-Function-Error-Type"
ERROR_BODY_TRAILER = "Lambda-Runtime-Function-Error-Body"
KEEPALIVE = b": keep-alive\n\n"
_END = object()


# --- the invocation ---------------------------------------------------------------------


@dataclass
class Invocation:
    request_id: str
    deadline_ms: int
    event: Any
    function_arn: str = ""
    trace_id: str | None = None
    client_context: Any = None
    identity: Any = None


class LambdaContext:
    """What the managed runtime's context offers the handlers (``get_remaining_time_in_millis``
    and the names Powertools reads), plus ``supports_streaming`` for the response to stream."""

    def __init__(self, invocation: Invocation, *, streaming: bool, clock: Callable[[], float] = time.time):
        env = os.environ
        self.aws_request_id = invocation.request_id
        self.invoked_function_arn = invocation.function_arn
        self.function_name = env.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version = env.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = int(env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE") or 0)
        self.log_group_name = env.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = env.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.client_context = invocation.client_context
        self.identity = invocation.identity
        self.supports_streaming = streaming
        self._deadline_ms = invocation.deadline_ms
        self._clock = clock

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int(self._deadline_ms - self._clock() * 1000))


def is_function_url(event: Any) -> bool:
    """A request through the function's URL (its responses stream); the HTTP API's events
    name the API's own domain."""
    if not isinstance(event, dict):
        return False
    domain = str(((event.get("requestContext") or {}).get("domainName")) or "")
    return ".lambda-url." in domain


# --- the Runtime API --------------------------------------------------------------------


class StreamClosed(Exception):
    """The response stream cannot be written any more (the caller went away)."""


class ResponseStream:
    """One streamed response: ``write`` sends a chunk at once, ``finish`` the last chunk and
    the trailers, then reads the Runtime API's answer."""

    def __init__(self, address: str, request_id: str, timeout_s: float | None = None):
        host, _, port = address.partition(":")
        self._conn = http.client.HTTPConnection(host, int(port or 80), timeout=timeout_s)
        self._conn.putrequest("POST", f"{API_VERSION}/runtime/invocation/{request_id}/response",
                              skip_accept_encoding=True)
        self._conn.putheader("Lambda-Runtime-Function-Response-Mode", "streaming")
        self._conn.putheader("Transfer-Encoding", "chunked")
        self._conn.putheader("Content-Type", PRELUDE_CONTENT_TYPE)
        self._conn.putheader("Trailer", f"{ERROR_TYPE_TRAILER}, {ERROR_BODY_TRAILER}")
        self._conn.endheaders()
        self.closed = False
        self.bytes_sent = 0

    def write(self, data: bytes) -> None:
        if self.closed:
            raise StreamClosed("the response stream is closed")
        if not data:
            return
        try:
            self._conn.send(b"%x\r\n%s\r\n" % (len(data), data))
        except OSError as exc:
            self.closed = True
            raise StreamClosed(str(exc)) from exc
        self.bytes_sent += len(data)

    def finish(self, error: tuple[str, str] | None = None) -> int | None:
        """Ends the response (with ``(error type, message)`` as trailers); the Runtime API's
        status, or ``None`` when the stream was already broken."""
        if self.closed:
            self._conn.close()
            return None
        end = b"0\r\n"
        if error is not None:
            body = base64.b64encode(json.dumps({"errorType": error[0], "errorMessage": error[1]}).encode())
            end += f"{ERROR_TYPE_TRAILER}: {error[0]}\r\n".encode() + f"{ERROR_BODY_TRAILER}: ".encode() \
                + body + b"\r\n"
        try:
            self._conn.send(end + b"\r\n")
            status = self._conn.getresponse()
            status.read()
            return status.status
        except OSError:
            return None
        finally:
            self.closed = True
            self._conn.close()


class RuntimeApi:
    """The Runtime API at ``address`` (``AWS_LAMBDA_RUNTIME_API``, host:port)."""

    def __init__(self, address: str):
        self.address = address
        host, _, port = address.partition(":")
        self._conn = http.client.HTTPConnection(host, int(port or 80), timeout=None)

    def _request(self, method: str, path: str, body: bytes | None = None,
                 headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        for attempt in (1, 2):  # a kept-alive connection the other side closed: once more, fresh
            try:
                self._conn.request(method, API_VERSION + path, body=body, headers=headers or {})
                resp = self._conn.getresponse()
                return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
            except (http.client.RemoteDisconnected, ConnectionError, http.client.CannotSendRequest):
                self._conn.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def next(self) -> Invocation:
        status, headers, body = self._request("GET", "/runtime/invocation/next")
        if status != 200:
            raise RuntimeError(f"runtime API answered {status} to next invocation")
        return Invocation(request_id=headers["lambda-runtime-aws-request-id"],
                          deadline_ms=int(headers.get("lambda-runtime-deadline-ms") or 0),
                          event=json.loads(body or b"null"),
                          function_arn=headers.get("lambda-runtime-invoked-function-arn", ""),
                          trace_id=headers.get("lambda-runtime-trace-id"),
                          client_context=_json_header(headers.get("lambda-runtime-client-context")),
                          identity=_json_header(headers.get("lambda-runtime-cognito-identity")))

    def respond(self, request_id: str, result: Any) -> None:
        self._request("POST", f"/runtime/invocation/{request_id}/response",
                      json.dumps(result, default=str).encode(), {"Content-Type": "application/json"})

    def invocation_error(self, request_id: str, exc: BaseException) -> None:
        self._request("POST", f"/runtime/invocation/{request_id}/error", _error_document(exc),
                      {"Content-Type": "application/json",
                       "Lambda-Runtime-Function-Error-Type": f"Runtime.{type(exc).__name__}"})

    def init_error(self, exc: BaseException) -> None:
        self._request("POST", "/runtime/init/error", _error_document(exc),
                      {"Content-Type": "application/json",
                       "Lambda-Runtime-Function-Error-Type": f"Runtime.{type(exc).__name__}"})

    def stream(self, request_id: str) -> ResponseStream:
        return ResponseStream(self.address, request_id)


def _json_header(value: str | None) -> Any:
    if not value:
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def _error_document(exc: BaseException) -> bytes:
    return json.dumps({"errorMessage": str(exc), "errorType": type(exc).__name__,
                       "stackTrace": traceback.format_exception(type(exc), exc, exc.__traceback__)}).encode()


# --- one streamed response ------------------------------------------------------------------


def prelude(response: dict[str, Any]) -> bytes:
    """The HTTP integration response's metadata and its delimiter."""
    headers = {k: str(v) for k, v in (response.get("headers") or {}).items()
               if k.lower() not in ("content-length", "transfer-encoding", "connection")}
    for name, values in (response.get("multiValueHeaders") or {}).items():
        if values:
            headers[name] = ", ".join(str(v) for v in values)
    meta = {"statusCode": int(response.get("statusCode", 200)), "headers": headers,
            "cookies": list(response.get("cookies") or [])}
    return json.dumps(meta).encode() + DELIMITER


def body_bytes(response: dict[str, Any]) -> bytes:
    payload = response.get("body") or ""
    if response.get("isBase64Encoded"):
        return base64.b64decode(payload)
    return payload.encode() if isinstance(payload, str) else bytes(payload)


@dataclass
class StreamLimits:
    """``keepalive_s``: the most a stream stays silent (an SSE comment then); ``margin_s``:
    how long before the invocation's deadline the loop ends a stream itself."""

    keepalive_s: float = 10.0
    margin_s: float = 0.5


@dataclass
class StreamOutcome:
    """What happened to one streamed response (logged; the tests read it)."""

    chunks: int = 0
    keepalives: int = 0
    disconnected: bool = False
    timed_out: bool = False
    error: str | None = None
    bytes_sent: int = 0
    notes: list[str] = field(default_factory=list)


def _produce(frames: Iterator[Any], out: queue.Queue, acks: queue.Queue) -> None:
    """Makes the frames on its own thread (a frame may wait on the model) in lockstep with the
    writer: the next frame is made only once the last one was written (``acks``), so no frame,
    and above all not the ``done`` frame whose making writes the turn, is made after a write
    failed. Then closes the frames: closing is what stops the model call and releases the
    in-flight slot."""
    try:
        while True:
            try:
                frame = next(frames)
            except StopIteration:
                break
            out.put(("frame", frame))
            if not acks.get():
                break
    except BaseException as exc:  # noqa: BLE001 - reported as the stream's error
        out.put(("error", exc))
    finally:
        close = getattr(frames, "close", None)
        if close is not None:
            try:
                close()
            except Exception:  # noqa: BLE001 - the stream is over either way
                log.warning("closing the response frames failed", exc_info=True)
        out.put(("end", None))


def send_stream(stream: ResponseStream, response: dict[str, Any], context: LambdaContext,
                limits: StreamLimits) -> StreamOutcome:
    """Writes ``response`` to ``stream``: prelude, then the body or each frame of its
    ``stream`` as it comes. Returns when the frames are closed (never with a producer still
    running: the next invocation must find the in-flight slot free)."""
    outcome = StreamOutcome()
    frames = response.get("stream")
    try:
        stream.write(prelude(response))
        if frames is None:
            stream.write(body_bytes(response))
            outcome.bytes_sent = stream.bytes_sent
            stream.finish()
            return outcome
    except StreamClosed:
        outcome.disconnected = True
        if frames is not None and hasattr(frames, "close"):
            frames.close()
        stream.finish()
        return outcome
    out: queue.Queue = queue.Queue()
    acks: queue.Queue = queue.Queue()  # True: written, make the next frame; False: stop
    producer = threading.Thread(target=_produce, args=(iter(frames), out, acks), name="stream-frames",
                                daemon=True)
    producer.start()
    error: tuple[str, str] | None = None
    try:
        while True:
            left_s = context.get_remaining_time_in_millis() / 1000 - limits.margin_s
            if left_s <= 0:
                outcome.timed_out = True
                error = ("Function.StreamDeadline", "the stream reached the invocation's deadline")
                break
            try:
                kind, item = out.get(timeout=min(limits.keepalive_s, left_s))
            except queue.Empty:
                if context.get_remaining_time_in_millis() / 1000 - limits.margin_s > 0:
                    stream.write(KEEPALIVE)
                    outcome.keepalives += 1
                continue
            if kind == "end":
                break
            if kind == "error":
                outcome.error = f"{type(item).__name__}: {item}"
                error = (f"Runtime.{type(item).__name__}", str(item))
                continue  # the producer puts "end" next
            data = item.encode("utf-8") if isinstance(item, str) else bytes(item)
            stream.write(data)
            outcome.chunks += 1
            acks.put(True)
    except StreamClosed:
        outcome.disconnected = True
    finally:
        acks.put(False)  # a frame made after this (or being made now) is not written
        outcome.bytes_sent = stream.bytes_sent
        # The response ends now (at a deadline, before Lambda would cut it); the producer
        # stops at its next frame and closes the frames, and the loop waits for that, so the
        # next invocation finds the in-flight slot free.
        stream.finish(error)
        _drain(out, producer)
        producer.join()
    return outcome


def _drain(out: queue.Queue, producer: threading.Thread) -> None:
    while producer.is_alive() or not out.empty():
        try:
            if out.get(timeout=0.05)[0] == "end":
                return
        except queue.Empty:
            continue


# --- the loop -----------------------------------------------------------------------------


def load_handler(spec: str) -> Callable[[Any, Any], Any]:
    module, _, name = spec.rpartition(".")
    return getattr(importlib.import_module(module), name)


def serve_one(api: RuntimeApi, handler: Callable[[Any, Any], Any], limits: StreamLimits,
              clock: Callable[[], float] = time.time) -> StreamOutcome | None:
    """One invocation: next, the handler, the response. The streamed outcome, else ``None``."""
    invocation = api.next()
    if invocation.trace_id:
        os.environ["_X_AMZN_TRACE_ID"] = invocation.trace_id
    else:
        os.environ.pop("_X_AMZN_TRACE_ID", None)
    streaming = is_function_url(invocation.event)
    context = LambdaContext(invocation, streaming=streaming, clock=clock)
    try:
        result = handler(invocation.event, context)
    except Exception as exc:  # noqa: BLE001 - reported to Lambda as the managed runtime does
        log.exception("the handler raised")
        api.invocation_error(invocation.request_id, exc)
        return None
    if not streaming:
        if isinstance(result, dict) and "stream" in result:  # a host that cannot stream gets the whole body
            result = {k: v for k, v in result.items() if k != "stream"} | {"body": "".join(result["stream"])}
        api.respond(invocation.request_id, result)
        return None
    response = result if isinstance(result, dict) else {"statusCode": 200, "body": json.dumps(result)}
    started = time.monotonic()
    outcome = send_stream(api.stream(invocation.request_id), response, context, limits)
    # The URL has no access log: each streamed response leaves one line (sizes and outcome,
    # never a header or a frame's text) beside the request line the resolver writes.
    summary = {"requestId": invocation.request_id, "status": response.get("statusCode"),
               "chunks": outcome.chunks, "bytes": outcome.bytes_sent, "keepalives": outcome.keepalives,
               "ms": round((time.monotonic() - started) * 1000, 1), "disconnected": outcome.disconnected,
               "timedOut": outcome.timed_out, "error": outcome.error and outcome.error.split(":", 1)[0]}
    if outcome.disconnected or outcome.timed_out or outcome.error:
        log.warning("stream ended early: %s", json.dumps(summary))
    else:
        log.info("stream done: %s", json.dumps(summary))
    return outcome


def limits_from_settings() -> StreamLimits:
    from agent_memory.runtime import get_runtime

    limits = get_runtime().settings.limits
    return StreamLimits(keepalive_s=limits.stream_keepalive_s, margin_s=limits.deadline_margin_s)


def run(address: str, handler_spec: str, invocations: int | None = None) -> int:
    api = RuntimeApi(address)
    try:
        handler = load_handler(handler_spec)
        limits = limits_from_settings()
    except Exception as exc:  # noqa: BLE001 - Lambda reports it and retires the environment
        traceback.print_exc()
        api.init_error(exc)
        return 1
    served = 0
    while invocations is None or served < invocations:
        serve_one(api, handler, limits)
        served += 1
    return 0


def main(argv: Iterable[str] | None = None) -> int:
    task_root = os.environ.get("LAMBDA_TASK_ROOT")
    if task_root and task_root not in sys.path:
        sys.path.insert(0, task_root)
    return run(os.environ["AWS_LAMBDA_RUNTIME_API"], os.environ.get("_HANDLER", "app.lambda_handler"))


if __name__ == "__main__":
    sys.exit(main())

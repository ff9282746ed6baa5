"""The runtime loop the chat function streams through (agent_memory.http.lambda_runtime),
against the fake Runtime API (agent_memory.testing.fake_runtime_api): a function URL request
is answered in streaming mode (prelude, delimiter, one chunk per frame as it is made), an
HTTP API request buffered, a handler failure as an invocation error; a failure mid-stream
ends in the error trailers; a caller that goes away closes the frames; the invocation's
deadline ends the stream. Ordering is by the fake's sequence numbers, never by a clock."""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import pytest

from agent_memory.http import lambda_runtime as rt
from agent_memory.testing.fake_runtime_api import FakeRuntimeApi

URL_EVENT = {"version": "2.0", "routeKey": "$default", "rawPath": "/api/v1/c/chat",
             "requestContext": {"domainName": "abc123.lambda-url.us-east-1.on.aws", "http": {"method": "POST"}}}
API_EVENT = {"version": "2.0", "routeKey": "POST /api/v1/{context_id}/chat", "rawPath": "/api/v1/c/chat",
             "requestContext": {"domainName": "abc123.execute-api.us-east-1.amazonaws.com",
                                "http": {"method": "POST"}}}
SSE = {"statusCode": 200, "headers": {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
       "cookies": [], "body": ""}


class Loop:
    """The runtime loop on a thread, serving ``n`` invocations with ``handler``."""

    def __init__(self, api: FakeRuntimeApi, handler: Any, n: int, limits: rt.StreamLimits | None = None):
        self.outcomes: list[Any] = []
        self.failure: BaseException | None = None
        client = rt.RuntimeApi(api.address)
        limits = limits or rt.StreamLimits(keepalive_s=30, margin_s=0.5)

        def serve() -> None:
            try:
                for _ in range(n):
                    self.outcomes.append(rt.serve_one(client, handler, limits))
            except BaseException as exc:  # noqa: BLE001 - the test reports it
                self.failure = exc

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()

    def join(self) -> None:
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "the loop did not finish"
        assert self.failure is None, self.failure


@pytest.fixture()
def api():
    with FakeRuntimeApi() as fake:
        yield fake


def test_a_function_url_request_streams_each_frame_before_the_next_is_made(api):
    first_arrived = threading.Event()
    closed = []

    def frames():
        try:
            yield "event: delta\ndata: {\"delta\": \"Hel\"}\n\n"
            # the next frame is made only once the first has reached the Runtime API
            assert first_arrived.wait(30)
            api.note("second frame made")
            yield "event: done\ndata: {}\n\n"
            yield "data: [DONE]\n\n"
        finally:
            closed.append(True)

    def handler(event, context):
        assert context.supports_streaming and context.aws_request_id
        assert 0 < context.get_remaining_time_in_millis() <= 29_000
        return {**SSE, "stream": frames()}

    rid = api.invoke(URL_EVENT, on_chunk=lambda chunk: first_arrived.set())
    loop = Loop(api, handler, 1)
    response = api.response(rid)
    loop.join()
    assert response.mode == "streaming"
    assert response.transfer_encoding.lower() == "chunked"
    assert response.content_type == "application/vnd.awslambda.http-integration-response"
    assert response.prelude == {"statusCode": 200, "headers": SSE["headers"], "cookies": []}
    body = response.body_chunks()
    assert [c.data for c in body] == [b'event: delta\ndata: {"delta": "Hel"}\n\n', b"event: done\ndata: {}\n\n",
                                      b"data: [DONE]\n\n"]
    made = next(seq for seq, _, what in api.events if what == "second frame made")
    assert body[0].seq < made < body[1].seq
    assert response.trailers == {} and response.status == 202
    assert closed == [True]
    assert loop.outcomes[0].chunks == 3 and not loop.outcomes[0].disconnected


def test_a_plain_response_through_the_url_is_its_prelude_and_body(api):
    problem = {"type": "t", "status": 401}
    rid = api.invoke(URL_EVENT)
    loop = Loop(api, lambda e, c: {"statusCode": 401, "headers": {"Content-Type": "application/problem+json",
                                                                    "Content-Length": "9"},
                                    "cookies": ["a=b"], "body": json.dumps(problem)}, 1)
    response = api.response(rid)
    loop.join()
    assert response.prelude == {"statusCode": 401, "headers": {"Content-Type": "application/problem+json"},
                                "cookies": ["a=b"]}
    assert json.loads(response.payload) == problem


def test_an_http_api_request_is_answered_buffered_as_the_managed_runtime_does(api):
    def handler(event, context):
        assert not context.supports_streaming
        return {**SSE, "body": "", "stream": iter(["a", "b"])}

    rid = api.invoke(API_EVENT)
    loop = Loop(api, handler, 1)
    response = api.response(rid)
    loop.join()
    assert response.mode is None and response.chunks == []
    assert json.loads(response.body)["body"] == "ab"
    assert "stream" not in json.loads(response.body)


def test_a_handler_that_raises_is_an_invocation_error_and_the_loop_goes_on(api):
    def handler(event, context):
        if event.get("boom"):
            raise ValueError("bad")
        return {"statusCode": 200, "body": "ok"}

    bad, good = api.invoke({"boom": True}), api.invoke(API_EVENT)
    loop = Loop(api, handler, 2)
    assert api.response(bad).error["errorType"] == "ValueError"
    assert api.response(bad).error_type == "Runtime.ValueError"
    assert json.loads(api.response(good).body)["body"] == "ok"
    loop.join()


def test_a_failure_after_the_prelude_is_reported_in_the_trailers(api):
    def frames():
        yield "event: delta\ndata: {}\n\n"
        raise RuntimeError("model went away")

    rid = api.invoke(URL_EVENT)
    loop = Loop(api, lambda e, c: {**SSE, "stream": frames()}, 1)
    response = api.response(rid)
    loop.join()
    assert [c.data for c in response.body_chunks()] == [b"event: delta\ndata: {}\n\n"]
    assert response.trailers["Lambda-Runtime-Function-Error-Type"] == "Runtime.RuntimeError"
    error = json.loads(base64.b64decode(response.trailers["Lambda-Runtime-Function-Error-Body"]))
    assert error == {"errorType": "Runtime.RuntimeError", "errorMessage": "model went away"}


def test_a_caller_that_goes_away_closes_the_frames_and_nothing_after_is_made(api):
    gone = threading.Event()
    made, closed = [], threading.Event()

    def frames():
        try:
            for i in range(100_000):
                made.append(i)
                yield f"event: delta\ndata: {i}\n\n"
                if i == 0:
                    assert gone.wait(30)  # the next write finds the connection closed
        finally:
            closed.set()

    rid = api.invoke(URL_EVENT, disconnect_after=1)
    after = api.invoke(API_EVENT)
    loop = Loop(api, lambda e, c: {**SSE, "stream": frames()} if e is not None and "routeKey" in e
                and e["routeKey"] == "$default" else {"statusCode": 200, "body": "next"}, 2)
    response = api.response(rid)
    assert response.disconnected
    gone.set()
    assert json.loads(api.response(after).body)["body"] == "next"  # the loop went on
    loop.join()
    assert closed.is_set()
    assert loop.outcomes[0].disconnected
    # the frame after the reset was made (its write failed), and none after it
    assert made == [0, 1]


def test_the_invocations_deadline_ends_the_stream_with_the_error_trailers(api):
    release = threading.Event()

    def frames():
        yield "event: delta\ndata: {}\n\n"
        release.wait(30)  # a model that never answers in time
        yield "event: done\ndata: {}\n\n"

    rid = api.invoke(URL_EVENT, deadline_s=1.0)
    loop = Loop(api, lambda e, c: {**SSE, "stream": frames()}, 1, rt.StreamLimits(keepalive_s=30, margin_s=0.5))
    response = api.response(rid)
    release.set()
    loop.join()
    assert response.trailers["Lambda-Runtime-Function-Error-Type"] == "Function.StreamDeadline"
    assert [c.data for c in response.body_chunks()] == [b"event: delta\ndata: {}\n\n"]
    assert loop.outcomes[0].timed_out


def test_a_silent_stream_gets_keep_alive_comments_until_its_next_frame(api):
    kept_alive = threading.Event()

    def on_chunk(chunk):
        if chunk.data == rt.KEEPALIVE:
            kept_alive.set()

    def frames():
        assert kept_alive.wait(30)  # silent until the loop has written a keep-alive
        yield "event: done\ndata: {}\n\n"

    rid = api.invoke(URL_EVENT, on_chunk=on_chunk)
    loop = Loop(api, lambda e, c: {**SSE, "stream": frames()}, 1, rt.StreamLimits(keepalive_s=0.05, margin_s=0.5))
    response = api.response(rid)
    loop.join()
    data = [c.data for c in response.body_chunks()]
    assert data[-1] == b"event: done\ndata: {}\n\n" and set(data[:-1]) == {rt.KEEPALIVE}
    assert loop.outcomes[0].keepalives == len(data) - 1 >= 1


def test_only_function_url_events_stream():
    assert rt.is_function_url(URL_EVENT)
    assert not rt.is_function_url(API_EVENT)
    assert not rt.is_function_url({"Records": []}) and not rt.is_function_url(None)


def test_an_import_failure_is_an_init_error(api, monkeypatch):
    monkeypatch.setattr(rt, "limits_from_settings", lambda: rt.StreamLimits())
    assert rt.run(api.address, "no_such_module_here.lambda_handler") == 1
    assert api.init_errors[0]["errorType"] == "ModuleNotFoundError"

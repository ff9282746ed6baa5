"""The streaming chat path as `sam build` made it: the streaming chat function's artifact (the chat
function's code under its own reserved concurrency, template.yaml ChatStreamFunction), started the way
Lambda starts it (the exec wrapper named by its ``AWS_LAMBDA_EXEC_WRAPPER``, executed from the
built layer, running our runtime loop on a CPython 3.11 with the function and the layer on its
path), against a fake Lambda Runtime API that records every chunk as it arrives
(``agent_memory.testing.fake_runtime_api``), DynamoDB and Secrets Manager on moto's server and
the slow fake OpenAI-compatible model (``agent_memory.testing.fake_openai``) answering.

The model holds the rest of its reply until the fake Runtime API has received the first
``event: delta`` chunk: the reply cannot be finished, so its ``done`` frame cannot be made,
before the first delta reached the caller. Ordering is by the fake's sequence numbers; nothing
is timed. Also: the frames are the local server's, byte for byte once the ids are set aside; a
caller that goes away stops the turn and nothing is written; a model that stalls ends in an
error frame before the invocation's deadline; a request without a key is refused through the
URL too; and the HTTP API's invocations are still answered buffered.

Reads ``.aws-sam/build`` (``make sam-build``, which this module runs when
``AGENT_MEMORY_SAM_BUILD`` is not ``background``), like tests/deploy/test_built_artifact.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_built_artifact import REGION, TABLE, TEMPLATE, build, function_env, layer_root, moto_endpoint  # noqa: F401

from agent_memory.http.gateway import LocalGateway, build_event
from agent_memory.testing.fake_openai import Behaviour, FakeOpenAIServer
from agent_memory.testing.fake_runtime_api import FakeRuntimeApi, function_url_event

REPO = Path(__file__).resolve().parents[2]
CTX = "/api/v1/streaming"
pytestmark = pytest.mark.timeout(1200)
FUNCTION = "ChatStreamFunction"  # the URL's function (ChatStreamUrl)
WRAPPER = TEMPLATE["Resources"][FUNCTION]["Properties"]["Environment"]["Variables"]["AWS_LAMBDA_EXEC_WRAPPER"]


class AwsRecorder:
    """A loopback proxy between the function and moto's server that notes each AWS call the
    function makes (``DynamoDB_20120810.GetItem``, ``secretsmanager.GetSecretValue``): what a
    refused request cost is read off it."""

    def __init__(self, upstream: str):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import urlsplit

        target = urlsplit(upstream)
        calls = self.calls = []

        class Forward(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                import http.client

                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                calls.append(self.headers.get("x-amz-target") or f"{self.command} {self.path}")
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                try:
                    conn.request(self.command, self.path, body,
                                 {k: v for k, v in self.headers.items() if k.lower() != "host"})
                    answer = conn.getresponse()
                    data = answer.read()
                finally:
                    conn.close()
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward  # noqa: N815 - http.server's names

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Stack:
    """The built chat function under our runtime loop, and what it talks to."""

    def __init__(self, built: Path, moto: str, tmp: Path):
        import boto3

        from agent_memory.adapters.dynamodb_table import create_table_from_template

        aws = {"endpoint_url": moto, "region_name": REGION, "aws_access_key_id": "testing",
               "aws_secret_access_key": "testing"}
        self.dynamodb = boto3.client("dynamodb", **aws)
        if TABLE not in self.dynamodb.list_tables()["TableNames"]:
            create_table_from_template(self.dynamodb, TABLE, REPO / "template.yaml")
        sm = boto3.client("secretsmanager", **aws)
        self.key = "bootstrap-" + os.urandom(16).hex()
        secrets = {"cursor": sm.create_secret(Name=f"cursor-{os.urandom(4).hex()}",
                                              SecretString=os.urandom(32).hex())["ARN"],
                   "bootstrap": sm.create_secret(Name=f"bootstrap-{os.urandom(4).hex()}",
                                                 SecretString=self.key)["ARN"]}
        self.behaviour = Behaviour(latency_ms=50)
        self.model = FakeOpenAIServer(self.behaviour).start()
        self.api = FakeRuntimeApi().start()
        # Lambda's /var/lang/bin/python3 is absent here: the wrapper takes python3 from PATH,
        # the interpreter the layer was compiled for (the venv's base, not the venv).
        bin_dir = tmp / "bin"
        bin_dir.mkdir()
        (bin_dir / "python3").symlink_to(Path(sys.base_prefix) / "bin" / "python3.11")
        self.env = function_env(FUNCTION, moto, "http://127.0.0.1:9", secrets)
        self.aws = AwsRecorder(moto)  # the function's AWS calls go through it
        self.env["AWS_ENDPOINT_URL"] = self.aws.url
        self.env.update({
            "AGENT_MEMORY_SEARCH": "none",
            "AGENT_MEMORY_MODELS_RESPONSE": "openai/fake-chat", "OPENAI_BASE_URL": self.model.url,
            "OPENAI_API_KEY": "fake", "AWS_LAMBDA_RUNTIME_API": self.api.address, "_HANDLER": "app.lambda_handler",
            "LAMBDA_TASK_ROOT": str(built / FUNCTION), "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
            "PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1",
        })
        # /opt/python/... on Lambda: the same file in the built layer.
        self.wrapper = layer_root(built) / WRAPPER.removeprefix("/opt/python/")
        self.proc = subprocess.Popen([str(self.wrapper)], env=self.env, cwd=str(built / FUNCTION),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.stderr: list[str] = []  # both streams: the JSON log lines go to stdout, as in Lambda
        for pipe in (self.proc.stdout, self.proc.stderr):
            threading.Thread(target=lambda p=pipe: self.stderr.extend(p), daemon=True).start()

    def headers(self, key: str | None = "default") -> dict[str, str]:
        out = {"content-type": "application/json"}
        if key is not None:
            out["authorization"] = f"Bearer {self.key if key == 'default' else key}"
        return out

    def chat_event(self, message: str, ctx: str = CTX, key: str | None = "default", **extra: Any) -> dict:
        body = json.dumps({"message": message, "stream": True, **extra}).encode()
        return function_url_event("POST", f"{ctx}/chat", self.headers(key), body)

    def call(self, event: dict, timeout_s: float = 120, **invoke: Any):
        rid = self.api.invoke(event, **invoke)
        try:
            return self.api.response(rid, timeout_s)
        except TimeoutError:
            raise AssertionError(f"no response; the function said: {''.join(self.stderr)[-3000:]}") from None

    def log_line(self, *parts: str) -> str:
        """The function's first output line holding every one of ``parts`` (read off its pipes
        by a thread, so it is waited for a while)."""
        for _ in range(200):
            found = [x for x in self.stderr if all(p in x for p in parts)]
            if found:
                return found[0]
            time.sleep(0.05)
        raise AssertionError(f"no output line with {parts}: {''.join(self.stderr)[-2000:]}")

    def items(self) -> list[tuple[str, str]]:
        found, start = [], None
        while True:
            page = self.dynamodb.scan(TableName=TABLE, **({"ExclusiveStartKey": start} if start else {}))
            found += [(i["pk"]["S"], i["sk"]["S"]) for i in page["Items"]]
            start = page.get("LastEvaluatedKey")
            if not start:
                return sorted(found)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.api.stop()
        self.model.stop()
        self.aws.stop()


@pytest.fixture(scope="module")
def stack(build: Path, moto_endpoint: str, tmp_path_factory) -> Iterator[Stack]:  # noqa: F811
    s = Stack(build, moto_endpoint, tmp_path_factory.mktemp("streaming"))
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(autouse=True)
def _plain_model(stack: Stack) -> Iterator[None]:
    stack.behaviour.hold = None
    yield
    if stack.behaviour.hold is not None:
        stack.behaviour.hold.set()  # a held reply the test left waiting
    stack.behaviour.hold = None


def frames(payload: bytes) -> list[tuple[str, Any]]:
    out = []
    for block in payload.decode().strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        data = lines["data"]
        out.append((lines.get("event", "message"), data if data == "[DONE]" else json.loads(data)))
    return out


def test_the_wrapper_is_an_executable_in_the_built_layer(stack: Stack):
    assert WRAPPER.startswith("/opt/python/agent_memory/")
    assert stack.wrapper.stat().st_mode & stat.S_IXUSR, "the exec wrapper must be executable in the layer"


def test_the_first_delta_reaches_the_caller_before_the_reply_is_finished(stack: Stack):
    hold = stack.behaviour.hold = threading.Event()
    released: list[int] = []

    def on_chunk(chunk) -> None:
        if chunk.data.startswith(b"event: delta") and not hold.is_set():
            released.append(stack.api.note("the model may finish its reply"))
            hold.set()

    response = stack.call(stack.chat_event("Hello! What do you remember about me?", bypassCache=True),
                          on_chunk=on_chunk)
    assert response.mode == "streaming" and response.transfer_encoding.lower() == "chunked"
    assert response.content_type == "application/vnd.awslambda.http-integration-response"
    assert response.prelude["statusCode"] == 200
    assert response.prelude["headers"]["Content-Type"].startswith("text/event-stream")
    body = response.body_chunks()
    kinds = [frames(c.data)[0][0] for c in body]
    assert kinds[0] == "delta" and kinds[-2:] == ["done", "message"], kinds
    # one frame per chunk, each written as it was made
    assert all(len(frames(c.data)) == 1 for c in body)
    assert released, "the model was let go by the first delta's arrival, not by its own timeout"
    done_seq = body[kinds.index("done")].seq
    assert body[0].seq < released[0] < done_seq
    done = frames(body[-2].data)[0][1]
    assert "".join(frames(c.data)[0][1]["delta"] for c in body if frames(c.data)[0][0] == "delta") == done["reply"]
    assert done["sessionId"] and done["traceId"] and "memoryUpdates" in done
    assert response.trailers == {}
    # written after it succeeded: the trace's two parts committed with the turns
    trace = stack.call(function_url_event("GET", f"{CTX}/traces/{done['traceId']}", stack.headers()))
    assert trace.prelude["statusCode"] == 200
    assert {"retrieval", "response"} <= set(json.loads(trace.payload))
    # the URL's stand-in for an access log: one line per streamed response, sizes and outcome only
    line = stack.log_line("stream done", response.request_id)
    assert "remember" not in line and "bearer" not in line.lower()


def _normalised(payload: bytes) -> str:
    text = payload.decode()
    text = re.sub(r'"(sess|tr|turn|trace|attr|rel|act|instr|unc|ent|fact)_[A-Za-z0-9_-]+"', r'"\1_ID"', text)
    text = re.sub(r'"\d{4}-\d\d-\d\dT[0-9:.]+Z"', '"TIME"', text)
    return re.sub(r'"latencyMs": [0-9.]+', '"latencyMs": 0', text)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_frames_are_the_local_servers(stack: Stack, tmp_path: Path):
    import httpx

    message = "Hello! Tell me what you know."
    url = stack.call(stack.chat_event(message, ctx="/api/v1/framing", bypassCache=True))
    port = _free_port()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO / "shared"),
           "AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"), "AGENT_MEMORY_CURSOR_SECRET": "local",
           "OPENAI_BASE_URL": stack.model.url, "OPENAI_API_KEY": "fake",
           "AGENT_MEMORY_MODELS_RESPONSE": "openai/fake-chat", "AGENT_MEMORY_MODELS_EXTRACTION": "offline/deterministic",
           "AGENT_MEMORY_MODELS_EMBEDDING": "hashing/v1", "AGENT_MEMORY_SEARCH": "none"}
    server = subprocess.Popen([shutil.which("agent-memory", path=str(Path(sys.executable).parent)), "serve",
                               "--port", str(port), "--data-dir", str(tmp_path / "data")],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and server.poll() is None, "the local server did not start"
                time.sleep(0.2)
        local = httpx.post(f"http://127.0.0.1:{port}/api/v1/framing/chat", timeout=60,
                           json={"message": message, "stream": True, "bypassCache": True})
    finally:
        server.terminate()
        server.wait(timeout=20)
    assert local.status_code == 200
    assert _normalised(url.payload) == _normalised(local.content)
    assert url.prelude["headers"]["Content-Type"] == local.headers["content-type"]


def test_a_caller_that_goes_away_stops_the_turn_and_nothing_is_written(stack: Stack):
    stack.call(stack.chat_event("Hello there.", ctx="/api/v1/gone", bypassCache=True))  # the context exists
    before = stack.items()
    hold = stack.behaviour.hold = threading.Event()
    response = stack.call(stack.chat_event("What do you remember?", ctx="/api/v1/gone", bypassCache=True),
                          disconnect_after=1, on_disconnect=hold.set)
    assert response.disconnected
    # the loop went on to the next invocation once the turn was closed
    after = stack.call(function_url_event("GET", "/api/v1/gone/traces/tr_none", stack.headers()))
    assert after.prelude["statusCode"] == 404
    # nothing but (at most) the turn's retrieval trace, as for a failed synthesis
    assert [k for k in stack.items() if "#traces" not in k[0]] == [k for k in before if "#traces" not in k[0]]
    assert '"disconnected": true' in stack.log_line("stream ended early", response.request_id).replace('\\"', '"')


def test_a_stalled_model_ends_in_an_error_frame_before_the_deadline_and_nothing_is_written(stack: Stack):
    stack.call(stack.chat_event("Hello there.", ctx="/api/v1/stalled", bypassCache=True))
    before = stack.items()
    stack.behaviour.hold = threading.Event()  # never set during the call: the reply stalls
    response = stack.call(stack.chat_event("What do you remember?", ctx="/api/v1/stalled", bypassCache=True),
                          deadline_s=5)
    got = frames(response.payload)
    assert [k for k, _ in got][-2:] == ["error", "message"], got
    assert got[-2][1]["status"] == 504
    assert response.trailers == {}
    assert [k for k in stack.items() if "#traces" not in k[0]] == [k for k in before if "#traces" not in k[0]]


def _emf(line: str) -> dict[str, Any] | None:
    return json.loads(line) if line.startswith("{") and '"_aws"' in line else None


def request_line(stack: Stack, request_id: str) -> dict[str, Any]:
    """The request's own JSON line (observability.request_done), waited for a while."""
    for _ in range(200):
        for text in list(stack.stderr):
            if text.startswith("{") and request_id in text and "request" in text:
                line = json.loads(text)
                if line.get("message") == "request" and line.get("function_request_id") == request_id:
                    return line
        time.sleep(0.05)
    raise AssertionError(f"no request line for {request_id}: {''.join(stack.stderr)[-2000:]}")


def test_anonymous_and_bad_key_requests_are_refused_before_any_store_or_model_call_and_counted(stack: Stack):
    stack.call(stack.chat_event("Hello there.", ctx="/api/v1/refused", bypassCache=True))  # warm: key, secret read
    emf_before = [d for d in map(_emf, list(stack.stderr)) if d]
    aws_before, model_before = len(stack.aws.calls), stack.model.stats.answered
    refused = []
    for key in (None, "am_live_not-a-key-of-this-stack", "not even a bearer"):
        event = stack.chat_event("What do you remember?", ctx="/api/v1/refused", key=key)
        event["headers"]["user-agent"] = "flood/1.0"
        event["requestContext"]["http"]["userAgent"] = "flood/1.0"
        response = stack.call(event)
        assert response.prelude["statusCode"] == 401 and json.loads(response.payload)["status"] == 401
        refused.append(response.request_id)
    # nothing reached the table or the model: a made-up key is not of the stored keys' form, and
    # the bootstrap key's digest was read before (re-read every 5 minutes)
    aws = stack.aws.calls[aws_before:]
    assert not [c for c in aws if c.startswith("DynamoDB")], aws
    assert stack.model.stats.answered == model_before
    # each counted: one EMF document per refused invocation with Unauthenticated 1
    for _ in range(200):
        counted = [d for d in map(_emf, list(stack.stderr)) if d and d.get("Unauthenticated")][
            len([d for d in emf_before if d.get("Unauthenticated")]):]
        if len(counted) >= 3:
            break
        time.sleep(0.05)
    assert len(counted) == 3 and all(d["status"] == "401" and d.get("ModelCalls") is None for d in counted)
    # and logged with where it came from (the URL's stand-in for an access log)
    for request_id in refused:
        line = request_line(stack, request_id)
        assert line["status"] == 401 and line["user_agent"] == "flood/1.0" and line["source_ip"] == "203.0.113.9", line
    # a key of the stored form costs one table read (then cached for a minute), no model call
    shaped = "amk_" + "x" * 43
    aws_before = len(stack.aws.calls)
    assert stack.call(stack.chat_event("hi", ctx="/api/v1/refused", key=shaped)).prelude["statusCode"] == 401
    assert [c for c in stack.aws.calls[aws_before:] if c.startswith("DynamoDB")] == ["DynamoDB_20120810.GetItem"]
    assert stack.model.stats.answered == model_before


def test_a_streamed_chat_through_the_loop_emits_its_model_calls_tokens_and_whole_duration(stack: Stack):
    response = stack.call(stack.chat_event("Hello! I work at the harbour.", ctx="/api/v1/observed", bypassCache=True))
    assert frames(response.payload)[-2][0] == "done"
    line = request_line(stack, response.request_id)
    assert line["status"] == 200 and 0 < line["first_byte_ms"] <= line["duration_ms"]
    assert line["route"] == "POST /api/v1/{context_id}/chat"  # the route matched, not the URL's "$default"
    doc = None
    for _ in range(200):
        docs = [d for d in map(_emf, list(stack.stderr)) if d and d.get("route") == "POST /api/v1/{context_id}/chat"
                and d.get("first_byte_ms") is not None and d.get("ModelCalls")]
        if docs:
            doc = docs[-1]
            break
        time.sleep(0.05)
    assert doc is not None, "no EMF document of the streamed chat"
    for name in ("Requests", "RequestLatency", "ModelCalls", "ModelLatency", "PromptTokens", "CompletionTokens"):
        assert name in doc, name
    def total(name: str) -> float:
        return sum(doc[name]) if isinstance(doc[name], list) else doc[name]

    # one request; its latency the whole stream's, after its headers; the reply's model call and tokens
    assert total("Requests") == 1 and total("RequestLatency") >= doc["first_byte_ms"]
    assert total("ModelCalls") >= 1 and total("PromptTokens") > 0 and total("CompletionTokens") > 0


def test_the_http_apis_invocations_are_still_answered_buffered(stack: Stack):
    gateway = LocalGateway(REPO)
    route, params = gateway.match("POST", f"{CTX}/chat")
    body = json.dumps({"message": "Hello again.", "stream": True}).encode()
    event = build_event(route, "POST", f"{CTX}/chat", "", stack.headers(), body, params, "203.0.113.9")
    event["requestContext"]["domainName"] = "abc.execute-api.us-east-1.amazonaws.com"
    response = stack.call(event)
    assert response.mode is None and response.chunks == []
    result = json.loads(response.body)
    assert result["statusCode"] == 200 and "stream" not in result
    assert [k for k, _ in frames(result["body"].encode())][-2:] == ["done", "message"]

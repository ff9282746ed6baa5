"""The functions' thin OpenAI-compatible client (adapters/openai_http.py) where it differs from
the library: what it must not import, how soon a streamed delta arrives, the server's own
errors, and a server that is not there. Everything else the adapters do runs through both
clients in test_language_models.py and test_embedders.py (the ``http_client`` fixture)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading

import pytest

from agent_memory.adapters.models.openai_chat import OpenAIChatModel
from agent_memory.adapters.openai_http import APIStatusError, OpenAIHTTPClient
from agent_memory.ports import ChatMessage, ModelError, ModelOutputInvalid, ModelTimeout
from tests.conftest import REPO

CHAT_PATH = "/v1/chat/completions"


def _thin(server, **kw) -> OpenAIChatModel:
    kw.setdefault("backoff", 0.01)
    return OpenAIChatModel("gpt-test", api_key="sk-test", base_url=server.url, http_client="http", **kw)


def test_a_model_call_through_the_thin_client_never_imports_openai():
    # A fresh interpreter: the test process has imported the library already.
    script = """
import sys
from agent_memory.adapters.models.openai_chat import OpenAIChatModel
from agent_memory.ports import ChatMessage
from agent_memory.testing.fake_openai import Behaviour, FakeOpenAIServer
from pydantic import BaseModel

class Answer(BaseModel):
    text: str

with FakeOpenAIServer(Behaviour(latency_ms=5, seed=1)) as fake:
    model = OpenAIChatModel("fake-chat", base_url=fake.url, http_client="http")
    reply = model.complete([ChatMessage("user", "Hello")])
    streamed = "".join(model.stream([ChatMessage("user", "Hello")]))
    assert reply.text and streamed, (reply, streamed)
print(sorted(m for m in sys.modules if m == "openai" or m.startswith(("openai.", "httpx"))))
"""
    env = {"PYTHONPATH": f"{REPO / 'shared'}:{REPO}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_first_streamed_delta_arrives_before_the_rest_is_sent(openai_server):
    openai_server.chat_content = "First, then the rest of the reply."
    openai_server.stream_hold = threading.Event()
    deltas = iter(_thin(openai_server).stream([ChatMessage("user", "go")]))
    first = next(deltas)  # the server is holding the rest back until the test has this
    openai_server.stream_hold.set()
    assert first + "".join(deltas) == openai_server.chat_content
    assert openai_server.released_in_time is True  # nothing waited for the whole body


def test_an_error_event_in_the_stream_is_a_model_error(openai_server):
    chunk = {"choices": [{"index": 0, "delta": {"content": "Half"}}]}
    openai_server.stream_events = [f"data: {json.dumps(chunk)}\n\n", ": a comment line\n\n",
                                   'data: {"error": {"message": "overloaded mid-stream"}}\n\n']
    deltas = _thin(openai_server).stream([ChatMessage("user", "go")])
    with pytest.raises(ModelError, match="overloaded mid-stream") as info:
        list(deltas)
    assert not isinstance(info.value, ModelTimeout)


def test_a_stream_without_done_ends_at_the_end_of_the_body(openai_server):
    chunks = [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in ("one ", "two")]
    openai_server.stream_events = [f"data: {json.dumps(c)}\r\n\r\n" for c in chunks]
    assert "".join(_thin(openai_server).stream([ChatMessage("user", "go")])) == "one two"


def test_the_servers_error_message_and_status_reach_the_model_error(openai_server):
    openai_server.enqueue(CHAT_PATH, openai_server.Reply(
        status=400, body=openai_server.error("model 'nope' does not exist", "invalid_request_error")))
    with pytest.raises(ModelError, match=r"HTTP 400: .*model 'nope' does not exist"):
        _thin(openai_server).complete([ChatMessage("user", "hi")])


def test_a_non_json_answer_is_a_model_error_not_a_crash(openai_server):
    openai_server.enqueue(CHAT_PATH, openai_server.Reply(body="<html>gateway</html>"))
    with pytest.raises(ModelError, match="not JSON"):
        _thin(openai_server).complete([ChatMessage("user", "hi")])


def test_a_refusal_is_invalid_output_naming_it(openai_server):
    body = openai_server.completion(None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    openai_server.enqueue(CHAT_PATH, openai_server.Reply(body=body))

    from pydantic import BaseModel

    class Answer(BaseModel):
        text: str

    with pytest.raises(ModelOutputInvalid, match="refusal: I can't help with that"):
        _thin(openai_server).structured(system="s", user="u", schema=Answer)


def test_a_server_that_is_not_there_is_retried_then_a_model_error():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIChatModel("gpt-test", base_url=f"http://127.0.0.1:{port}/v1", http_client="http",
                            max_retries=1, backoff=0.01)
    with pytest.raises(ModelError, match="connection error") as info:
        model.complete([ChatMessage("user", "hi")])
    assert not isinstance(info.value, ModelTimeout)


def test_calls_in_a_row_on_one_client_plain_streamed_and_refused(openai_server):
    client = OpenAIHTTPClient(api_key="sk-test", base_url=openai_server.url, timeout=5)
    for _ in range(3):
        answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert answer.choices[0].message.content == openai_server.chat_content
    events = list(client.chat.completions.create(model="m", messages=[], stream=True))
    assert events[-1].choices[0].finish_reason == "stop"
    with pytest.raises(APIStatusError) as info:
        openai_server.enqueue(CHAT_PATH, openai_server.Reply(status=429, body=openai_server.error("slow down")))
        client.chat.completions.create(model="m", messages=[])
    assert (info.value.status_code, info.value.message) == (429, "Error code: 429 - slow down")
    client.close()

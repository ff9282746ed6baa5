"""Erasure reaches the traces (issue 70): after a forget (soft or purge), a session delete or
a fact delete, no trace (``GET /traces/{id}``, ``GET /traces``) shows the erased text; the
trace keeps its ids and says what was taken out (``redacted``: SHA-256 of each string).
Audit rows carry ids only. On both record stores."""

from __future__ import annotations

import hashlib
import json

import pytest

from agent_memory.runtime import get_runtime

CTX = "/api/v1/acme"
# The mark is words no id can contain (ids are hex, or base32 without "l" and "o"): a
# random trace id once held the digits of an earlier, numeric mark.
SECRET = "My locker combination is velvet-owl and it opens the gym locker by the pool"
MARK = "velvet-owl"


def chat(api, message: str, session: str | None = None) -> dict:
    body = {"message": message, **({"sessionId": session} if session else {})}
    r = api.post(f"{CTX}/chat", body)
    assert r.status == 200, r.text
    return r.json()


def trace_text(api, trace_id: str) -> str:
    r = api.get(f"{CTX}/traces/{trace_id}")
    assert r.status == 200, r.text
    return r.text


def all_traces(api) -> str:
    return api.get(f"{CTX}/traces?limit=100").text


def stored_traces() -> str:
    """Every trace row as stored, read behind the service's back."""
    store = get_runtime().store
    return json.dumps([r.data for r in store.scan("c#acme#") if r.data.get("kind") == "trace"])


@pytest.mark.parametrize("purge", [False, True], ids=["soft", "purge"])
def test_forgetting_a_turn_redacts_the_traces_that_quoted_it(api, purge):
    said = chat(api, SECRET)
    asked = chat(api, "What is my locker combination?", said["sessionId"])
    other = chat(api, "The weather in Oslo was mild today.")
    assert MARK in trace_text(api, said["traceId"])
    r = api.post(f"{CTX}/forget", {"query": SECRET, "limit": 1, "minScore": 0.2, "purge": purge})
    assert r.status == 200 and r.json()["deleted"] == 1, r.text
    assert r.json()["items"][0]["kind"] == "turn"

    for trace_id in (said["traceId"], asked["traceId"]):
        text = trace_text(api, trace_id)
        assert MARK not in text and "locker combination is" not in text, text
    assert MARK not in all_traces(api) and MARK not in stored_traces()
    got = json.loads(trace_text(api, said["traceId"]))
    assert got["retrieval"]["query"] == "[redacted]"
    assert hashlib.sha256(SECRET.encode()).hexdigest() in got["retrieval"]["redacted"]["hashes"]
    # a trace whose question was not the forgotten turn and quotes none of it keeps its text (a hit
    # naming the forgotten turn is an id)
    assert "Oslo" in trace_text(api, other["traceId"])
    audit = api.get(f"{CTX}/audit?limit=200").text
    assert MARK not in audit


def test_deleting_a_session_redacts_its_traces(api):
    said = chat(api, SECRET)
    other = chat(api, "The weather in Oslo was mild today.")
    assert api.delete(f"{CTX}/sessions/{said['sessionId']}").status == 204
    assert MARK not in trace_text(api, said["traceId"])
    assert MARK not in stored_traces()
    assert "Oslo" in trace_text(api, other["traceId"])

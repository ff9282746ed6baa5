"""Sessions the caller names: a write, batch or chat naming a session that does not exist
creates it under that id (the spec's ``sess_...`` form and the Spectron client's
``sess:abc`` alike), concurrent first writes land in one session, reads filtered by an
unknown session answer 200 and empty, and the session's own resources (its turns) of an
unknown id stay 404.
On both record stores."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import pytest

from agent_memory.access.request_context import RequestContext
from agent_memory.services.conversation.sessions import NewTurn

CTX = "/api/v1/acme"


def _turns(api, sid: str) -> list[dict]:
    r = api.get(f"{CTX}/sessions/{quote(sid, safe='')}/turns")
    assert r.status == 200, r.text
    return r.json()["turns"]


@pytest.mark.parametrize("sid", ["sess:abc", "sess_01jz0000000000000000000000", "user-123"])
def test_a_write_naming_an_unknown_session_creates_it(api, sid):
    assert api.get(f"{CTX}/sessions/{quote(sid, safe='')}/turns").status == 404
    r = api.post(f"{CTX}/facts", {"text": "Acme acquired Beta", "infer": "none", "session_id": sid,
                                  "scopes": ["org/acme"]})
    assert r.status == 200, r.text
    assert r.json()["sessionId"] == sid
    listed = {s["id"]: s for s in api.get(f"{CTX}/sessions").json()["items"]}
    assert listed[sid]["scopes"] == [["org/acme"]]
    # the second write appends to it, taking its scopes
    assert api.post(f"{CTX}/facts", {"text": "Beta makes ferries", "infer": "none", "sessionId": sid}).status == 200
    assert [(t["seq"], t["content"]) for t in _turns(api, sid)] == [(1, "Acme acquired Beta"),
                                                                     (2, "Beta makes ferries")]


def test_batch_and_chat_create_the_session_they_name(api):
    r = api.post(f"{CTX}/facts/batch", {"messages": [{"role": "user", "content": "I live in Porto."},
                                                     {"role": "assistant", "content": "Noted."}],
                                        "session_id": "conv-42", "infer": "none"})
    assert r.status == 200, r.text
    assert r.json()["sessionId"] == "conv-42"
    assert [t["content"] for t in _turns(api, "conv-42")] == ["I live in Porto.", "Noted."]
    chat = api.post(f"{CTX}/chat", {"message": "Where do I live?", "sessionId": "chat:7"})
    assert chat.status == 200, chat.text
    assert chat.json()["sessionId"] == "chat:7"
    assert [t["role"] for t in _turns(api, "chat:7")] == ["user", "assistant"]
    again = api.post(f"{CTX}/chat", {"message": "And where did I say that?", "sessionId": "chat:7"})
    assert again.status == 200, again.text
    assert [t["seq"] for t in _turns(api, "chat:7")] == [1, 2, 3, 4]


def test_reads_filtered_by_an_unknown_session_are_empty(api):
    assert api.post(f"{CTX}/facts", {"text": "I live in Porto.", "infer": "none"}).status == 200
    r = api.post(f"{CTX}/query", {"query": "Porto", "sessionId": "never-written"})
    assert r.status == 200, r.text
    assert r.json()["hits"] == []
    assert api.get(f"{CTX}/sessions/never-written/turns").status == 404
    # a read names no session into existence
    assert "never-written" not in {s["id"] for s in api.get(f"{CTX}/sessions").json()["items"]}


@pytest.mark.parametrize("bad", ["", "a" * 257, "tab\there"])
def test_a_session_id_outside_the_id_rule_is_a_400_that_writes_nothing(api, bad):
    r = api.post(f"{CTX}/facts", {"text": "hello", "infer": "none", "sessionId": bad})
    assert r.status == 400, r.text
    assert "sessionId" in r.text
    assert api.get(f"{CTX}/sessions").json()["items"] == []


def test_a_closed_named_session_still_refuses_writes(api):
    assert api.post(f"{CTX}/facts", {"text": "hi", "infer": "none", "sessionId": "s-closed"}).status == 200
    assert api.post(f"{CTX}/sessions/s-closed/close").status == 200
    assert api.post(f"{CTX}/facts", {"text": "again", "infer": "none", "sessionId": "s-closed"}).status == 409


def test_concurrent_first_writes_naming_one_session_land_in_it(runtime):
    ctx = RequestContext(context_id="acme", principal="p", admin=True)
    sessions = runtime.sessions

    def append(i: int) -> int:
        session, is_new = sessions.open_for_write(ctx, "thread-9", [], [])
        return sessions.append_turns(ctx, session, [NewTurn("user", f"m{i}")], [], [], is_new=is_new)[0].seq

    with ThreadPoolExecutor(max_workers=6) as pool:
        seqs = list(pool.map(append, range(12)))
    assert sorted(seqs) == list(range(1, 13))
    turns = sessions.list_turns(ctx, "thread-9", 100, None).items
    assert [t.seq for t in turns] == list(range(1, 13))
    assert sessions.get(ctx, "thread-9").turn_count == 12

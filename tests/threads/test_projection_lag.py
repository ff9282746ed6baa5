"""Projection lag: while the thread's latest turn is not in the search index and /context
needs semantic matches, the answer is 503 thread_projection_pending with Retry-After."""

from __future__ import annotations

T = "/threads/lagging"


def test_context_is_503_while_the_latest_turn_is_not_projected(as_, runtime):
    api = as_()
    for i in range(4):
        api.post(f"{T}/turns", {"text": f"projected turn {i}"})
    runtime.projector.pause()
    try:
        assert api.post(f"{T}/turns", {"text": "not yet searchable"}).status == 201  # appends still work
        r = api.post(f"{T}/context", {"query": "turn", "last_n_turns": 2})
        assert r.status == 503, r.text
        assert r.headers["retry-after"] == "1"
        assert r.headers["content-type"] == "application/problem+json"
        body = r.json()
        assert body["code"] == "thread_projection_pending" and body["status"] == 503
        # no semantic part needed (the window covers the thread): answered from the store
        r = api.post(f"{T}/context", {"query": "turn", "last_n_turns": 5})
        assert r.status == 200 and [i["turnIndex"] for i in r.json()["items"]] == [1, 2, 3, 4, 5]
        # plain reads never wait for projection
        assert [t["turnIndex"] for t in api.get(f"{T}/turns").json()["items"]] == [1, 2, 3, 4, 5]
    finally:
        runtime.projector.resume()
    r = api.post(f"{T}/context", {"query": "turn", "last_n_turns": 2})
    assert r.status == 200
    assert [i["origin"] for i in r.json()["items"]][:2] == ["recent", "recent"]
    assert any(i["origin"] == "semantic" for i in r.json()["items"])


def test_a_stale_unit_revision_counts_as_pending(as_, runtime):
    """After PUT /acl re-stamps turns, their units must catch up before semantic answers."""
    api = as_()
    for i in range(3):
        api.post(f"{T}/turns", {"text": f"turn {i}"})
    runtime.projector.pause()
    try:
        assert api.put(f"{T}/acl", {"acl_readers": ["group:care-team-7"]}).status == 200
        r = api.post(f"{T}/context", {"query": "turn", "last_n_turns": 1})
        assert r.status == 503 and r.json()["code"] == "thread_projection_pending"
    finally:
        runtime.projector.resume()
    assert api.post(f"{T}/context", {"query": "turn", "last_n_turns": 1}).status == 200

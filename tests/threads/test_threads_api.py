"""Thread routes end to end (in-process and over HTTP, SQLite and DynamoDB): append, list,
context ordering, idempotent retries, bad input (4xx, nothing written), partitions."""

from __future__ import annotations

import pytest

from agent_memory.runtime import get_runtime

T = "/threads/ticket-8492"


def turn_texts(api, path=T, **params):
    q = "&".join(f"{k}={v}" for k, v in params.items())
    r = api.get(f"{path}/turns" + (f"?{q}" if q else ""))
    assert r.status == 200, r.text
    return [(t["turnIndex"], t["text"]) for t in r.json()["items"]]


def stored_turn_count(thread_id="ticket-8492", partition="default") -> int:
    """Turn rows actually in the store, read behind the API's back."""
    from agent_memory.access.request_context import RequestContext
    from agent_memory.kernel import storage_keys as keys

    ctx = RequestContext(context_id="acme", principal="t", partition=partition, admin=True)
    return len(get_runtime().store.query(keys.thread_turns_pk(ctx, thread_id), limit=1000).records)


def test_append_returns_201_with_dense_indexes_and_lists_in_order(as_):
    api = as_()
    for i in range(3):
        r = api.post(f"{T}/turns", {"text": f"message {i}", "entity_id": "customer-42",
                                     "metadata": {"speaker": "customer", "n": i, "ok": True, "x": None}})
        assert r.status == 201, r.text
        body = r.json()
        assert body["turnIndex"] == i + 1 and body["threadId"] == "ticket-8492"
        assert body["turnId"].startswith("tturn_") and body["entityId"] == "customer-42"
        assert body["createdAt"].endswith("Z")
    r = api.get(f"{T}/turns")
    items = r.json()["items"]
    assert [(t["turnIndex"], t["text"]) for t in items] == [(1, "message 0"), (2, "message 1"), (3, "message 2")]
    assert items[1]["metadata"] == {"speaker": "customer", "n": 1, "ok": True, "x": None}
    assert r.json()["page"] == {"hasMore": False, "nextCursor": None}
    meta = api.get(T).json()
    assert meta["turnCount"] == 3 and meta["aclReaders"] is None and meta["partition"] == "default"


def test_paging_by_cursor_and_after_index(as_):
    api = as_()
    for i in range(7):
        api.post(f"{T}/turns", {"text": f"t{i}"})
    seen, cursor = [], None
    while True:
        r = api.get(f"{T}/turns?limit=3" + (f"&cursor={cursor}" if cursor else ""))
        assert r.status == 200, r.text
        page = r.json()
        seen += [t["turnIndex"] for t in page["items"]]
        if not page["page"]["hasMore"]:
            break
        cursor = page["page"]["nextCursor"]
    assert seen == list(range(1, 8))
    assert turn_texts(api, after_index=5) == [(6, "t5"), (7, "t6")]
    assert api.get(f"{T}/turns?limit=3&after_index=2").json()["items"][0]["turnIndex"] == 3
    assert api.get(f"{T}/turns/4").json()["text"] == "t3"
    assert api.get(f"{T}/turns/99").status == 404
    assert api.get(f"{T}/turns?limit=501").status == 400
    # a cursor of another thread is refused
    other_cursor = api.get(f"{T}/turns?limit=1").json()["page"]["nextCursor"]
    api.post("/threads/other/turns", {"text": "x"})
    api.post("/threads/other/turns", {"text": "y"})
    assert api.get(f"/threads/other/turns?cursor={other_cursor}").status == 400


def test_context_recent_window_then_older_semantic_matches(as_):
    api = as_()
    texts = ["The printer on floor 3 jams when printing duplicate pages.",
             "I cleared the paper tray and restarted it.",
             "My favourite lunch is a falafel wrap.",
             "The weather is nice today.",
             "Let us schedule the quarterly review.",
             "Please send the invoice by Friday.",
             "Can you check the VPN settings?",
             "The VPN works again now."]
    for t in texts:
        assert api.post(f"{T}/turns", {"text": t}).status == 201
    r = api.post(f"{T}/context", {"query": "printer jams on duplicate pages", "last_n_turns": 3})
    assert r.status == 200, r.text
    items = r.json()["items"]
    recent = [i for i in items if i["origin"] == "recent"]
    semantic = [i for i in items if i["origin"] == "semantic"]
    assert [i["turnIndex"] for i in recent] == [6, 7, 8]
    assert items[:3] == recent  # recent first
    assert 1 <= len(semantic) <= 5 and all(i["turnIndex"] < 6 and "score" in i for i in semantic)
    assert semantic[0]["turnIndex"] == 1  # the printer turn is the best older match
    assert len({i["turnId"] for i in items}) == len(items)
    r = api.post(f"{T}/context", {"query": "printer", "last_n_turns": 3, "recent_first": True})
    assert [i["turnIndex"] for i in r.json()["items"] if i["origin"] == "recent"] == [8, 7, 6]
    # a window covering the whole thread has nothing older: no semantic matches
    r = api.post(f"{T}/context", {"query": "printer", "last_n_turns": 1000})
    assert [i["origin"] for i in r.json()["items"]] == ["recent"] * 8
    # camelCase accepted too
    assert api.post(f"{T}/context", {"query": "printer", "lastNTurns": 2, "recentFirst": True}).status == 200


def test_context_of_unknown_thread_is_404(as_):
    # As every thread read; a restricted thread answers the same way (tests/access), so the
    # two cannot be told apart.
    r = as_().post("/threads/nothing-here/context", {"query": "anything"})
    assert r.status == 404 and r.json()["status"] == 404
    assert as_().get("/threads/nothing-here").status == 404
    assert as_().get("/threads/nothing-here/turns").status == 404


def test_entity_filter_takes_last_n_then_filters_without_scanning_back(as_):
    api = as_()
    plan = ["customer-42", "customer-42", "customer-42", "customer-7", "customer-7", "customer-42", "customer-7"]
    for i, entity in enumerate(plan, start=1):
        api.post(f"{T}/turns", {"text": f"turn {i} from {entity}", "entity_id": entity})
    r = api.post(f"{T}/context", {"query": "turn", "last_n_turns": 4, "entity_id": "customer-42"})
    items = r.json()["items"]
    # last 4 turns are 4..7; only turn 6 belongs to customer-42, and the server does not scan back
    assert [i["turnIndex"] for i in items if i["origin"] == "recent"] == [6]
    # semantic matches come from older turns of the same entity only
    assert {i["turnIndex"] for i in items if i["origin"] == "semantic"} <= {1, 2, 3}
    assert all(i["entityId"] == "customer-42" for i in items)
    assert [t[0] for t in turn_texts(api, entity_id="customer-7")] == [4, 5, 7]


def test_idempotent_append_replays_and_conflicts(as_):
    api = as_()
    body = {"text": "Sign-in still fails.", "idempotency_key": "msg-1"}
    first = api.post(f"{T}/turns", body)
    assert first.status == 201
    again = api.post(f"{T}/turns", body)
    assert again.status == 200 and again.json() == first.json()
    # the key may come in the header instead
    hdr = api.post(f"{T}/turns", {"text": "Sign-in still fails."}, headers={"Idempotency-Key": "msg-1"})
    assert hdr.status == 200 and hdr.json()["turnId"] == first.json()["turnId"]
    conflict = api.post(f"{T}/turns", {"text": "Something else", "idempotency_key": "msg-1"})
    assert conflict.status == 409
    assert conflict.headers["content-type"] == "application/problem+json"
    mismatch = api.post(f"{T}/turns", {"text": "x", "idempotency_key": "a"}, headers={"Idempotency-Key": "b"})
    assert mismatch.status == 400
    assert stored_turn_count() == 1
    assert api.get(T).json()["turnCount"] == 1


@pytest.mark.parametrize("body, field, status", [
    ({"text": ""}, "text", 400),
    ({}, "text", 400),
    ({"text": 5}, "text", 400),
    ({"text": "hi", "metadata": {"speaker": {"nested": 1}}}, "metadata.speaker", 400),
    ({"text": "hi", "metadata": {"tags": ["a"]}}, "metadata.tags", 400),
    ({"text": "hi", "metadata": "flat"}, "metadata", 400),
    ({"text": "hi", "acl_readers": "alice"}, "acl_readers", 400),
    ({"text": "hi", "acl_readers": [""]}, "acl_readers", 400),
    ({"text": "hi", "unknown": 1}, "unknown", 400),
    ({"text": "bad \u0000 byte"}, "text", 400),
    ({"text": "hi", "entity_id": ""}, "entity_id", 400),
])
def test_bad_append_is_4xx_naming_the_field_and_writes_nothing(as_, body, field, status):
    r = as_().post(f"{T}/turns", body)
    assert r.status == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["field"] == field
    assert stored_turn_count() == 0


def test_malformed_json_lone_surrogate_and_nan_are_400(as_):
    api = as_()
    assert api.post(f"{T}/turns", raw=b"{not json").status == 400
    assert api.post(f"{T}/turns", raw=b'{"text": "a \\ud800 b"}').status == 400
    r = api.post(f"{T}/turns", raw=b'{"text": "a", "metadata": {"x": NaN}}')
    assert r.status == 400 and r.json()["field"] == "metadata.x"
    assert stored_turn_count() == 0


def test_bad_thread_ids_and_context_bounds(as_):
    api = as_()
    assert api.post("/threads/has%20space/turns", {"text": "x"}).status == 400
    assert api.post(f"/threads/{'a' * 129}/turns", {"text": "x"}).status == 400
    assert api.get("/threads/bad!id").status == 400
    assert api.post("/threads/ok.id:with-colon_1/turns", {"text": "x"}).status == 201
    for bad in ({"query": ""}, {"query": "q", "last_n_turns": 0}, {"query": "q", "last_n_turns": 1001},
                {"query": "q", "recent_first": "yes"}, {"last_n_turns": 3}):
        r = api.post(f"{T}/context", bad)
        assert r.status == 400, (bad, r.text)
    assert api.get(f"{T}/turns/abc").status == 400
    assert api.get(f"{T}/turns?after_index=-1").status == 400


def test_text_over_one_mib_is_413_and_writes_nothing(as_):
    api = as_()
    r = api.post(f"{T}/turns", {"text": "x" * (1024 * 1024 + 1)})
    assert r.status == 413, r.text
    assert stored_turn_count() == 0


def test_large_turn_round_trips_through_parts(as_):
    api = as_()
    unit = "Grüße aus Köln \"quoted\" 🙂 "  # multi-byte characters and JSON escapes
    big = unit * (1_040_000 // len(unit.encode()))  # just under the 1 MiB cap, split into parts
    assert 700_000 < len(big.encode()) <= 1024 * 1024
    r = api.post(f"{T}/turns", {"text": big, "entity_id": "e"})
    assert r.status == 201, r.text
    api.post(f"{T}/turns", {"text": "small follow-up"})
    assert api.get(f"{T}/turns/1").json()["text"] == big
    items = api.get(f"{T}/turns").json()["items"]
    assert items[0]["text"] == big and items[0]["textBytes"] == len(big.encode())
    ctx = api.post(f"{T}/context", {"query": "Köln", "last_n_turns": 2}).json()["items"]
    assert ctx[0]["text"] == big


def test_partitions_are_a_hard_boundary(as_):
    a, b = as_("admin", "clinic-a"), as_("admin", "clinic-b")
    a.post("/threads/patient-care/turns", {"text": "clinic A: patient reports migraine relief with rest"})
    for i in range(6):
        a.post("/threads/patient-care/turns", {"text": f"clinic A filler {i}"})
    b.post("/threads/patient-care/turns", {"text": "clinic B: patient asks about knee surgery"})
    for i in range(6):
        b.post("/threads/patient-care/turns", {"text": f"clinic B filler {i}"})
    ta = [t for _, t in turn_texts(a, "/threads/patient-care")]
    tb = [t for _, t in turn_texts(b, "/threads/patient-care")]
    assert all(t.startswith("clinic A") for t in ta) and all(t.startswith("clinic B") for t in tb)
    assert a.get("/threads/patient-care").json()["partition"] == "clinic-a"
    assert b.get("/threads/patient-care").json()["turnCount"] == 7
    for api, own, other in ((a, "clinic A", "clinic B"), (b, "clinic B", "clinic A")):
        items = api.post("/threads/patient-care/context",
                         {"query": "patient migraine knee surgery", "last_n_turns": 2}).json()["items"]
        assert items and all(i["text"].startswith(own) and other not in i["text"] for i in items)
        assert any(i["origin"] == "semantic" for i in items)
    # the default partition does not see either
    assert as_().get("/threads/patient-care").status == 404
    # a cursor from clinic A is refused in clinic B
    cur = a.get("/threads/patient-care/turns?limit=2").json()["page"]["nextCursor"]
    assert b.get(f"/threads/patient-care/turns?cursor={cur}").status == 400

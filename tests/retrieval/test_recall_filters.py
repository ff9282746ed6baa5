"""The recall filters of POST /query and /context (include facts/passages, atInstant,
validFrom/validUntil, lens + scopeView, source, location), in process on both stores and
over HTTP on SQLite: each checks which rows come back, and bad values are 400s naming the field."""

from __future__ import annotations

import time

import pytest
from openapi_schemas import assert_matches

CTX = "/api/v1/acme"


def triples(api, *facts: dict, scopes=None) -> None:
    body = {"text": "import", "infer": "triples", "triples": list(facts)}
    if scopes is not None:
        body["scopes"] = scopes
    r = api.post(f"{CTX}/facts", body)
    assert r.status == 200, r.text


def query(api, body: dict, path: str = "/query") -> dict:
    r = api.post(f"{CTX}{path}", body)
    assert r.status == 200, r.text
    return assert_matches("POST", f"{CTX}{path}", r)


def values(body: dict) -> list[str]:
    return sorted(h["text"] for h in body["hits"])


def stu(value: str, since: str) -> dict:
    return {"entity": {"type": "person", "name": "Stu"}, "key": "job_title", "value": value, "validFrom": since}


def test_at_instant_reads_the_state_then_and_valid_window_overlaps(any_api):
    triples(any_api, stu("CTO", "2020-01-01T00:00:00Z"))
    triples(any_api, stu("CEO", "2023-01-01T00:00:00Z"))
    ask = {"query": "What is Stu's job title?", "include": ["facts"]}
    assert values(query(any_api, ask)) == ["Stu job title: CEO"]
    then = query(any_api, {**ask, "atInstant": "2021-06-01T00:00:00Z"})
    assert values(then) == ["Stu job title: CTO"]  # the superseded value, not its successor
    assert values(query(any_api, {**ask, "at_instant": "2024-01-01T00:00:00Z"})) == ["Stu job title: CEO"]
    assert query(any_api, {**ask, "atInstant": "2019-01-01T00:00:00Z"})["hits"] == []
    closed = {**ask, "validFrom": "2021-01-01T00:00:00Z", "validUntil": "2022-01-01T00:00:00Z"}
    assert values(query(any_api, closed)) == ["Stu job title: CTO"]
    both = {**ask, "validFrom": "2022-06-01T00:00:00Z", "validUntil": "2024-01-01T00:00:00Z"}
    assert values(query(any_api, both)) == ["Stu job title: CEO", "Stu job title: CTO"]
    assert values(query(any_api, {**ask, "validFrom": "2023-06-01T00:00:00Z"})) == ["Stu job title: CEO"]
    assert values(query(any_api, {**ask, "valid_until": "2021-01-01T00:00:00Z"})) == ["Stu job title: CTO"]
    ctx = query(any_api, {"query": "What is Stu's job title?", "atInstant": "2021-06-01T00:00:00Z"}, "/context")
    assert "CTO" in ctx["context"] and "CEO" not in ctx["context"]


def test_include_facts_and_passages(any_api):
    r = any_api.post(f"{CTX}/facts", {"text": "I moved to Oslo last spring"})
    assert r.status == 200, r.text
    facts = query(any_api, {"query": "where did I move, Oslo", "include": ["facts"]})
    assert facts["hits"] and {h["source"] for h in facts["hits"]} <= {"attribute", "relation"}
    passages = query(any_api, {"query": "where did I move, Oslo", "include": ["passages"]})
    assert {h["source"] for h in passages["hits"]} == {"turn"}
    assert passages["hits"][0]["text"] == "I moved to Oslo last spring"


SCOPED = {
    "org/acme/team/eng": "The deploy freeze starts on Friday for eng",
    "org/acme/team/ops": "The deploy freeze starts on Monday for ops",
    "org/acme": "The deploy freeze policy is company wide",
    "org/other/team/eng": "The deploy freeze of another org",
}


@pytest.mark.parametrize(("view", "expected"), [
    (None, {"org/acme/team/eng"}),
    ("strict", {"org/acme/team/eng"}),
    ("merged", {"org/acme/team/eng", "org/acme"}),
    ("crossTeam", {"org/acme/team/eng", "org/acme/team/ops"}),
])
def test_lens_narrows_by_scope_view(any_api, view, expected):
    for scope, text in SCOPED.items():
        r = any_api.post(f"{CTX}/facts", {"text": text, "infer": "none", "scopes": [[scope]]})
        assert r.status == 200, r.text
    ask = {"query": "deploy freeze", "include": ["turn"], "mode": "bm25", "lens": [["org/acme/team/eng"]]}
    if view:
        ask["scopeView"] = view
    got = {h["text"] for h in query(any_api, ask)["hits"]}
    assert got == {SCOPED[s] for s in expected}
    ctx = query(any_api, {"query": "deploy freeze", "lens": "org/acme/team/eng", **({"scope_view": view} if view else {})},
                "/context")
    assert all((SCOPED[s] in ctx["context"]) == (s in expected) for s in SCOPED)


def test_strict_without_a_lens_is_the_callers_whole_region(any_api):
    """The Spectron client's README sends ``scope_view="strict"`` alone: the default view of
    no lens, every scope the caller may read (``merged``/``crossTeam`` widen a lens and still
    need one)."""
    for scope, text in SCOPED.items():
        assert any_api.post(f"{CTX}/facts", {"text": text, "infer": "none", "scopes": [[scope]]}).status == 200
    ask = {"query": "deploy freeze", "include": ["turn"], "mode": "bm25"}
    plain = {h["text"] for h in query(any_api, ask)["hits"]}
    assert plain == set(SCOPED.values())
    assert {h["text"] for h in query(any_api, {**ask, "scope_view": "strict"})["hits"]} == plain
    assert SCOPED["org/other/team/eng"] in query(any_api, {"query": "deploy freeze", "scopeView": "strict"},
                                                 "/context")["context"]


def place(name: str, lat: float, lng: float, cuisine: str) -> list[dict]:
    entity = {"type": "location", "name": name}
    return [{"entity": entity, "key": "lat", "value": str(lat)}, {"entity": entity, "key": "lng", "value": str(lng)},
            {"entity": entity, "key": "cuisine", "value": cuisine}]


def test_location_near_and_within(any_api):
    triples(any_api, *place("Fiskebar", 59.9139, 10.7522, "seafood"), *place("Curry36", 52.5200, 13.4050, "street food"))
    ask = {"query": "which cuisine does each restaurant serve", "include": ["attribute"]}
    everything = {h["text"] for h in query(any_api, ask)["hits"]}
    assert {"Fiskebar cuisine: seafood", "Curry36 cuisine: street food"} <= everything
    oslo = query(any_api, {**ask, "location": {"near": {"lat": 59.91, "lng": 10.75, "radiusKm": 25}}})
    assert oslo["hits"] and all(h["text"].startswith("Fiskebar") for h in oslo["hits"])
    assert "Fiskebar cuisine: seafood" in {h["text"] for h in oslo["hits"]}
    metres = query(any_api, {**ask, "location": {"near": {"lat": 59.91, "lng": 10.75, "radiusM": 100}}})
    assert metres["hits"] == []  # Fiskebar is ~500 m away
    berlin = "POLYGON((13.0 52.3, 13.8 52.3, 13.8 52.7, 13.0 52.7, 13.0 52.3))"
    within = query(any_api, {**ask, "location": {"within": berlin}})
    assert within["hits"] and all(h["text"].startswith("Curry36") for h in within["hits"])
    nowhere = query(any_api, {**ask, "location": {"near": {"lat": 0, "lng": 0, "radiusKm": 10}}})
    assert nowhere["hits"] == []


def test_source_turn_chunk_and_a_documents_source(any_api):
    r = any_api.post(f"{CTX}/facts", {"text": "The refund window is 30 days, I was told", "infer": "none"})
    assert r.status == 200, r.text
    ids = {}
    for name, source in (("kb.md", "kb"), ("wiki.md", "wiki")):
        up = any_api.post(f"{CTX}/documents", {"title": name, "source": source,
                                               "text": f"# Refunds\n\nThe refund window ({source}) is 30 days."})
        assert up.status == 202, up.text
        ids[source] = up.json()["id"]
    for doc_id in ids.values():
        deadline = time.monotonic() + 30
        while any_api.get(f"{CTX}/documents/{doc_id}").json()["status"] != "ready":
            assert time.monotonic() < deadline
            time.sleep(0.05)
    ask = {"query": "refund window", "mode": "bm25"}
    assert {h["source"] for h in query(any_api, {**ask, "source": "turn"})["hits"]} == {"turn"}
    chunks = query(any_api, {**ask, "source": "chunk"})["hits"]
    assert {h["source"] for h in chunks} == {"chunk"} and {h["sourceIds"][0] for h in chunks} == set(ids.values())
    kb = query(any_api, {**ask, "source": "kb"})["hits"]
    assert kb and {h["sourceIds"][0] for h in kb} == {ids["kb"]}
    assert query(any_api, {**ask, "source": "nowhere"})["hits"] == []


@pytest.mark.parametrize(("body", "field"), [
    ({"include": ["fact"]}, "include.0"),
    ({"scopeView": "wide", "lens": "org/acme"}, "scopeView"),
    ({"scopeView": "merged"}, "scopeView"),
    ({"lens": "org/*"}, "lens"),
    ({"lens": []}, "lens"),
    ({"atInstant": "soon"}, "atInstant"),
    ({"atInstant": "2021-01-01T00:00:00Z", "asOf": "2022-01-01T00:00:00Z"}, "atInstant"),
    ({"validFrom": "2022-01-01T00:00:00Z", "validUntil": "2021-01-01T00:00:00Z"}, "validFrom"),
    ({"validUntil": "later"}, "validUntil"),
    ({"location": {"near": {"lat": 1, "lng": 2}}}, "location.near"),
    ({"location": {"near": {"lat": 91, "lng": 2, "radiusKm": 1}}}, "location.near.lat"),
    ({"location": {"near": {"lat": 1, "lng": 2, "radiusKm": 1}, "within": "POLYGON((0 0, 1 0, 1 1, 0 0))"}}, "location"),
    ({"location": {"within": "CIRCLE(1 2)"}}, "location.within"),
    ({"location": {"within": "POLYGON((0 0, 1 0))"}}, "location.within"),
    ({"location": {"around": {}}}, "location.around"),
    ({"source": ""}, "source"),
])
@pytest.mark.parametrize("path", ["/query", "/context"])
def test_bad_filters_are_400_naming_the_field(any_api, body, field, path):
    r = any_api.post(f"{CTX}{path}", {"query": "x", **body})
    assert r.status == 400, r.text
    assert r.json()["field"] == field

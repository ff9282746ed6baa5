"""Cursor paging of the memory collections: more than two pages with writes landing between
pages (nothing skipped, nothing repeated), filters, totalSize, and bad or foreign cursors.
Both stores, in-process and over the local server; responses validated against openapi.yaml."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest
from openapi_schemas import assert_matches

CTX = "/api/v1/acme"
ALICE = "entity:person/alice"


def write(api, text: str, **extra) -> dict:
    r = api.post(f"{CTX}/facts", {"text": text, **extra})
    assert r.status == 200, r.text
    return r.json()


def triples(api, items: list[dict]) -> None:
    for start in range(0, len(items), 16):
        write(api, "import", infer="triples", triples=items[start:start + 16])


def alice(**extra) -> dict:
    return {"entity": {"type": "person", "name": "Alice"}, **extra}


def walk(api, path: str, *, items_key: str = "items", between: Callable[[int], None] | None = None,
         limit: int = 2) -> tuple[list[dict], int]:
    """Every item of a collection, page by page; ``between(n)`` runs after page n."""
    sep = "&" if "?" in path else "?"
    url, seen, pages = f"{CTX}{path}{sep}limit={limit}", [], 0
    while True:
        r = api.get(url)
        assert r.status == 200, r.text
        body = assert_matches("GET", url, r)
        assert len(body[items_key]) <= limit
        seen += body[items_key]
        pages += 1
        if not body["page"]["hasMore"]:
            assert body["page"]["nextCursor"] is None
            return seen, pages
        if between is not None:
            between(pages)
        url = f"{CTX}{path}{sep}limit={limit}&cursor={quote(body['page']['nextCursor'])}"


def assert_exactly_once(seen: list[dict], expected: set[str], key: str = "id") -> None:
    ids = [item[key] for item in seen]
    assert len(ids) == len(set(ids)), f"repeated: {ids}"
    assert expected <= set(ids), f"skipped: {expected - set(ids)}"


def test_entities_page_by_type_then_name_with_writes_between_pages(any_api):
    triples(any_api, [{"entity": {"type": "project", "name": f"P{i}"}} for i in (1, 3, 5, 7, 9, 11, 13)])
    before = {f"entity:project/p{i}" for i in (1, 3, 5, 7, 9, 11, 13)}
    added = iter(["P0", "P4", "P99", "P8"])  # before and after the cursor, on every page turn

    seen, pages = walk(any_api, "/entities?type=project", items_key="entities",
                       between=lambda n: triples(any_api, [{"entity": {"type": "project", "name": next(added)}}]))
    assert pages >= 4
    assert_exactly_once(seen, before)
    assert "entity:project/p99" in {e["id"] for e in seen}  # landed after the cursor: read
    assert [e["id"] for e in seen] == sorted(e["id"] for e in seen)


def test_attributes_of_an_entity_and_the_current_index(any_api):
    triples(any_api, [alice(key="skills", value=f"skill{i}") for i in range(7)])
    before = {a["id"] for a in walk(any_api, "/attributes?entity=person/alice&key=skills", limit=50)[0]}
    assert len(before) == 7
    fresh = iter(range(100, 110))
    seen, pages = walk(any_api, "/attributes?entity=person/alice&key=skills",
                       between=lambda n: triples(any_api, [alice(key="skills", value=f"skill{next(fresh)}")]))
    assert pages >= 4
    assert_exactly_once(seen, before)
    # The whole current index (gsi1), with a supersession landing mid-walk: the old value
    # leaves, the new one is read once, nothing else moves.
    triples(any_api, [alice(key="employer", value="Acme"), alice(key="location", value="Paris")])
    everything = {a["id"] for a in walk(any_api, "/attributes", limit=100)[0]}
    changes = iter([[alice(key="location", value="Rome")], [alice(key="skills", value="zzz")], []])
    seen, pages = walk(any_api, "/attributes", between=lambda n: triples(any_api, next(changes, [])) if n < 3 else None)
    located = [a for a in seen if a["key"] == "location"]
    assert len({a["id"] for a in seen}) == len(seen)
    assert everything - {a["id"] for a in seen} <= {a["id"] for a in located if a["value"] == "Paris"}
    assert pages >= 3


def test_relations_by_subject_label_and_object(any_api):
    friends = [alice(key="friend", target={"type": "person", "name": f"F{i}"}) for i in range(6)]
    triples(any_api, friends + [alice(key="manager", target={"type": "person", "name": "Bob"})])
    before = {r["id"] for r in walk(any_api, "/relations?src=person/alice&label=friend", limit=50)[0]}
    assert len(before) == 6
    fresh = iter(range(100, 110))
    seen, pages = walk(any_api, "/relations?src=person/alice&label=friend",
                       between=lambda n: triples(any_api, [alice(key="friend",
                                                                 target={"type": "person", "name": f"F{next(fresh)}"})]))
    assert pages >= 3
    assert_exactly_once(seen, before)
    assert all(r["label"] == "friend" and r["subject"] == ALICE for r in seen)
    to_bob = walk(any_api, "/relations?dst=person/bob")[0]
    assert [(r["subject"], r["label"]) for r in to_bob] == [(ALICE, "manager")]
    everything, pages = walk(any_api, "/relations?count=true", limit=3)
    assert len(everything) >= 7 and pages >= 3


def test_actions_in_time_order_with_since_until_and_backdated_writes(any_api):
    triples(any_api, [alice(verb="visited", object=f"City{i}", occurred_at=f"2026-0{i}-15T00:00:00Z")
                      for i in range(1, 8)])
    triples(any_api, [{"entity": {"type": "person", "name": "Bob"}, "verb": "visited", "object": "Oslo",
                       "occurred_at": "2026-03-20T00:00:00Z"}])
    before = {a["id"] for a in walk(any_api, "/actions?actor=person/alice", limit=50)[0]}
    assert len(before) == 7
    back = iter(["2026-01-01T00:00:00Z", "2026-09-01T00:00:00Z", "2026-05-01T00:00:00Z", "2026-02-01T00:00:00Z"])
    seen, pages = walk(any_api, "/actions?actor=person/alice",
                       between=lambda n: triples(any_api, [alice(verb="visited", object="X",
                                                                 occurred_at=next(back))]))
    assert pages >= 4
    assert_exactly_once(seen, before)
    times = [a["occurredAt"] for a in seen]
    assert times == sorted(times)
    window = walk(any_api, "/actions?since=2026-03-01T00:00:00Z&until=2026-05-15T00:00:00Z", limit=10)[0]
    assert sorted(a["object"] for a in window) == ["City3", "City4", "Oslo", "X"]
    assert [a["object"] for a in walk(any_api, "/actions?verb=VISITED&actor=person/bob")[0]] == ["Oslo"]
    r = any_api.get(f"{CTX}/actions?since=2026-05-01T00:00:00Z&until=2026-04-01T00:00:00Z")
    assert r.status == 400


def test_instructions_and_uncertainties(any_api):
    for i in range(5):
        write(any_api, f"Always mention topic {i}.")
    before = {i["id"] for i in walk(any_api, "/instructions", limit=50)[0]}
    assert len(before) == 5
    n = iter(range(10, 20))
    seen, pages = walk(any_api, "/instructions", between=lambda _: write(any_api, f"Always mention topic {next(n)}."))
    assert pages >= 3
    assert_exactly_once(seen, before)
    assert all(set(i) >= {"id", "label", "description", "source", "createdAt"} for i in seen)
    for i in range(5):
        write(any_api, f"I think I live in City{i}.")
    before = {u["id"] for u in walk(any_api, "/uncertainty", limit=50)[0]}
    assert len(before) == 5
    seen, pages = walk(any_api, "/uncertainty?entity=person/user&resolved=false",
                       between=lambda _: write(any_api, f"I think I live in Town{next(n)}."))
    assert pages >= 3
    assert_exactly_once(seen, before)
    assert all(u["key"] == "location" and u["resolved"] is False for u in seen)


def test_total_size_only_when_asked(any_api):
    triples(any_api, [alice(key="skills", value=f"s{i}") for i in range(3)])
    r = any_api.get(f"{CTX}/attributes?entity=person/alice&limit=1")
    assert "totalSize" not in r.json()["page"]
    r = any_api.get(f"{CTX}/attributes?entity=person/alice&limit=1&count=true")
    assert assert_matches("GET", f"{CTX}/attributes", r)["page"]["totalSize"] == 3
    assert any_api.get(f"{CTX}/attributes?count=maybe").status == 400


@pytest.mark.parametrize("path", ["/entities", "/attributes", "/relations", "/actions", "/instructions",
                                  "/uncertainty", "/entities/person/alice/history"])
def test_bad_and_foreign_cursors_are_400(any_api, path):
    triples(any_api, [alice(key="skills", value=f"s{i}") for i in range(3)] +
            [alice(key="friend", target={"type": "person", "name": f"F{i}"}) for i in range(3)] +
            [alice(verb="met", object=f"M{i}", occurred_at=f"2026-01-0{i + 1}T00:00:00Z") for i in range(3)])
    other = any_api.get(f"{CTX}/entities?limit=1").json()["page"]["nextCursor"]
    foreign_filter = any_api.get(f"{CTX}/entities?type=person&limit=1").json()["page"]["nextCursor"]
    assert other and foreign_filter
    for cursor in ("garbage", other[:-2] + "xx", foreign_filter if path == "/entities" else other):
        r = any_api.get(f"{CTX}{path}?cursor={quote(cursor)}")
        assert r.status == 400, (path, cursor, r.text)
        assert r.json()["field"] == "cursor"
        assert_matches("GET", f"{CTX}{path}", r)
    # another context, and another partition of the same context
    r = any_api.get(f"/api/v1/other/entities?cursor={quote(other)}")
    assert r.status == 400
    r = any_api.get(f"{CTX}/entities?cursor={quote(other)}", headers={"X-Memory-Partition": "p2"})
    assert r.status == 400
    assert any_api.get(f"{CTX}{path}?limit=501").status == 400

"""Reading memory: /state, /profile, entities (current, asOf, soft delete), attribute
history, uncertainty resolution. Both stores, in-process and over the local server; every
response is validated against its schema in openapi.yaml."""

from __future__ import annotations

import pytest
from fused_search import fused_search
from openapi_schemas import assert_matches

from agent_memory.ports import SearchFilter
from agent_memory.runtime import get_runtime

CTX = "/api/v1/acme"
USER = "entity:person/user"
EMMA = "entity:person/emma"


def write(api, text: str, **extra) -> dict:
    r = api.post(f"{CTX}/facts", {"text": text, **extra})
    assert r.status == 200, r.text
    return r.json()


def get(api, path: str, status: int = 200):
    r = api.get(f"{CTX}{path}")
    assert r.status == status, r.text
    return assert_matches("GET", f"{CTX}{path}", r)


def values(attrs: list[dict], key: str, entity: str = USER) -> list[str]:
    return sorted(a["value"] for a in attrs if a["key"] == key and a["entity"] == entity)


def search_texts(query: str, kinds=None) -> list[str]:
    rt = get_runtime()
    return [h.unit.text for h in fused_search(rt.search, query, SearchFilter(context_id="acme", kinds=kinds), k=20)]


def seed(api) -> None:
    write(api, "I live in London.", observed_at="2026-03-10T10:00:00Z")
    write(api, "I moved to Berlin last month.", observedAt="2026-05-20T10:00:00Z")
    write(api, "I like sushi. My sister Emma lives in Oslo. Always answer in German.")
    write(api, "I think I work at Globex.")
    write(api, "I ran a marathon yesterday.", observed_at="2026-05-21T08:00:00Z")


# --- /state -------------------------------------------------------------------------------


def test_state_has_the_spec_shape_current_facts_only(any_api):
    seed(any_api)
    state = get(any_api, "/state")
    assert set(state) == {"identity", "knowledge", "context", "instructions", "unknowns", "truncated"}
    for cat in ("identity", "knowledge", "context"):
        assert set(state[cat]) == {"entities", "attributes", "relations", "actions"}
    assert state["truncated"] == dict.fromkeys(
        ("entities", "attributes", "relations", "actions", "instructions", "unknowns"), False)
    attrs = [a for cat in ("identity", "knowledge", "context") for a in state[cat]["attributes"]]
    assert values(attrs, "location") == ["Berlin"]  # London is superseded: not current
    assert values(attrs, "location", EMMA) == ["Oslo"]
    assert values(attrs, "likes") == ["sushi"]
    berlin = next(a for a in attrs if a["value"] == "Berlin")
    assert berlin["supersedes"] and berlin["supersededBy"] is None and berlin["validUntil"] is None
    assert berlin["source"]["kind"] == "turn" and berlin["source"]["ref"].startswith("turn_")
    assert "entity:person/user" in {e["id"] for e in state["identity"]["entities"]}
    rels = [r for cat in ("identity", "knowledge", "context") for r in state[cat]["relations"]]
    assert [(r["subject"], r["label"], r["object"]) for r in rels] == [(USER, "sister", EMMA)]
    actions = [a for cat in ("identity", "knowledge", "context") for a in state[cat]["actions"]]
    assert [(a["verb"], a["object"]) for a in actions] == [("ran", "marathon")]
    assert [i["description"] for i in state["instructions"]] == ["Always answer in German."]
    assert set(state["instructions"][0]) == {"id", "label", "description"}
    assert [set(u) for u in state["unknowns"]] == [{"about", "reason"}]
    assert "Globex" in state["unknowns"][0]["about"]


def test_state_limit_bounds_each_table_and_flags_truncation(any_api):
    seed(any_api)
    state = get(any_api, "/state?limit=1")
    assert sum(len(state[c]["attributes"]) for c in ("identity", "knowledge", "context")) == 1
    assert sum(len(state[c]["entities"]) for c in ("identity", "knowledge", "context")) == 1
    assert state["truncated"]["attributes"] and state["truncated"]["entities"]
    assert not state["truncated"]["instructions"] and not state["truncated"]["unknowns"]
    # identity facts are kept first when the snapshot is cut
    assert len(state["identity"]["attributes"]) == 1
    assert get(any_api, "/state?limit=500")["truncated"]["attributes"] is False
    # above 500 is capped at 500 (the spec's rule), never a 400
    assert get(any_api, "/state?limit=501") == get(any_api, "/state?limit=500")
    for bad in ("0", "x", ""):
        r = any_api.get(f"{CTX}/state?limit={bad}")
        assert r.status == 400 and r.json()["field"] == "limit"
        assert_matches("GET", f"{CTX}/state", r)


@pytest.mark.parametrize("path", ["/state", "/profile"])
def test_a_limit_above_500_reads_500_rows_per_table(api, runtime, monkeypatch, path):
    asked = []
    method = "state" if path == "/state" else "profile"
    real = getattr(runtime.state, method)
    monkeypatch.setattr(runtime.state, method, lambda ctx, limit: asked.append(limit) or real(ctx, limit))
    for limit, read in (("10000", 500), ("501", 500), ("500", 500), ("7", 7)):
        assert api.get(f"{CTX}{path}?limit={limit}").status == 200
        assert asked.pop() == read


def test_state_of_an_empty_context(any_api):
    state = get(any_api, "/state")
    assert all(state[c] == {"entities": [], "attributes": [], "relations": [], "actions": []}
               for c in ("identity", "knowledge", "context"))
    assert state["instructions"] == [] and state["unknowns"] == []


# --- /profile -------------------------------------------------------------------------------


def test_profile_never_lists_another_persons_fact_as_the_users(any_api):
    seed(any_api)
    profile = get(any_api, "/profile")
    assert {(e["key"], e["value"]) for e in profile["selfFacts"]} == {
        ("location", "Berlin"), ("likes", "sushi"), ("sister", "Emma")}
    assert all(e["entity"] == USER and e["entityType"] == "person" for e in profile["selfFacts"])
    emma = [e for section in ("static", "dynamic", "preferences") for e in profile[section] if e["entity"] == EMMA]
    assert emma == [{"entity": EMMA, "entityType": "person", "key": "location", "value": "Oslo"}]
    assert {"entity": EMMA, "entityType": "person", "key": "location", "value": "Oslo"} in profile["dynamic"]
    assert {"entity": USER, "entityType": "person", "key": "location", "value": "Berlin"} in profile["dynamic"]
    assert profile["preferences"] == [{"entity": USER, "entityType": "person", "key": "likes", "value": "sushi"}]
    assert {"entity": USER, "entityType": "person", "key": "sister", "value": "Emma"} in profile["static"]
    assert [i["description"] for i in profile["instructions"]] == ["Always answer in German."]
    write(any_api, "My name is Alice. I'm German.")
    static = get(any_api, "/profile")["static"]
    assert {"entity": USER, "entityType": "person", "key": "name", "value": "Alice"} in static
    assert {"entity": USER, "entityType": "person", "key": "nationality", "value": "German"} in static


# --- temporal reads ------------------------------------------------------------------------


def test_as_of_current_and_history_of_london_then_berlin(any_api):
    write(any_api, "I live in London.", observed_at="2026-03-10T10:00:00Z")
    write(any_api, "I moved to Berlin.", observed_at="2026-05-10T10:00:00Z")
    april = get(any_api, "/entities/person/user?asOf=2026-04-15T00:00:00Z")
    assert april["asOf"] == "2026-04-15T00:00:00.000Z"
    assert values(april["attributes"], "location") == ["London"]
    now = get(any_api, "/entities/person/user")
    assert now["asOf"] is None and values(now["attributes"], "location") == ["Berlin"]
    assert values(get(any_api, "/entities/person/user?asOf=2026-05-10T10:00:00Z")["attributes"],
                  "location") == ["Berlin"]  # validFrom <= t: the new value at its first instant
    assert get(any_api, "/entities/person/user?asOf=2026-01-01T00:00:00Z")["attributes"] == []
    history = get(any_api, "/entities/person/user/history/location")["history"]
    assert [h["value"] for h in history] == ["London", "Berlin"]
    london, berlin = history
    assert london["supersededBy"] == berlin["id"] and berlin["supersedes"] == london["id"]
    assert london["validUntil"] == berlin["validFrom"] == "2026-05-10T10:00:00.000Z"
    assert berlin["validUntil"] is None and london["supersedes"] is None
    assert get(any_api, "/entities/person/user/history/city")["history"] == history  # synonym key
    all_keys = get(any_api, "/entities/person/user/history?limit=1")
    assert len(all_keys["history"]) == 1 and all_keys["page"]["hasMore"]


def test_as_of_must_be_rfc3339(any_api):
    write(any_api, "I live in London.")
    r = any_api.get(f"{CTX}/entities/person/user?asOf=yesterday")
    assert r.status == 400 and r.json()["field"] == "asOf"
    r = any_api.get(f"{CTX}/entities/person/user?asOf=2026-04-15T00:00:00%2B02:00")
    assert r.status == 200 and r.json()["asOf"] == "2026-04-14T22:00:00.000Z"


# --- entities --------------------------------------------------------------------------------


def test_entity_list_type_filter_and_detail(any_api):
    seed(any_api)
    listed = get(any_api, "/entities")
    ids = [e["id"] for e in listed["entities"]]
    assert ids == sorted(ids, key=lambda i: i.removeprefix("entity:"))  # type, then name
    assert {"entity:person/user", EMMA, "entity:location/berlin"} <= set(ids)
    people = get(any_api, "/entities?type=person&count=true")
    assert [e["id"] for e in people["entities"]] == [EMMA, USER]
    assert people["page"] == {"hasMore": False, "nextCursor": None, "totalSize": 2}
    assert any_api.get(f"{CTX}/entities?type=wizard").status == 400
    assert [e["id"] for e in get(any_api, "/entities?type=PERSON")["entities"]] == [EMMA, USER]
    assert get(any_api, "/entities/city/Berlin")["entity"]["id"] == "entity:location/berlin"  # alias, name case
    detail = get(any_api, "/entities/person/user")
    assert detail["entity"]["id"] == USER and detail["entity"]["entityType"] == "person"
    assert {(a["key"], a["value"]) for a in detail["attributes"]} == {("location", "Berlin"), ("likes", "sushi")}
    assert [(r["label"], r["object"]) for r in detail["relations"]] == [("sister", EMMA)]
    assert detail["truncated"] == {"attributes": False, "relations": False}
    assert get(any_api, "/entities/person/Emma")["entity"]["name"] == "Emma"  # names are normalised
    get(any_api, "/entities/person/nobody", 404)
    assert any_api.get(f"{CTX}/entities/wizard/merlin").status == 400


def test_entity_soft_delete_hides_it_everywhere_and_it_can_come_back(any_api):
    seed(any_api)
    assert "Emma location: Oslo" in search_texts("Emma Oslo", ["attribute"])
    r = any_api.delete(f"{CTX}/entities/person/emma")
    assert r.status == 204, r.text
    assert_matches("DELETE", f"{CTX}/entities/person/emma", r)
    get(any_api, "/entities/person/emma", 404)
    assert any_api.delete(f"{CTX}/entities/person/emma").status == 404
    get(any_api, "/entities/person/emma/history/location", 404)
    state = get(any_api, "/state")
    flat = [x for c in ("identity", "knowledge", "context") for t in ("entities", "attributes", "relations")
            for x in state[c][t]]
    assert not [x for x in flat if EMMA in (x.get("id"), x.get("entity"), x.get("object"), x.get("subject"))]
    assert EMMA not in {e["id"] for e in get(any_api, "/entities")["entities"]}
    assert get(any_api, "/relations?dst=person/emma")["items"] == []
    assert get(any_api, "/attributes?entity=person/emma")["items"] == []
    assert not [e for e in get(any_api, "/profile")["selfFacts"] if e["value"] == "Emma"]
    assert not [t for t in search_texts("Emma Oslo sister", ["attribute", "relation"]) if "Emma" in t]
    # The user's other facts are untouched, and mentioning Emma again creates her afresh.
    assert values(get(any_api, "/entities/person/user")["attributes"], "location") == ["Berlin"]
    write(any_api, "My sister Emma lives in Bergen.")
    emma = get(any_api, "/entities/person/emma")
    assert [(a["key"], a["value"]) for a in emma["attributes"]] == [("location", "Bergen")]
    assert [h["value"] for h in get(any_api, "/entities/person/emma/history/location")["history"]] == ["Bergen"]


# --- uncertainty ------------------------------------------------------------------------------


def test_resolving_an_uncertainty_writes_the_accepted_value_as_an_authoritative_fact(any_api):
    write(any_api, "I work at Acme.", observed_at="2026-01-01T00:00:00Z")
    write(any_api, "I think I work at Globex.")
    pending = get(any_api, "/uncertainty?resolved=false&entity=person/user")["items"]
    assert len(pending) == 1
    unc = pending[0]
    assert (unc["entity"], unc["key"], unc["proposedValue"], unc["resolved"]) == (USER, "employer", "Globex", False)
    r = any_api.post(f"{CTX}/uncertainty/{unc['id']}/resolve", {"acceptedValue": "Globex", "note": "HR confirmed"})
    assert r.status == 200, r.text
    body = assert_matches("POST", f"{CTX}/uncertainty/{unc['id']}/resolve", r)
    assert body["uncertainty"]["resolved"] and body["uncertainty"]["acceptedValue"] == "Globex"
    assert body["uncertainty"]["note"] == "HR confirmed"
    fact = body["fact"]
    assert (fact["entity"], fact["key"], fact["value"]) == (USER, "employer", "Globex")
    assert fact["source"]["kind"] == "upsert" and fact["supersedes"]
    history = get(any_api, "/entities/person/user/history/employer")["history"]
    assert [h["value"] for h in history] == ["Acme", "Globex"]
    assert history[0]["supersededBy"] == fact["id"]
    assert get(any_api, "/uncertainty?resolved=false")["items"] == []
    assert [u["id"] for u in get(any_api, "/uncertainty?resolved=true")["items"]] == [unc["id"]]
    again = any_api.post(f"{CTX}/uncertainty/{unc['id']}/resolve", {"acceptedValue": "Globex"})
    assert again.status == 409
    assert_matches("POST", f"{CTX}/uncertainty/{unc['id']}/resolve", again)
    # The upsert is authoritative: a conversational turn cannot overwrite it.
    write(any_api, "I work at Initech.")
    current = get(any_api, "/attributes?entity=person/user&key=employer")["items"]
    assert [a["value"] for a in current] == ["Globex"]
    missing = any_api.post(f"{CTX}/uncertainty/unc_nope/resolve", {"acceptedValue": "x"})
    assert missing.status == 404
    bad = any_api.post(f"{CTX}/uncertainty/{unc['id']}/resolve", {"value": "x"})
    assert bad.status == 400

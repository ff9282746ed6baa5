"""Forget removes what it names (issue 12): an entity the forgotten memory leaves with no
facts, actions, turns or chunks goes too, dryRun reports it, and reads stop showing it."""

from __future__ import annotations

from openapi_schemas import assert_matches

CTX = "/api/v1/acme"


def forget(api, **body) -> dict:
    r = api.post(f"{CTX}/forget", body)
    assert r.status == 200, r.text
    return assert_matches("POST", f"{CTX}/forget", r)


def entity_ids(api) -> set[str]:
    r = api.get(f"{CTX}/entities?limit=100")
    assert r.status == 200, r.text
    return {e["id"] for e in r.json()["entities"]}


def test_forgetting_everything_about_a_place_removes_the_place(any_api):
    assert any_api.post(f"{CTX}/facts", {"text": "I live in Ownedcity."}).status == 200
    assert any_api.post(f"{CTX}/facts", {"text": "I like tea."}).status == 200
    assert "entity:location/ownedcity" in entity_ids(any_api)

    preview = forget(any_api, query="location Ownedcity", limit=1, dryRun=True)
    assert [e["id"] for e in preview["entities"]] == ["entity:location/ownedcity"]
    assert "entity:location/ownedcity" in entity_ids(any_api)  # dryRun deletes nothing

    out = forget(any_api, query="location Ownedcity", limit=1)
    assert [e["id"] for e in out["entities"]] == ["entity:location/ownedcity"]
    assert "entity:location/ownedcity" not in entity_ids(any_api)
    assert "entity:person/user" in entity_ids(any_api)  # the speaker stays
    state = any_api.get(f"{CTX}/state").text
    assert "ownedcity" not in state.lower()
    assert any_api.get(f"{CTX}/entities/location/ownedcity").status == 404


def test_an_entity_with_other_facts_left_stays(any_api):
    assert any_api.post(f"{CTX}/facts", {"text": "My sister Emma lives in Oslo."}).status == 200
    assert any_api.post(f"{CTX}/facts", {"text": "Emma likes chess."}).status == 200
    out = forget(any_api, query="Emma location Oslo", limit=1, minScore=0.0)
    assert out["items"] and out["items"][0]["text"].endswith("Oslo")
    assert "entity:person/emma" in entity_ids(any_api)
    assert "entity:person/emma" not in {e["id"] for e in out["entities"]}

"""A write's ``memory_category`` (ours, or a synonym mapped by the documented table) filed on
what is extracted from it, with a triple's own category first; triples written without text
(the Spectron client's ``remember(triples=...)``); an attribute triple's ``valid_until``. On
both record stores."""

from __future__ import annotations

import pytest

from agent_memory.rules.vocabulary import CATEGORY_SYNONYMS

pytestmark = pytest.mark.http

CTX = "/api/v1/acme"
CAROL = {"type": "person", "name": "Carol"}


def write(api, body: dict) -> dict:
    r = api.post(f"{CTX}/facts", body)
    assert r.status == 200, r.text
    return r.json()


def attributes(api, key: str | None = None) -> list[dict]:
    items = api.get(f"{CTX}/attributes?limit=100").json()["items"]
    return [a for a in items if key is None or a["key"] == key]


def test_the_writes_category_files_what_is_extracted(api):
    plain = write(api, {"text": "My name is Dana. I like jazz."})
    assert plain["memoryCategory"] is None
    assert {a["key"]: a["memoryCategory"] for a in plain["extraction"]["attributes"]} == {
        "name": "identity", "likes": "knowledge"}
    filed = write(api, {"text": "My name is Carol. I like opera.", "memory_category": "context"})
    assert filed["memoryCategory"] == "context"
    extracted = filed["extraction"]["attributes"]
    assert {a["key"] for a in extracted} == {"name", "likes"}
    assert {a["memoryCategory"] for a in extracted} == {"context"}
    stored = {a["value"]: a["memoryCategory"] for a in attributes(api)}
    assert stored["opera"] == "context" and stored["jazz"] == "knowledge"


@pytest.mark.parametrize(("sent", "applied"), [("episodic", "context"), ("preference", "knowledge"),
                                                ("Semantic", "knowledge"), ("short-term", "context"),
                                                ("profile", "identity"), ("knowledge", "knowledge")])
def test_other_systems_categories_map_to_the_nearest(api, sent, applied):
    body = write(api, {"text": "I like sailing.", "memoryCategory": sent})
    assert body["memoryCategory"] == applied
    assert {a["memoryCategory"] for a in body["extraction"]["attributes"]} == {applied}
    batch = api.post(f"{CTX}/facts/batch", {"messages": [{"content": "I like rowing."}], "memory_category": sent})
    assert batch.status == 200, batch.text
    assert batch.json()["memoryCategory"] == applied
    assert {a["memoryCategory"] for a in batch.json()["extractions"][0]["attributes"]} == {applied}


def test_a_category_word_outside_the_table_is_a_400_that_writes_nothing(api):
    assert "banana" not in CATEGORY_SYNONYMS
    r = api.post(f"{CTX}/facts", {"text": "I like sailing.", "memory_category": "banana"})
    assert r.status == 400 and r.json()["field"] == "memory_category"
    assert "episodic" in r.json()["detail"]
    assert attributes(api) == []


def test_a_triples_own_category_comes_before_the_writes(api):
    body = write(api, {"text": "Carol's facts", "infer": "triples", "memory_category": "episodic", "triples": [
        {"entity": CAROL, "key": "employer", "value": "Acme", "memory_category": "identity"},
        {"entity": CAROL, "key": "likes", "value": "chess"}]})
    got = {a["key"]: a["memoryCategory"] for a in body["extraction"]["attributes"]}
    assert got == {"employer": "identity", "likes": "context"}


def test_triples_without_text_are_written_as_triples(api):
    body = write(api, {"triples": [{"entity": CAROL, "key": "employer", "value": "Acme"},
                                   {"entity": CAROL, "key": "colleague", "target": {"type": "person", "name": "Dan"}}]})
    assert body["mode"] == "triples"
    assert [a["value"] for a in attributes(api, "employer")] == ["Acme"]
    turns = api.get(f"{CTX}/sessions/{body['sessionId']}/turns").json()["turns"]
    assert turns[0]["content"] == "Carol employer: Acme\nCarol colleague: Dan"
    # text stays required for anything but triples
    for bad in ({}, {"infer": "full"}, {"triples": [{"entity": CAROL, "key": "age", "value": "40"}], "infer": "full"}):
        r = api.post(f"{CTX}/facts", bad)
        assert r.status == 400 and r.json()["field"] == "text", (bad, r.text)


def history(api, key: str) -> list[dict]:
    r = api.get(f"{CTX}/entities/person/carol/history/{key}")
    assert r.status == 200, r.text
    return r.json()["history"]


def test_an_attribute_triples_valid_until_ends_its_value(api):
    # stated with its end: stored closed, never current after it
    write(api, {"triples": [{"entity": CAROL, "key": "employer", "value": "Initech",
                             "valid_from": "2019-01-01T00:00:00Z", "valid_until": "2021-06-30T00:00:00Z"}]})
    (initech,) = history(api, "employer")
    assert (initech["value"], initech["validUntil"]) == ("Initech", "2021-06-30T00:00:00.000Z")
    assert attributes(api, "employer") == []  # not current
    # closing a current value with a later triple that states its end
    write(api, {"triples": [{"entity": CAROL, "key": "location", "value": "Lisbon",
                             "valid_from": "2022-01-01T00:00:00Z"}]})
    assert [a["validUntil"] for a in attributes(api, "location")] == [None]
    closed = write(api, {"triples": [{"entity": CAROL, "key": "location", "value": "Lisbon",
                                      "valid_until": "2024-03-01T00:00:00Z"}]})
    assert closed["extraction"]["corrections"], closed
    assert attributes(api, "location") == []
    (lisbon,) = history(api, "location")
    assert (lisbon["value"], lisbon["validUntil"]) == ("Lisbon", "2024-03-01T00:00:00.000Z")
    at = api.post(f"{CTX}/query", {"query": "where does Carol live", "asOf": "2025-01-01T00:00:00Z",
                                   "include": ["attribute"]}).json()["hits"]
    assert not any("Lisbon" in h["text"] for h in at)


def test_openapi_lists_the_category_table():
    from pathlib import Path

    import yaml

    spec = yaml.safe_load((Path(__file__).resolve().parents[2] / "openapi.yaml").read_text())
    assert set(spec["components"]["schemas"]["WriteCategory"]["enum"]) == set(CATEGORY_SYNONYMS)

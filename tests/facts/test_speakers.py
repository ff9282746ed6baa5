"""Speakers are data: ``speaker`` on POST /facts and on each /facts/batch message is stored
on the turn, labels its search unit, and decides who "I" is in extraction. Bad values are
4xx and write nothing. Both stores, in-process and over the local server."""

from __future__ import annotations

import pytest
from openapi_schemas import assert_matches

from agent_memory.runtime import get_runtime

pytestmark = pytest.mark.http

CTX = "/api/v1/acme"


def test_a_batch_stores_each_messages_speaker_and_labels_its_unit(any_api):
    resp = any_api.post(f"{CTX}/facts/batch", {"infer": "none", "messages": [
        {"content": "I started a pottery wheel course.", "speaker": "Dana Whitfield"},
        {"content": "Nice, how is it going?", "speaker": {"name": "Okafor", "entityId": "entity:person/tunde-okafor"}},
        {"content": "Monday: I went to the gym."},
    ]})
    assert resp.status == 200, resp.text
    body = resp.json()
    turns = any_api.get(f"{CTX}/sessions/{body['sessionId']}/turns")
    assert turns.status == 200
    assert_matches("GET", f"{CTX}/sessions/{body['sessionId']}/turns", turns)
    got = [t.get("speaker") for t in turns.json()["turns"]]
    assert got == [{"name": "Dana Whitfield", "entityId": "entity:person/dana-whitfield"},
                   {"name": "Okafor", "entityId": "entity:person/tunde-okafor"}, None]
    units = [get_runtime().search.get("acme", tid) for tid in body["turnIds"]]
    assert [u.entity_ids for u in units] == [["entity:person/dana-whitfield"], ["entity:person/tunde-okafor"],
                                             ["entity:person/user"]]
    assert units[2].text == "Monday: I went to the gym." and "speaker" not in units[2].metadata
    hits = any_api.post(f"{CTX}/query", {"query": "What did Dana Whitfield start?", "k": 3}).json()["hits"]
    assert hits[0]["id"] == body["turnIds"][0]


def test_in_a_turn_said_by_someone_else_i_is_that_speaker(any_api):
    resp = any_api.post(f"{CTX}/facts", {"text": "I live in Lisbon.", "speaker": "Dana"})
    assert resp.status == 200, resp.text
    [attr] = resp.json()["extraction"]["attributes"]
    assert (attr["entityId"], attr["key"], attr["value"]) == ("entity:person/dana", "location", "Lisbon")
    mine = any_api.post(f"{CTX}/facts", {"text": "I live in Porto.", "speaker": {"name": "User"}})
    [attr] = mine.json()["extraction"]["attributes"]
    assert attr["entityId"] == "entity:person/user"


@pytest.mark.parametrize("speaker", ["", "   ", "!!!", {"entityId": "entity:person/dana"},
                                     {"name": "Dana", "entityId": "not-an-entity"},
                                     {"name": "Dana", "role": "host"}, {"name": "x" * 129}, 7,
                                     {"name": "Dana", "entityId": "entity:person/dana",
                                      "entity_id": "entity:person/dan"}])
def test_a_bad_speaker_is_a_4xx_problem_and_writes_nothing(any_api, speaker):
    resp = any_api.post(f"{CTX}/facts", {"text": "I live in Lisbon.", "speaker": speaker})
    assert 400 <= resp.status < 500 and resp.headers["content-type"].startswith("application/problem+json")
    batch = any_api.post(f"{CTX}/facts/batch", {"messages": [{"content": "I live in Lisbon.", "speaker": speaker}]})
    assert 400 <= batch.status < 500
    assert get_runtime().store.query("c#acme#default#sessions", limit=10).records == []


def test_both_spellings_of_a_speakers_entity_id_are_one_when_they_agree(any_api):
    both = {"name": "Dana", "entityId": "entity:person/dana", "entity_id": "entity:person/dana"}
    assert any_api.post(f"{CTX}/facts", {"text": "I live in Lisbon.", "speaker": both}).status == 200

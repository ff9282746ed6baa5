"""Tier 1 answers the key the question asks for: for one key of every family in the registry
(``rules.vocabulary``: single and multi attribute keys of each category, single and multi
relation labels), written under the name a real extraction model might give it, next to a
fact of another key, in both write orders, on both stores in process and through the local
server, the first ``/query`` hit and the ``/chat`` reply are the asked fact."""

from __future__ import annotations

import itertools

import pytest
from openapi_schemas import assert_matches

from agent_memory.rules import vocabulary as vocab
from agent_memory.rules.questions import asked_slots

ME = {"type": "person", "name": "user"}


def attribute(key: str, value: str) -> dict:
    return {"entity": ME, "key": key, "value": value}


def relation(label: str, name: str) -> dict:
    return {"entity": ME, "key": label, "target": {"type": "person", "name": name}}


# family, question, the asked fact (a model's key name, the turn that said it), the slot it is
# filed under, the text of its fact; then a fact of another slot the old per-word hints or
# recency would have answered with.
CASES = [
    ("single identity", "Where do I work?", attribute("workplace", "Globex"), "I work at Globex.",
     "employer", "User employer: Globex", attribute("city", "Madrid"), "I moved to Madrid."),
    ("single identity", "Where do I live?", attribute("city", "Madrid"), "I moved to Madrid.",
     "location", "User location: Madrid", attribute("company", "Globex"), "I work at Globex."),
    ("multi knowledge", "What are my hobbies?", attribute("hobby", "climbing"), "Climbing is my hobby.",
     "hobbies", "User hobbies: climbing", attribute("likes", "jazz"), "I like jazz."),
    ("single context", "How am I feeling?", attribute("mood", "tired"), "Feeling tired today.",
     "mood", "User mood: tired", attribute("current_project", "Atlas"), "I'm on the Atlas project."),
    ("multi context", "What are my plans?", attribute("plan", "a trip to Lisbon"), "Planning a trip to Lisbon.",
     "plans", "User plans: a trip to Lisbon", attribute("mood", "cheerful"), "Cheerful today."),
    ("single label", "Who is my boss?", relation("boss", "Ann"), "Ann is my boss.",
     "manager", "User manager: Ann", relation("friend", "Bob"), "Bob is a friend of mine."),
    ("multi label", "Who are my friends?", relation("friends", "Bob"), "Bob is a friend of mine.",
     "friend", "User friend: Bob", relation("boss", "Ann"), "Ann is my boss."),
]
_contexts = itertools.count()


def test_the_cases_cover_every_family_of_the_registry():
    families = {(s.cardinality, s.category) for s in vocab.KEYS.values()} | {
        ("label", c) for c in vocab.LABELS.values()}
    covered = set()
    for _, question, _, _, slot, _, _, _ in CASES:
        assert asked_slots(question).slots == {slot} or slot in asked_slots(question).slots
        spec = vocab.KEYS.get(slot)
        covered.add((spec.cardinality, spec.category) if spec else ("label", vocab.LABELS[slot]))
    assert covered == families


@pytest.mark.parametrize("asked_first", [True, False], ids=["asked-first", "asked-last"])
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}:{c[4]}" for c in CASES])
def test_query_and_chat_answer_the_key_the_question_asks_for(any_api, case, asked_first):
    _, question, fact, said, slot, answer, other, other_said = case
    ctx = f"/api/v1/asked{next(_contexts)}"
    writes = [(said, fact), (other_said, other)]
    for text, triple in writes if asked_first else writes[::-1]:
        r = any_api.post(f"{ctx}/facts", {"text": text, "infer": "triples", "triples": [triple]})
        assert r.status == 200, r.text
    r = any_api.post(f"{ctx}/query", {"query": question, "k": 5})
    assert r.status == 200, r.text
    body = assert_matches("POST", f"{ctx}/query", r)
    assert body["tier"] == 1 and body["hits"][0]["text"] == answer, body["hits"]
    assert body["trace"]["tier1Key"] == slot and slot in body["trace"]["askedKeys"]
    r = any_api.post(f"{ctx}/chat", {"message": question, "bypassCache": True})
    assert r.status == 200, r.text
    reply = r.json()
    assert reply["reply"] == f"From memory: {answer} [S1]", reply["reply"]
    assert reply["citations"][0]["snippet"] == answer


def test_a_question_that_names_no_key_gets_no_tier1_answer(any_api):
    ctx = "/api/v1/askednone"
    for text, triple in (("I work at Globex.", attribute("employer", "Globex")),
                         ("I moved to Madrid.", attribute("location", "Madrid"))):
        assert any_api.post(f"{ctx}/facts", {"text": text, "infer": "triples", "triples": [triple]}).status == 200
    r = any_api.post(f"{ctx}/query", {"query": "What about me?", "k": 5})
    assert r.status == 200, r.text
    body = r.json()
    assert body["tier"] == 3 and body["trace"]["askedKeys"] == [] and body["trace"]["tier1Key"] is None

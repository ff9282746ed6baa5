"""POST /facts and /facts/batch: extraction, reconciliation, supersession, idempotency,
errors that write nothing, and projection into search; both stores."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from fused_search import fused_search

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.ports import ModelError as PortModelError
from agent_memory.ports import ModelOutputInvalid, ModelTimeout, SearchFilter
from agent_memory.runtime import get_runtime

pytestmark = pytest.mark.http

CTX = "/api/v1/acme"
USER = "entity:person/user"
# The context and partition the requests above write to; storage keys come from kernel/storage_keys.py.
STORE_CTX = RequestContext(context_id="acme", principal="p")


def attr_rows(entity: str = USER, key: str | None = None) -> list[dict]:
    rt = get_runtime()
    rows = [r.data for r in rt.store.query(keys.attrs_pk(STORE_CTX, entity), limit=1000).records
            if r.data.get("kind") == "attribute"]
    return [r for r in rows if key is None or r["key"] == key]


def current(entity: str = USER, key: str | None = None) -> list[str]:
    return sorted(r["value"] for r in attr_rows(entity, key) if r["validUntil"] is None)


def snapshot() -> int:
    """A count of every record in the context's main collections (must not change on errors)."""
    rt = get_runtime()
    pks = [keys.sessions_pk(STORE_CTX), keys.entities_pk(STORE_CTX), keys.attrs_pk(STORE_CTX, USER),
           keys.actions_pk(STORE_CTX), keys.instructions_pk(STORE_CTX), keys.uncertainties_pk(STORE_CTX),
           *keys.idempotency_pks(STORE_CTX)]
    return sum(len(rt.store.query(pk, limit=1000).records) for pk in pks)


def test_london_then_berlin_is_one_chain_with_a_correction(any_api):
    first = any_api.post(f"{CTX}/facts", {"text": "I live in London.", "observed_at": "2026-03-10T10:00:00Z"})
    assert first.status == 200, first.text
    body = first.json()
    assert body["mode"] == "full"
    assert [(a["key"], a["value"]) for a in body["extraction"]["attributes"]] == [("location", "London")]
    assert body["extraction"]["corrections"] == []
    second = any_api.post(f"{CTX}/facts", {"text": "I moved to Berlin last month.", "sessionId": body["sessionId"],
                                           "observedAt": "2026-05-20T10:00:00Z"})
    assert second.status == 200, second.text
    ext = second.json()["extraction"]
    assert ext["corrections"] == [{"entityId": USER, "key": "location", "oldValue": "London", "newValue": "Berlin"}]
    rows = {r["value"]: r for r in attr_rows(key="location")}
    london, berlin = rows["London"], rows["Berlin"]
    assert london["supersededBy"] == berlin["id"] and berlin["supersedes"] == london["id"]
    assert berlin["validFrom"].startswith("2026-04-20")  # "last month" against observed_at
    assert london["validUntil"] == berlin["validFrom"] and berlin["validUntil"] is None
    assert london["source"]["kind"] == "turn" and london["source"]["ref"] == body["turnId"]
    assert current(key="location") == ["Berlin"]


def test_multi_valued_keys_accumulate_and_same_value_reinforces(api):
    api.post(f"{CTX}/facts", {"text": "I like pizza."})
    api.post(f"{CTX}/facts", {"text": "I like sushi."})
    again = api.post(f"{CTX}/facts", {"text": "I like pizza."}).json()["extraction"]
    assert again["attributes"] == [] and again["corrections"] == []
    assert current(key="likes") == ["pizza", "sushi"]
    pizza = next(r for r in attr_rows(key="likes") if r["value"] == "pizza")
    assert pizza["reinforced"] == 1 and len(attr_rows(key="likes")) == 2


def test_negation_closes_only_the_negated_value(api):
    api.post(f"{CTX}/facts", {"text": "I like pizza. I like sushi."})
    ext = api.post(f"{CTX}/facts", {"text": "I don't like sushi anymore."}).json()["extraction"]
    assert current(key="likes") == ["pizza"]
    assert any(c["key"] == "likes" and c["oldValue"] == "sushi" for c in ext["corrections"])
    api.post(f"{CTX}/facts", {"text": "I work at Acme."})
    api.post(f"{CTX}/facts", {"text": "I no longer work at Acme."})
    assert current(key="employer") == []


def test_values_in_different_scopes_coexist(api):
    api.post(f"{CTX}/facts", {"text": "I live in London.", "scopes": ["team/a"]})
    api.post(f"{CTX}/facts", {"text": "I live in Paris.", "scopes": ["team/b"]})
    assert current(key="location") == ["London", "Paris"]


def test_question_extracts_nothing(api, model):
    ext = api.post(f"{CTX}/facts", {"text": "Where do I live?"}).json()["extraction"]
    assert model.calls["structured"] == 1
    assert all(ext[k] == [] for k in ("entities", "attributes", "relations", "actions", "corrections"))


def test_triples_are_authoritative_and_make_no_model_call(api, model):
    r = api.post(f"{CTX}/facts", {"text": "HR import", "infer": "triples", "triples": [
        {"entity": {"type": "person", "name": "Alice"}, "key": "employer", "value": "Acme"},
        {"entity": {"type": "person", "name": "Alice"}, "key": "manager", "target": {"type": "person", "name": "Bob"}},
        {"entity": {"type": "person", "name": "Alice"}, "verb": "joined", "object": "Acme",
         "occurred_at": "2024-01-02T00:00:00Z"},
        {"entity": {"type": "project", "name": "Apollo"}},
    ]})
    assert r.status == 200, r.text
    assert model.calls["structured"] == 0
    ext = r.json()["extraction"]
    assert [(a["key"], a["value"]) for a in ext["attributes"]] == [("employer", "Acme")]
    assert ext["relations"][0]["label"] == "manager"
    assert ext["actions"][0]["verb"] == "joined"
    assert {e["id"] for e in ext["entities"]} >= {"entity:person/alice", "entity:project/apollo"}
    alice = "entity:person/alice"
    assert attr_rows(alice, "employer")[0]["source"]["kind"] == "upsert"
    # A conversational turn cannot overwrite an authoritative fact: it becomes an uncertainty.
    ext = api.post(f"{CTX}/facts", {"text": "Alice works at Globex."}).json()["extraction"]
    assert current(alice, "employer") == ["Acme"]
    assert ext["uncertainties"] and ext["corrections"] == []


def test_favorite_color_and_favourite_colour_are_one_slot(api):
    alice = {"type": "person", "name": "Alice"}
    for key, value in (("favorite_color", "blue"), ("favourite_colour", "green")):
        r = api.post(f"{CTX}/facts", {"text": "import", "infer": "triples",
                                      "triples": [{"entity": alice, "key": key, "value": value}]})
        assert r.status == 200, r.text
    rows = attr_rows("entity:person/alice")
    assert {r["key"] for r in rows} == {"favourite_colour"}
    assert current("entity:person/alice", "favourite_colour") == ["green"]
    blue, green = (next(r for r in rows if r["value"] == v) for v in ("blue", "green"))
    assert blue["supersededBy"] == green["id"] and green["supersedes"] == blue["id"]


@pytest.mark.parametrize("triple,field", [
    ({"key": "x", "value": "y"}, "triples[1].entity"),
    ({"entity": {"type": "person"}, "key": "x", "value": "y"}, "triples[1].entity.name"),
    ({"entity": {"type": "person", "name": "A"}, "value": "y"}, "triples[1].key"),
    ({"entity": {"type": "person", "name": "A"}, "key": "k", "value": "y", "verb": "ran"}, "triples[1]"),
    ({"entity": {"type": "person", "name": "A"}, "key": "k", "value": "y", "confidence": 3}, "triples[1].confidence"),
    ({"entity": {"type": "person", "name": "A"}, "key": "k", "target": {"name": "B"}}, "triples[1].target.type"),
])
def test_malformed_triple_is_422_naming_its_index_and_writes_nothing(api, triple, field):
    before = snapshot()
    good = {"entity": {"type": "person", "name": "Alice"}, "key": "employer", "value": "Acme"}
    r = api.post(f"{CTX}/facts", {"text": "t", "infer": "triples", "triples": [good, triple]})
    assert r.status == 422, r.text
    assert r.json()["field"] == field
    assert snapshot() == before


def test_preview_writes_nothing(api, model):
    api.post(f"{CTX}/facts", {"text": "I live in London."})
    before = snapshot()
    assert before > 0  # the snapshot reads the collections the first write filled
    r = api.post(f"{CTX}/facts", {"text": "I moved to Berlin.", "infer": "preview"})
    assert r.status == 200
    body = r.json()
    assert body["mode"] == "preview" and body["turnId"] is None
    assert body["extraction"]["corrections"][0]["newValue"] == "Berlin"
    assert snapshot() == before and current(key="location") == ["London"]


@pytest.mark.parametrize("failures,status", [
    ([ModelTimeout("slow")], 504),
    ([PortModelError("boom")], 502),
    ([ModelOutputInvalid("bad"), ModelOutputInvalid("bad")], 502),
])
def test_model_failure_writes_nothing(any_api, model, failures, status):
    before = snapshot()
    model.failures = list(failures)
    r = any_api.post(f"{CTX}/facts", {"text": "I live in London."})
    assert r.status == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert snapshot() == before


def test_invalid_output_is_retried_once(api, model):
    model.failures = [ModelOutputInvalid("bad json")]
    r = api.post(f"{CTX}/facts", {"text": "I live in Oslo."})
    assert r.status == 200 and model.calls["structured"] == 2
    assert current(key="location") == ["Oslo"]


def test_idempotency_key_replays_without_a_second_model_call(any_api, model):
    headers = {"Idempotency-Key": "write-1"}
    first = any_api.post(f"{CTX}/facts", {"text": "I live in Rome."}, headers=headers)
    second = any_api.post(f"{CTX}/facts", {"text": "I live in Rome."}, headers=headers)
    assert first.status == second.status == 200
    assert first.json() == second.json()
    assert second.headers.get("idempotent-replayed") == "true"
    assert model.calls["structured"] == 1
    other = any_api.post(f"{CTX}/facts", {"text": "I live in Milan."}, headers=headers)
    assert other.status == 409
    assert model.calls["structured"] == 1
    sid = first.json()["sessionId"]
    assert len(any_api.get(f"{CTX}/sessions/{sid}/turns").json()["turns"]) == 1


def test_failed_write_releases_its_idempotency_key(api, model):
    model.failures = [ModelTimeout("slow")]
    headers = {"Idempotency-Key": "retry-me"}
    assert api.post(f"{CTX}/facts", {"text": "I live in Rome."}, headers=headers).status == 504
    assert api.post(f"{CTX}/facts", {"text": "I live in Rome."}, headers=headers).status == 200


def test_text_over_cap_is_413(api):
    before = snapshot()
    r = api.post(f"{CTX}/facts", {"text": "x" * (64 * 1024 + 1), "infer": "none"})
    assert r.status == 413
    assert snapshot() == before


def test_batch_per_message_and_whole_conversation(api, model):
    msgs = [{"role": "user", "content": "I live in Lisbon."},
            {"role": "assistant", "content": "Nice city!"},
            {"role": "user", "content": "I work at Initech."}]
    r = api.post(f"{CTX}/facts/batch", {"messages": msgs})
    assert r.status == 200, r.text
    body = r.json()
    assert len(body["turnIds"]) == 3 and body["extractions"][1] is None
    assert model.calls["structured"] == 2
    r = api.post(f"{CTX}/facts/batch", {"messages": msgs, "extract": "whole_conversation"})
    assert r.status == 200 and model.calls["structured"] == 3
    assert current(key="employer") == ["Initech"]


def test_written_fact_becomes_searchable_and_superseded_leaves_current_index(api):
    rt = get_runtime()
    api.post(f"{CTX}/facts", {"text": "I live in London.", "observed_at": "2026-03-01T00:00:00Z"})
    flt = SearchFilter(context_id="acme", kinds=["attribute"])
    hits = fused_search(rt.search, "location London", flt, k=5)
    assert [h.unit.text for h in hits] == ["User location: London"]
    api.post(f"{CTX}/facts", {"text": "I moved to Berlin.", "observed_at": "2026-05-01T00:00:00Z"})
    texts = [h.unit.text for h in fused_search(rt.search, "location London", flt, k=5)]
    assert texts == ["User location: Berlin"]
    past = SearchFilter(context_id="acme", kinds=["attribute"], as_of="2026-04-01T00:00:00Z")
    assert [h.unit.text for h in fused_search(rt.search, "location", past, k=5)] == ["User location: London"]


def test_twenty_concurrent_corrections_leave_one_current_value_and_an_unbroken_chain(runtime):
    ctx = RequestContext(context_id="acme", principal="p", admin=True)
    from agent_memory.models.requests import WriteFactsRequest

    runtime.facts.write(ctx, WriteFactsRequest(text="I live in City0.", infer="full"))
    barrier = threading.Barrier(8)

    def correct(i: int) -> None:
        try:
            barrier.wait(timeout=5)
        except threading.BrokenBarrierError:
            pass
        runtime.facts.write(ctx, WriteFactsRequest(text=f"I live in City{i}.", infer="full"))

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(correct, range(1, 21)))
    rows = attr_rows(key="location")
    assert len(rows) == 21
    live = [r for r in rows if r["validUntil"] is None and r["supersededBy"] is None]
    assert len(live) == 1
    by_id = {r["id"]: r for r in rows}
    chain, node = [], live[0]
    while node is not None:
        chain.append(node["value"])
        prev = node["supersedes"]
        if prev is not None:
            assert by_id[prev]["supersededBy"] == node["id"]
        node = by_id.get(prev) if prev else None
    assert len(chain) == 21 and chain[-1] == "City0"


def test_more_triples_than_one_transaction_holds_is_400(api):
    triples = [{"entity": {"type": "person", "name": f"P{i}"}, "key": "employer", "value": "Acme"} for i in range(17)]
    r = api.post(f"{CTX}/facts", {"text": "import", "infer": "triples", "triples": triples})
    assert r.status == 400 and r.json()["field"] == "triples"


def test_sixteen_relation_triples_fit_one_write(api):
    triples = [{"entity": {"type": "person", "name": f"P{i}"}, "key": "manager",
                "target": {"type": "person", "name": f"M{i}"}} for i in range(16)]
    r = api.post(f"{CTX}/facts", {"text": "import", "infer": "triples", "triples": triples})
    assert r.status == 200, r.text
    assert len(r.json()["extraction"]["relations"]) == 16


def test_an_extraction_larger_than_one_transaction_is_cut_with_an_uncertainty(api):
    text = " ".join(f"I like food{i}." for i in range(60))
    r = api.post(f"{CTX}/facts", {"text": text})
    assert r.status == 200, r.text
    ext = r.json()["extraction"]
    assert 0 < len(ext["attributes"]) < 60
    assert any(u["about"] == "facts left out of this turn" for u in ext["uncertainties"])
    assert len(current(key="likes")) == len(ext["attributes"])


@pytest.mark.parametrize("store_kind", ["sqlite"])  # store-independent; moto makes each re-plan slow
def test_a_turn_naming_more_entities_than_one_transaction_holds_completes(api):
    """Halving used to keep every entity, so the entity inserts alone never fitted and the
    turn spun forever; the kept claims now take only the entities they name."""
    text = " ".join(f"My friend Name{i} lives in City{i}." for i in range(50))
    r = api.post(f"{CTX}/facts", {"text": text})
    assert r.status == 200, r.text
    ext = r.json()["extraction"]
    assert 0 < len(ext["relations"]) < 50
    assert any(u["about"] == "facts left out of this turn" for u in ext["uncertainties"])
    named = {e["name"] for e in ext["entities"]}
    assert {f"Name{i}" for i in range(49, 45, -1)}.isdisjoint(named)  # the left-out friends are not created
    batch = api.post(f"{CTX}/facts/batch", {"messages": [{"role": "user", "content": text}]})
    assert batch.status == 200, batch.text
    chat = api.post(f"{CTX}/chat", {"message": text})
    assert chat.status == 200, chat.text


def test_halving_drops_the_entities_only_the_left_out_claims_name():
    from agent_memory.models.extraction import ExtractedEntity, ExtractedRelation, ExtractionOutput
    from agent_memory.services.facts.extraction.halving import halve, halves

    full = ExtractionOutput(
        entities=[ExtractedEntity(name=f"N{i}") for i in range(40)] + [ExtractedEntity(name="Loner")],
        relations=[ExtractedRelation(subject="User", label="friend", object=f"N{i}") for i in range(40)])
    kept = halve(full, full)
    assert len(kept.relations) == 20
    assert {e.name for e in kept.entities} == {f"N{i}" for i in range(20)}
    first, second = halves(full)
    assert {e.name for e in first.entities} == {f"N{i}" for i in range(20)}
    assert {e.name for e in second.entities} == {f"N{i}" for i in range(20, 40)} | {"Loner"}

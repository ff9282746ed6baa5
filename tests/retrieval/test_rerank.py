"""The reranking stage of RetrievalService (``models.reranker``), with a stand-in reranker:
it rescores the fused pool, never changes what may be read, and a failing reranker leaves the
fused order."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest

from agent_memory.access.request_context import RequestContext
from agent_memory.models.requests import WriteFactsRequest
from agent_memory.ranking.recipes import RECIPES
from agent_memory.services.retrieval.retrieval_service import RetrievalService

ADMIN = RequestContext(context_id="acme", principal="tester", admin=True)
NOTES = [
    "The harbour ferry leaves at nine on weekdays.",
    "Our team lunch is on Friday at the harbour cafe.",
    "The harbour office keeps the spare ferry tickets.",
    "I keep my ferry pass in the blue wallet.",
    "The harbour is closed for repairs in winter.",
    "Sam sold the old ferry to a museum.",
]


class WordReranker:
    """Prefers texts holding ``word``; records what it was asked."""

    name = "test/word"

    def __init__(self, word: str):
        self.word, self.calls = word, []

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        self.calls.append((query, list(texts)))
        return np.array([1.0 if self.word in t else 0.0 for t in texts])


class BrokenReranker:
    name = "test/broken"

    def __init__(self, result=None):
        self.result = result

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if self.result is None:
            raise RuntimeError("model crashed")
        return self.result


@pytest.fixture
def written(runtime):
    for text in NOTES:
        runtime.facts.write(ADMIN, WriteFactsRequest(text=text, infer="none"))
    return runtime


def service(runtime, reranker) -> RetrievalService:
    return RetrievalService(runtime.store, runtime.search, reranker)


def test_without_a_reranker_nothing_changes(written):
    plain = written.retrieval.retrieve(ADMIN, "harbour ferry", k=4)
    assert written.reranker is None and "rerank" not in plain.trace
    again = service(written, None).retrieve(ADMIN, "harbour ferry", k=4)
    assert [(h.id, h.score) for h in again.hits] == [(h.id, h.score) for h in plain.hits]


def test_the_reranker_rescores_the_fused_pool_and_k_holds(written):
    plain = written.retrieval.retrieve(ADMIN, "harbour ferry", k=len(NOTES))
    assert not any("wallet" in h.text for h in plain.hits[:1])
    reranker = WordReranker("wallet")
    result = service(written, reranker).retrieve(ADMIN, "harbour ferry", k=2)
    assert len(result.hits) == 2 and "wallet" in result.hits[0].text
    query, pool = reranker.calls[0]
    assert query == "harbour ferry"
    # the whole fused pool (up to rerank_depth), in fused order, as the hits' texts
    assert pool == [h.text for h in plain.hits][: RECIPES["hybrid"].rerank_depth]
    assert result.trace["rerank"]["model"] == "test/word" and result.trace["rerank"]["candidates"] == len(pool)
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True) and scores[0] <= 1.0


def test_the_blend_keeps_the_fused_order_where_the_reranker_is_indifferent(written):
    plain = written.retrieval.retrieve(ADMIN, "harbour ferry", k=5)
    flat = service(written, WordReranker("no such word")).retrieve(ADMIN, "harbour ferry", k=5)
    assert [h.id for h in flat.hits] == [h.id for h in plain.hits]


@pytest.mark.parametrize("reranker", [BrokenReranker(), BrokenReranker(np.array([1.0])),
                                      BrokenReranker(np.array([np.nan] * 6))], ids=["raises", "short", "nan"])
def test_a_failing_reranker_keeps_the_fused_order(written, reranker):
    plain = written.retrieval.retrieve(ADMIN, "harbour ferry", k=4)
    result = service(written, reranker).retrieve(ADMIN, "harbour ferry", k=4)
    assert [h.id for h in result.hits] == [h.id for h in plain.hits]
    assert result.trace["rerank"]["failed"]


def test_the_reranker_sees_only_what_the_caller_may_read(written):
    secret = [["org/acme/finance"]]
    written.facts.write(ADMIN, WriteFactsRequest(text="The harbour ferry budget is in the wallet.",
                                                 scopes=secret, infer="none"))
    reader = RequestContext(context_id="acme", principal="reader", read_region=("org/acme/public",))
    reranker = WordReranker("wallet")
    result = service(written, reranker).retrieve(reader, "harbour ferry budget", k=3)
    assert all("budget" not in text for _, pool in reranker.calls for text in pool)
    assert all("budget" not in h.text for h in result.hits)


def test_graph_mode_and_the_single_legs_are_not_reranked(written):
    reranker = WordReranker("wallet")
    for mode in ("bm25", "vector", "graph"):
        service(written, reranker).retrieve(ADMIN, "harbour ferry", k=3, mode=mode)
    assert reranker.calls == []


def test_post_query_with_a_reranker_answers_the_reranked_hits_and_says_so(any_api, runtime):
    from openapi_schemas import assert_matches

    runtime.__dict__["reranker"] = WordReranker("wallet")  # as models.reranker would build it
    runtime.__dict__.pop("retrieval", None)
    for text in NOTES:
        assert any_api.post("/api/v1/acme/facts", {"text": text, "infer": "none"}).status == 200
    r = any_api.post("/api/v1/acme/query", {"query": "harbour ferry", "k": 2})
    assert r.status == 200, r.text
    body = assert_matches("POST", "/api/v1/acme/query", r)
    assert "wallet" in body["hits"][0]["text"] and len(body["hits"]) == 2
    assert body["trace"]["rerank"]["model"] == "test/word"


def test_a_tier1_answer_stays_first_whatever_the_reranker_prefers(runtime):
    runtime.facts.write(ADMIN, WriteFactsRequest(text="I live in London.", observed_at="2026-03-10T10:00:00Z"))
    runtime.facts.write(ADMIN, WriteFactsRequest(text="I moved to Berlin last month.",
                                                 observed_at="2026-05-20T10:00:00Z"))
    reranker = WordReranker("London")  # the superseded value's turn matches the words best
    result = service(runtime, reranker).retrieve(ADMIN, "Where do I live?", k=5)
    assert result.tier == 1 and result.hits[0].text == "User location: Berlin"
    # The rest is reranked, but a superseded statement stays below the current one after it too.
    texts = [h.text for h in result.hits]
    assert texts.index("I moved to Berlin last month.") < texts.index("I live in London.")
    assert result.hits[texts.index("I live in London.")].superseded_at.startswith("2026-04-20")
    assert all("User location" not in text for _, pool in reranker.calls for text in pool)


def test_after_reranking_a_question_passes_part_of_its_score_to_its_reply(runtime):
    """The reranker favours the turn that asks what the query asks; its reply answers."""
    from agent_memory.models.requests import WriteFactsBatchRequest

    turns = ["Which trail did you hike with the dog?", "The ridge trail above the lake, we loved it.",
             "Did the dog like the trail?", "Mostly the lake part, he swam the whole time.",
             "The trail map is pinned in the hallway."]
    runtime.facts.write_batch(ADMIN, WriteFactsBatchRequest(
        messages=[{"role": "user", "content": t} for t in turns], infer="none"))
    runtime.facts.write(ADMIN, WriteFactsRequest(text="What time does the trail shop open?", infer="none"))

    class AskingReranker(WordReranker):
        def score(self, query, texts):
            self.calls.append((query, list(texts)))
            return np.array([1.0 if "?" in t else (0.6 if "map" in t else 0.0) for t in texts])

    def ranked(share: float) -> list[str]:
        RECIPES["hybrid"] = dataclasses.replace(base, reply_share=share)
        try:
            return [h.text for h in service(runtime, AskingReranker("?")).retrieve(ADMIN, "trail dog", k=6).hits]
        finally:
            RECIPES["hybrid"] = base

    base = RECIPES["hybrid"]
    assert base.reply_share > 0  # on by default in hybrid
    without, with_replies = ranked(0.0), ranked(base.reply_share)
    reply = "The ridge trail above the lake, we loved it."
    assert without.index(reply) > without.index("The trail map is pinned in the hallway.")
    assert with_replies.index(reply) < with_replies.index("The trail map is pinned in the hallway.")
    # the question in its own write (another session) has no reply to lift; the map turn
    # follows no question and keeps its place relative to unrelated turns
    assert with_replies.index("Mostly the lake part, he swam the whole time.") < \
        with_replies.index("The trail map is pinned in the hallway.")

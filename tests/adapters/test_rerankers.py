"""The late-interaction reranker: its scoring (MaxSim weighed by rarity among the
candidates) on made-up vectors, and its wiring around a stand-in encoder (the real model:
test_local_minilm.py)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from agent_memory.adapters.rerankers import LateInteractionReranker, _keep, late_interaction_scores
from agent_memory.config import load_settings
from agent_memory.kernel.errors import ConfigurationError

E = np.eye(4, dtype=np.float32)  # four orthogonal "token meanings"


def test_a_candidate_holding_the_rare_query_word_outranks_one_holding_the_common_one():
    # query tokens: 0 (the person's name: in every candidate) and 1 (what is asked: rare)
    query = E[[0, 1]]
    name_only = E[[0, 2]]
    asked = E[[0, 1]]
    others = [E[[0, 3]], E[[0, 2, 3]]]
    scores = late_interaction_scores(query, [name_only, asked, *others])
    assert int(np.argmax(scores)) == 1
    # the name matches everywhere, so it carries no weight: name-only candidates score 0
    assert scores[0] == pytest.approx(0.0) and scores[1] == pytest.approx(1.0)


def test_when_every_query_word_is_everywhere_they_weigh_the_same():
    query = E[[0, 1]]
    scores = late_interaction_scores(query, [E[[0, 1]], E[[0, 1, 2]]])
    assert scores == pytest.approx([1.0, 1.0])
    rarer = late_interaction_scores(query, [E[[0, 1]], E[[0, 1]], E[[0, 3]]])
    assert rarer[0] == rarer[1] == pytest.approx(1.0) and rarer[2] == pytest.approx(0.0)


def test_partial_matches_count_by_their_similarity_and_empty_inputs_score_nothing():
    near = np.array([[0.6, 0.8, 0, 0]], dtype=np.float32)  # cosine 0.6 with token 0
    scores = late_interaction_scores(E[[0]], [near, E[[0]], E[[2]]])
    assert scores[1] > scores[0] > scores[2]
    assert late_interaction_scores(E[[0]], []).shape == (0,)
    assert late_interaction_scores(E[[0]], [np.zeros((0, 4), dtype=np.float16)]) == pytest.approx([0.0])


def test_query_tokens_drop_scaffolding_candidate_tokens_only_punctuation():
    pieces = ["[CLS]", "what", "did", "priya", "repair", "##ed", "?", "[SEP]"]
    assert _keep(pieces, drop_stop_words=True).tolist() == [False, False, False, True, True, True, False, False]
    assert _keep(pieces, drop_stop_words=False).tolist() == [False, True, True, True, True, True, False, False]


class StandInModel:
    """What the reranker uses of the local encoder (``onnx_encoder.LocalEncoder.encode``): each
    text's token vectors and pieces; a word is one token with a fixed vector of its own."""

    name = "all-MiniLM-L6-v2"

    def __init__(self):
        self.encoded: list[str] = []

    @staticmethod
    def words(text):
        return ["[CLS]", *text.lower().replace("?", " ?").split(), "[SEP]"]

    def encode(self, texts):
        from agent_memory.adapters.onnx_encoder import Encoded

        self.encoded += texts
        out = []
        for t in texts:
            pieces = self.words(t)[:16]
            tokens = np.stack([np.random.default_rng(zlib.crc32(w.encode())).normal(size=64) for w in pieces])
            out.append(Encoded(np.zeros(64, dtype=np.float32), tokens.astype(np.float32), pieces))
        return out


def test_the_reranker_scores_with_the_models_token_vectors_and_keeps_them():
    model = StandInModel()
    reranker = LateInteractionReranker("all-MiniLM-L6-v2", encoder=model, cache_texts=2)
    assert reranker.name == "local/all-MiniLM-L6-v2"
    texts = ["priya can repair boats", "dana went sailing", "priya likes tea"]
    scores = reranker.score("What did Priya repair?", texts)
    assert scores.shape == (3,) and int(np.argmax(scores)) == 0
    assert model.encoded == ["What did Priya repair?", *texts]
    model.encoded.clear()
    reranker.score("What did Priya repair?", texts[1:])  # the last two are kept (cache_texts=2)
    assert model.encoded == ["What did Priya repair?"]
    assert reranker.score("anything", []).shape == (0,)


def test_models_reranker_setting():
    assert load_settings(env={}, config_path=None).models.reranker is None
    assert load_settings(env={"AGENT_MEMORY_MODELS_RERANKER": "none"}, config_path=None).models.reranker is None
    ref = load_settings(env={"AGENT_MEMORY_MODELS_RERANKER": "local/all-MiniLM-L6-v2"}, config_path=None).models.reranker
    assert str(ref) == "local/all-MiniLM-L6-v2"
    assert "reranker=local/all-MiniLM-L6-v2" in load_settings(
        env={"AGENT_MEMORY_MODELS_RERANKER": "local/all-MiniLM-L6-v2"}, config_path=None).describe()
    with pytest.raises(ConfigurationError, match="models.reranker"):
        load_settings(env={"AGENT_MEMORY_MODELS_RERANKER": "cohere/rerank-v3"}, config_path=None)


def test_serve_with_a_reranker_but_without_the_semantic_extra_stops_at_startup(tmp_path, monkeypatch, capsys):
    from agent_memory.adapters import onnx_encoder
    from agent_memory.interfaces.cli import main
    from agent_memory.runtime import get_runtime, set_runtime

    monkeypatch.setattr(onnx_encoder, "bundled_minilm_graph", lambda: None)  # the model package missing
    onnx_encoder.load_local_encoder.cache_clear()
    monkeypatch.setenv("AGENT_MEMORY_MODELS_RERANKER", "local/all-MiniLM-L6-v2")
    try:
        assert main(["serve", "--data-dir", str(tmp_path), "--port", "0"]) == 2
    finally:
        get_runtime().close()
        set_runtime(None)
    assert "semantic" in capsys.readouterr().err


# --- token vectors stored at write time (TokenVectorStore, PrecomputingIndex) -------------


def test_stored_token_vectors_make_a_query_encode_only_its_question(tmp_path):
    from agent_memory.adapters.rerankers import TokenVectorStore

    model = StandInModel()
    store = TokenVectorStore(str(tmp_path / "tokens"), "all-MiniLM-L6-v2")
    writer = LateInteractionReranker("all-MiniLM-L6-v2", encoder=model, store=store)
    texts = ["priya can repair boats", "dana went sailing", "priya likes tea"]
    assert writer.precompute([*texts, texts[0], ""]) == 3 and writer.precompute(texts) == 0
    assert store.stats()[0] == 3
    # a fresh process (empty LRU) over the same file: only the question is encoded
    model.encoded.clear()
    reader = LateInteractionReranker("all-MiniLM-L6-v2", encoder=model,
                                     store=TokenVectorStore(str(tmp_path / "tokens"), "all-MiniLM-L6-v2"))
    scores = reader.score("What did Priya repair?", texts)
    assert model.encoded == ["What did Priya repair?"]
    # the int8 rows score as the float ones do
    exact = LateInteractionReranker("all-MiniLM-L6-v2", encoder=StandInModel()).score("What did Priya repair?", texts)
    assert int(np.argmax(scores)) == int(np.argmax(exact)) == 0
    assert np.abs(scores - exact).max() < 0.02
    # a text not stored at write time is encoded once and stored for the next query
    model.encoded.clear()
    reader.score("boats", ["priya sold boats"])
    assert model.encoded == ["boats", "priya sold boats"] and store.stats()[0] == 4


def test_the_budget_caps_tokens_and_another_model_empties_the_store(tmp_path):
    from agent_memory.adapters.rerankers import TokenVectorStore

    store = TokenVectorStore(str(tmp_path / "tokens"), "m1")
    long = np.eye(200, 64, dtype=np.float32)
    store.put_many({"long": long, "short": long[:3]})
    got = store.get_many(["long", "short", "absent"])
    assert set(got) == {"long", "short"} and got["long"].shape == (TokenVectorStore.MAX_TOKENS, 64)
    assert store.stats() == (2, (TokenVectorStore.MAX_TOKENS + 3) * 64)  # one byte a dimension
    assert np.allclose(np.linalg.norm(got["short"].astype(np.float32), axis=1), 1.0, atol=1e-3)
    store.close()
    assert TokenVectorStore(str(tmp_path / "tokens"), "m2").stats() == (0, 0)


def test_with_a_local_reranker_every_indexed_unit_gets_its_tokens_and_reindex_backfills(tmp_path, monkeypatch):
    from agent_memory.access.request_context import RequestContext
    from agent_memory.adapters import rerankers
    from agent_memory.models.requests import WriteFactsRequest
    from agent_memory.runtime import Runtime

    model = StandInModel()
    real = rerankers.LateInteractionReranker.__init__
    monkeypatch.setattr(rerankers.LateInteractionReranker, "__init__",
                        lambda self, m, **kw: real(self, m, encoder=model, **kw))
    settings = load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path), "AGENT_MEMORY_CURSOR_SECRET": "s",
                                  "AGENT_MEMORY_MODELS_RERANKER": "local/all-MiniLM-L6-v2"})
    runtime = Runtime(settings)
    admin = RequestContext(context_id="acme", principal="tester", admin=True)
    try:
        for text in ("The harbour ferry leaves at nine.", "I keep my ferry pass in the blue wallet.",
                     "Lunch is at the harbour cafe."):
            runtime.facts.write(admin, WriteFactsRequest(text=text, infer="none"))
        assert runtime.projector.drain(timeout_s=30)  # indexed (and precomputed) after the commit
        store = runtime.reranker.store
        stored, size = store.stats()
        assert stored >= 3 and size > 0  # each turn's unit, at write time
        model.encoded.clear()
        result = runtime.retrieval.retrieve(admin, "ferry wallet", k=2)
        assert "rerank" in result.trace and "failed" not in result.trace["rerank"]
        assert model.encoded == ["ferry wallet"]  # candidates were read, not encoded
        # a store lost (or a unit written before it existed): reindex writes the rows again
        store._db.execute("DELETE FROM tokens")
        from agent_memory.services.operations.reindex import reindex_context

        reindex_context(runtime.base_store, runtime.search, "acme")
        assert store.stats()[0] == stored
    finally:
        runtime.close()

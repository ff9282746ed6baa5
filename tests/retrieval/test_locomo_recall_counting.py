"""bench/locomo.py on a tiny LoCoMo-shaped conversation: data loading, the recall counting
(docs/decisions.md, "Retrieval benchmark counting": expand units to dia_ids in rank order,
cut at k distinct), and one full run through the product's write path and retrieval."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def locomo():
    spec = importlib.util.spec_from_file_location("bench_locomo_under_test", REPO / "bench" / "locomo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


CONVERSATION = {
    "speaker_a": "Ann",
    "speaker_b": "Ben",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Ben! I adopted a puppy named Biscuit yesterday."},
        {"speaker": "Ben", "dia_id": "D1:2", "text": "Wow! What breed is Biscuit?"},
        {"speaker": "Ann", "dia_id": "D1:3", "text": "A beagle. Look at him!",
         "blip_caption": "a photo of a beagle puppy on a sofa"},
    ],
    "session_2_date_time": "10:37 am on 27 June, 2023",
    "session_2": [
        {"speaker": "Ben", "dia_id": "D2:1", "text": "I ran my first marathon in Boston last weekend."},
        {"speaker": "Ann", "dia_id": "D2:2", "text": "Amazing, congratulations on the marathon!"},
    ],
    "qa": [
        {"question": "What did Ann adopt?", "answer": "a puppy", "evidence": ["D1:1 "], "category": 1},
        {"question": "When did Ben run a marathon?", "answer": "June 2023", "evidence": ["D2:1"], "category": 2},
        {"question": "What breed is Ann's dog?", "answer": "beagle", "evidence": ["D1:3; D1:2"], "category": 4},
        {"question": "What did Ben adopt?", "answer": "nothing", "evidence": [], "category": 5},
        {"question": "Unanswerable?", "answer": "-", "evidence": [], "category": 1},
    ],
}


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    d = tmp_path / "locomo"
    d.mkdir()
    (d / "1.json").write_text(json.dumps(CONVERSATION))
    return d


def test_recall_expands_units_in_rank_order_and_cuts_at_k_distinct_dia_ids(locomo):
    ranked = [["D1:1", "D1:2", "D1:3"], ["D1:1"], ["D2:1"], [], ["D2:2"]]
    assert locomo.cut_distinct(ranked, 2) == ["D1:1", "D1:2"]  # a big unit spends its slots
    assert locomo.cut_distinct(ranked, 4) == ["D1:1", "D1:2", "D1:3", "D2:1"]  # duplicates are free
    assert locomo.recall_at(ranked, ["D2:1", "D1:1"], 3) == 0.5
    assert locomo.recall_at(ranked, ["D2:1", "D1:1"], 4) == 1.0
    assert locomo.recall_at([], ["D1:1"], 10) == 0.0


def test_loading_normalises_dates_evidence_captions_and_categories(locomo, data_dir):
    conv = locomo.load_conversation(data_dir / "1.json")
    assert conv.speakers == ("Ann", "Ben") and [s.observed_at for s in conv.sessions] == [
        "2023-05-08T13:56:00.000Z", "2023-06-27T10:37:00.000Z"]
    assert conv.turns[2].text == "A beagle. Look at him! [shares a photo of a beagle puppy on a sofa]"
    assert [q.evidence for q in conv.questions] == [["D1:1"], ["D2:1"], ["D1:3", "D1:2"]]
    assert locomo.parse_session_date("not a date") is None


def test_plain_bm25_matches_rank_bm25(locomo):
    rank_bm25 = pytest.importorskip("rank_bm25")
    corpus = [locomo.tokens(t) for t in ("the cat sat", "a dog and a cat", "birds sing", "the the the cat")]
    query = locomo.tokens("the cat dog")
    ours = locomo.PlainBM25(corpus).get_scores(query)
    theirs = rank_bm25.BM25Okapi(corpus).get_scores(query)
    assert [round(float(x), 9) for x in ours] == [round(float(x), 9) for x in theirs]


def test_a_full_run_ingests_through_the_write_path_and_counts_every_method(locomo, data_dir):
    results = locomo.run(data_dir, embedder="hashing", progress=lambda line: None)
    assert results["questions"] == 3 and results["embedder"] == "hashing/v1"
    assert set(results["recall"]) == {"bm25", "dense", "bm25+dense rrf", "product"}
    assert results["recall"]["product"]["@5"] == 1.0  # five turns: everything fits in the top 5
    assert results["product_vs_baseline"]["@5"] > 0
    text = locomo.table(results)
    assert "product" in text and "@10" in text


def test_the_real_data_when_present(locomo):
    first = REPO.parent / "shared" / "bench" / "locomo" / "26.json"
    if not first.exists():
        pytest.skip("LoCoMo data not present at ../shared/bench/locomo")
    conv = locomo.load_conversation(first)
    assert all(conv.speakers) and len(conv.turns) > 300 and conv.questions


def test_the_splits_are_fixed_disjoint_and_cover_the_seven_conversations(locomo):
    tuning, validation = set(locomo.SPLITS["tuning"]), set(locomo.SPLITS["validation"])
    assert not tuning & validation and len(tuning | validation) == 7
    assert locomo.split_of("41") == "tuning" and locomo.split_of("44") == "validation"
    assert locomo.split_of("1") is None


def test_ablation_runs_every_stage_off_and_restores_the_recipe(locomo, tmp_path):
    from agent_memory.ranking import recipes

    d = tmp_path / "locomo"
    d.mkdir()
    (d / "41.json").write_text(json.dumps(CONVERSATION))  # a tuning-split name
    before = recipes.RECIPES["hybrid"]
    results = locomo.ablate(d, embedder="hashing", progress=lambda line: None)
    assert recipes.RECIPES["hybrid"] is before
    assert set(results["recall"]) == set(locomo.ABLATIONS)
    assert all(by["tuning"]["@5"] is not None and by["validation"]["@5"] is None for by in results["recall"].values())
    assert "entity legs off" in locomo.ablation_table(results)


def test_the_bench_command_shows_progress_lines_off_a_terminal(data_dir, tmp_path, capsys):
    from agent_memory.interfaces import cli

    out_file = tmp_path / "results.json"
    assert cli.main(["bench", "locomo", str(data_dir), "--out", str(out_file)]) == 0
    out, err = capsys.readouterr()
    assert f"results: {out_file}" in out and json.loads(out_file.read_text())["questions"] == 3
    lines = err.splitlines()
    assert lines[0].startswith("  1: 5 turns ingested") and "\x1b[" not in err
    assert lines[-1] == "locomo: 1/1 conversations (100%) done"


def test_a_kept_ingest_is_reused_and_gives_the_same_figures(locomo, data_dir, tmp_path):
    keep = tmp_path / "keep"
    first = locomo.run(data_dir, embedder="hashing", progress=lambda line: None, keep=keep)
    mapping = keep / "hashing-product" / "mapping-1.json"
    assert mapping.exists()
    second = locomo.run(data_dir, embedder="hashing", progress=lambda line: None, keep=keep)
    assert second["recall"] == first["recall"]


def test_the_embedding_cache_returns_what_the_embedder_gave_and_embeds_each_text_once(tmp_path):
    from agent_memory.adapters.embedders import HashingEmbedder

    spec = importlib.util.spec_from_file_location("bench_embedding_cache_under_test",
                                                  REPO / "bench" / "embedding_cache.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    inner = HashingEmbedder(dimension=32)
    calls: list[list[str]] = []

    class Counting:
        name, dimension = inner.name, inner.dimension

        def embed(self, texts):
            calls.append(list(texts))
            return inner.embed(texts)

    path = tmp_path / "cache.sqlite"
    texts = ["the kayak is blue", "a harbour at dawn", "the kayak is blue"]
    got = module.DiskCachingEmbedder(Counting(), path).embed(texts)
    assert (got == inner.embed(texts)).all() and calls == [["the kayak is blue", "a harbour at dawn"]]
    again = module.DiskCachingEmbedder(Counting(), path)  # a later run, same file
    assert (again.embed(["a harbour at dawn", "new words"]) == inner.embed(["a harbour at dawn", "new words"])).all()
    assert calls[-1] == ["new words"] and again.hits == 1 and again.misses == 1

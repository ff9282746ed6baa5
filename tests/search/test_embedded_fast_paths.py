"""The embedded index's fast paths give what the slow paths give: in-memory BM25 of a
small context ranks like FTS5, decoded units and shared filter masks follow every write."""

from __future__ import annotations

import random

import pytest

from agent_memory.adapters.embedded import term_index
from agent_memory.adapters.embedded.index import EmbeddedSearchIndex
from agent_memory.ports import SearchFilter, SearchUnit

WORDS = ("harbour sailing boat engine repair chess club opening gambit bicycle chain wheel garden "
         "tomato basil kitchen oven bread flour river bridge lantern violin lesson running shoes").split()


def units(n: int, seed: int = 3) -> list[SearchUnit]:
    rng = random.Random(seed)
    return [SearchUnit(id=f"u{i}", context_id="c", kind="turn", role="user",
                       text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14))))
            for i in range(n)]


@pytest.fixture
def pair(tmp_path, embedder, monkeypatch):
    fast = EmbeddedSearchIndex(tmp_path / "fast.sqlite", embedder)
    slow = EmbeddedSearchIndex(tmp_path / "slow.sqlite", embedder)
    data = units(300)
    fast.upsert(data)
    slow.upsert(data)
    yield fast, slow, monkeypatch
    fast.close()
    slow.close()


QUERIES = ["sailing boat repair", "chess gambit opening club", "bread", "violin lesson river", "running shoes shoe",
           "tomatoes and basil in the garden", "nothing matches this"]


@pytest.mark.parametrize("query", QUERIES)
def test_in_memory_bm25_ranks_like_fts5_when_the_file_holds_one_context(pair, query):
    fast, slow, monkeypatch = pair
    flt = SearchFilter(context_id="c", admin=True)
    got = fast.search(query, flt, k=40, mode="bm25")
    assert fast._views["c"].terms is not None  # noqa: SLF001 - the fast path ran
    monkeypatch.setattr(term_index, "MAX_ROWS", -1)
    slow._views.clear()  # noqa: SLF001 - reload without postings
    want = slow.search(query, flt, k=40, mode="bm25")
    assert slow._views["c"].terms is None  # noqa: SLF001
    assert [h.score for h in got] == pytest.approx([h.score for h in want], rel=1e-6)
    if got:  # the same units, except for an order among ties at the cut
        cut = got[-1].score + 1e-9
        assert {h.unit.id for h in got if h.score > cut} == {h.unit.id for h in want if h.score > cut}


def test_writes_reach_postings_decoded_units_and_masks(tmp_path, embedder):
    index = EmbeddedSearchIndex(tmp_path / "s.sqlite", embedder)
    flt = SearchFilter(context_id="c", admin=True)
    index.upsert([SearchUnit(id="a", context_id="c", kind="turn", text="the lantern by the bridge"),
                  SearchUnit(id="b", context_id="c", kind="turn", text="a violin lesson")])
    assert [h.unit.id for h in index.search("lantern", flt, k=5, mode="bm25")] == ["a"]
    index.upsert([SearchUnit(id="a", context_id="c", kind="turn", text="a quiet harbour", revision=2)])
    assert index.search("lantern", flt, k=5, mode="bm25") == []
    [hit] = index.search("harbour", flt, k=5, mode="bm25")
    assert hit.unit.text == "a quiet harbour"  # not the decoded copy of the old revision
    index.delete("c", ["b"])
    assert index.search("violin", flt, k=5, mode="bm25") == []
    assert "b" not in {h.unit.id for h in index.search("violin", flt, k=5, mode="vector")}
    assert [h.unit.id for h in index.search("violin harbour", flt, k=5, mode="vector")] == ["a"]
    index.close()


def test_a_context_that_grows_past_the_limit_falls_back_to_fts5(tmp_path, embedder, monkeypatch):
    monkeypatch.setattr(term_index, "MAX_ROWS", 50)
    index = EmbeddedSearchIndex(tmp_path / "s.sqlite", embedder)
    flt = SearchFilter(context_id="c", admin=True)
    index.upsert(units(40))
    index.search("boat", flt, k=5, mode="bm25")
    assert index._views["c"].terms is not None  # noqa: SLF001
    index.upsert(units(80, seed=4)[40:])
    hits = index.search("boat", flt, k=5, mode="bm25")
    assert index._views["c"].terms is None and hits  # noqa: SLF001
    index.close()


@pytest.mark.parametrize("labelled", [10, 200], ids=["selective", "most rows"])
def test_legs_sharing_a_query_vector_rank_as_each_leg_alone(tmp_path, embedder, labelled):
    """``rank_rows`` scores a query vector against the matrix once for all its legs; each
    leg (the whole context, and one restricted to an entity's label) comes back with the rows
    and cosines it has when it runs alone, on both of ``top_vector``'s paths (the visible rows
    only, for a selective filter, or the whole matrix)."""
    from agent_memory.ports import RowLeg

    index = EmbeddedSearchIndex(tmp_path / "s.sqlite", embedder)
    data = [SearchUnit(id=u.id, context_id="c", kind="turn", role="user", text=u.text,
                       labels=["person/ana"] if i < labelled else [])
            for i, u in enumerate(units(300, seed=5))]
    index.upsert(data)
    flt = SearchFilter(context_id="c", admin=True)
    whole = RowLeg("sailing boat repair", "vector", 25)
    about = RowLeg("sailing boat repair", "vector", 25, ("person/ana",))
    together = index.rank_rows(flt, [whole, about])
    for at, leg in enumerate((whole, about)):
        alone = index.rank_rows(flt, [leg])
        assert [together.ids[i] for i in together.legs[at].tolist()] == [alone.ids[i] for i in alone.legs[0].tolist()]
        assert together.leg_scores[at].tolist() == pytest.approx(alone.leg_scores[0].tolist(), abs=1e-6)
    assert {together.ids[i] for i in together.legs[1].tolist()} <= {u.id for u in data[:labelled]}
    index.close()

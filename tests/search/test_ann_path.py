"""The embedded index's ANN path (faiss HNSW, ``adapters/embedded/ann.py``): recall against the exact
scan with filters applied inside the search, persistence, and incremental writes."""

from __future__ import annotations

import os

import numpy as np
import pytest

from agent_memory.adapters.embedded.index import EmbeddedSearchIndex
from agent_memory.ports import SearchFilter, SearchUnit

pytest.importorskip("faiss")

DIM = 32


class TableEmbedder:
    """``"v<i>"`` embeds to row i of a fixed table of clustered unit vectors; ``"q<i>"`` to a
    query near row i (text the test controls, vectors shaped like sentence embeddings)."""

    name = "test/table"
    dimension = DIM

    def __init__(self, n: int, seed: int = 5):
        rng = np.random.default_rng(seed)
        centres = rng.normal(size=(40, DIM))
        table = centres[rng.integers(0, 40, size=n)] + 0.6 * rng.normal(size=(n, DIM))
        self.table = (table / np.linalg.norm(table, axis=1, keepdims=True)).astype(np.float32)
        noise = 0.3 * rng.normal(size=(n, DIM))
        queries = self.table + noise
        self.queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
        self.extra: dict[str, np.ndarray] = {}

    def embed(self, texts):
        out = []
        for t in texts:
            if t in self.extra:
                out.append(self.extra[t])
            elif t[0] == "v":
                out.append(self.table[int(t[1:])])
            elif t[0] == "q":
                out.append(self.queries[int(t[1:])])
            else:
                out.append(np.zeros(DIM, dtype=np.float32))
        return np.asarray(out, dtype=np.float32)


N = 3000


def units(n: int) -> list[SearchUnit]:
    return [SearchUnit(id=f"u{i}", context_id="c", kind="turn", text=f"v{i}",
                       labels=["even"] if i % 2 == 0 else [], scopes=[["org/a"]] if i % 5 else [["org/b"]])
            for i in range(n)]


@pytest.fixture
def indexes(tmp_path):
    emb = TableEmbedder(N)
    approx = EmbeddedSearchIndex(tmp_path / "ann.sqlite", emb, ann_min_rows=1000, ann_exact_below=100)
    exact = EmbeddedSearchIndex(tmp_path / "exact.sqlite", emb, ann_min_rows=10**9)
    data = units(N)
    approx.upsert(data)
    exact.upsert(data)
    yield approx, exact, emb, tmp_path
    approx.close()
    exact.close()


FILTERS = [SearchFilter(context_id="c", admin=True),
           SearchFilter(context_id="c", admin=True, labels=["even"]),
           SearchFilter(context_id="c", admin=True, read_region=["org/a"]),
           SearchFilter(context_id="c", admin=True, labels=["even"], read_region=["org/b"])]


@pytest.mark.parametrize("flt", FILTERS, ids=["none", "half", "four-fifths", "a-tenth"])
def test_filtered_recall_at_10_holds_against_the_exact_scan(indexes, flt):
    approx, exact, _, _ = indexes
    found = wanted = 0
    for i in range(0, N, 30):
        got = {h.unit.id for h in approx.search(f"q{i}", flt, k=10, mode="vector")}
        want = {h.unit.id for h in exact.search(f"q{i}", flt, k=10, mode="vector")}
        found += len(got & want)
        wanted += len(want)
    assert approx._views["c"].ann is not None  # noqa: SLF001 - the graph answered
    assert found / wanted >= 0.99


def test_the_graph_persists_and_writes_after_it_are_found(indexes):
    approx, _, emb, tmp_path = indexes
    flt = SearchFilter(context_id="c", admin=True)
    approx.search("q1", flt, k=10, mode="vector")
    graph_file = approx._vectors.graph_path("c")  # noqa: SLF001
    assert os.path.exists(graph_file)
    approx.close()
    reopened = EmbeddedSearchIndex(tmp_path / "ann.sqlite", emb, ann_min_rows=1000, ann_exact_below=100)
    # a new unit and a rewritten one, after the graph was saved
    emb.extra["fresh"] = emb.queries[7]
    emb.extra["moved"] = emb.queries[11]
    reopened.upsert([SearchUnit(id="new", context_id="c", kind="turn", text="fresh"),
                     SearchUnit(id="u11", context_id="c", kind="turn", text="moved", revision=2)])
    hits = reopened.search("q7", flt, k=3, mode="vector")
    assert reopened._views["c"].ann.size == N  # noqa: SLF001 - loaded from disk, not rebuilt
    assert hits[0].unit.id == "new"
    assert reopened.search("q11", flt, k=1, mode="vector")[0].unit.id == "u11"
    reopened.delete("c", ["new"])
    assert "new" not in {h.unit.id for h in reopened.search("q7", flt, k=10, mode="vector")}
    reopened.close()


def test_a_reloaded_graph_finds_rewritten_units_by_fingerprint(indexes):
    """A graph saved with its vectors' fingerprints is checked against the view without reading
    its vectors back: exactly the units rewritten since it was saved are forgotten."""
    approx, _, emb, tmp_path = indexes
    flt = SearchFilter(context_id="c", admin=True)
    approx.search("q1", flt, k=10, mode="vector")
    approx.close()
    assert os.path.exists(approx._vectors.graph_path("c") + ".prints.npy")  # noqa: SLF001
    reopened = EmbeddedSearchIndex(tmp_path / "ann.sqlite", emb, ann_min_rows=1000, ann_exact_below=100)
    emb.extra["moved"] = emb.queries[11]
    reopened.upsert([SearchUnit(id=f"u{i}", context_id="c", kind="turn", text="moved", revision=2) for i in (11, 12)])
    reopened.search("q11", flt, k=1, mode="vector")
    view = reopened._views["c"]  # noqa: SLF001
    graph = view.ann
    assert graph.prints is not None
    forgotten = {view.ids[r] for r in range(view.n)} - {view.ids[r] for r in graph.rows[graph.rows >= 0]}
    assert forgotten == {"u11", "u12"}
    reopened.close()

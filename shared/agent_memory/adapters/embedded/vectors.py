"""The embedded index's vector leg: an exact scan of the view's matrix, or, for a large
context when faiss is installed (the ``ann`` extra), its HNSW graph (``ann``) with the rows
written since the graph was built scored exactly until they are folded in."""

from __future__ import annotations

import os

import numpy as np

from agent_memory.adapters.embedded import ann
from agent_memory.adapters.embedded.ann import AnnGraph
from agent_memory.adapters.embedded.fts import context_token
from agent_memory.adapters.embedded.view import ContextView, RankedRows, rows_of_pks

ANN_MIN_ROWS = 50_000  # contexts this large search vectors through the ANN graph (``ann``)
ANN_EXACT_BELOW = 20_000  # ... unless the filter leaves at most this many rows visible
ANN_FOLD_MIN = 1_000  # pending rows (written since the graph) folded into it past max(this, 5%)
ANN_REBUILD_STALE = 0.2  # share of stale graph ids that triggers a rebuild


class VectorLeg:
    """Top rows of a view by cosine (callers hold the index's lock). Past ``min_rows`` units a
    context searches through its graph, kept beside the index file at ``path`` + ``.ann``; a
    filter leaving at most ``exact_below`` rows visible is still answered by the exact scan.
    Without faiss: always exact."""

    def __init__(self, path: str, dimension: int, *, min_rows: int, exact_below: int) -> None:
        self.path = path
        self.dimension = dimension
        self.min_rows = min_rows
        self.exact_below = exact_below
        self.available = ann.available()

    def exact(self, view: ContextView) -> bool:
        """Whether ``top`` scans the matrix for every filter (no graph for this view)."""
        return not self.available or view.n - view.dead < self.min_rows

    def top(self, view: ContextView, q: np.ndarray, m: np.ndarray, depth: int,
            scored: np.ndarray | None = None) -> RankedRows:
        """Top ``depth`` rows where ``m`` holds, best first. ``scored``: ``q``'s cosines with
        every row, for an exact scan (``view.top_vector``)."""
        if self.exact(view):
            return view.top_vector(q, m, depth, scored)
        visible = int(np.count_nonzero(m))
        if visible <= self.exact_below:
            return view.top_vector(q, m, depth, scored)
        graph = self._graph(view)
        found = graph.search(q, m, depth)
        pending = np.fromiter(view.pending, dtype=np.int64, count=len(view.pending))
        if pending.size:
            pending = pending[m[pending]]
        cand = np.unique(np.concatenate([found[found >= 0], pending]))
        if cand.size < min(depth, visible):
            # The graph walk ran out before ``depth`` visible rows (a filter that hides the
            # graph's neighbourhoods, or duplicate vectors): never return fewer than exist.
            return view.top_vector(q, m, depth)
        scores = view.matrix[cand] @ q  # exact cosines from the view (never a stale vector)
        kk = min(depth, cand.size)
        part = np.argpartition(-scores, kk - 1)[:kk] if kk < cand.size else np.arange(cand.size)
        part = part[np.lexsort((cand[part], -scores[part]))]
        return cand[part].astype(np.int64, copy=False), scores[part].astype(np.float64)

    def _graph(self, view: ContextView) -> AnnGraph:
        """The context's graph: loaded from disk or built on first need, pending rows folded
        in once they pile up, rebuilt when too many of its vectors went stale."""
        graph = view.ann
        if graph is not None and graph.stale_share() > ANN_REBUILD_STALE:
            graph = None
        if graph is None:
            graph = self._load_graph(view) or self._build_graph(view, list(range(view.n)), AnnGraph(self.dimension))
            view.ann = graph
        elif len(view.pending) > max(ANN_FOLD_MIN, graph.size // 20):
            self._build_graph(view, sorted(view.pending), graph)
        return graph

    def _build_graph(self, view: ContextView, rows: list[int], graph: AnnGraph) -> AnnGraph:
        picked = np.asarray([r for r in rows if view.alive[r]], dtype=np.int64)
        graph.add(view.matrix[picked], view.pks[picked], picked)
        view.pending.clear()
        view.ann = graph
        if self.path != ":memory:":
            graph.save(self.graph_path(view.context_id))
        return graph

    def _load_graph(self, view: ContextView) -> AnnGraph | None:
        if self.path == ":memory:":
            return None
        graph = AnnGraph.load(self.graph_path(view.context_id), self.dimension)
        if graph is None:
            return None
        graph.rows = rows_of_pks(view, graph.pks)
        graph.forget_changed(view.matrix, view.prints)  # units rewritten since the graph was saved
        covered = np.zeros(view.n, dtype=bool)
        covered[graph.rows[graph.rows >= 0]] = True
        view.ann = graph
        view.pending = {int(r) for r in np.flatnonzero(view.alive[: view.n] & ~covered)}
        return graph

    def graph_path(self, context_id: str) -> str:
        return os.path.join(self.path + ".ann", context_token(context_id) + ".faiss")

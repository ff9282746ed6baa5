"""Approximate nearest neighbours for the embedded index's large contexts (faiss HNSW).

Why faiss-cpu: a maintained wheel on PyPI for every platform we build for, HNSW over inner
product (our vectors are unit length, so that is cosine), persistence to one file, and
``IDSelectorBitmap`` so access filters apply *inside* the graph search, before any top-k
cut (hnswlib and usearch were the alternatives: hnswlib has had no release since 2023 and
builds from source here; usearch filters through a Python callback per candidate).

How it fits the exact view (``view.ContextView``):

- The graph holds vectors under its own ids (insertion order). ``rows`` maps a graph id to
  the view row it was built from (-1 once that row is gone or rewritten: a stale vector is
  never returned). Rows written after the graph (appended, or rewritten) are *pending*:
  scored exactly next to the graph's candidates and folded into the graph (``add``) once
  they pile up, so writes never wait for the graph.
- A search passes the filter as a bitmap over graph ids; the graph's hits are rescored
  from the view's matrix and merged with the pending rows' exact scores.
- ``save``/``load`` persist the graph and the unit keys (``pks``) of its ids, so a restart
  reloads it instead of rebuilding; ids whose unit is gone are simply masked out.

A context uses the graph only past ``min_rows`` rows, and a search only when the filter
leaves more than ``exact_below`` rows visible: a selective filter (one entity's units, one
session) is answered exactly over the visible rows, which is both fast and exact.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

import numpy as np

M = 32  # graph degree
EF_CONSTRUCTION = 80
EF_SEARCH_MIN = 96
EF_SEARCH_MAX = 4096
# The beam's floor grows with the graph: one step per this many ids (bench/ann_latency.py,
# clustered 384-d, realistic filter: 100k ids reach recall@10 1.000 at a floor of 96, while
# 1M ids need about 1,000 for 0.994: 96 gave 0.836, 512 0.988, 2,048 no more than 1,024).
EF_ROWS_PER_STEP = 1000


def available() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


class AnnGraph:
    """One context's HNSW graph over unit vectors (faiss ``IndexHNSWFlat``, inner product)."""

    def __init__(self, dim: int, index=None, pks: np.ndarray | None = None, prints: np.ndarray | None = None):
        import faiss

        self._faiss = faiss
        if index is None:
            index = faiss.IndexHNSWFlat(dim, M, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = EF_CONSTRUCTION
        self.index = index
        self.pks = np.zeros(0, dtype=np.int64) if pks is None else pks.astype(np.int64)
        self.rows = np.full(self.pks.size, -1, dtype=np.int64)  # graph id -> view row (-1: none)
        # graph id -> ``fingerprints`` of its vector, so a reload finds rewritten units without
        # reading every vector back out of the graph (None: a graph saved without them)
        self.prints = prints

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    def add(self, vectors: np.ndarray, pks: np.ndarray, rows: np.ndarray) -> None:
        """Insert vectors (unit keys ``pks``, view rows ``rows``) as new graph ids."""
        if len(vectors) == 0:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if self.prints is not None or self.size == 0:
            before = self.prints if self.prints is not None else np.zeros(0, dtype=np.uint64)
            self.prints = np.concatenate([before, fingerprints(vectors, np.arange(len(vectors)))])
        self.index.add(vectors)
        self.pks = np.concatenate([self.pks, pks.astype(np.int64)])
        self.rows = np.concatenate([self.rows, rows.astype(np.int64)])

    def search(self, q: np.ndarray, visible_rows: np.ndarray, depth: int) -> np.ndarray:
        """View rows of the graph's best ``depth`` ids whose row is visible (a bool array over
        view rows), filtered inside the graph search."""
        live = self.rows >= 0
        ok = np.zeros(self.size, dtype=bool)
        ok[live] = visible_rows[self.rows[live]]
        if not ok.any():
            return np.zeros(0, dtype=np.int64)
        bitmap = np.packbits(ok, bitorder="little")
        selector = self._faiss.IDSelectorBitmap(self.size, self._faiss.swig_ptr(bitmap))
        # A walk that may only return a share s of the ids meets about s of its candidates as
        # results: widen the beam by 1/s (capped) so filtered recall holds (tests/search).
        share = float(np.count_nonzero(ok)) / self.size
        floor = max(EF_SEARCH_MIN, self.size // EF_ROWS_PER_STEP, 2 * depth)
        ef = min(EF_SEARCH_MAX, int(floor / max(share, 1e-3)))
        params = self._faiss.SearchParametersHNSW(sel=selector, efSearch=ef)
        _, ids = self.index.search(np.ascontiguousarray(q[None, :], dtype=np.float32), depth, params=params)
        ids = ids[0]
        ids = ids[ids >= 0]
        return self.rows[ids]

    def forget_rows(self, rows: Sequence[int]) -> None:
        """These view rows were rewritten or removed: their graph vectors are stale."""
        if len(rows) and self.rows.size:
            self.rows[np.isin(self.rows, np.asarray(rows, dtype=np.int64))] = -1

    def forget_changed(self, matrix: np.ndarray, prints: np.ndarray | None = None) -> None:
        """Forget graph ids whose stored vector is no longer their row's vector in ``matrix``
        (the unit was rewritten after the graph was saved); ``prints`` are the rows' vector
        fingerprints when the caller keeps them."""
        live = np.flatnonzero(self.rows >= 0)
        if live.size == 0:
            return
        if self.prints is not None:
            rows = self.rows[live]
            now = prints[rows] if prints is not None else fingerprints(matrix, rows)
            changed = now != self.prints[live]
            self.rows[live[changed]] = -1
            return
        stored = self.index.reconstruct_n(0, self.size)[live]
        changed = np.any(stored != matrix[self.rows[live]], axis=1)
        self.rows[live[changed]] = -1

    def renumber(self, new_row_of_old: np.ndarray) -> None:
        """After the view compacts: ``new_row_of_old[old] = new`` (-1 when dropped)."""
        live = self.rows >= 0
        self.rows[live] = new_row_of_old[self.rows[live]]

    def stale_share(self) -> float:
        return float(np.count_nonzero(self.rows < 0)) / max(1, self.size)

    def save(self, path: str) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        self._faiss.write_index(self.index, tmp)
        np.save(tmp + ".pks.npy", self.pks)
        if self.prints is not None:
            np.save(tmp + ".prints.npy", self.prints)
            os.replace(tmp + ".prints.npy", path + ".prints.npy")
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path + ".prints.npy")
        os.replace(tmp + ".pks.npy", path + ".pks.npy")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str, dim: int) -> AnnGraph | None:
        """The saved graph, or ``None`` when there is none (or it does not fit ``dim``)."""
        if not (os.path.exists(path) and os.path.exists(path + ".pks.npy")):
            return None
        import faiss

        index = faiss.read_index(path)
        pks = np.load(path + ".pks.npy")
        if index.d != dim or index.ntotal != pks.size:
            return None
        prints = None
        if os.path.exists(path + ".prints.npy"):
            prints = np.load(path + ".prints.npy")
            prints = prints if prints.shape == pks.shape and prints.dtype == np.uint64 else None
        return cls(dim, index, pks, prints)


def fingerprints(matrix: np.ndarray, rows: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """A 64-bit fingerprint of each of ``matrix[rows]``: the vector's bits as integers times
    fixed odd multipliers, summed with wrap-around. Exact integer arithmetic, so the same
    vector always gives the same value (a float checksum may not: summation order varies)."""
    dim = matrix.shape[1]
    mult = np.random.default_rng(dim).integers(1, 2**32, size=dim, dtype=np.uint64) | np.uint64(1)
    mult32 = mult.astype(np.uint32)
    out = np.empty(rows.size, dtype=np.uint64)
    for start in range(0, rows.size, chunk):
        bits = np.ascontiguousarray(matrix[rows[start:start + chunk]], dtype=np.float32).view(np.uint32)
        with np.errstate(over="ignore"):
            out[start:start + chunk] = (bits * mult32).sum(axis=1, dtype=np.uint64)
    return out

"""In-memory BM25 for the embedded index's small contexts.

At LoCoMo size (hundreds of units) most of a search's time went to FTS5 ranking every
match of the query and to SQLite round trips. A context view below ``MAX_ROWS`` units
keeps its postings in memory instead (term -> row -> term frequency, and row lengths), so
the BM25 leg is a few numpy operations per query term over the rows that contain it.

Tokens are FTS5's own (``Tokenizer`` runs the index's tokenizer on a scratch FTS5 table), so
the in-memory leg matches exactly the words the FTS5 leg would match. The formula is FTS5's
``bm25()`` (k1 = 1.2, b = 0.75, IDF ``log((N - n + 0.5) / (n + 0.5))`` floored at 1e-6,
summed over the query's terms). One deliberate difference: ``N``, ``n`` and the average
length are the context's own, not the whole file's, so one tenant's text never moves
another tenant's ranking. Scores are returned negated, like FTS5's ``rank`` (lower is better).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence

import numpy as np

MAX_ROWS = 20_000  # above this a context ranks with FTS5 (postings would cost too much memory)
K1, B = 1.2, 0.75


class Tokenizer:
    """FTS5's tokenizer, run on a private in-memory scratch table.

    The scratch table is contentless, so ``delete-all`` empties its index outright. (A
    content table emptied with ``DELETE`` keeps its deleted postings as tombstones in
    segments until a merge: after one bulk call (a context's lazy load tokenizes every
    row) each later call scanned them, about 9 ms per query instead of 0.3 ms.) It has its
    own connection, so it never touches the index's transactions; callers serialise.
    """

    def __init__(self, tokenize_spec: str):
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._db.execute(f"CREATE VIRTUAL TABLE scratch USING fts5(text, content='', tokenize='{tokenize_spec}')")
        self._db.execute("CREATE VIRTUAL TABLE scratch_instances USING fts5vocab(scratch, 'instance')")

    def tokenize(self, texts: Sequence[str]) -> list[tuple[dict[str, int], int]]:
        """``(term -> count, token count)`` of each text."""
        out: list[dict[str, int]] = [{} for _ in texts]
        lengths = [0] * len(texts)
        if not texts:
            return []
        db = self._db
        db.executemany("INSERT INTO scratch (rowid, text) VALUES (?, ?)", list(enumerate(texts)))
        try:
            for term, doc in db.execute("SELECT term, doc FROM scratch_instances"):
                counts = out[doc]
                counts[term] = counts.get(term, 0) + 1
                lengths[doc] += 1
        finally:
            db.execute("INSERT INTO scratch (scratch) VALUES ('delete-all')")
        return list(zip(out, lengths, strict=True))

    def close(self) -> None:
        self._db.close()


class TermIndex:
    """Postings of one context view's rows (row numbers are the view's).

    Postings come in two parts. The *base* is what a persisted view loaded
    (``view_snapshots``): compressed-row arrays (per term, a slice of rows and term
    frequencies) that load without building a Python object per posting; a base row that is
    removed or rewritten is masked out, never edited. Rows set since (and every row of a view
    built from SQLite) are dictionaries, cheap to change one row at a time. ``state`` merges
    both into the base form for the next snapshot.
    """

    def __init__(self) -> None:
        self.postings: dict[str, dict[int, int]] = {}
        self.row_terms: dict[int, dict[str, int]] = {}
        self.length = np.zeros(64, dtype=np.float64)
        self.total_length = 0
        self.rows = 0  # rows indexed, base and set
        self._base_terms: dict[str, tuple[int, int]] = {}  # term -> its slice of the base arrays
        self._base_rows = np.zeros(0, dtype=np.int64)
        self._base_tf = np.zeros(0, dtype=np.float64)
        self._base_live = np.zeros(0, dtype=bool)  # by row: indexed by the base and not removed since
        # term -> (rows, term frequencies) as arrays, built when a query first needs them and
        # dropped whenever a row with that term is set or removed
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return self.rows

    def set(self, row: int, counts: dict[str, int], length: int) -> None:
        self.remove(row)
        if row >= self.length.size:
            grown = np.zeros(max(row + 1, 2 * self.length.size), dtype=np.float64)
            grown[: self.length.size] = self.length
            self.length = grown
        self.row_terms[row] = counts
        self.length[row] = length
        self.total_length += length
        self.rows += 1
        arrays = self._arrays
        for term, tf in counts.items():
            self.postings.setdefault(term, {})[row] = tf
            arrays.pop(term, None)

    def remove(self, row: int) -> None:
        if row < self._base_live.size and self._base_live[row]:
            self._base_live[row] = False
            self._arrays.clear()  # the row may be in any cached term's arrays
        else:
            counts = self.row_terms.pop(row, None)
            if counts is None:
                return
            for term in counts:
                self._arrays.pop(term, None)
                post = self.postings.get(term)
                if post is not None:
                    post.pop(row, None)
                    if not post:
                        del self.postings[term]
        self.total_length -= int(self.length[row])
        self.length[row] = 0
        self.rows -= 1

    def counts(self, row: int) -> dict[str, int]:
        """The term counts of ``row`` (slow for a base row: for checks, not queries)."""
        if row in self.row_terms:
            return self.row_terms[row]
        if row >= self._base_live.size or not self._base_live[row]:
            return {}
        out = {}
        for term, (start, end) in self._base_terms.items():
            hit = np.flatnonzero(self._base_rows[start:end] == row)
            if hit.size:
                out[term] = int(self._base_tf[start + hit[0]])
        return out

    def _term_arrays(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        arrays = self._arrays.get(term)
        if arrays is not None:
            return arrays
        rows, tf = [], []
        span = self._base_terms.get(term)
        if span is not None:
            base_rows = self._base_rows[span[0]:span[1]]
            keep = self._base_live[base_rows]
            rows.append(base_rows[keep])
            tf.append(self._base_tf[span[0]:span[1]][keep])
        post = self.postings.get(term)
        if post:
            rows.append(np.fromiter(post.keys(), dtype=np.int64, count=len(post)))
            tf.append(np.fromiter(post.values(), dtype=np.float64, count=len(post)))
        arrays = self._arrays[term] = ((np.concatenate(rows), np.concatenate(tf)) if rows
                                       else (np.zeros(0, dtype=np.int64), np.zeros(0)))
        return arrays

    def state(self) -> tuple[dict[str, object], dict[str, np.ndarray]]:
        """``(objects, arrays)`` that ``restored`` takes: every posting in the base form."""
        terms = sorted(self._base_terms.keys() | self.postings.keys())
        rows: list[np.ndarray] = []
        tf: list[np.ndarray] = []
        offsets = np.zeros(len(terms) + 1, dtype=np.int64)
        for i, term in enumerate(terms):
            term_rows, term_tf = self._term_arrays(term)
            rows.append(term_rows)
            tf.append(term_tf)
            offsets[i + 1] = offsets[i] + term_rows.size
        indexed = np.zeros(self.length.size, dtype=bool)
        indexed[: self._base_live.size] = self._base_live
        indexed[np.fromiter(self.row_terms.keys(), dtype=np.int64, count=len(self.row_terms))] = True
        arrays = {"t_rows": np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64),
                  "t_tf": np.concatenate(tf) if tf else np.zeros(0), "t_offsets": offsets,
                  "t_length": self.length, "t_indexed": indexed}
        return {"terms": terms, "total_length": self.total_length}, arrays

    @classmethod
    def restored(cls, objects: dict[str, object], arrays: dict[str, np.ndarray]) -> TermIndex:
        fresh = cls()
        terms = objects["terms"]
        offsets = arrays["t_offsets"].tolist()
        fresh._base_terms = dict(zip(terms, zip(offsets[:-1], offsets[1:], strict=True), strict=True))  # type: ignore[arg-type]
        fresh._base_rows, fresh._base_tf = arrays["t_rows"], arrays["t_tf"]
        fresh._base_live = arrays["t_indexed"].copy()
        fresh.length = arrays["t_length"]
        fresh.total_length = int(objects["total_length"])  # type: ignore[call-overload]
        fresh.rows = int(np.count_nonzero(fresh._base_live))
        return fresh

    def renumber(self, new_row_of_old: dict[int, int]) -> TermIndex:
        """The same postings under new row numbers (after the view compacts; the base is
        turned into per-row dictionaries here, as compaction is rare)."""
        fresh = TermIndex()
        every: dict[int, dict[str, int]] = {int(r): {} for r in np.flatnonzero(self._base_live)}
        for term, (start, end) in self._base_terms.items():
            for r, tf in zip(self._base_rows[start:end].tolist(), self._base_tf[start:end].tolist(), strict=True):
                counts = every.get(r)
                if counts is not None:
                    counts[term] = int(tf)
        every.update(self.row_terms)
        for old, counts in every.items():
            new = new_row_of_old.get(old)
            if new is not None:
                fresh.set(new, counts, int(self.length[old]))
        return fresh

    def scores(self, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, negated bm25)`` of every row matching any of ``terms`` (a term listed
        twice counts twice, as two phrases do in FTS5)."""
        n = self.rows
        if n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        # FTS5 measures a row's length over all its columns: the text plus its context token.
        average = self.total_length / n + 1.0
        # Dense over the view's rows: a term's rows are distinct, so each term adds with one
        # fancy ``+=`` (per row, terms add in query order, as FTS5 sums them).
        summed = np.zeros(self.length.size)
        hit = np.zeros(self.length.size, dtype=bool)
        for term in terms:
            rows, tf = self._term_arrays(term)
            df = rows.size
            if not df:
                continue
            idf = math.log((n - df + 0.5) / (df + 0.5))
            idf = idf if idf > 0 else 1e-6
            norm = K1 * (1 - B + B * (self.length[rows] + 1.0) / average)
            summed[rows] += idf * tf * (K1 + 1) / (tf + norm)
            hit[rows] = True
        matched = np.flatnonzero(hit)
        return matched, -summed[matched]


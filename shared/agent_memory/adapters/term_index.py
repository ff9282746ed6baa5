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
    """Postings of one context view's rows (row numbers are the view's)."""

    def __init__(self) -> None:
        self.postings: dict[str, dict[int, int]] = {}
        self.row_terms: dict[int, dict[str, int]] = {}
        self.length = np.zeros(64, dtype=np.float64)
        self.total_length = 0
        # term -> (rows, term frequencies) as arrays, built when a query first needs them and
        # dropped whenever a row with that term is set or removed
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.row_terms)

    def set(self, row: int, counts: dict[str, int], length: int) -> None:
        self.remove(row)
        if row >= self.length.size:
            grown = np.zeros(max(row + 1, 2 * self.length.size), dtype=np.float64)
            grown[: self.length.size] = self.length
            self.length = grown
        self.row_terms[row] = counts
        self.length[row] = length
        self.total_length += length
        arrays = self._arrays
        for term, tf in counts.items():
            self.postings.setdefault(term, {})[row] = tf
            arrays.pop(term, None)

    def remove(self, row: int) -> None:
        counts = self.row_terms.pop(row, None)
        if counts is None:
            return
        self.total_length -= int(self.length[row])
        self.length[row] = 0
        for term in counts:
            self._arrays.pop(term, None)
            post = self.postings.get(term)
            if post is not None:
                post.pop(row, None)
                if not post:
                    del self.postings[term]

    def state(self) -> tuple[tuple[dict[str, dict[int, int]], dict[int, dict[str, int]], int], np.ndarray]:
        """What ``restored`` needs, as built (``adapters.view_snapshots`` persists it)."""
        return (self.postings, self.row_terms, self.total_length), self.length

    @classmethod
    def restored(cls, objects: tuple[dict[str, dict[int, int]], dict[int, dict[str, int]], int],
                 length: np.ndarray) -> TermIndex:
        fresh = cls()
        fresh.postings, fresh.row_terms, fresh.total_length = objects
        fresh.length = length
        return fresh

    def renumber(self, new_row_of_old: dict[int, int]) -> TermIndex:
        """The same postings under new row numbers (after the view compacts)."""
        fresh = TermIndex()
        for old, counts in self.row_terms.items():
            new = new_row_of_old.get(old)
            if new is not None:
                fresh.set(new, counts, int(self.length[old]))
        return fresh

    def scores(self, terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, negated bm25)`` of every row matching any of ``terms`` (a term listed
        twice counts twice, as two phrases do in FTS5)."""
        n = len(self.row_terms)
        if n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        # FTS5 measures a row's length over all its columns: the text plus its context token.
        average = self.total_length / n + 1.0
        # Dense over the view's rows: a term's rows are distinct, so each term adds with one
        # fancy ``+=`` (per row, terms add in query order, as FTS5 sums them).
        summed = np.zeros(self.length.size)
        hit = np.zeros(self.length.size, dtype=bool)
        for term in terms:
            post = self.postings.get(term)
            if not post:
                continue
            df = len(post)
            idf = math.log((n - df + 0.5) / (df + 0.5))
            idf = idf if idf > 0 else 1e-6
            arrays = self._arrays.get(term)
            if arrays is None:
                arrays = self._arrays[term] = (np.fromiter(post.keys(), dtype=np.int64, count=df),
                                               np.fromiter(post.values(), dtype=np.float64, count=df))
            rows, tf = arrays
            norm = K1 * (1 - B + B * (self.length[rows] + 1.0) / average)
            summed[rows] += idf * tf * (K1 + 1) / (tf + norm)
            hit[rows] = True
        matched = np.flatnonzero(hit)
        return matched, -summed[matched]

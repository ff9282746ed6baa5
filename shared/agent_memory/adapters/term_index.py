"""In-memory BM25 for the embedded index's small contexts.

At LoCoMo size (hundreds of units) most of a search's time went to FTS5 ranking every
match of the query and to SQLite round trips. A context view below ``MAX_ROWS`` units
keeps its postings in memory instead (term -> row -> term frequency, and row lengths), so
the BM25 leg is a few numpy operations per query term over the rows that contain it.

Tokens are FTS5's own (``tokenize`` runs the index's tokenizer on a scratch FTS5 table), so
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


def tokenize(db: sqlite3.Connection, texts: Sequence[str]) -> list[tuple[dict[str, int], int]]:
    """``(term -> count, token count)`` of each text, with the index's tokenizer (uses the
    connection's ``temp.query_tokens`` scratch table; the caller holds the index lock)."""
    out: list[tuple[dict[str, int], int]] = [({}, 0) for _ in texts]
    if not texts:
        return out
    db.execute("DELETE FROM temp.query_tokens")
    db.executemany("INSERT INTO temp.query_tokens (rowid, text) VALUES (?, ?)",
                   [(i, t) for i, t in enumerate(texts, start=1)])
    lengths = [0] * len(texts)
    for term, doc in db.execute("SELECT term, doc FROM temp.query_token_instances"):
        counts = out[int(doc) - 1][0]
        counts[term] = counts.get(term, 0) + 1
        lengths[int(doc) - 1] += 1
    db.execute("DELETE FROM temp.query_tokens")
    return [(counts, length) for (counts, _), length in zip(out, lengths, strict=True)]


class TermIndex:
    """Postings of one context view's rows (row numbers are the view's)."""

    def __init__(self) -> None:
        self.postings: dict[str, dict[int, int]] = {}
        self.row_terms: dict[int, dict[str, int]] = {}
        self.length = np.zeros(64, dtype=np.float64)
        self.total_length = 0

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
        for term, tf in counts.items():
            self.postings.setdefault(term, {})[row] = tf

    def remove(self, row: int) -> None:
        counts = self.row_terms.pop(row, None)
        if counts is None:
            return
        self.total_length -= int(self.length[row])
        self.length[row] = 0
        for term in counts:
            post = self.postings.get(term)
            if post is not None:
                post.pop(row, None)
                if not post:
                    del self.postings[term]

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
        parts_rows, parts_scores = [], []
        for term in terms:
            post = self.postings.get(term)
            if not post:
                continue
            df = len(post)
            idf = math.log((n - df + 0.5) / (df + 0.5))
            idf = idf if idf > 0 else 1e-6
            rows = np.fromiter(post.keys(), dtype=np.int64, count=df)
            tf = np.fromiter(post.values(), dtype=np.float64, count=df)
            norm = K1 * (1 - B + B * (self.length[rows] + 1.0) / average)
            parts_rows.append(rows)
            parts_scores.append(idf * tf * (K1 + 1) / (tf + norm))
        if not parts_rows:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        rows = np.concatenate(parts_rows)
        scores = np.concatenate(parts_scores)
        unique, inverse = np.unique(rows, return_inverse=True)
        summed = np.zeros(unique.size)
        np.add.at(summed, inverse, scores)
        return unique, -summed

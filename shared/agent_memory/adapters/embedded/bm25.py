"""The embedded index's BM25 leg: FTS5's ``bm25()`` over the rows of the caller's context, or
in-memory postings while a context is small (``term_index``), masked before the cut.

Because ``bm25()`` costs about a microsecond per matching row, very common query words are
held out of the ranked query past a budget (``BM25_MATCH_BUDGET``) and only used to fill the
tail, from document frequencies cached across queries.
"""

from __future__ import annotations

import sqlite3

import numpy as np

from agent_memory.adapters.embedded.fts import context_token, fts_match_expression, query_terms
from agent_memory.adapters.embedded.sql import SQL_IN_CHUNK, chunks, qmarks
from agent_memory.adapters.embedded.term_index import TermIndex, Tokenizer
from agent_memory.adapters.embedded.view import ContextView, RankedRows, no_rows, ranked_rows

# Most rows the BM25 leg lets FTS5 score per query. FTS5's bm25() costs about 1 us per matching
# row, so a query made of very common words would cost ~100 ms at 100k units. When the query's
# terms together match more rows than this, the most frequent terms (lowest IDF, least
# influence on the ranking) are left out of the BM25 leg, always keeping the rarest one.
# Below the budget the leg is exact.
BM25_MATCH_BUDGET = 20_000


class Bm25Leg:
    """Ranks rows of a view by BM25 over the index's connection (callers hold the index's
    lock); ``tokenizer`` is the index's, shared with its in-memory postings."""

    def __init__(self, db: sqlite3.Connection, tokenizer: Tokenizer) -> None:
        self._db = db
        self._tokenizer = tokenizer
        self._df_cache: dict[str, int] = {}  # query word -> document frequency (budget only)
        self._df_absent: set[str] = set()  # query words in no unit, until the next upsert
        self._word_terms: dict[str, tuple[str, ...]] = {}  # query word -> its index term(s)
        self._df_rows: int | None = None  # index size when the cache was started
        self.writes_since_df = 0

    def written(self, rows: int) -> None:
        """``rows`` units were upserted: words absent so far may match now."""
        self.writes_since_df += rows
        self._df_absent.clear()

    def deleted(self, rows: int) -> None:
        self.writes_since_df += rows

    def top(self, view: ContextView, query: str, m: np.ndarray, depth: int) -> RankedRows:
        """Best ``depth`` visible rows by BM25 and their raw bm25 (lower is better), filtered
        before the cut.

        The ranked query uses the budgeted terms (``_budgeted_terms``). If it yields fewer
        than ``depth`` visible rows while terms were left out, visible rows that match only
        the left-out terms are appended after it (``_scan_visible``), so the leg still returns
        ``depth`` visible rows whenever that many match the query at all.
        """
        live = view.n - view.dead
        words = query_terms(query)
        if view.terms is not None:
            terms = self._query_index_terms(words)
            if terms is not None:
                return top_in_memory(view.terms, terms, m, depth)
        kept, matchable = self._budgeted_terms(words, live)
        token = context_token(view.context_id)
        match = fts_match_expression(kept, token)
        if match is None:
            return no_rows()
        out = self._ranked_visible(view, match, m, depth, live)
        if len(out) < depth and len(kept) < len(matchable):
            full = fts_match_expression(matchable, token)
            assert full is not None
            out += self._scan_visible(view, full, m, depth - len(out), {r for r, _ in out})
        return ranked_rows(out)

    def _ranked_visible(self, view: ContextView, match: str, m: np.ndarray, depth: int,
                        live: int) -> list[tuple[int, float]]:
        """Exact top ``depth`` visible rows of ``match`` in BM25 order.

        When the filter leaves enough rows visible, a page of FTS5 results in rank order is
        checked against the mask row by row; if the page runs out before ``depth`` visible rows
        are found (the best matches are invisible), or the filter is too selective for a page
        to be worth trying, every match is scored and masked at once.
        """
        row_of_pk = view.row_of_pk
        page = max(200, 4 * depth)
        visible_share = float(np.count_nonzero(m)) / max(1, live)
        if visible_share * page >= 2 * depth:
            rows = self._db.execute(
                "SELECT rowid, rank FROM units_fts WHERE units_fts MATCH ? ORDER BY rank LIMIT ?", (match, page)
            ).fetchall()
            out: list[tuple[int, float]] = []
            for pk, score in rows:
                r = row_of_pk.get(pk)
                if r is not None and m[r]:
                    out.append((r, score))
                    if len(out) == depth:
                        return out
            if len(rows) < page:
                return out  # every match was seen
        allrows = self._db.execute("SELECT rowid, rank FROM units_fts WHERE units_fts MATCH ?", (match,)).fetchall()
        idx = np.fromiter((row_of_pk.get(pk, -1) for pk, _ in allrows), dtype=np.int64, count=len(allrows))
        raw = np.fromiter((s for _, s in allrows), dtype=np.float64, count=len(allrows))
        ok = idx >= 0
        ok[ok] = m[idx[ok]]
        idx, raw = idx[ok], raw[ok]
        if idx.size > depth:
            part = np.argpartition(raw, depth - 1)[:depth]
            idx, raw = idx[part], raw[part]
        order = np.lexsort((idx, raw))
        return [(int(idx[i]), float(raw[i])) for i in order]

    def _scan_visible(self, view: ContextView, match: str, m: np.ndarray, need: int,
                      taken: set[int]) -> list[tuple[int, float]]:
        """Up to ``need`` visible rows of ``match`` not in ``taken``, best BM25 first, from an
        unsorted scan that stops after ``4 * need`` visible candidates: it only fills the tail
        after the ranked rows, so it trades exact order within that tail for bounded cost."""
        row_of_pk = view.row_of_pk
        found: list[tuple[int, float]] = []
        cur = self._db.execute("SELECT rowid, rank FROM units_fts WHERE units_fts MATCH ?", (match,))
        try:
            while len(found) < 4 * need:
                batch = cur.fetchmany(512)
                if not batch:
                    break
                for pk, score in batch:
                    r = row_of_pk.get(pk)
                    if r is not None and m[r] and r not in taken:
                        found.append((r, score))
        finally:
            cur.close()
        found.sort(key=lambda rs: (rs[1], rs[0]))
        return found[:need]

    def _budgeted_terms(self, words: list[str], context_rows: int) -> tuple[list[str], list[str]]:
        """``words`` that can match, rarest first, dropping the most frequent ones once their
        estimated matches in the context pass ``BM25_MATCH_BUDGET`` (see its comment), and
        words in over half of the index (no BM25 weight at all); the rarest word always stays.

        Document frequencies are index-wide; the context's share of them is estimated as
        proportional to its share of the index. Returns ``(kept, matchable)``: the budgeted
        words, and every word that occurs in the index at all."""
        if not words:
            return [], []
        df = self._doc_frequencies(words)
        rows = max(1, self._df_rows or context_rows)
        share = min(1.0, context_rows / rows)
        ranked = sorted((w for w in words if df[w] > 0), key=lambda w: df[w])
        kept: list[str] = []
        total = 0.0
        for w in ranked:
            # FTS5 floors the IDF of a term in over half the rows at 1e-6: such a term adds
            # nothing to any score, only cost, so it is dropped exactly like an over-budget one.
            if kept and (total + df[w] * share > BM25_MATCH_BUDGET or 2 * df[w] > rows):
                break
            kept.append(w)
            total += df[w] * share
        return kept, ranked

    def _doc_frequencies(self, words: list[str]) -> dict[str, int]:
        """Document frequency of each word's index term(s), from a cache refreshed after about
        10% of the index has been rewritten (it only steers the budget, never a score; a stale
        count can only move a word between the ranked query and the fill scan). A word that
        tokenizes to several terms is a phrase; the rarest term bounds its frequency."""
        if self._df_rows is None or self.writes_since_df > max(2000, self._df_rows // 10):
            self._df_cache = {}
            self._df_rows = int(self._db.execute("SELECT count(*) FROM units").fetchone()[0])
            self.writes_since_df = 0
        missing = [w for w in words if w not in self._df_cache and w not in self._df_absent]
        if missing:
            self._db.execute("DELETE FROM temp.query_tokens")
            self._db.executemany("INSERT INTO temp.query_tokens (rowid, text) VALUES (?, ?)",
                                 list(enumerate(missing, start=1)))
            terms: dict[int, set[str]] = {}
            for term, doc in self._db.execute("SELECT term, doc FROM temp.query_token_instances"):
                terms.setdefault(int(doc), set()).add(term)
            every = sorted({t for ts in terms.values() for t in ts})
            freq: dict[str, int] = {}
            for chunk in chunks(every, SQL_IN_CHUNK):
                sql = f"SELECT term, doc FROM temp.units_vocab WHERE term IN ({qmarks(chunk)})"
                freq.update((t, int(d)) for t, d in self._db.execute(sql, tuple(chunk)))
            fresh = {w: min((freq.get(t, 0) for t in terms.get(i, ())), default=0)
                     for i, w in enumerate(missing, start=1)}
            self._df_cache.update((w, d) for w, d in fresh.items() if d > 0)
            # a word absent now may be written a moment later: every upsert forgets these
            self._df_absent.update(w for w, d in fresh.items() if d == 0)
        return {w: self._df_cache.get(w, 0) for w in words}

    def _query_index_terms(self, words: list[str]) -> list[str] | None:
        """The index term of each query word (words with none dropped); ``None`` when a word
        is several terms (FTS5 matches it as a phrase, which the in-memory leg does not do)."""
        missing = [w for w in words if w not in self._word_terms]
        if missing:
            if len(self._word_terms) > 50_000:
                self._word_terms.clear()
            for w, (counts, _) in zip(missing, self._tokenizer.tokenize(missing), strict=True):
                self._word_terms[w] = tuple(counts)
        out: list[str] = []
        for w in words:
            terms = self._word_terms[w]
            if len(terms) > 1:
                return None
            out += terms
        return out


def top_in_memory(terms_index: TermIndex, terms: list[str], m: np.ndarray, depth: int) -> RankedRows:
    """Best ``depth`` visible rows by in-memory BM25 and their negated scores, best first
    (ties by row), filtered before the cut: the FTS5 leg's contract."""
    rows, raw = terms_index.scores(terms)
    if rows.size == 0:
        return no_rows()
    ok = m[rows]
    rows, raw = rows[ok], raw[ok]
    if rows.size > depth:
        part = np.argpartition(raw, depth - 1)[:depth]
        rows, raw = rows[part], raw[part]
    order = np.lexsort((rows, raw))
    return rows[order].astype(np.int64, copy=False), raw[order].astype(np.float64, copy=False)

"""Embedded search index: SQLite (FTS5 for BM25) + one in-memory float32 matrix per context.

Why this shape: the single-machine mode needs BM25 and vector legs with the same semantics as
the OpenSearch projection (ranked and fused by ``agent_memory.ranking``), persistent across restarts, without a server. SQLite holds the truth
(``units`` rows, an external-content FTS5 table kept in sync by triggers, and ``vectors``
blobs); searches run against a per-context in-memory view that is loaded lazily on the first
search of a context (from its persisted snapshot when it has one, ``adapters/view_snapshots.py``,
else rebuilt from the rows) and kept in sync by every upsert/delete:

- one ``(rows, dimension)`` float32 matrix, so the vector leg is one matrix-vector product;
- per-row code arrays (kind, partition, role, session, thread), validity bounds as epoch
  floats, and small-integer "signatures" for scopes / reader lists / labels, so every filter
  is a vectorised boolean mask computed *before* any top-k cut. Visibility of a signature
  (a distinct DNF, reader list or label set) is evaluated once per query per distinct value,
  not once per row.

The BM25 leg asks FTS5 (``bm25()`` ranking, porter/unicode61 tokens, the query turned into
an OR of quoted words so no user text is parsed as FTS syntax) for results in rank order and
applies the same mask to each candidate; when a page of candidates does not yield enough
visible rows it scores every match, so a query whose best matches are all invisible still
returns ``k`` visible hits. Each row also carries a per-context token column (weight 0 in the
ranking) that the query ANDs in, so FTS5 only scores rows of the caller's context. Because
``bm25()`` costs about a microsecond per matching row, very common query words are held out
of the ranked query past a budget (``BM25_MATCH_BUDGET``) and only used to fill the tail.

Thread safety: one connection (WAL) and one re-entrant lock around every read and write of
SQLite and of the in-memory views; embedding calls run outside the lock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import math
import os
import re
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from agent_memory.access import scopes as scope_rules
from agent_memory.adapters import ann, view_snapshots
from agent_memory.adapters.ann import AnnGraph
from agent_memory.adapters.search_units import embed_all, unit_from_dict, unit_to_dict
from agent_memory.adapters.term_index import MAX_ROWS as TERM_INDEX_MAX_ROWS
from agent_memory.adapters.term_index import TermIndex, Tokenizer
from agent_memory.kernel import timeutil
from agent_memory.kernel.cjk import cjk_bigrams
from agent_memory.lexicon import SEARCH_STOP_WORDS
from agent_memory.ports import (
    NO_SEQ,
    Embedder,
    EmbedderMismatch,
    RowLeg,
    RowRanking,
    SearchFilter,
    SearchHit,
    SearchMode,
    SearchUnit,
)
from agent_memory.ranking.encoding import features as ranking_features
from agent_memory.ranking.encoding import saturate, unit_features
from agent_memory.ranking.rows import ranking_from_units

_SQL_IN_CHUNK = 500
# Words that carry no retrieval signal; dropped from the BM25 query (when other words remain)
# because OR-ing them in makes FTS5 score nearly every row of a large index.
_STOPWORDS = SEARCH_STOP_WORDS
_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_QUERY_TERMS = 32
_TOKENIZE = "porter unicode61 remove_diacritics 2"
# Most rows the BM25 leg lets FTS5 score per query. FTS5's bm25() costs about 1 us per matching
# row, so a query made of very common words would cost ~100 ms at 100k units. When the query's
# terms together match more rows than this, the most frequent terms (lowest IDF, least
# influence on the ranking) are left out of the BM25 leg, always keeping the rarest one.
# Below the budget the leg is exact.
BM25_MATCH_BUDGET = 20_000
ANN_MIN_ROWS = 50_000  # contexts this large search vectors through the ANN graph (adapters/ann.py)
ANN_EXACT_BELOW = 20_000  # ... unless the filter leaves at most this many rows visible
ANN_FOLD_MIN = 1_000  # pending rows (written since the graph) folded into it past max(this, 5%)
ANN_REBUILD_STALE = 0.2  # share of stale graph ids that triggers a rebuild
UNIT_CACHE = 200_000  # decoded units kept per context view
# A context this large keeps its view on disk (adapters/view_snapshots.py): below it a
# rebuild from SQLite takes under about 60 ms, less than reading a snapshot is worth.
SNAPSHOT_MIN_ROWS = 1_000

log = logging.getLogger("agent_memory.embedded_search")


# ---------------------------------------------------------------------------
# Query text, FTS expressions and stored forms
# ---------------------------------------------------------------------------


def query_terms(query: str) -> list[str]:
    """Lower-cased word tokens of ``query`` (Chinese, Japanese and Korean runs as character
    bigrams, ``kernel.cjk``, as the index stores them), deduplicated in order, stopwords dropped
    when anything else remains, capped at 32 terms."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(cjk_bigrams(query.lower())):
        seen.setdefault(w, None)
    words = list(seen)
    content = [w for w in words if w not in _STOPWORDS]
    return (content or words)[:_MAX_QUERY_TERMS]


def fts_match_expression(terms: Sequence[str], ctx_token: str | None = None) -> str | None:
    """Turn query words into a safe FTS5 MATCH expression: an OR of double-quoted terms on
    the ``text`` column, ANDed with the context token when given.

    Quoting every term means no user input is ever parsed as FTS5 syntax (``NEAR``, ``-``,
    ``col:``, ``*``, parentheses); ``None`` when there are no terms. The context token makes
    FTS5 score only rows of the caller's context (doclist intersection is cheap; ``bm25()``
    per row is not), so other contexts in the same file cost next to nothing.
    """
    if not terms:
        return None
    words = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    if ctx_token is None:
        return words
    return f'ctx_token : "{ctx_token}" AND text : ({words})'


def context_token(context_id: str) -> str:
    """A single FTS token naming a context: ``ctx`` + 20 digits of a hash. Digits end the
    token so the porter stemmer leaves it alone; context ids themselves may hold any text."""
    digest = hashlib.blake2b(context_id.encode("utf-8"), digest_size=8).digest()
    return f"ctx{int.from_bytes(digest, 'big'):020d}"


def scopes_key(scopes: Sequence[Sequence[str]]) -> str:
    """Canonical JSON of a DNF (clauses sorted, paths sorted, duplicates removed)."""
    clauses = sorted({tuple(sorted(set(c))) for c in scopes})
    return json.dumps([list(c) for c in clauses], separators=(",", ":"))


def _epoch(value: str | None) -> float | None:
    return None if value is None else timeutil.parse(value).timestamp()


# ---------------------------------------------------------------------------
# In-memory per-context view
# ---------------------------------------------------------------------------


class _Codes:
    """String -> small int. ``None`` is -1; an unknown value looks up as -2 (matches nothing)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}

    def code(self, value: str | None) -> int:
        if value is None:
            return -1
        c = self.codes.get(value)
        if c is None:
            c = self.codes[value] = len(self.codes)
        return c

    def lookup(self, value: str | None) -> int:
        if value is None:
            return -1
        return self.codes.get(value, -2)

    def names(self) -> np.ndarray:
        """Object array: code -> value, where code -1 (the last entry) is ``None``."""
        cached = getattr(self, "_names", None)
        if cached is None or cached.size != len(self.codes) + 1:
            cached = np.empty(len(self.codes) + 1, dtype=object)
            cached[: len(self.codes)] = list(self.codes)
            self._names = cached
        return cached


class _Signatures:
    """Distinct values of a structured field (a DNF, a reader list, a label set) -> int code,
    with the parsed value kept once per distinct value and per-query verdict caching."""

    def __init__(self, parse: Callable[[str | None], Any]) -> None:
        self._parse = parse
        self.codes: dict[str | None, int] = {}
        self.values: list[Any] = []
        self._verdicts: dict[Any, np.ndarray] = {}

    def code(self, key: str | None) -> int:
        c = self.codes.get(key)
        if c is None:
            c = self.codes[key] = len(self.values)
            self.values.append(self._parse(key))
        return c

    def verdicts(self, cache_key: Any, predicate: Callable[[Any], bool]) -> np.ndarray:
        """Boolean array over signature codes; extended incrementally as new signatures appear."""
        cached = self._verdicts.get(cache_key)
        have = 0 if cached is None else len(cached)
        if have == len(self.values) and cached is not None:
            return cached
        extra = np.fromiter((predicate(v) for v in self.values[have:]), dtype=bool,
                            count=len(self.values) - have)
        arr = extra if cached is None else np.concatenate([cached, extra])
        if len(self._verdicts) > 256:  # bounded: regions/principal sets are few per context
            self._verdicts.clear()
        self._verdicts[cache_key] = arr
        return arr


def _code_in(column: np.ndarray, codes: _Codes, values: Iterable[str | None]) -> np.ndarray:
    """``column`` holds one of ``values`` (a code column; ``None`` values match nothing, as
    with ``np.isin`` over the looked-up codes): one table lookup instead of a set test."""
    wanted = np.zeros(len(codes.codes) + 2, dtype=bool)  # index = code + 2 (-2 unknown, -1 None)
    for value in values:
        if value is not None:
            code = codes.lookup(value)
            if code >= 0:
                wanted[code + 2] = True
    return wanted[column + 2]


def _parse_json(key: str | None) -> Any:
    return None if key is None else json.loads(key)


def _parse_labels(key: str | None) -> frozenset[str]:
    return frozenset(json.loads(key)) if key else frozenset()


@dataclasses.dataclass
class _Row:
    """The filterable columns of one unit, as stored in SQLite and mirrored in memory."""

    pk: int
    id: str
    kind: str
    partition: str
    role: str | None
    session_id: str | None
    thread_id: str | None
    valid_from: float | None
    valid_until: float | None
    scopes_key: str
    acl_key: str | None
    labels_key: str
    features: tuple[int, Any, str | None] | None = None  # (seq, key, occurred_at): ``unit_features``


# The same features cut out of stored payloads by SQLite when a view loads: one JSON array
# per row (JSON values, so ``json.loads`` gives them the types the decoded unit would have).
_FEATURE_COLUMNS = "pk, json_extract(payload, '$.metadata.seq', '$.metadata.key', '$.occurred_at')"


class _ContextView:
    """Vectors and filter columns of one context, row-aligned, with spare capacity so appends
    are amortised O(1); deleted rows are tombstoned and compacted when they pile up."""

    def __init__(self, context_id: str, dim: int, capacity: int = 64) -> None:
        self.context_id = context_id
        self.dim = dim
        self.n = 0
        self.dead = 0
        self.ids: list[str | None] = []
        self.row_of: dict[str, int] = {}
        self.row_of_pk: dict[int, int] = {}
        self.kind_codes, self.part_codes, self.role_codes = _Codes(), _Codes(), _Codes()
        self.session_codes, self.thread_codes = _Codes(), _Codes()
        self.scope_sigs = _Signatures(_parse_json)
        self.acl_sigs = _Signatures(_parse_json)
        self.label_sigs = _Signatures(_parse_labels)
        # Decoded units by id, filled on first return (or by the upsert that wrote them), so a
        # search decodes only what it returns for the first time. Callers never mutate units.
        self.units: dict[str, SearchUnit] = {}
        # In-memory BM25 postings while the context is small (term_index.MAX_ROWS); None above.
        self.terms: TermIndex | None = TermIndex()
        self.version = 0  # bumped by every change of rows (keys the shared-mask cache)
        # The approximate-nearest-neighbour graph of a large context (adapters/ann.py), and the
        # rows written since it was built (scored exactly until folded in).
        self.ann: AnnGraph | None = None
        self.pending: set[int] = set()
        self._base_mask: tuple[Any, np.ndarray] | None = None
        self.saved_version = -1  # ``version`` when last persisted (adapters/view_snapshots.py)
        self._alloc(capacity)

    def _alloc(self, cap: int) -> None:
        self.version += 1
        self.cap = cap
        self.matrix = np.zeros((cap, self.dim), dtype=np.float32)
        self.alive = np.zeros(cap, dtype=bool)
        self.pks = np.zeros(cap, dtype=np.int64)
        self.kind = np.full(cap, -1, dtype=np.int32)
        self.part = np.full(cap, -1, dtype=np.int32)
        self.role = np.full(cap, -1, dtype=np.int32)
        self.session = np.full(cap, -1, dtype=np.int32)
        self.thread = np.full(cap, -1, dtype=np.int32)
        self.vf = np.full(cap, -np.inf, dtype=np.float64)
        self.vu = np.full(cap, np.inf, dtype=np.float64)
        self.scope = np.zeros(cap, dtype=np.int32)
        self.acl = np.zeros(cap, dtype=np.int32)
        self.labels = np.zeros(cap, dtype=np.int32)
        # Ranking features that live in the payload (``rank_rows``), filled from a row's
        # decoded unit the first time it is a candidate, and forgotten when it is rewritten.
        self.f_known = np.zeros(cap, dtype=bool)
        self.f_seq = np.full(cap, NO_SEQ, dtype=np.int64)
        self.f_key = np.empty(cap, dtype=object)
        self.f_occurred = np.empty(cap, dtype=object)
        # ``ann.fingerprints`` of each row's vector: a reloaded graph finds rewritten rows by
        # comparing these with its own, never by reading the vectors (set with the vector)
        self.prints = np.zeros(cap, dtype=np.uint64)

    _ARRAYS = ("matrix", "alive", "pks", "kind", "part", "role", "session", "thread", "vf", "vu",
               "scope", "acl", "labels", "f_known", "f_seq", "f_key", "f_occurred", "prints")

    def _grow(self, need: int) -> None:
        if need <= self.cap:
            return
        cap = max(need, self.cap * 2)
        old = {name: getattr(self, name) for name in self._ARRAYS}
        self._alloc(cap)
        for name, arr in old.items():
            getattr(self, name)[: self.n] = arr[: self.n]

    def set_terms(self, rows: Sequence[_Row], tokens: Sequence[tuple[dict[str, int], int]] | None) -> None:
        """Postings of rows just written (``tokens`` as ``term_index.tokenize`` gives them);
        past ``term_index.MAX_ROWS`` rows the view stops keeping postings."""
        if self.terms is None:
            return
        if tokens is None or self.n - self.dead > TERM_INDEX_MAX_ROWS:
            self.terms = None
            return
        for r, (counts, length) in zip(rows, tokens, strict=True):
            self.terms.set(self.row_of[r.id], counts, length)

    def set_rows(self, rows: Sequence[_Row], vectors: np.ndarray) -> None:
        """Insert or overwrite rows (matched by unit id) with their vectors."""
        new = sum(1 for r in rows if r.id not in self.row_of)
        self.version += 1
        self._grow(self.n + new)
        prints = ann.fingerprints(vectors, np.arange(len(rows)))
        for r, vec, fp in zip(rows, vectors, prints, strict=True):
            i = self.row_of.get(r.id)
            if i is None:
                i = self.n
                self.n += 1
                self.ids.append(r.id)
                self.row_of[r.id] = i
            elif self.ann is not None:
                self.ann.forget_rows([i])  # its graph vector is the old one
            if self.ann is not None:
                self.pending.add(i)
            self.row_of_pk[r.pk] = i
            self.matrix[i] = vec
            self.prints[i] = fp
            self.alive[i] = True
            self.pks[i] = r.pk
            self.kind[i] = self.kind_codes.code(r.kind)
            self.part[i] = self.part_codes.code(r.partition)
            self.role[i] = self.role_codes.code(r.role)
            self.session[i] = self.session_codes.code(r.session_id)
            self.thread[i] = self.thread_codes.code(r.thread_id)
            self.vf[i] = -np.inf if r.valid_from is None else r.valid_from
            self.vu[i] = np.inf if r.valid_until is None else r.valid_until
            self.scope[i] = self.scope_sigs.code(r.scopes_key)
            self.acl[i] = self.acl_sigs.code(r.acl_key)
            self.labels[i] = self.label_sigs.code(r.labels_key)
            self.f_known[i] = r.features is not None
            if r.features is not None:
                self.f_seq[i], self.f_key[i], self.f_occurred[i] = r.features

    def load(self, rows: Sequence[tuple[Any, ...]], vectors: np.ndarray) -> None:
        """Fill an empty view from stored rows (``_Row`` field order), column at a time: the
        lazy load of a large context is one pass per column instead of per-row updates."""
        assert self.n == 0, "load() fills an empty view"
        n = len(rows)
        if n == 0:
            return
        self._alloc(max(64, n + n // 4))
        pk, ids, kind, part, role, sess, thr, vf, vu, scope, acl, labels = zip(*rows, strict=True)
        self.n = n
        self.ids = list(ids)
        self.row_of = {uid: i for i, uid in enumerate(ids)}
        self.row_of_pk = {int(p): i for i, p in enumerate(pk)}
        self.matrix[:n] = vectors
        self.prints[:n] = ann.fingerprints(vectors, np.arange(n))
        self.alive[:n] = True
        self.pks[:n] = pk
        for arr, codes, col in ((self.kind, self.kind_codes, kind), (self.part, self.part_codes, part),
                                (self.role, self.role_codes, role), (self.session, self.session_codes, sess),
                                (self.thread, self.thread_codes, thr)):
            arr[:n] = [codes.code(v) for v in col]
        self.vf[:n] = [-np.inf if v is None else v for v in vf]
        self.vu[:n] = [np.inf if v is None else v for v in vu]
        self.scope[:n] = [self.scope_sigs.code(v) for v in scope]
        self.acl[:n] = [self.acl_sigs.code(v) for v in acl]
        self.labels[:n] = [self.label_sigs.code(v) for v in labels]

    # Numeric columns a snapshot stores as arrays (``adapters.view_snapshots``); the object
    # columns (``f_key``, ``f_occurred``) go with the other objects, for known rows only.
    _SAVED = ("matrix", "alive", "pks", "kind", "part", "role", "session", "thread", "vf", "vu",
              "scope", "acl", "labels", "f_known", "f_seq", "prints")

    def snapshot(self) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, Any]]:
        """``(arrays, objects, meta)`` of the view as built (``adapters.view_snapshots``)."""
        n = self.n
        arrays = {name: getattr(self, name)[:n] for name in self._SAVED}
        known = np.flatnonzero(self.f_known[:n])
        terms, sizes = None, None
        if self.terms is not None:
            terms, term_arrays = self.terms.state()
            arrays.update(term_arrays)
            sizes = {"length": term_arrays["t_length"].size, "postings": term_arrays["t_rows"].size,
                     "terms": term_arrays["t_offsets"].size - 1}
        objects = {
            "ids": self.ids,
            "codes": [c.codes for c in (self.kind_codes, self.part_codes, self.role_codes, self.session_codes,
                                        self.thread_codes)],
            "signatures": [list(s.codes) for s in (self.scope_sigs, self.acl_sigs, self.label_sigs)],
            "features": (known.tolist(), self.f_key[known].tolist(), self.f_occurred[known].tolist()),
            "terms": terms,
        }
        meta = {"n": n, "dead": self.dead, "dim": self.dim, "terms": sizes}
        return arrays, objects, meta

    @classmethod
    def restore(cls, context_id: str, dim: int, meta: dict[str, Any],
                read: Callable[[dict[str, np.ndarray]], dict[str, Any]]) -> _ContextView:
        """A view from a snapshot: ``read`` fills the arrays it is given and returns the
        objects. No row is touched one at a time in Python but the few with known features."""
        n = int(meta["n"])
        view = cls(context_id, dim, capacity=max(64, n + n // 4))
        into = {name: getattr(view, name)[:n] for name in cls._SAVED}
        sizes = meta.get("terms")
        term_arrays: dict[str, np.ndarray] = {}
        if sizes is not None:
            length, postings = int(sizes["length"]), int(sizes["postings"])
            term_arrays = {"t_length": np.zeros(length), "t_indexed": np.zeros(length, dtype=bool),
                           "t_rows": np.zeros(postings, dtype=np.int64), "t_tf": np.zeros(postings),
                           "t_offsets": np.zeros(int(sizes["terms"]) + 1, dtype=np.int64)}
            into.update(term_arrays)
        objects = read(into)
        view.n, view.dead = n, int(meta["dead"])
        view.ids = objects["ids"]
        if len(view.ids) != n:
            raise ValueError("snapshot ids do not match its rows")
        for codes, table in zip((view.kind_codes, view.part_codes, view.role_codes, view.session_codes,
                                 view.thread_codes), objects["codes"], strict=True):
            codes.codes = table
        for sigs, keys in zip((view.scope_sigs, view.acl_sigs, view.label_sigs), objects["signatures"], strict=True):
            for key in keys:
                sigs.code(key)
        rows, keys, occurred = objects["features"]
        for r, key, when in zip(rows, keys, occurred, strict=True):  # known rows only (few when large)
            view.f_key[r], view.f_occurred[r] = key, when
        live = np.flatnonzero(view.alive[:n])
        if view.dead:
            ids = view.ids
            view.row_of = {ids[r]: r for r in live.tolist()}  # type: ignore[misc]
        else:
            view.row_of = dict(zip(view.ids, range(n), strict=True))  # type: ignore[arg-type]
        view.row_of_pk = dict(zip(view.pks[live].tolist(), live.tolist(), strict=True))
        view.terms = None if sizes is None else TermIndex.restored(objects["terms"], term_arrays)
        return view

    def remove(self, unit_ids: Iterable[str]) -> None:
        self.version += 1
        for uid in unit_ids:
            self.units.pop(uid, None)
            i = self.row_of.pop(uid, None)
            if i is None:
                continue
            if self.terms is not None:
                self.terms.remove(i)
            if self.ann is not None:
                self.ann.forget_rows([i])
                self.pending.discard(i)
            self.row_of_pk.pop(int(self.pks[i]), None)
            self.alive[i] = False
            self.ids[i] = None
            self.dead += 1
        if self.dead > max(1024, self.n // 4):
            self._compact()

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.n])
        old = {name: getattr(self, name)[keep] for name in self._ARRAYS}
        ids = [self.ids[i] for i in keep]
        self._alloc(max(64, len(keep) + len(keep) // 4))
        for name, arr in old.items():
            getattr(self, name)[: len(keep)] = arr
        self.n, self.dead, self.ids = len(keep), 0, ids
        if self.terms is not None:
            self.terms = self.terms.renumber({int(old): new for new, old in enumerate(keep)})
        if self.ann is not None:
            # graph rows are all alive (removed rows were forgotten), so all are in ``keep``
            new_row_of_old = np.full(int(keep.max(initial=-1)) + 1, -1, dtype=np.int64)
            new_row_of_old[keep] = np.arange(len(keep))
            self.ann.renumber(new_row_of_old)
            self.pending = {int(new_row_of_old[r]) for r in self.pending if r < new_row_of_old.size
                            and new_row_of_old[r] >= 0}
        self.row_of = {uid: i for i, uid in enumerate(ids) if uid is not None}
        self.row_of_pk = {int(pk): i for i, pk in enumerate(self.pks[: self.n])}

    def mask(self, flt: SearchFilter, now: float) -> np.ndarray:
        """Boolean mask over rows ``[0, n)`` of every filter condition (vectorised). The
        conditions one retrieval's legs share (all but validity, labels and exclusions) are
        kept for the view's current version, so its second and later legs reuse them."""
        n = self.n
        key = (self.version, flt.partition, None if flt.kinds is None else tuple(flt.kinds),
               None if flt.roles is None else tuple(flt.roles), flt.session_id, flt.thread_id,
               None if flt.read_region is None else tuple(sorted(set(flt.read_region))),
               flt.admin, frozenset(flt.principals))
        if self._base_mask is not None and self._base_mask[0] == key:
            m = self._base_mask[1].copy()
        else:
            m = self._base(flt)
            self._base_mask = (key, m.copy())
        if flt.as_of is not None:
            t = timeutil.parse(flt.as_of).timestamp()
            m &= (self.vf[:n] <= t) & (self.vu[:n] > t)
        elif flt.valid_window is None:
            m &= self.vu[:n] > now
        if flt.valid_window is not None:
            start, end = flt.valid_window
            if end is not None:
                m &= self.vf[:n] < timeutil.parse(end).timestamp()
            if start is not None:
                m &= self.vu[:n] > timeutil.parse(start).timestamp()
        if flt.lens:
            lens = tuple(tuple(c) for c in flt.lens)
            ok = self.scope_sigs.verdicts(("lens", lens, flt.lens_view),
                                          lambda d: scope_rules.lens_admits(d, lens, flt.lens_view))
            m &= ok[self.scope[:n]]
        if flt.any_labels is not None:
            some = frozenset(flt.any_labels)
            ok = self.label_sigs.verdicts(("any", some), lambda have: bool(some & have))
            m &= ok[self.labels[:n]]
        if flt.labels:
            need = frozenset(flt.labels)
            ok = self.label_sigs.verdicts(("labels", need), lambda have: need <= have)
            m &= ok[self.labels[:n]]
        for uid in flt.exclude_ids:
            i = self.row_of.get(uid)
            if i is not None:
                m[i] = False
        return m

    def _base(self, flt: SearchFilter) -> np.ndarray:
        n = self.n
        m = self.alive[:n].copy()
        m &= self.part[:n] == self.part_codes.lookup(flt.partition)
        if flt.kinds is not None:
            m &= _code_in(self.kind[:n], self.kind_codes, flt.kinds)
        if flt.roles is not None:
            m &= _code_in(self.role[:n], self.role_codes, flt.roles)
        if flt.session_id is not None:
            m &= self.session[:n] == self.session_codes.lookup(flt.session_id)
        if flt.thread_id is not None:
            m &= self.thread[:n] == self.thread_codes.lookup(flt.thread_id)
        if flt.read_region is not None:
            region = tuple(sorted(set(flt.read_region)))
            ok = self.scope_sigs.verdicts(("region", region), lambda d: scope_rules.visible(d, region))
            m &= ok[self.scope[:n]]
        if not flt.admin:
            principals = frozenset(flt.principals)
            ok = self.acl_sigs.verdicts(
                ("readers", principals),
                lambda readers: readers is None or bool(principals.intersection(readers)),
            )
            m &= ok[self.acl[:n]]
        return m

    def top_vector(self, q: np.ndarray, m: np.ndarray, depth: int) -> list[tuple[int, float]]:
        """Top ``depth`` rows by cosine among rows where ``m`` holds: ``(row, cosine)``."""
        rows = np.flatnonzero(m)
        if rows.size == 0 or depth <= 0:
            return []
        if rows.size * 4 < self.n:  # selective filter: score only the visible rows
            scores = self.matrix[rows] @ q
            cand = rows
        else:
            scores = self.matrix[: self.n] @ q
            scores = np.where(m, scores, -np.inf)
            cand = None
        kk = min(depth, rows.size)
        if kk < scores.size:
            part = np.argpartition(-scores, kk - 1)[:kk]
        else:
            part = np.arange(scores.size)
        part = part[np.argsort(-scores[part], kind="stable")]
        picked = cand[part] if cand is not None else part
        return list(zip(picked.tolist(), scores[part].astype(np.float64).tolist(), strict=True))


# ---------------------------------------------------------------------------
# The index
# ---------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS units (
    pk INTEGER PRIMARY KEY,
    context_id TEXT NOT NULL,
    id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    kind TEXT NOT NULL,
    partition TEXT NOT NULL,
    role TEXT,
    session_id TEXT,
    thread_id TEXT,
    valid_from REAL,
    valid_until REAL,
    scopes_key TEXT NOT NULL,
    acl_key TEXT,
    labels_key TEXT NOT NULL,
    payload TEXT NOT NULL,
    text TEXT NOT NULL,
    ctx_token TEXT NOT NULL,
    UNIQUE (context_id, id)
);
CREATE VIRTUAL TABLE IF NOT EXISTS units_fts USING fts5(
    text, ctx_token, content='units', content_rowid='pk', tokenize='{tokenize}'
);
CREATE TRIGGER IF NOT EXISTS units_ai AFTER INSERT ON units BEGIN
    INSERT INTO units_fts(rowid, text, ctx_token) VALUES (new.pk, new.text, new.ctx_token);
END;
CREATE TRIGGER IF NOT EXISTS units_ad AFTER DELETE ON units BEGIN
    INSERT INTO units_fts(units_fts, rowid, text, ctx_token) VALUES ('delete', old.pk, old.text, old.ctx_token);
    DELETE FROM vectors WHERE pk = old.pk;
END;
CREATE TRIGGER IF NOT EXISTS units_au AFTER UPDATE OF text ON units BEGIN
    INSERT INTO units_fts(units_fts, rowid, text, ctx_token) VALUES ('delete', old.pk, old.text, old.ctx_token);
    INSERT INTO units_fts(rowid, text, ctx_token) VALUES (new.pk, new.text, new.ctx_token);
END;
CREATE TABLE IF NOT EXISTS vectors (pk INTEGER PRIMARY KEY, embedding BLOB NOT NULL);
""".replace("{tokenize}", _TOKENIZE)

# Connection-local helpers for the BM25 budget: a scratch FTS5 table with the same tokenizer
# turns query words into index terms (porter stems), and a vocabulary view gives their
# document frequencies.
_TEMP_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_tokens USING fts5(text, tokenize='{tokenize}');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_token_instances USING fts5vocab(temp, query_tokens, 'instance');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.units_vocab USING fts5vocab(main, units_fts, 'row');
""".replace("{tokenize}", _TOKENIZE)

_UPSERT = """
INSERT INTO units (context_id, id, revision, kind, partition, role, session_id, thread_id,
                   valid_from, valid_until, scopes_key, acl_key, labels_key, payload, text, ctx_token)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (context_id, id) DO UPDATE SET
    revision = excluded.revision, kind = excluded.kind, partition = excluded.partition,
    role = excluded.role, session_id = excluded.session_id, thread_id = excluded.thread_id,
    valid_from = excluded.valid_from, valid_until = excluded.valid_until,
    scopes_key = excluded.scopes_key, acl_key = excluded.acl_key, labels_key = excluded.labels_key,
    payload = excluded.payload, text = excluded.text
WHERE excluded.revision >= units.revision
RETURNING pk
"""

_TEXT_PARAM = 14  # the FTS5 text in ``_prepare``'s parameters
SCHEMA_VERSION = "2"  # 2: CJK runs indexed as character bigrams (kernel.cjk); rebuild with reindex

_ROW_COLUMNS = ("pk, id, kind, partition, role, session_id, thread_id, valid_from, valid_until, "
                "scopes_key, acl_key, labels_key")


class EmbeddedSearchIndex:
    """``SearchIndex`` over one SQLite file; see the module docstring for the design.

    ``clock`` returns epoch seconds and decides what "current" means when a filter has no
    ``as_of`` (tests can pin it). ``max_cached_contexts`` bounds how many contexts keep their
    in-memory view; the least recently searched one is dropped (and reloaded on demand).
    """

    def __init__(self, path: str | os.PathLike[str], embedder: Embedder, *,
                 clock: Callable[[], float] = time.time, max_cached_contexts: int = 256,
                 ann_min_rows: int = ANN_MIN_ROWS, ann_exact_below: int = ANN_EXACT_BELOW,
                 snapshot_min_rows: int = SNAPSHOT_MIN_ROWS) -> None:
        self.path = os.fspath(path)
        self.snapshot_min_rows = snapshot_min_rows
        # Past ``ann_min_rows`` units a context searches vectors through an HNSW graph when
        # faiss is installed (the ``ann`` extra); a filter leaving at most ``ann_exact_below``
        # rows visible is still answered by the exact scan. Without faiss: always exact.
        self.ann_min_rows = ann_min_rows
        self.ann_exact_below = ann_exact_below
        self._ann = ann.available()
        self.embedder = embedder
        self.dimension = int(embedder.dimension)
        self._clock = clock
        self._lock = threading.RLock()
        self._views: OrderedDict[str, _ContextView] = OrderedDict()  # least recently searched first
        self._max_views = max_cached_contexts
        self._df_cache: dict[str, int] = {}  # query word -> document frequency (budget only)
        self._df_absent: set[str] = set()  # query words in no unit, until the next upsert
        self._word_terms: dict[str, tuple[str, ...]] = {}  # query word -> its index term(s)
        self._df_rows: int | None = None  # index size when the cache was started
        self._writes_since_df = 0
        self._tokenizer = Tokenizer(_TOKENIZE)  # the in-memory BM25 leg's terms (under the lock)
        if self.path != ":memory:":
            parent = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(parent, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(_SCHEMA)
            self._db.executescript(view_snapshots.SCHEMA)
            self._db.executescript(_TEMP_SCHEMA)
            self._check_embedder()
        except BaseException:
            self._db.close()
            raise

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            for view in self._views.values():
                self._save_if_changed(view)
            self._db.close()
            self._tokenizer.close()
            self._views.clear()

    def __enter__(self) -> EmbeddedSearchIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_embedder(self) -> None:
        """Record the embedder on first use; refuse a different one afterwards, because vectors
        from two embedders are not comparable and mixing them silently ruins retrieval."""
        meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        name, dim = meta.get("embedder_name"), meta.get("embedder_dimension")
        if name is None:
            with self._tx():
                self._db.executemany(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    [("embedder_name", self.embedder.name), ("embedder_dimension", str(self.dimension)),
                     ("schema_version", SCHEMA_VERSION)],
                )
                # rank = BM25 of the text column only; the context-token column weighs nothing
                self._db.execute("INSERT INTO units_fts (units_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0)')")
            return
        if meta.get("schema_version") != SCHEMA_VERSION:
            raise RuntimeError(
                f"search index {self.path} has schema version {meta.get('schema_version')!r}, "
                f"this code reads {SCHEMA_VERSION!r}; rebuild it with `agent-memory reindex`"
            )
        if name != self.embedder.name or int(dim or -1) != self.dimension:
            raise EmbedderMismatch(
                f"search index {self.path} was built with embedder {name!r} (dimension {dim}) "
                f"but is being opened with {self.embedder.name!r} (dimension {self.dimension}); "
                "rebuild it with `agent-memory reindex` or configure the original embedder"
            )

    def _tx(self) -> _Transaction:
        return _Transaction(self._db)

    # -- writes --------------------------------------------------------------

    def upsert(self, units: Sequence[SearchUnit]) -> None:
        """Insert or replace units; a unit whose revision is lower than the stored one is
        ignored (equal revision overwrites), so replayed or reordered projections are safe."""
        latest: dict[tuple[str, str], SearchUnit] = {}
        for u in units:
            key = (u.context_id, u.id)
            prev = latest.get(key)
            if prev is None or u.revision >= prev.revision:
                latest[key] = u
        if not latest:
            return
        with self._lock:
            stored = self._stored_revisions(list(latest))
        todo = [u for key, u in latest.items() if stored.get(key, -math.inf) <= u.revision]
        if not todo:
            return
        prepared = [self._prepare(u) for u in todo]  # validates timestamps before any write
        vectors = embed_all(self.embedder, [u.text for u in todo])
        applied: dict[str, tuple[list[_Row], list[np.ndarray], list[str]]] = {}
        # One lock hold for the commit and the views' update, so no snapshot (taken under the
        # lock) sees a committed change its view does not hold yet.
        with self._lock:
            self._apply_upsert(todo, prepared, vectors, applied)

    def _apply_upsert(self, todo: list[SearchUnit], prepared: list[tuple[Any, ...]], vectors: Any,
                      applied: dict[str, tuple[list[_Row], list[np.ndarray], list[str]]]) -> None:
        with self._tx():
            for u, params, vec in zip(todo, prepared, vectors, strict=True):
                got = self._db.execute(_UPSERT, params).fetchone()
                if got is None:  # a newer revision landed meanwhile
                    continue
                pk = int(got[0])
                self._db.execute("INSERT OR REPLACE INTO vectors (pk, embedding) VALUES (?, ?)",
                                 (pk, vec.astype("<f4").tobytes()))
                rows, vecs, texts = applied.setdefault(u.context_id, ([], [], []))
                row = _row_from_params(pk, params)
                row.features = unit_features(u)
                rows.append(row)
                vecs.append(vec)
                texts.append(params[_TEXT_PARAM])
        self._writes_since_df += sum(len(rows) for rows, _, _ in applied.values())
        self._df_absent.clear()
        for ctx, (rows, vecs, texts) in applied.items():
            view = self._views.get(ctx)
            if view is not None:
                self._set_view_rows(view, rows, np.stack(vecs), texts)

    def _set_view_rows(self, view: _ContextView, rows: list[_Row], vectors: np.ndarray, texts: list[str]) -> None:
        view.set_rows(rows, vectors)
        small = view.terms is not None and view.n - view.dead <= TERM_INDEX_MAX_ROWS
        view.set_terms(rows, self._tokenizer.tokenize(texts) if small else None)
        for row in rows:
            view.units.pop(row.id, None)  # re-decoded from the new payload on demand

    @staticmethod
    def _prepare(u: SearchUnit) -> tuple[Any, ...]:
        acl = None if u.acl_readers is None else json.dumps(sorted(set(u.acl_readers)))
        return (
            u.context_id, u.id, int(u.revision), u.kind, u.partition, u.role, u.session_id,
            u.thread_id, _epoch(u.valid_from), _epoch(u.valid_until),
            scopes_key(u.scopes), acl, json.dumps(sorted(set(u.labels))),
            json.dumps(unit_to_dict(u), ensure_ascii=False, separators=(",", ":")),
            cjk_bigrams(u.text),  # the FTS5 column: CJK runs as bigrams (the payload keeps the text)
            context_token(u.context_id),
        )

    def _stored_revisions(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
        by_ctx: dict[str, list[str]] = {}
        for ctx, uid in keys:
            by_ctx.setdefault(ctx, []).append(uid)
        out: dict[tuple[str, str], int] = {}
        for ctx, ids in by_ctx.items():
            for chunk in _chunks(ids, _SQL_IN_CHUNK):
                sql = f"SELECT id, revision FROM units WHERE context_id = ? AND id IN ({_qmarks(chunk)})"
                for uid, rev in self._db.execute(sql, (ctx, *chunk)):
                    out[(ctx, uid)] = int(rev)
        return out

    def delete(self, context_id: str, unit_ids: Sequence[str]) -> None:
        ids = list(dict.fromkeys(unit_ids))
        if not ids:
            return
        with self._lock, self._tx():
            for chunk in _chunks(ids, _SQL_IN_CHUNK):
                self._db.execute(
                    f"DELETE FROM units WHERE context_id = ? AND id IN ({_qmarks(chunk)})", (context_id, *chunk)
                )
            view = self._views.get(context_id)
            if view is not None:
                view.remove(ids)
            self._writes_since_df += len(ids)

    def delete_context(self, context_id: str) -> None:
        with self._lock, self._tx():
            gone = self._db.execute("DELETE FROM units WHERE context_id = ?", (context_id,)).rowcount
            self._db.execute("DELETE FROM view_snapshots WHERE context_id = ?", (context_id,))
            self._db.execute("DELETE FROM view_log WHERE context_id = ?", (context_id,))
            self._views.pop(context_id, None)
            if self.path != ":memory:":
                for suffix in ("", ".pks.npy", ".prints.npy"):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(self._graph_path(context_id) + suffix)
                view_snapshots.remove_others(self._snapshot_root, context_token(context_id), None)
            self._writes_since_df += max(0, gone)

    # -- reads ---------------------------------------------------------------

    def get(self, context_id: str, unit_id: str) -> SearchUnit | None:
        with self._lock:
            row = self._db.execute(
                "SELECT payload FROM units WHERE context_id = ? AND id = ?", (context_id, unit_id)
            ).fetchone()
        return None if row is None else unit_from_dict(json.loads(row[0]))

    def search(self, query: str, flt: SearchFilter, *, k: int = 10, mode: SearchMode) -> list[SearchHit]:
        """One leg (``SearchIndex.search``): cosines for ``vector``, saturated BM25 for ``bm25``."""
        if mode not in ("vector", "bm25"):
            raise ValueError(f"unknown search mode {mode!r}")
        if k <= 0:
            return []
        qvec = embed_all(self.embedder, [query])[0] if mode == "vector" else None
        if qvec is not None and not np.any(qvec):
            qvec = None  # no words, no direction: ranking by a zero vector would be arbitrary
        with self._lock:
            view = self._view(flt.context_id)
            if view.n == view.dead:
                return []
            m = view.mask(flt, self._clock())
            if flt.source_ids is not None:
                m &= self._derived_from(view, flt)
            if not m.any():
                return []
            ids = view.ids
            if mode == "vector":
                hits = self._top_vector(view, qvec, m, k) if qvec is not None else []
                ranked = [(ids[r], s) for r, s in hits]
            else:  # FTS5's bm25 is negative, lower is better
                ranked = [(ids[r], saturate(-s)) for r, s in self._top_bm25(view, query, m, k)]
            units = self._units(view, [uid for uid, _ in ranked])
        return [SearchHit(units[uid], score) for uid, score in ranked if uid in units]

    def rank_rows(self, flt: SearchFilter, legs: Sequence[RowLeg]) -> RowRanking:
        """Each leg ranked exactly as ``search`` ranks that mode, returned as the view's
        columns over the candidates: no unit is decoded to rank (a row's payload features
        are decoded once, the first time it is a candidate), ``decode`` reads the kept few."""
        vectors: dict[str, np.ndarray | None] = {}
        for leg in legs:
            if leg.mode == "vector" and leg.query not in vectors:
                vec = embed_all(self.embedder, [leg.query])[0]
                vectors[leg.query] = vec if np.any(vec) else None
            elif leg.mode not in ("vector", "bm25"):
                raise ValueError(f"unknown row leg mode {leg.mode!r}")
        with self._lock:
            view = self._view(flt.context_id)
            leg_rows: list[np.ndarray] = []
            leg_scores: list[np.ndarray] = []
            now = self._clock()
            derived = self._derived_from(view, flt) if flt.source_ids is not None else None
            for leg in legs:
                hits: list[tuple[int, float]] = []
                if view.n > view.dead and leg.depth > 0:
                    leg_flt = flt if not leg.labels else dataclasses.replace(
                        flt, labels=sorted({*(flt.labels or ()), *leg.labels}))
                    m = view.mask(leg_flt, now)
                    if derived is not None:
                        m &= derived
                    if m.any():
                        if leg.mode == "vector":
                            q = vectors[leg.query]
                            hits = self._top_vector(view, q, m, leg.depth) if q is not None else []
                        else:
                            hits = self._top_bm25(view, leg.query, m, leg.depth)
                leg_rows.append(np.fromiter((r for r, _ in hits), dtype=np.int64, count=len(hits)))
                # Higher is better: cosines as they are, BM25 (FTS5's sign: lower is better)
                # negated. Non-increasing along the leg: a tail filled by a wider BM25 query
                # (``_top_bm25``) scores on another scale and must not outscore the ranked head.
                raw = np.fromiter((x for _, x in hits), dtype=np.float64, count=len(hits))
                leg_scores.append(np.minimum.accumulate(raw if leg.mode == "vector" else -raw))
            if not leg_rows:
                return ranking_from_units([])
            every = np.concatenate(leg_rows)
            rows, inverse = np.unique(every, return_inverse=True)
            unknown = rows[~view.f_known[rows]]
            if unknown.size:
                ids = view.ids
                units = self._units(view, [ids[r] for r in unknown.tolist()])
                for r in unknown.tolist():
                    unit = units.get(ids[r])  # type: ignore[arg-type]
                    if unit is None:
                        continue
                    view.f_seq[r], view.f_key[r], view.f_occurred[r] = unit_features(unit)
                    view.f_known[r] = True
            ids = [view.ids[r] for r in rows.tolist()]
            label_sets = view.label_sigs.values
            inverse = inverse.astype(np.int64)
            ends = np.cumsum([leg_hits.size for leg_hits in leg_rows]).tolist()
            ranking = RowRanking(
                ids=ids,  # type: ignore[arg-type]
                legs=[inverse[end - size:end] for end, size in zip(ends, (r.size for r in leg_rows), strict=True)],
                kind=view.kind_codes.names()[view.kind[rows]],
                role=view.role_codes.names()[view.role[rows]],
                session_id=view.session_codes.names()[view.session[rows]],
                seq=view.f_seq[rows].copy(), current=np.isinf(view.vu[rows]),
                key=view.f_key[rows].copy(), occurred_at=view.f_occurred[rows].copy(),
                labels=[label_sets[c] for c in view.labels[rows].tolist()],
                decode=lambda indices: self._decode(flt.context_id, [ids[i] for i in indices]),
                leg_scores=leg_scores,
            )
        return ranking

    def _derived_from(self, view: _ContextView, flt: SearchFilter) -> np.ndarray:
        """Rows whose unit lists one of ``flt.source_ids`` among its sources (a chunk's
        document): read from the stored payloads (the view keeps no source column)."""
        m = np.zeros(view.n, dtype=bool)
        wanted = sorted(set(flt.source_ids or ()))
        for i in range(0, len(wanted), 500):
            chunk = wanted[i:i + 500]
            rows = self._db.execute(
                "SELECT DISTINCT u.pk FROM units u, json_each(u.payload, '$.source_ids') s "
                f"WHERE u.context_id = ? AND s.value IN ({', '.join('?' * len(chunk))})",
                (flt.context_id, *chunk)).fetchall()
            for (pk,) in rows:
                r = view.row_of_pk.get(int(pk))
                if r is not None and r < view.n:
                    m[r] = True
        return m

    def _decode(self, context_id: str, ids: list[str]) -> list[SearchUnit | None]:
        with self._lock:
            view = self._view(context_id)
            units = self._units(view, ids)
        return [units.get(uid) for uid in ids]

    # -- vectors: exact scan, or the ANN graph of a large context --------------

    def _top_vector(self, view: _ContextView, q: np.ndarray, m: np.ndarray, depth: int) -> list[tuple[int, float]]:
        if not self._ann or view.n - view.dead < self.ann_min_rows:
            return view.top_vector(q, m, depth)
        visible = int(np.count_nonzero(m))
        if visible <= self.ann_exact_below:
            return view.top_vector(q, m, depth)
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
        return [(int(cand[p]), float(scores[p])) for p in part]

    def _graph(self, view: _ContextView) -> AnnGraph:
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

    def _build_graph(self, view: _ContextView, rows: list[int], graph: AnnGraph) -> AnnGraph:
        picked = np.asarray([r for r in rows if view.alive[r]], dtype=np.int64)
        graph.add(view.matrix[picked], view.pks[picked], picked)
        view.pending.clear()
        view.ann = graph
        if self.path != ":memory:":
            graph.save(self._graph_path(view.context_id))
        return graph

    def _load_graph(self, view: _ContextView) -> AnnGraph | None:
        if self.path == ":memory:":
            return None
        graph = AnnGraph.load(self._graph_path(view.context_id), self.dimension)
        if graph is None:
            return None
        graph.rows = _rows_of_pks(view, graph.pks)
        graph.forget_changed(view.matrix, view.prints)  # units rewritten since the graph was saved
        covered = np.zeros(view.n, dtype=bool)
        covered[graph.rows[graph.rows >= 0]] = True
        view.ann = graph
        view.pending = {int(r) for r in np.flatnonzero(view.alive[: view.n] & ~covered)}
        return graph

    def _graph_path(self, context_id: str) -> str:
        return os.path.join(self.path + ".ann", context_token(context_id) + ".faiss")

    def _view(self, context_id: str) -> _ContextView:
        view = self._views.get(context_id)
        if view is None:
            view = self._load_view(context_id)
            self._views[context_id] = view
            while len(self._views) > self._max_views:
                self._save_if_changed(self._views.popitem(last=False)[1])
        else:
            self._views.move_to_end(context_id)
        return view

    # -- persisted views (adapters/view_snapshots.py) ----------------------------

    @property
    def _snapshot_root(self) -> str:
        return self.path + ".views"

    def _load_view(self, context_id: str) -> _ContextView:
        """The context's view: its snapshot with the rows written since replayed from SQLite,
        or, when it has none that can be read, a rebuild from SQLite (said in the log)."""
        reg = None if self.path == ":memory:" else view_snapshots.registered(self._db, context_id)
        if reg is not None:
            seq, name = reg
            t0 = time.perf_counter()
            try:
                view = self._restore_view(context_id, name)
            except (view_snapshots.SnapshotUnusable, ValueError, TypeError, KeyError, IndexError) as exc:
                log.warning("embedded index: the persisted view of context %r cannot be read (%s); "
                            "rebuilding it from SQLite", context_id, exc)
            else:
                replayed = self._replay(view, seq)
                log.debug("embedded index: context %r view loaded (%d rows, %d replayed) in %.0f ms",
                          context_id, view.n - view.dead, replayed, (time.perf_counter() - t0) * 1000)
                if replayed > max(1_000, view.n // 10):
                    self._save_view(view)  # bounds the next start's replay
                else:
                    view.saved_version = view.version if not replayed else -1
                return view
        t0 = time.perf_counter()
        view = self._build_view(context_id)
        if view.n - view.dead >= self.snapshot_min_rows and self.path != ":memory:":
            log.info("embedded index: context %r view rebuilt from SQLite (%d rows, no persisted view) in %.0f ms",
                     context_id, view.n - view.dead, (time.perf_counter() - t0) * 1000)
            self._save_view(view)
        return view

    def _restore_view(self, context_id: str, name: str) -> _ContextView:
        meta = view_snapshots.read_meta(self._snapshot_root, name)
        if meta.get("dim") != self.dimension:
            raise view_snapshots.SnapshotUnusable(f"snapshot {name} has dimension {meta.get('dim')}")
        return _ContextView.restore(
            context_id, self.dimension, meta,
            lambda into: view_snapshots.read(self._snapshot_root, name, into)[1])

    def _replay(self, view: _ContextView, after: int) -> int:
        """Apply to a restored view the unit rows logged after its snapshot: rows gone from
        SQLite leave the view, the others are read again. Returns how many rows were logged."""
        pks = view_snapshots.changed_pks(self._db, view.context_id, after)
        if not pks:
            return 0
        columns = ", ".join("u." + c.strip() for c in _ROW_COLUMNS.split(","))
        found: list[tuple[Any, ...]] = []
        for chunk in _chunks(pks, _SQL_IN_CHUNK):  # type: ignore[arg-type]
            found += self._db.execute(
                f"SELECT {columns}, v.embedding, u.text FROM units u LEFT JOIN vectors v ON v.pk = u.pk "
                f"WHERE u.context_id = ? AND u.pk IN ({_qmarks(chunk)}) ORDER BY u.pk",
                (view.context_id, *chunk)).fetchall()
        present = {r[1] for r in found}
        gone = {view.ids[view.row_of_pk[pk]] for pk in pks if pk in view.row_of_pk}
        view.remove([uid for uid in gone if uid is not None and uid not in present])
        if found:
            rows = [_Row(*r[:12]) for r in found]
            for row in rows:  # a unit deleted and written again has a new key
                i = view.row_of.get(row.id)
                if i is not None and int(view.pks[i]) != row.pk:
                    view.row_of_pk.pop(int(view.pks[i]), None)
            zero = bytes(4 * self.dimension)
            blob = b"".join(r[12] if r[12] is not None else zero for r in found)
            vectors = np.frombuffer(blob, dtype="<f4").reshape(len(found), self.dimension)
            self._set_view_rows(view, rows, vectors, [r[13] for r in found])
        return len(pks)

    def _save_if_changed(self, view: _ContextView) -> None:
        if view.saved_version != view.version and view.n - view.dead >= self.snapshot_min_rows:
            self._save_view(view)

    def _save_view(self, view: _ContextView) -> None:
        """Persist ``view`` (under the lock, so it holds every change committed so far) and
        register it; a failure only means the next start replays or rebuilds more."""
        if self.path == ":memory:":
            return
        token = context_token(view.context_id)
        try:
            arrays, objects, meta = view.snapshot()
            seq = view_snapshots.current_seq(self._db)
            name = view_snapshots.write(self._snapshot_root, token, arrays, objects,
                                        {**meta, "seq": seq})
            with self._tx():
                self._db.execute("INSERT OR REPLACE INTO view_snapshots (context_id, seq, snapshot) VALUES (?, ?, ?)",
                                 (view.context_id, seq, name))
                self._db.execute("DELETE FROM view_log WHERE context_id = ? AND seq <= ?", (view.context_id, seq))
        except (OSError, ValueError, sqlite3.Error) as exc:
            log.warning("embedded index: could not persist the view of context %r (%s)", view.context_id, exc)
            return
        view.saved_version = view.version
        view_snapshots.remove_others(self._snapshot_root, token, name)

    def _build_view(self, context_id: str) -> _ContextView:
        cur = self._db.execute(
            f"SELECT {', '.join('u.' + c.strip() for c in _ROW_COLUMNS.split(','))}, v.embedding "
            "FROM units u LEFT JOIN vectors v ON v.pk = u.pk WHERE u.context_id = ? ORDER BY u.pk",
            (context_id,),
        )
        data = cur.fetchall()
        view = _ContextView(context_id, self.dimension)
        if data:
            zero = bytes(4 * self.dimension)
            blob = b"".join(r[-1] if r[-1] is not None else zero for r in data)
            vectors = np.frombuffer(blob, dtype="<f4").reshape(len(data), self.dimension)
            view.load([r[:-1] for r in data], vectors)
        if len(data) <= TERM_INDEX_MAX_ROWS:
            pks_texts = self._db.execute("SELECT pk, text FROM units WHERE context_id = ?", (context_id,)).fetchall()
            assert view.terms is not None
            for (pk, _), (counts, length) in zip(pks_texts, self._tokenizer.tokenize([t for _, t in pks_texts]),
                                                 strict=True):
                view.terms.set(view.row_of_pk[int(pk)], counts, length)
        else:
            view.terms = None
        if len(data) <= TERM_INDEX_MAX_ROWS:  # a small context's features are read now, in SQL
            row_of_pk = view.row_of_pk
            for pk, features in self._db.execute(f"SELECT {_FEATURE_COLUMNS} FROM units WHERE context_id = ?",
                                                 (context_id,)):
                r = row_of_pk.get(int(pk))
                if r is not None:
                    view.f_seq[r], view.f_key[r], view.f_occurred[r] = ranking_features(*json.loads(features))
                    view.f_known[r] = True
        return view

    def _top_bm25(self, view: _ContextView, query: str, m: np.ndarray, depth: int) -> list[tuple[int, float]]:
        """Best ``depth`` visible rows by BM25: ``(row, raw bm25)``, filtered before the cut.

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
                return _top_in_memory(view.terms, terms, m, depth)
        kept, matchable = self._budgeted_terms(words, live)
        token = context_token(view.context_id)
        match = fts_match_expression(kept, token)
        if match is None:
            return []
        out = self._ranked_visible(view, match, m, depth, live)
        if len(out) < depth and len(kept) < len(matchable):
            full = fts_match_expression(matchable, token)
            assert full is not None
            out += self._scan_visible(view, full, m, depth - len(out), {r for r, _ in out})
        return out

    def _ranked_visible(self, view: _ContextView, match: str, m: np.ndarray, depth: int,
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

    def _scan_visible(self, view: _ContextView, match: str, m: np.ndarray, need: int,
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
        if self._df_rows is None or self._writes_since_df > max(2000, self._df_rows // 10):
            self._df_cache = {}
            self._df_rows = int(self._db.execute("SELECT count(*) FROM units").fetchone()[0])
            self._writes_since_df = 0
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
            for chunk in _chunks(every, _SQL_IN_CHUNK):
                sql = f"SELECT term, doc FROM temp.units_vocab WHERE term IN ({_qmarks(chunk)})"
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

    def _units(self, view: _ContextView, ids: list[str]) -> dict[str, SearchUnit]:
        """A mapping holding the units ``ids`` (and maybe others) from the view's decoded cache;
        only ones not decoded yet are read from SQLite and decoded. The cache is bounded: past
        ``UNIT_CACHE`` units it starts over."""
        cache = view.units
        missing = [uid for uid in ids if uid not in cache]
        if not missing:
            return cache
        if missing:
            if len(cache) + len(missing) > UNIT_CACHE:
                cache.clear()
            for chunk in _chunks(missing, _SQL_IN_CHUNK):
                sql = f"SELECT id, payload FROM units WHERE context_id = ? AND id IN ({_qmarks(chunk)})"
                for uid, payload in self._db.execute(sql, (view.context_id, *chunk)):
                    cache[uid] = unit_from_dict(json.loads(payload))
        return {uid: cache[uid] for uid in ids if uid in cache}


def _top_in_memory(terms_index: TermIndex, terms: list[str], m: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """Best ``depth`` visible rows by in-memory BM25, ``(row, negated score)`` best first
    (ties by row), filtered before the cut: the FTS5 leg's contract."""
    rows, raw = terms_index.scores(terms)
    if rows.size == 0:
        return []
    ok = m[rows]
    rows, raw = rows[ok], raw[ok]
    if rows.size > depth:
        part = np.argpartition(raw, depth - 1)[:depth]
        rows, raw = rows[part], raw[part]
    order = np.lexsort((rows, raw))
    return list(zip(rows[order].tolist(), raw[order].tolist(), strict=True))


def _rows_of_pks(view: _ContextView, pks: np.ndarray) -> np.ndarray:
    """The view row holding each unit key (-1 for none), vectorised: a graph of 100k ids maps
    onto its view in milliseconds."""
    live = np.flatnonzero(view.alive[: view.n])
    order = np.argsort(view.pks[live], kind="stable")
    keys, rows = view.pks[live][order], live[order]
    at = np.searchsorted(keys, pks).clip(max=max(0, keys.size - 1))
    hit = (keys.size > 0) & (keys[at] == pks) if keys.size else np.zeros(pks.size, dtype=bool)
    return np.where(hit, rows[at] if keys.size else -1, -1).astype(np.int64)


def _row_from_params(pk: int, p: tuple[Any, ...]) -> _Row:
    """The in-memory row of an applied ``_UPSERT`` (parameter order as in ``_prepare``)."""
    return _Row(pk=pk, id=p[1], kind=p[3], partition=p[4], role=p[5], session_id=p[6], thread_id=p[7],
                valid_from=p[8], valid_until=p[9], scopes_key=p[10], acl_key=p[11], labels_key=p[12])


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` / ``ROLLBACK`` on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")


def _chunks(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _qmarks(items: Sequence[Any]) -> str:
    return ",".join("?" * len(items))

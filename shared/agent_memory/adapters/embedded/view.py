"""The in-memory view of one context in the embedded index: its vectors as one float32 matrix
and its filter columns as small-integer codes, row-aligned, so a filter is a vectorised mask
computed before any top-k cut. Structured fields (scopes, reader lists, labels) are coded by
distinct value ("signatures"), so visibility is decided once per distinct value per query."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from agent_memory.access import scopes as scope_rules
from agent_memory.adapters.embedded import ann, term_index
from agent_memory.adapters.embedded.ann import AnnGraph
from agent_memory.adapters.embedded.sql import Row
from agent_memory.adapters.embedded.term_index import TermIndex
from agent_memory.kernel import timeutil
from agent_memory.ports import NO_SEQ, SearchFilter, SearchUnit


class Codes:
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


class Signatures:
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


def code_in(column: np.ndarray, codes: Codes, values: Iterable[str | None]) -> np.ndarray:
    """``column`` holds one of ``values`` (a code column; ``None`` values match nothing, as
    with ``np.isin`` over the looked-up codes): one table lookup instead of a set test."""
    wanted = np.zeros(len(codes.codes) + 2, dtype=bool)  # index = code + 2 (-2 unknown, -1 None)
    for value in values:
        if value is not None:
            code = codes.lookup(value)
            if code >= 0:
                wanted[code + 2] = True
    return wanted[column + 2]


def parse_json(key: str | None) -> Any:
    return None if key is None else json.loads(key)


def parse_labels(key: str | None) -> frozenset[str]:
    return frozenset(json.loads(key)) if key else frozenset()


class ContextView:
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
        self.kind_codes, self.part_codes, self.role_codes = Codes(), Codes(), Codes()
        self.session_codes, self.thread_codes = Codes(), Codes()
        self.scope_sigs = Signatures(parse_json)
        self.acl_sigs = Signatures(parse_json)
        self.label_sigs = Signatures(parse_labels)
        # Decoded units by id, filled on first return (or by the upsert that wrote them), so a
        # search decodes only what it returns for the first time. Callers never mutate units.
        self.units: dict[str, SearchUnit] = {}
        # In-memory BM25 postings while the context is small (term_index.MAX_ROWS); None above.
        self.terms: TermIndex | None = TermIndex()
        self.version = 0  # bumped by every change of rows (keys the shared-mask cache)
        # The approximate-nearest-neighbour graph of a large context (``ann``), and the
        # rows written since it was built (scored exactly until folded in).
        self.ann: AnnGraph | None = None
        self.pending: set[int] = set()
        self._base_mask: tuple[Any, np.ndarray] | None = None
        self.saved_version = -1  # ``version`` when last persisted (``view_snapshots``)
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

    def set_terms(self, rows: Sequence[Row], tokens: Sequence[tuple[dict[str, int], int]] | None) -> None:
        """Postings of rows just written (``tokens`` as ``term_index.tokenize`` gives them);
        past ``term_index.MAX_ROWS`` rows the view stops keeping postings."""
        if self.terms is None:
            return
        if tokens is None or self.n - self.dead > term_index.MAX_ROWS:
            self.terms = None
            return
        for r, (counts, length) in zip(rows, tokens, strict=True):
            self.terms.set(self.row_of[r.id], counts, length)

    def set_rows(self, rows: Sequence[Row], vectors: np.ndarray) -> None:
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
        """Fill an empty view from stored rows (``Row`` field order), column at a time: the
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

    # Numeric columns a snapshot stores as arrays (``view_snapshots``); the object
    # columns (``f_key``, ``f_occurred``) go with the other objects, for known rows only.
    _SAVED = ("matrix", "alive", "pks", "kind", "part", "role", "session", "thread", "vf", "vu",
              "scope", "acl", "labels", "f_known", "f_seq", "prints")

    def snapshot(self) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, Any]]:
        """``(arrays, objects, meta)`` of the view as built (``view_snapshots``)."""
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
                read: Callable[[dict[str, np.ndarray]], dict[str, Any]]) -> ContextView:
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
            m &= code_in(self.kind[:n], self.kind_codes, flt.kinds)
        if flt.roles is not None:
            m &= code_in(self.role[:n], self.role_codes, flt.roles)
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

    def top_vector(self, q: np.ndarray, m: np.ndarray, depth: int,
                   scored: np.ndarray | None = None) -> RankedRows:
        """Top ``depth`` rows by cosine among rows where ``m`` holds, best first.
        ``scored``: ``q``'s cosine with every row (``matrix[:n] @ q``), when the caller runs
        several legs with one query (one pass over the matrix instead of one a leg)."""
        rows = np.flatnonzero(m)
        if rows.size == 0 or depth <= 0:
            return no_rows()
        if rows.size * 4 < self.n:  # selective filter: score only the visible rows
            scores = scored[rows] if scored is not None else self.matrix[rows] @ q
            cand = rows
        else:
            scores = scored if scored is not None else self.matrix[: self.n] @ q
            scores = np.where(m, scores, -np.inf)
            cand = None
        kk = min(depth, rows.size)
        if kk < scores.size:
            part = np.argpartition(-scores, kk - 1)[:kk]
        else:
            part = np.arange(scores.size)
        part = part[np.argsort(-scores[part], kind="stable")]
        picked = cand[part] if cand is not None else part
        return picked.astype(np.int64, copy=False), scores[part].astype(np.float64)



#: A leg's result as columns: view rows (int64) and their scores (float64), best first. Kept
#: as arrays from the scan to the ranking (no tuple per candidate).
RankedRows = tuple[np.ndarray, np.ndarray]


def no_rows() -> RankedRows:
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)


def ranked_rows(pairs: list[tuple[int, float]]) -> RankedRows:
    """``(row, score)`` pairs (an SQL leg's) as ``RankedRows``."""
    if not pairs:
        return no_rows()
    rows, scores = zip(*pairs, strict=True)
    return np.asarray(rows, dtype=np.int64), np.asarray(scores, dtype=np.float64)


def rows_of_pks(view: ContextView, pks: np.ndarray) -> np.ndarray:
    """The view row holding each unit key (-1 for none), vectorised: a graph of 100k ids maps
    onto its view in milliseconds."""
    live = np.flatnonzero(view.alive[: view.n])
    order = np.argsort(view.pks[live], kind="stable")
    keys, rows = view.pks[live][order], live[order]
    at = np.searchsorted(keys, pks).clip(max=max(0, keys.size - 1))
    hit = (keys.size > 0) & (keys[at] == pks) if keys.size else np.zeros(pks.size, dtype=bool)
    return np.where(hit, rows[at] if keys.size else -1, -1).astype(np.int64)

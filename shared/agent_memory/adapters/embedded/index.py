"""``EmbeddedSearchIndex``: the ``SearchIndex`` over one SQLite file (the package docstring has
the design): writes and reads under one lock, each context's view loaded lazily (from its
snapshot, replaying what was written since, or rebuilt from SQLite), evicted least recently
searched first, and persisted as built."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from agent_memory.adapters.embedded import term_index, view_snapshots
from agent_memory.adapters.embedded.bm25 import Bm25Leg
from agent_memory.adapters.embedded.fts import TOKENIZE, context_token
from agent_memory.adapters.embedded.sql import (
    FEATURE_COLUMNS,
    ROW_COLUMNS,
    SCHEMA,
    SCHEMA_VERSION,
    SQL_IN_CHUNK,
    TEMP_SCHEMA,
    TEXT_PARAM,
    UPSERT,
    Row,
    Transaction,
    chunks,
    qmarks,
    row_from_params,
    unit_params,
)
from agent_memory.adapters.embedded.term_index import Tokenizer
from agent_memory.adapters.embedded.vectors import ANN_EXACT_BELOW, ANN_MIN_ROWS, VectorLeg
from agent_memory.adapters.embedded.view import ContextView, no_rows
from agent_memory.adapters.search_units import embed_all, unit_from_dict
from agent_memory.ports import (
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

UNIT_CACHE = 200_000  # decoded units kept per context view
# A context this large keeps its view on disk (``view_snapshots``): below it a
# rebuild from SQLite takes under about 60 ms, less than reading a snapshot is worth.
SNAPSHOT_MIN_ROWS = 1_000

log = logging.getLogger("agent_memory.embedded_search")


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
        self.embedder = embedder
        self.dimension = int(embedder.dimension)
        self._clock = clock
        self._lock = threading.RLock()
        self._views: OrderedDict[str, ContextView] = OrderedDict()  # least recently searched first
        self._max_views = max_cached_contexts
        self._vectors = VectorLeg(self.path, self.dimension, min_rows=ann_min_rows, exact_below=ann_exact_below)
        self._tokenizer = Tokenizer(TOKENIZE)  # the in-memory BM25 leg's terms (under the lock)
        if self.path != ":memory:":
            parent = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(parent, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._bm25 = Bm25Leg(self._db, self._tokenizer)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(SCHEMA)
            self._db.executescript(view_snapshots.SCHEMA)
            self._db.executescript(TEMP_SCHEMA)
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

    def _tx(self) -> Transaction:
        return Transaction(self._db)

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
        prepared = [unit_params(u) for u in todo]  # validates timestamps before any write
        vectors = embed_all(self.embedder, [u.text for u in todo])
        applied: dict[str, tuple[list[Row], list[np.ndarray], list[str]]] = {}
        # One lock hold for the commit and the views' update, so no snapshot (taken under the
        # lock) sees a committed change its view does not hold yet.
        with self._lock:
            self._apply_upsert(todo, prepared, vectors, applied)

    def _apply_upsert(self, todo: list[SearchUnit], prepared: list[tuple[Any, ...]], vectors: Any,
                      applied: dict[str, tuple[list[Row], list[np.ndarray], list[str]]]) -> None:
        with self._tx():
            for u, params, vec in zip(todo, prepared, vectors, strict=True):
                got = self._db.execute(UPSERT, params).fetchone()
                if got is None:  # a newer revision landed meanwhile
                    continue
                pk = int(got[0])
                self._db.execute("INSERT OR REPLACE INTO vectors (pk, embedding) VALUES (?, ?)",
                                 (pk, vec.astype("<f4").tobytes()))
                rows, vecs, texts = applied.setdefault(u.context_id, ([], [], []))
                row = row_from_params(pk, params)
                row.features = unit_features(u)
                rows.append(row)
                vecs.append(vec)
                texts.append(params[TEXT_PARAM])
        self._bm25.written(sum(len(rows) for rows, _, _ in applied.values()))
        for ctx, (rows, vecs, texts) in applied.items():
            view = self._views.get(ctx)
            if view is not None:
                self._set_view_rows(view, rows, np.stack(vecs), texts)

    def _set_view_rows(self, view: ContextView, rows: list[Row], vectors: np.ndarray, texts: list[str]) -> None:
        view.set_rows(rows, vectors)
        small = view.terms is not None and view.n - view.dead <= term_index.MAX_ROWS
        view.set_terms(rows, self._tokenizer.tokenize(texts) if small else None)
        for row in rows:
            view.units.pop(row.id, None)  # re-decoded from the new payload on demand

    def _stored_revisions(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
        by_ctx: dict[str, list[str]] = {}
        for ctx, uid in keys:
            by_ctx.setdefault(ctx, []).append(uid)
        out: dict[tuple[str, str], int] = {}
        for ctx, ids in by_ctx.items():
            for chunk in chunks(ids, SQL_IN_CHUNK):
                sql = f"SELECT id, revision FROM units WHERE context_id = ? AND id IN ({qmarks(chunk)})"
                for uid, rev in self._db.execute(sql, (ctx, *chunk)):
                    out[(ctx, uid)] = int(rev)
        return out

    def delete(self, context_id: str, unit_ids: Sequence[str]) -> None:
        ids = list(dict.fromkeys(unit_ids))
        if not ids:
            return
        with self._lock, self._tx():
            for chunk in chunks(ids, SQL_IN_CHUNK):
                self._db.execute(
                    f"DELETE FROM units WHERE context_id = ? AND id IN ({qmarks(chunk)})", (context_id, *chunk)
                )
            view = self._views.get(context_id)
            if view is not None:
                view.remove(ids)
            self._bm25.deleted(len(ids))

    def delete_context(self, context_id: str) -> None:
        with self._lock, self._tx():
            gone = self._db.execute("DELETE FROM units WHERE context_id = ?", (context_id,)).rowcount
            self._db.execute("DELETE FROM view_snapshots WHERE context_id = ?", (context_id,))
            self._db.execute("DELETE FROM view_log WHERE context_id = ?", (context_id,))
            self._views.pop(context_id, None)
            if self.path != ":memory:":
                for suffix in ("", ".pks.npy", ".prints.npy"):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(self._vectors.graph_path(context_id) + suffix)
                view_snapshots.remove_others(self._snapshot_root, context_token(context_id), None)
            self._bm25.deleted(max(0, gone))

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
                rows, scores = self._vectors.top(view, qvec, m, k) if qvec is not None else no_rows()
                ranked = [(ids[r], s) for r, s in zip(rows.tolist(), scores.tolist(), strict=True)]
            else:  # FTS5's bm25 is negative, lower is better
                rows, scores = self._bm25.top(view, query, m, k)
                ranked = [(ids[r], saturate(-s)) for r, s in zip(rows.tolist(), scores.tolist(), strict=True)]
            units = self._units(view, [uid for uid, _ in ranked])
        return [SearchHit(units[uid], score) for uid, score in ranked if uid in units]

    def prefetch_query(self, query: str) -> None:
        """Start embedding ``query`` (``ports.QueryPrefetch``) where the embedder can."""
        ahead = getattr(self.embedder, "embed_ahead", None)
        if ahead is not None:
            ahead(query)

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
            # Legs sharing a query vector (the whole context and each named entity's units)
            # score it against the matrix once, in an exact scan.
            shared = self._vectors.exact(view) and view.n > view.dead and sum(
                1 for leg in legs if leg.mode == "vector" and leg.depth > 0) > 1
            scored: dict[str, np.ndarray] = {}
            for leg in legs:
                rows, raw = no_rows()
                if view.n > view.dead and leg.depth > 0:
                    leg_flt = flt if not leg.labels else dataclasses.replace(
                        flt, labels=sorted({*(flt.labels or ()), *leg.labels}))
                    m = view.mask(leg_flt, now)
                    if derived is not None:
                        m &= derived
                    if m.any():
                        if leg.mode == "vector":
                            q = vectors[leg.query]
                            if q is not None:
                                if shared and leg.query not in scored:
                                    scored[leg.query] = view.matrix[: view.n] @ q
                                rows, raw = self._vectors.top(view, q, m, leg.depth, scored.get(leg.query))
                        else:
                            rows, raw = self._bm25.top(view, leg.query, m, leg.depth)
                leg_rows.append(rows)
                # Higher is better: cosines as they are, BM25 (FTS5's sign: lower is better)
                # negated. Non-increasing along the leg: a tail filled by a wider BM25 query
                # (``Bm25Leg.top``) scores on another scale and must not outscore the ranked head.
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

    def _derived_from(self, view: ContextView, flt: SearchFilter) -> np.ndarray:
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

    def _view(self, context_id: str) -> ContextView:
        view = self._views.get(context_id)
        if view is None:
            view = self._load_view(context_id)
            self._views[context_id] = view
            while len(self._views) > self._max_views:
                self._save_if_changed(self._views.popitem(last=False)[1])
        else:
            self._views.move_to_end(context_id)
        return view

    # -- persisted views (``view_snapshots``) ----------------------------

    @property
    def _snapshot_root(self) -> str:
        return self.path + ".views"

    def _load_view(self, context_id: str) -> ContextView:
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

    def _restore_view(self, context_id: str, name: str) -> ContextView:
        meta = view_snapshots.read_meta(self._snapshot_root, name)
        if meta.get("dim") != self.dimension:
            raise view_snapshots.SnapshotUnusable(f"snapshot {name} has dimension {meta.get('dim')}")
        return ContextView.restore(
            context_id, self.dimension, meta,
            lambda into: view_snapshots.read(self._snapshot_root, name, into)[1])

    def _replay(self, view: ContextView, after: int) -> int:
        """Apply to a restored view the unit rows logged after its snapshot: rows gone from
        SQLite leave the view, the others are read again. Returns how many rows were logged."""
        pks = view_snapshots.changed_pks(self._db, view.context_id, after)
        if not pks:
            return 0
        columns = ", ".join("u." + c.strip() for c in ROW_COLUMNS.split(","))
        found: list[tuple[Any, ...]] = []
        for chunk in chunks(pks, SQL_IN_CHUNK):  # type: ignore[arg-type]
            found += self._db.execute(
                f"SELECT {columns}, v.embedding, u.text FROM units u LEFT JOIN vectors v ON v.pk = u.pk "
                f"WHERE u.context_id = ? AND u.pk IN ({qmarks(chunk)}) ORDER BY u.pk",
                (view.context_id, *chunk)).fetchall()
        present = {r[1] for r in found}
        gone = {view.ids[view.row_of_pk[pk]] for pk in pks if pk in view.row_of_pk}
        view.remove([uid for uid in gone if uid is not None and uid not in present])
        if found:
            rows = [Row(*r[:12]) for r in found]
            for row in rows:  # a unit deleted and written again has a new key
                i = view.row_of.get(row.id)
                if i is not None and int(view.pks[i]) != row.pk:
                    view.row_of_pk.pop(int(view.pks[i]), None)
            zero = bytes(4 * self.dimension)
            blob = b"".join(r[12] if r[12] is not None else zero for r in found)
            vectors = np.frombuffer(blob, dtype="<f4").reshape(len(found), self.dimension)
            self._set_view_rows(view, rows, vectors, [r[13] for r in found])
        return len(pks)

    def _save_if_changed(self, view: ContextView) -> None:
        if view.saved_version != view.version and view.n - view.dead >= self.snapshot_min_rows:
            self._save_view(view)

    def _save_view(self, view: ContextView) -> None:
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

    def _build_view(self, context_id: str) -> ContextView:
        cur = self._db.execute(
            f"SELECT {', '.join('u.' + c.strip() for c in ROW_COLUMNS.split(','))}, v.embedding "
            "FROM units u LEFT JOIN vectors v ON v.pk = u.pk WHERE u.context_id = ? ORDER BY u.pk",
            (context_id,),
        )
        data = cur.fetchall()
        view = ContextView(context_id, self.dimension)
        if data:
            zero = bytes(4 * self.dimension)
            blob = b"".join(r[-1] if r[-1] is not None else zero for r in data)
            vectors = np.frombuffer(blob, dtype="<f4").reshape(len(data), self.dimension)
            view.load([r[:-1] for r in data], vectors)
        if len(data) <= term_index.MAX_ROWS:
            pks_texts = self._db.execute("SELECT pk, text FROM units WHERE context_id = ?", (context_id,)).fetchall()
            assert view.terms is not None
            for (pk, _), (counts, length) in zip(pks_texts, self._tokenizer.tokenize([t for _, t in pks_texts]),
                                                 strict=True):
                view.terms.set(view.row_of_pk[int(pk)], counts, length)
        else:
            view.terms = None
        if len(data) <= term_index.MAX_ROWS:  # a small context's features are read now, in SQL
            row_of_pk = view.row_of_pk
            for pk, features in self._db.execute(f"SELECT {FEATURE_COLUMNS} FROM units WHERE context_id = ?",
                                                 (context_id,)):
                r = row_of_pk.get(int(pk))
                if r is not None:
                    view.f_seq[r], view.f_key[r], view.f_occurred[r] = ranking_features(*json.loads(features))
                    view.f_known[r] = True
        return view

    def _units(self, view: ContextView, ids: list[str]) -> dict[str, SearchUnit]:
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
            for chunk in chunks(missing, SQL_IN_CHUNK):
                sql = f"SELECT id, payload FROM units WHERE context_id = ? AND id IN ({qmarks(chunk)})"
                for uid, payload in self._db.execute(sql, (view.context_id, *chunk)):
                    cache[uid] = unit_from_dict(json.loads(payload))
        return {uid: cache[uid] for uid in ids if uid in cache}

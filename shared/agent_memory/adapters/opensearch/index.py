"""``OpenSearchIndex``: the ``SearchIndex`` over one OpenSearch index in a domain or a
Serverless collection (the package docstring has the design): idempotent writes (external
versions on a domain, revisions compared by the adapter on Serverless), the legs of a query
in one round trip, and hits checked against the store's live revisions before ranking."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np

from agent_memory.adapters.opensearch.client import (
    CLIENT_TIMEOUT_S,
    make_client,
    unavailable_on_transport_failure,
)
from agent_memory.adapters.opensearch.mapping import (
    SCHEMA_VERSION,
    SERVERLESS_ENGINE,
    Engine,
    doc_id,
    index_body,
    unit_document,
)
from agent_memory.adapters.opensearch.queries import bm25_request, build_filter, excluding, knn_request
from agent_memory.adapters.search_units import embed_all, unit_from_dict
from agent_memory.kernel import timeutil
from agent_memory.ports import (
    Embedder,
    EmbedderMismatch,
    LiveRevisions,
    RecentWrites,
    RowLeg,
    RowRanking,
    SearchFilter,
    SearchHit,
    SearchMode,
    SearchUnavailable,
    SearchUnit,
)
from agent_memory.ranking.encoding import saturate
from agent_memory.ranking.rows import ranking_from_units
from agent_memory.ranking.visibility import nearest_visible

log = logging.getLogger("agent_memory.opensearch")

BULK_CHUNK = 500  # actions per bulk request
PAGE = 1000  # hits per page when listing copies


def new_copy_id() -> str:
    """Unique key of one stored copy of a unit on Serverless (sort key for paging deletes)."""
    return uuid.uuid4().hex


class OpenSearchBulkError(RuntimeError):
    """A bulk write had item failures other than version conflicts (which are by design)."""


class OpenSearchIndex:
    """``SearchIndex`` over one OpenSearch index (``index_name``) in an existing domain or
    Serverless collection. With ``create_index`` (local clusters, tests, the CLI) the index is
    created on first use if absent; without it (deployed functions) ``index_name`` is the
    alias the stack's deploy step made (``admin.provision``), the functions never
    hold ``CreateIndex``, and a missing index is ``SearchUnavailable("no-index")``.

    Every request names ``index_name`` in its path (no root-level call such as ``GET /`` or
    ``POST /_bulk``), so IAM or a Serverless data access policy can confine a tenant's
    functions to its own indexes. ``engine``: the k-NN engine of a new index, a deployment
    setting (``faiss``, the default, needs OpenSearch 2.19+ for cosine on a managed domain;
    ``lucene`` for older ones); Serverless always uses ``faiss``. ``live`` checks hits against
    the record store before ranking (``LiveRevisions``): without it a reader can see a copy
    the index has not yet replaced. ``refresh=True`` makes writes visible to the next search
    (tests; costly in production; Serverless has no refresh). ``timeout``: default seconds per
    request; every public method also takes ``timeout=`` for that call (a caller's deadline).
    ``client`` replaces the built client (tests, or a caller that already has one). ``clock``
    returns epoch seconds for "current" validity.
    """

    def __init__(
        self,
        endpoint: str,
        index_name: str,
        embedder: Embedder,
        *,
        service: Literal["aoss", "es"] = "aoss",
        region: str | None = None,
        engine: Engine | None = None,
        client: Any = None,
        refresh: bool = False,
        live: LiveRevisions | None = None,
        recent: RecentWrites | None = None,
        timeout: float | None = None,
        clock: Callable[[], float] = time.time,
        create_index: bool = True,
    ) -> None:
        if service not in ("aoss", "es"):
            raise ValueError("service must be 'aoss' or 'es'")
        if engine not in (None, "faiss", "lucene"):
            raise ValueError("engine must be 'faiss', 'lucene' or None")
        if service == "aoss" and engine == "lucene":
            raise ValueError(SERVERLESS_ENGINE)
        self.endpoint = endpoint
        self.index_name = index_name
        self.embedder = embedder
        self.dimension = int(embedder.dimension)
        self.service = service
        self.engine = engine
        self.refresh = refresh
        self.live = live
        self.recent = recent
        self.timeout = timeout
        self._clock = clock
        self.create_index = create_index
        self._client = client
        self._region = region
        self._ready = False
        self._lock = threading.Lock()
        self._client_lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The ``opensearchpy`` client, built on first use: importing opensearch-py (and
        requests under it) is about a third of a cold start's first request, and most routes
        never search."""
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    self._client = make_client(self.endpoint, service=self.service, region=self._region)
        return self._client

    # -- index lifecycle -------------------------------------------------------

    def resolve_engine(self) -> Engine:
        """The k-NN engine for a new index: configured (never asked of the cluster per request:
        ``GET /`` is a root-level call outside the tenant's index), else ``faiss``."""
        return self.engine or "faiss"

    def ensure_index(self, *, timeout: float | None = None) -> None:
        """Create the index if absent (``create_index``), else check its embedder ``_meta``
        (once per instance). Without ``create_index`` the only call is ``GET <index>/_mapping``
        (read permission on the index, no ``HEAD``/``PUT``)."""
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            opts = self._timeout(timeout)
            if not self.create_index:
                try:
                    self._check_meta(missing_ok=False, **opts)
                except EmbedderMismatch as exc:
                    # Deployed, the alias still serves the previous embedder's index until
                    # `agent-memory reindex --rebuild` switches it: an outage of search (reads
                    # fall back to the store), not a failed request.
                    raise SearchUnavailable("embedder-mismatch", str(exc), retry_after=300) from exc
            elif not self.client.indices.exists(index=self.index_name, **opts):
                body = index_body(self.embedder.name, self.dimension, self.resolve_engine())
                try:
                    self.client.indices.create(index=self.index_name, body=body, **opts)
                except Exception:
                    # another writer may have created it concurrently; anything else re-raises
                    if not self.client.indices.exists(index=self.index_name, **opts):
                        raise
                    self._check_meta()
            else:
                self._check_meta()
            self._ready = True

    def _check_meta(self, *, missing_ok: bool = True, **opts: Any) -> None:
        from opensearchpy.exceptions import NotFoundError

        try:
            mapping = self.client.indices.get_mapping(index=self.index_name, **opts)
        except NotFoundError as exc:
            if missing_ok:
                raise
            raise SearchUnavailable(
                "no-index", f"OpenSearch index {self.index_name!r} does not exist: the stack's deploy step "
                "(SearchIndexSetup in template.yaml) creates it, or `agent-memory reindex --rebuild`",
                retry_after=60) from exc
        entry = mapping.get(self.index_name) or next(iter(mapping.values()), {})
        meta = (entry.get("mappings") or {}).get("_meta") or {}
        if int(meta.get("schema_version") or 0) < SCHEMA_VERSION:
            log.warning("OpenSearch index %r has schema version %s (this code writes %s): it lacks text.cjk, so "
                        "Chinese, Japanese and Korean keywords match poorly until `agent-memory reindex --rebuild`",
                        self.index_name, meta.get("schema_version"), SCHEMA_VERSION)
        name, dim = meta.get("embedder_name"), meta.get("embedder_dimension")
        if name != self.embedder.name or dim is None or int(dim) != self.dimension:
            raise EmbedderMismatch(
                f"OpenSearch index {self.index_name!r} was built with embedder {name!r} "
                f"(dimension {dim}) but is being used with {self.embedder.name!r} "
                f"(dimension {self.dimension}); reindex into a new index or configure the original embedder"
            )

    # -- writes ------------------------------------------------------------------

    @unavailable_on_transport_failure
    def upsert(self, units: Sequence[SearchUnit], *, timeout: float | None = None) -> None:
        """Index units so that the highest revision wins whatever the arrival order (a batch
        holding one unit twice keeps its highest revision). See ``write``."""
        latest: dict[tuple[str, str], SearchUnit] = {}
        for u in units:
            prev = latest.get((u.context_id, u.id))
            if prev is None or u.revision >= prev.revision:
                latest[(u.context_id, u.id)] = u
        self.write(list(latest.values()), {}, timeout=timeout)

    @unavailable_on_transport_failure
    def delete(self, context_id: str, unit_ids: Sequence[str], *, timeout: float | None = None) -> None:
        self.write([], {context_id: list(unit_ids)}, timeout=timeout)

    @unavailable_on_transport_failure
    def write(self, upserts: Sequence[SearchUnit], deletes: dict[str, list[str]], *,
              timeout: float | None = None) -> None:
        """Upsert and delete units in one ``POST /<index>/_bulk`` (per ``BULK_CHUNK`` units).

        ``es`` (and self-managed clusters): ``_id`` derived from (context, unit) and
        ``version_type: external_gte`` with ``revision`` as the version, so OpenSearch itself
        refuses stale units (409, ignored here) and equal or newer ones overwrite. ``aoss``:
        Serverless vector collections refuse client ``_id``s and versioning, so one search
        first finds the stored copies (see ``_serverless_body``). Callers pass disjoint
        units (``projection.collapse``). Action lines never name the index: the request path
        does, so IAM scoped to the tenant's index ARN admits it and a domain with
        ``rest.action.multi.allow_explicit_index=false`` accepts it.
        """
        doomed = {(ctx, uid) for ctx, ids in deletes.items() for uid in ids}
        if not upserts and not doomed:
            return
        self.ensure_index(timeout=timeout)
        upserts = list(upserts)
        vectors = embed_all(self.embedder, [u.text for u in upserts])
        if self.service == "aoss":
            body = self._serverless_body(upserts, vectors, doomed, timeout)
        else:
            body = []
            for u, vec in zip(upserts, vectors, strict=True):
                body.append({"index": {"_id": doc_id(u.context_id, u.id), "version": int(u.revision),
                                       "version_type": "external_gte"}})
                body.append(unit_document(u, vec))
            body.extend({"delete": {"_id": doc_id(ctx, uid)}} for ctx, uid in sorted(doomed))
        self._bulk(body, timeout)
        if self.recent is not None and upserts:
            self.recent.note(upserts, vectors)  # searchable at once, before the next refresh

    def _serverless_body(self, upserts: list[SearchUnit], vectors: np.ndarray, doomed: set[tuple[str, str]],
                         timeout: float | None) -> list[dict[str, Any]]:
        """Serverless: documents get server-generated ids, so revisions are compared here.

        One search finds the visible copies of every unit; a unit is skipped when a copy has a
        higher revision, else its new copy is indexed and the copies it replaces deleted (and a
        deleted unit's copies go). Copies written within the last refresh interval are not
        visible yet and stay behind; readers never show them (``LiveRevisions``: they are not
        the current revision of a live record), the reader that meets one deletes it, and a k-NN
        leg it filled asks again without it (``_stale_refill``).
        """
        copies = self._copies([(u.context_id, u.id) for u in upserts] + sorted(doomed), timeout)
        body: list[dict[str, Any]] = []
        replaced: list[str] = []
        for u, vec in zip(upserts, vectors, strict=True):
            stored = copies.get((u.context_id, u.id), [])
            if any(rev > u.revision for _, rev in stored):
                continue  # a newer revision is already indexed
            body.append({"index": {}})
            body.append({**unit_document(u, vec), "copy_id": new_copy_id()})
            replaced.extend(doc for doc, _ in stored)
        for key in sorted(doomed):
            replaced.extend(doc for doc, _ in copies.get(key, []))
        body.extend({"delete": {"_id": d}} for d in replaced)
        return body

    def _copies(self, keys: Sequence[tuple[str, str]],
                timeout: float | None) -> dict[tuple[str, str], list[tuple[str, int]]]:
        """Visible copies of units: ``(context, unit) -> [(document _id, revision)]``, by one
        search over every context (paged on the unique ``copy_id`` if it ever fills a page)."""
        by_ctx: dict[str, set[str]] = {}
        for ctx, uid in keys:
            by_ctx.setdefault(ctx, set()).add(uid)
        if not by_ctx:
            return {}
        query = {"bool": {"should": [
            {"bool": {"filter": [{"term": {"context_id": ctx}}, {"terms": {"unit_id": sorted(uids)}}]}}
            for ctx, uids in sorted(by_ctx.items())
        ], "minimum_should_match": 1}}
        out: dict[tuple[str, str], list[tuple[str, int]]] = {}
        for h in self._paged_search(query, ["unit_id", "context_id", "revision"], timeout):
            src = h["_source"]
            out.setdefault((src["context_id"], src["unit_id"]), []).append((h["_id"], int(src["revision"])))
        return out

    def _paged_search(self, query: dict[str, Any], source: list[str] | bool,
                      timeout: float | None) -> list[dict[str, Any]]:
        """Every hit of ``query``, ``PAGE`` at a time in ``copy_id`` order (``search_after``)."""
        hits: list[dict[str, Any]] = []
        after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {"size": PAGE, "_source": source, "sort": [{"copy_id": "asc"}], "query": query}
            if after is not None:
                body["search_after"] = after
            page = self.client.search(index=self.index_name, body=body, **self._timeout(timeout))["hits"]["hits"]
            hits.extend(page)
            if len(page) < PAGE:
                return hits
            after = page[-1]["sort"]

    def _bulk(self, body: list[dict[str, Any]], timeout: float | None = None) -> None:
        """Send ``body`` (``index`` action + source pairs, single ``delete`` lines) in requests of
        at most ``BULK_CHUNK`` actions, never splitting an action from its source."""
        actions: list[list[dict[str, Any]]] = []
        i = 0
        while i < len(body):
            n = 2 if "index" in body[i] else 1
            actions.append(body[i : i + n])
            i += n
        for start in range(0, len(actions), BULK_CHUNK):
            self._bulk_request([line for action in actions[start : start + BULK_CHUNK] for line in action], timeout)

    def _bulk_request(self, body: list[dict[str, Any]], timeout: float | None) -> None:
        kwargs: dict[str, Any] = {"index": self.index_name, "body": body, **self._timeout(timeout)}
        if self.refresh and self.service != "aoss":  # Serverless has no refresh API
            kwargs["refresh"] = "wait_for"
        resp = self.client.bulk(**kwargs)
        if not resp.get("errors"):
            return
        failures = []
        for item in resp.get("items", []):
            (op, result), = item.items()
            status = int(result.get("status", 200))
            if status == 409 or (op == "delete" and status == 404):
                continue  # stale revision refused / already gone: both are the intended outcome
            if status >= 300:
                failures.append(f"{op} {result.get('_id')}: {status} {result.get('error')}")
        if failures:
            raise OpenSearchBulkError(f"{len(failures)} bulk item(s) failed: " + "; ".join(failures[:5]))

    def _timeout(self, timeout: float | None) -> dict[str, float]:
        """Per-call ``request_timeout``: the caller's, else the index default (none: the client's)."""
        from agent_memory.kernel import deadline

        t = timeout if timeout is not None else self.timeout
        if deadline.remaining() is not None:  # inside a request: fit its deadline
            t = deadline.timeout_for(t if t is not None else CLIENT_TIMEOUT_S, what="search index call")
        return {} if t is None else {"request_timeout": t}

    @unavailable_on_transport_failure
    def delete_context(self, context_id: str, *, timeout: float | None = None) -> None:
        """``delete_by_query`` on ``context_id``; on Serverless, page through the context's
        documents (``search_after`` on the unique ``copy_id``) and bulk-delete them."""
        self.ensure_index(timeout=timeout)
        if self.service == "aoss":
            hits = self._paged_search({"term": {"context_id": context_id}}, False, timeout)
            self._bulk([{"delete": {"_id": h["_id"]}} for h in hits], timeout)
            return
        kwargs: dict[str, Any] = {
            "index": self.index_name,
            "body": {"query": {"term": {"context_id": context_id}}},
            "conflicts": "proceed",
            **self._timeout(timeout),
        }
        if self.refresh:
            kwargs["refresh"] = True
        self.client.delete_by_query(**kwargs)

    # -- reads ---------------------------------------------------------------------

    @unavailable_on_transport_failure
    def get(self, context_id: str, unit_id: str, *, timeout: float | None = None) -> SearchUnit | None:
        """The unit, or ``None``; a copy that is not the current revision of a live record
        reads as absent (``live``)."""
        self.ensure_index(timeout=timeout)
        if self.service == "aoss":  # no client ids: the visible copies by query, newest first
            body = {
                "size": 4,
                "_source": ["payload"],
                "sort": [{"revision": "desc"}],
                "query": {"bool": {"filter": [{"term": {"context_id": context_id}},
                                              {"term": {"unit_id": unit_id}}]}},
            }
            hits = self.client.search(index=self.index_name, body=body, **self._timeout(timeout))["hits"]["hits"]
            units = self._live([(unit_from_dict(h["_source"]["payload"]), h["_id"]) for h in hits], timeout)
            return units[0] if units else None
        from opensearchpy.exceptions import NotFoundError

        try:
            resp = self.client.get(index=self.index_name, id=doc_id(context_id, unit_id),
                                   _source_includes="payload", **self._timeout(timeout))
        except NotFoundError:
            return None
        if not resp.get("found", True):
            return None
        units = self._live([(unit_from_dict(resp["_source"]["payload"]), resp.get("_id"))], timeout)
        return units[0] if units else None

    @unavailable_on_transport_failure
    def search(self, query: str, flt: SearchFilter, *, k: int = 10, mode: SearchMode,
               timeout: float | None = None) -> list[SearchHit]:
        """One leg (``SearchIndex.search``): cosines for ``vector``, saturated BM25 for ``bm25``."""
        if mode not in ("vector", "bm25"):
            raise ValueError(f"unknown search mode {mode!r}")
        if k <= 0:
            return []
        [hits] = self._legs(flt, [RowLeg(query, mode, k)], timeout)
        return [SearchHit(unit, score) for unit, score in hits]

    def prefetch_query(self, query: str) -> None:
        """Start embedding ``query`` (``ports.QueryPrefetch``) where the embedder can."""
        ahead = getattr(self.embedder, "embed_ahead", None)
        if ahead is not None:
            ahead(query)

    @unavailable_on_transport_failure
    def rank_rows(self, flt: SearchFilter, legs: Sequence[RowLeg], timeout: float | None = None) -> RowRanking:
        """The legs in one round trip (``_legs``; hits arrive decoded anyway), as columns with
        the hits' scores (cosine; saturated BM25, monotone in the raw score)."""
        ranked = self._legs(flt, legs, timeout)
        return ranking_from_units([[unit for unit, _ in hits] for hits in ranked],
                                  scores=[[score for _, score in hits] for hits in ranked])

    def _legs(self, flt: SearchFilter, legs: Sequence[RowLeg],
              timeout: float | None) -> list[list[tuple[SearchUnit, float]]]:
        """Each leg's hits as ``(unit, score)``, best first, a unit at most once per leg: the
        cosine for a vector leg, saturated BM25 for a text one. Every leg's request goes in one
        round trip (``_send``), and their hits are checked live in one batch before ranking."""
        for leg in legs:
            if leg.mode not in ("vector", "bm25"):
                raise ValueError(f"unknown row leg mode {leg.mode!r}")
        if not legs:
            return []
        self.ensure_index(timeout=timeout)
        now_iso = timeutil.iso(datetime.fromtimestamp(self._clock(), UTC))
        vectors: dict[str, np.ndarray] = {}
        filters: list[SearchFilter] = []
        bodies: list[dict[str, Any] | None] = []
        for leg in legs:
            leg_flt = flt if not leg.labels else dataclasses.replace(
                flt, labels=sorted({*(flt.labels or ()), *leg.labels}))
            body = None
            if leg.depth > 0 and leg.mode == "bm25" and leg.query.strip():
                body = bm25_request(leg.query, build_filter(leg_flt, now_iso), leg.depth)
            elif leg.depth > 0 and leg.mode == "vector":
                if leg.query not in vectors:
                    vectors[leg.query] = embed_all(self.embedder, [leg.query])[0]
                if np.any(vectors[leg.query]):  # no words, no direction: nothing to rank by
                    body = knn_request(vectors[leg.query], build_filter(leg_flt, now_iso), leg.depth)
            filters.append(leg_flt)
            bodies.append(body)
        opts = self._timeout(timeout)
        answers = iter(self._send([b for b in bodies if b is not None], opts))
        # Before ranking: drop copies that are not the current revision of a live record (the
        # index may lag the store), then keep each unit's first, best-ranked position per leg.
        indexed: list[list[tuple[SearchUnit, float, str | None]]] = []
        fresh: list[list[tuple[SearchUnit, float, str | None]]] = []
        noted: dict[tuple[str, str], list[tuple[SearchUnit, np.ndarray]]] = {}  # recent units: one read per call, not per leg
        for leg, leg_flt, body in zip(legs, filters, bodies, strict=True):
            indexed.append(self._parse_hits(next(answers) if body is not None else []))
            recent: list[tuple[SearchUnit, float, str | None]] = []
            if leg.mode == "vector" and body is not None and self.recent is not None:
                # Units written within the refresh interval join the vector leg (same filter rules).
                recent = [(u, (1.0 + cos) / 2.0, None)
                          for u, cos in self._recent_hits(vectors[leg.query], leg_flt, leg.depth, noted)]
            fresh.append(recent)
        parsed = [sorted(i + f, key=lambda h: -h[1]) if f else i for i, f in zip(indexed, fresh, strict=True)]
        flat = self._verdicts([(u, d) for found in parsed for u, _, d in found], timeout)
        refill = self._stale_refill(legs, bodies, parsed, flat, opts) if self.service == "aoss" else {}
        if refill:
            for i, hits in refill.items():
                parsed[i] = sorted(hits + fresh[i], key=lambda h: -h[1]) if fresh[i] else hits
            flat = self._verdicts([(u, d) for found in parsed for u, _, d in found], timeout)
        verdicts = iter(flat)
        units: dict[str, SearchUnit] = {}
        ranked_legs: list[list[tuple[str, float]]] = []
        for found in parsed:
            seen: set[str] = set()
            ranked: list[tuple[str, float]] = []
            for u, score, _ in found:
                if not next(verdicts):
                    continue
                if u.id not in units or u.revision > units[u.id].revision:
                    units[u.id] = u
                if u.id not in seen:
                    seen.add(u.id)
                    ranked.append((u.id, score))
            ranked_legs.append(ranked)
        out: list[list[tuple[SearchUnit, float]]] = []
        for leg, ranked in zip(legs, ranked_legs, strict=True):
            if leg.mode == "vector":  # cosinesimil scores are (1 + cos) / 2; report the cosine itself
                out.append([(units[uid], 2.0 * score - 1.0) for uid, score in ranked[:leg.depth]])
            else:
                out.append([(units[uid], saturate(score)) for uid, score in ranked[:leg.depth]])
        return out

    @staticmethod
    def _parse_hits(hits: list[dict[str, Any]]) -> list[tuple[SearchUnit, float, str | None]]:
        return [(unit_from_dict(h["_source"]["payload"]), float(h["_score"]), h.get("_id")) for h in hits]

    def _stale_refill(self, legs: Sequence[RowLeg], bodies: Sequence[dict[str, Any] | None],
                      parsed: list[list[tuple[SearchUnit, float, str | None]]], verdicts: list[bool],
                      opts: dict[str, float]) -> dict[int, list[tuple[SearchUnit, float, str | None]]]:
        """Serverless: a vector leg whose ``k`` index hits held dead copies (written within the
        60 s refresh interval and replaced before their writer could see them; deleted by
        ``_verdicts``, but searchable until the next refresh) asks once more with those copies
        excluded, so they take none of its ``k`` slots: ``leg -> its index hits``, one round trip
        for all such legs."""
        dead_by_leg: dict[int, list[str]] = {}
        at = 0
        for i, (leg, body, found) in enumerate(zip(legs, bodies, parsed, strict=True)):
            verdict = verdicts[at:at + len(found)]
            at += len(found)
            if leg.mode != "vector" or body is None:
                continue
            dead = sorted({d for (_, _, d), ok in zip(found, verdict, strict=True) if d and not ok})
            if dead and sum(1 for _, _, d in found if d) >= leg.depth:  # a full page: slots were lost
                dead_by_leg[i] = dead
        if not dead_by_leg:
            return {}
        retried = [excluding(bodies[i], ids) for i, ids in dead_by_leg.items()]  # type: ignore[arg-type]
        return {i: self._parse_hits(hits) for i, hits in zip(dead_by_leg, self._send(retried, opts), strict=True)}

    def _send(self, bodies: Sequence[dict[str, Any]], opts: dict[str, float]) -> list[list[dict[str, Any]]]:
        """The hits of each search body, in one round trip: a single body as ``_search``; several
        as one ``POST /<index>/_msearch`` on a domain, and as concurrent ``POST /<index>/_search``
        requests on Serverless (``_search`` is in the Serverless supported-operations table;
        ``_msearch`` could not be confirmed there)."""
        if not bodies:
            return []
        if len(bodies) == 1:
            return [self.client.search(index=self.index_name, body=bodies[0], **opts)["hits"]["hits"]]
        if self.service == "aoss":
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=len(bodies), thread_name_prefix="opensearch-leg") as pool:
                futures = [pool.submit(self.client.search, index=self.index_name, body=body, **opts)
                           for body in bodies]
                return [f.result()["hits"]["hits"] for f in futures]
        lines = [line for body in bodies for line in ({}, body)]
        responses = self.client.msearch(index=self.index_name, body=lines, **opts)["responses"]
        for r in responses:
            if "error" in r:
                raise RuntimeError(f"OpenSearch search failed: {r['error']}")
        return [r["hits"]["hits"] for r in responses]

    def _recent_hits(self, vec: np.ndarray, flt: SearchFilter, depth: int,
                     noted: dict[tuple[str, str], list[tuple[SearchUnit, np.ndarray]]] | None = None) -> list[tuple[SearchUnit, float]]:
        """The noted recent units (``recent``) that ``flt`` admits, nearest first, as
        ``(unit, cosine)``: the filter rules and the vector leg's order are ranking's
        (``ranking.visibility``), not a second copy of them. ``noted``: the candidates already
        read by this search call, by (context, partition)."""
        assert self.recent is not None
        where = (flt.context_id, flt.partition)
        noted = noted if noted is not None else {}
        if where not in noted:
            noted[where] = self.recent.candidates(*where)
        if not noted[where]:
            return []
        now_iso = timeutil.iso(datetime.fromtimestamp(self._clock(), UTC))
        return nearest_visible(noted[where], vec, flt, now_iso, depth)

    def _verdicts(self, hits: Sequence[tuple[SearchUnit, str | None]], timeout: float | None) -> list[bool]:
        """Which hits are live (``live``); on Serverless the dead copies found are deleted, as
        their writer could not see them (written within its refresh interval) and nothing
        else would: each is older than its record's current revision, or its record is gone."""
        if self.live is None or not hits:
            return [True] * len(hits)
        verdicts = self.live.live([u for u, _ in hits])
        if self.service == "aoss":
            dead = sorted({d for (_, d), ok in zip(hits, verdicts, strict=True) if not ok and d})
            if dead:
                try:
                    self._bulk([{"delete": {"_id": d}} for d in dead], timeout)
                except Exception:  # best effort: readers skip them either way, the next read retries
                    log.warning("could not delete %d dead copies from %s", len(dead), self.index_name, exc_info=True)
        return verdicts

    def _live(self, hits: Sequence[tuple[SearchUnit, str | None]], timeout: float | None) -> list[SearchUnit]:
        return [u for (u, _), ok in zip(hits, self._verdicts(hits, timeout), strict=True) if ok]

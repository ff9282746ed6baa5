"""OpenSearch search index: one k-NN index per tenant stack, hybrid BM25 + vector queries.

Why this shape:

- Every filter runs *inside* the search. The vector leg uses the k-NN plugin's efficient
  filtering (``"knn": {"embedding": {"vector", "k", "filter"}}``): the engine restricts the
  graph search to documents matching the filter, so ``k`` visible hits come back whenever
  ``k`` exist, unlike a post-filter that cuts after top-k. The BM25 leg carries the same
  bool filter. The two ranked lists are fused client-side by reciprocal rank (k=60), the
  same fusion as the embedded index, so both backends rank alike.
- Projections are idempotent and order-tolerant. On a managed domain (``service="es"``) or a
  self-managed cluster, bulk writes use ``_id`` = (context, unit) and ``version_type:
  external_gte`` with the unit's ``revision`` as the version, so a stale stream record is
  rejected by OpenSearch (HTTP 409, treated as success) and an equal revision overwrites.
  Serverless vector collections (``service="aoss"``) refuse client-chosen ``_id``s (and so
  external versions), have no refresh API and may lack ``_delete_by_query``; there the
  adapter compares revisions itself (look up the unit's stored copies, skip if one is newer,
  index the new copy, delete the replaced ones), readers keep the highest revision per unit,
  ``get`` is a query, and ``delete_context`` pages through the context and bulk-deletes.
- The index records the embedder in the mapping's ``_meta``; a different embedder name or
  dimension raises ``EmbedderMismatch`` instead of mixing incomparable vectors.
- ``opensearchpy`` and ``boto3`` are imported lazily so the domain package (and the
  embedded mode) never pays for them.

Scope visibility as an index filter (DNF; see ``agent_memory.scopes``). A unit is visible
to a region when it is unscoped or some clause has *every* path covered, where a region path
covers itself and its descendants. Each document stores:

- ``scope_unscoped``: ``true`` when the DNF is empty.
- ``scope_single_anc``: for every *single-path* clause ``[p]``, all of ``ancestors(p)``
  (``org/acme/user/alice`` -> ``org``, ``org/acme``, ``org/acme/user``, ``org/acme/user/alice``).
  Region path ``r`` covers ``p`` exactly when ``r`` is one of ``p``'s ancestors, and OR over
  clauses distributes over the union, so "some single-path clause is covered" is one plain
  ``terms`` query of the region paths against this field. This is the common case and needs
  no script.
- ``scope_multi``: for every clause with two or more paths, entries ``"<clause#>:<path>"``.
  "Every path of the clause covered" is a universal condition that a term query cannot
  express, so these are checked by a small painless ``script`` query (guarded by an
  ``exists`` filter so it only runs on the rare documents that have such clauses).

The scope filter is ``should: [unscoped, terms(single_anc, region), exists(multi) AND
script(region)]`` with ``minimum_should_match: 1``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlparse

import numpy as np

from agent_memory import timeutil
from agent_memory.adapters.embedded_search import (
    candidate_depth,
    embed_all,
    reciprocal_rank_fusion,
    saturate,
    unit_from_dict,
    unit_to_dict,
)
from agent_memory.ports import Embedder, EmbedderMismatch, SearchFilter, SearchHit, SearchMode, SearchUnit
from agent_memory.scopes import ancestors

Engine = Literal["faiss", "lucene"]
BULK_CHUNK = 500
SCHEMA_VERSION = 1

# Painless: true when some multi-path clause has every path covered by a region path.
# Doc values of a keyword field are a sorted set, so clauses are regrouped by their prefix.
SCOPE_MULTI_SCRIPT = (
    "Map ok = new HashMap(); "
    "for (String e : doc['scope_multi']) { "
    "int i = e.indexOf(':'); String c = e.substring(0, i); String p = e.substring(i + 1); "
    "boolean cov = false; "
    "for (String r : params.region) { if (p.equals(r) || p.startsWith(r + '/')) { cov = true; break; } } "
    "if (!cov) { ok.put(c, false); } else if (!ok.containsKey(c)) { ok.put(c, true); } "
    "} "
    "return ok.containsValue(true);"
)


def new_copy_id() -> str:
    """Unique key of one stored copy of a unit on Serverless (sort key for paging deletes)."""
    return uuid.uuid4().hex


class OpenSearchBulkError(RuntimeError):
    """A bulk write had item failures other than version conflicts (which are by design)."""


def _keyword() -> dict[str, str]:
    return {"type": "keyword"}


def index_body(embedder_name: str, dimension: int, engine: Engine) -> dict[str, Any]:
    """Settings and mapping for a new index. Every filter field is a ``keyword`` (or date/bool)
    so filters are exact; ``text`` uses the ``english`` analyzer (stemming, stopwords) for BM25,
    mirroring the porter tokenizer of the embedded index."""
    return {
        "settings": {"index": {"knn": True}},
        "mappings": {
            "dynamic": False,
            "_meta": {
                "embedder_name": embedder_name,
                "embedder_dimension": dimension,
                "schema_version": SCHEMA_VERSION,
            },
            "properties": {
                "unit_id": _keyword(),
                "context_id": _keyword(),
                "kind": _keyword(),
                "partition": _keyword(),
                "role": _keyword(),
                "session_id": _keyword(),
                "thread_id": _keyword(),
                "labels": _keyword(),
                "entity_ids": _keyword(),
                "source_ids": _keyword(),
                "acl_mode": _keyword(),
                "acl_readers": _keyword(),
                "scope_unscoped": {"type": "boolean"},
                "scope_single_anc": _keyword(),
                "scope_multi": _keyword(),
                "valid_from": {"type": "date"},
                "valid_until": {"type": "date"},
                "occurred_at": {"type": "date"},
                "revision": {"type": "long"},
                "copy_id": _keyword(),
                "text": {"type": "text", "analyzer": "english"},
                "embedding": {
                    "type": "knn_vector",
                    "dimension": dimension,
                    "method": {
                        "name": "hnsw",
                        "space_type": "cosinesimil",
                        "engine": engine,
                        "parameters": {"ef_construction": 128, "m": 16},
                    },
                },
                "payload": {"type": "object", "enabled": False},
            },
        },
    }


def doc_id(context_id: str, unit_id: str) -> str:
    """Document ``_id``: unique per index across contexts (``%`` and ``|`` escaped in the
    context id so the separator is unambiguous)."""
    ctx = context_id.replace("%", "%25").replace("|", "%7C")
    return f"{ctx}|{unit_id}"


def unit_document(unit: SearchUnit, vector: np.ndarray | None) -> dict[str, Any]:
    """The indexed document of a unit: filter fields, scope encoding (module docstring),
    text, vector (omitted when all zeros: cosine rejects zero vectors) and the full unit
    under ``payload`` (stored, not indexed) for ``get`` and hits."""
    single = sorted({a for clause in unit.scopes if len(clause) == 1 for a in ancestors(clause[0])})
    multi_clauses = sorted({tuple(sorted(set(c))) for c in unit.scopes if len(set(c)) > 1})
    multi = [f"{j}:{p}" for j, clause in enumerate(multi_clauses) for p in clause]
    if unit.acl_readers is None:
        acl_mode, readers = "open", []
    elif not unit.acl_readers:
        acl_mode, readers = "quarantine", []
    else:
        acl_mode, readers = "list", sorted(set(unit.acl_readers))
    doc: dict[str, Any] = {
        "unit_id": unit.id,
        "context_id": unit.context_id,
        "kind": unit.kind,
        "partition": unit.partition,
        "role": unit.role,
        "session_id": unit.session_id,
        "thread_id": unit.thread_id,
        "labels": sorted(set(unit.labels)),
        "entity_ids": list(unit.entity_ids),
        "source_ids": list(unit.source_ids),
        "acl_mode": acl_mode,
        "acl_readers": readers,
        "scope_unscoped": not unit.scopes,
        "scope_single_anc": single,
        "scope_multi": multi,
        "valid_from": _norm_time(unit.valid_from),
        "valid_until": _norm_time(unit.valid_until),
        "occurred_at": _norm_time(unit.occurred_at),
        "revision": int(unit.revision),
        "text": unit.text,
        "payload": unit_to_dict(unit),
    }
    if vector is not None and np.any(vector):
        doc["embedding"] = [float(x) for x in vector]
    return {k: v for k, v in doc.items() if v is not None}


def _norm_time(value: str | None) -> str | None:
    return None if value is None else timeutil.normalise(value)


def _open_or(field: str, bound: dict[str, str]) -> dict[str, Any]:
    """``field`` satisfies ``bound`` or is absent (an open end of the validity window)."""
    return {
        "bool": {
            "should": [
                {"range": {field: bound}},
                {"bool": {"must_not": [{"exists": {"field": field}}]}},
            ],
            "minimum_should_match": 1,
        }
    }


def build_filter(flt: SearchFilter, now_iso: str) -> dict[str, Any]:
    """The bool filter shared by the BM25 leg and the k-NN ``filter`` clause."""
    must: list[dict[str, Any]] = [
        {"term": {"context_id": flt.context_id}},
        {"term": {"partition": flt.partition}},
    ]
    if flt.kinds is not None:
        must.append({"terms": {"kind": list(flt.kinds)}})
    if flt.roles is not None:
        must.append({"terms": {"role": list(flt.roles)}})
    if flt.session_id is not None:
        must.append({"term": {"session_id": flt.session_id}})
    if flt.thread_id is not None:
        must.append({"term": {"thread_id": flt.thread_id}})
    for label in sorted(set(flt.labels or [])):
        must.append({"term": {"labels": label}})
    if flt.as_of is not None:
        t = timeutil.normalise(flt.as_of)
        must.append(_open_or("valid_from", {"lte": t}))
        must.append(_open_or("valid_until", {"gt": t}))
    else:
        must.append(_open_or("valid_until", {"gt": now_iso}))
    if flt.read_region is not None:
        region = sorted(set(flt.read_region))
        should: list[dict[str, Any]] = [{"term": {"scope_unscoped": True}}]
        if region:
            should.append({"terms": {"scope_single_anc": region}})
            should.append({
                "bool": {
                    "filter": [
                        {"exists": {"field": "scope_multi"}},
                        {"script": {"script": {"lang": "painless", "source": SCOPE_MULTI_SCRIPT,
                                               "params": {"region": region}}}},
                    ]
                }
            })
        must.append({"bool": {"should": should, "minimum_should_match": 1}})
    if not flt.admin:
        readers: list[dict[str, Any]] = [{"term": {"acl_mode": "open"}}]
        principals = sorted(set(flt.principals))
        if principals:
            readers.append({"terms": {"acl_readers": principals}})
        must.append({"bool": {"should": readers, "minimum_should_match": 1}})
    body: dict[str, Any] = {"filter": must}
    if flt.exclude_ids:
        body["must_not"] = [{"terms": {"unit_id": sorted(set(flt.exclude_ids))}}]
    return {"bool": body}


def _version_tuple(number: str) -> tuple[int, ...]:
    parts = []
    for piece in number.split("-")[0].split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


CLIENT_TIMEOUT_S = 30


def _call_timeout() -> dict[str, float]:
    """Inside a request, each call's ``request_timeout`` fits the request deadline (outside
    one, e.g. a reindex, the client's own timeout applies)."""
    from agent_memory import deadline

    if deadline.remaining() is None:
        return {}
    return {"request_timeout": deadline.timeout_for(CLIENT_TIMEOUT_S, what="search index call")}


def make_client(endpoint: str, *, service: str = "aoss", region: str | None = None) -> Any:
    """An ``opensearchpy.OpenSearch`` client for ``endpoint``.

    AWS endpoints are signed with SigV4 (``AWSV4SignerAuth(credentials, region, service)``,
    ``service`` ``es`` for a managed domain, ``aoss`` for Serverless); ``http://`` and
    localhost URLs are local clusters and get no signing (basic auth when the URL has
    user info, certificate checks off for localhost https, as dev clusters self-sign).
    """
    from opensearchpy import AWSV4SignerAuth, OpenSearch, RequestsHttpConnection

    parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
    https = parsed.scheme == "https"
    host = parsed.hostname or ""
    local = not https or host in ("localhost", "127.0.0.1", "::1")
    kwargs: dict[str, Any] = {
        "hosts": [{"host": host, "port": parsed.port or (443 if https else 80)}],
        "use_ssl": https,
        "verify_certs": https and not local,
        "ssl_show_warn": False,
        "connection_class": RequestsHttpConnection,
        "timeout": CLIENT_TIMEOUT_S,
    }
    if local:
        if parsed.username:
            kwargs["http_auth"] = (parsed.username, parsed.password or "")
    else:
        import boto3

        session = boto3.Session(region_name=region) if region else boto3.Session()
        signing_region = region or session.region_name
        if not signing_region:
            raise ValueError("OpenSearch SigV4 signing needs a region (pass region= or set AWS_REGION)")
        kwargs["http_auth"] = AWSV4SignerAuth(session.get_credentials(), signing_region, service)
    return OpenSearch(**kwargs)


class OpenSearchIndex:
    """``SearchIndex`` over one OpenSearch index (``index_name``) in an existing domain or
    Serverless collection; the index is created on first use if absent.

    ``engine``: ``None`` picks ``faiss`` on OpenSearch 2.19+ (cosine on faiss) and on
    Serverless, ``lucene`` on older clusters. ``refresh=True`` makes writes visible to the next
    search (tests; costly in production). ``client`` replaces the built client (tests, or a
    caller that already has one). ``clock`` returns epoch seconds for "current" validity.
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
        clock: Callable[[], float] = time.time,
    ) -> None:
        if service not in ("aoss", "es"):
            raise ValueError("service must be 'aoss' or 'es'")
        if engine not in (None, "faiss", "lucene"):
            raise ValueError("engine must be 'faiss', 'lucene' or None")
        self.endpoint = endpoint
        self.index_name = index_name
        self.embedder = embedder
        self.dimension = int(embedder.dimension)
        self.service = service
        self.engine = engine
        self.refresh = refresh
        self._clock = clock
        self.client = client if client is not None else make_client(endpoint, service=service, region=region)
        self._ready = False
        self._lock = threading.Lock()

    # -- index lifecycle -------------------------------------------------------

    def resolve_engine(self) -> Engine:
        """The k-NN engine for a new index: explicit, else from the cluster version."""
        if self.engine is not None:
            return self.engine
        if self.service == "aoss":
            return "faiss"
        number = str(self.client.info().get("version", {}).get("number", "0"))
        return "faiss" if _version_tuple(number) >= (2, 19) else "lucene"

    def ensure_index(self) -> None:
        """Create the index if absent, else check its embedder ``_meta`` (once per instance)."""
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            if not self.client.indices.exists(index=self.index_name):
                body = index_body(self.embedder.name, self.dimension, self.resolve_engine())
                try:
                    self.client.indices.create(index=self.index_name, body=body)
                except Exception:
                    # another writer may have created it concurrently; anything else re-raises
                    if not self.client.indices.exists(index=self.index_name):
                        raise
                    self._check_meta()
            else:
                self._check_meta()
            self._ready = True

    def _check_meta(self) -> None:
        mapping = self.client.indices.get_mapping(index=self.index_name)
        entry = mapping.get(self.index_name) or next(iter(mapping.values()), {})
        meta = (entry.get("mappings") or {}).get("_meta") or {}
        name, dim = meta.get("embedder_name"), meta.get("embedder_dimension")
        if name != self.embedder.name or dim is None or int(dim) != self.dimension:
            raise EmbedderMismatch(
                f"OpenSearch index {self.index_name!r} was built with embedder {name!r} "
                f"(dimension {dim}) but is being used with {self.embedder.name!r} "
                f"(dimension {self.dimension}); reindex into a new index or configure the original embedder"
            )

    # -- writes ------------------------------------------------------------------

    def upsert(self, units: Sequence[SearchUnit]) -> None:
        """Index units so that the highest revision wins whatever the arrival order.

        ``es`` (and self-managed clusters): one bulk request per chunk, ``_id`` derived from
        (context, unit), ``version_type: external_gte`` with ``revision`` as the version, so
        OpenSearch itself refuses stale units (409, ignored here) and equal or newer ones
        overwrite. ``aoss``: Serverless vector collections refuse client ``_id``s and
        versioning, so see ``_upsert_serverless``.
        """
        if not units:
            return
        self.ensure_index()
        latest: dict[tuple[str, str], SearchUnit] = {}
        for u in units:
            prev = latest.get((u.context_id, u.id))
            if prev is None or u.revision >= prev.revision:
                latest[(u.context_id, u.id)] = u
        todo = list(latest.values())
        vectors = embed_all(self.embedder, [u.text for u in todo])
        if self.service == "aoss":
            self._upsert_serverless(todo, vectors)
            return
        for start in range(0, len(todo), BULK_CHUNK):
            body: list[dict[str, Any]] = []
            for u, vec in zip(todo[start : start + BULK_CHUNK], vectors[start : start + BULK_CHUNK], strict=True):
                body.append({"index": {"_index": self.index_name, "_id": doc_id(u.context_id, u.id),
                                       "version": int(u.revision), "version_type": "external_gte"}})
                body.append(unit_document(u, vec))
            self._bulk(body)

    def _upsert_serverless(self, todo: list[SearchUnit], vectors: np.ndarray) -> None:
        """Serverless: documents get server-generated ids, so revisions are compared here.

        Look up the stored copies of each unit; skip a unit when a copy has a higher revision;
        otherwise index the new copy, then delete the copies it replaces. Index-then-delete
        never leaves a unit missing; a brief duplicate (or two copies left by racing
        writers) is hidden by readers, which keep the highest revision per unit, and is
        removed by the unit's next write or delete.
        """
        copies = self._copies([(u.context_id, u.id) for u in todo])
        index_body: list[dict[str, Any]] = []
        replaced: list[str] = []
        for u, vec in zip(todo, vectors, strict=True):
            stored = copies.get((u.context_id, u.id), [])
            if any(rev > u.revision for _, rev in stored):
                continue  # a newer revision is already indexed
            index_body.append({"index": {"_index": self.index_name}})
            index_body.append({**unit_document(u, vec), "copy_id": new_copy_id()})
            replaced.extend(doc for doc, _ in stored)
        for start in range(0, len(index_body), 2 * BULK_CHUNK):
            self._bulk(index_body[start : start + 2 * BULK_CHUNK])
        self._delete_docs(replaced)

    def _copies(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], list[tuple[str, int]]]:
        """Stored copies of units: ``(context, unit) -> [(document _id, revision)]``."""
        by_ctx: dict[str, list[str]] = {}
        for ctx, uid in keys:
            by_ctx.setdefault(ctx, []).append(uid)
        out: dict[tuple[str, str], list[tuple[str, int]]] = {}
        for ctx, uids in by_ctx.items():
            for start in range(0, len(uids), BULK_CHUNK):
                chunk = sorted(set(uids[start : start + BULK_CHUNK]))
                body = {
                    "size": 4 * len(chunk),
                    "_source": ["unit_id", "revision"],
                    "query": {"bool": {"filter": [{"term": {"context_id": ctx}}, {"terms": {"unit_id": chunk}}]}},
                }
                for h in self.client.search(index=self.index_name, body=body, **_call_timeout())["hits"]["hits"]:
                    src = h["_source"]
                    out.setdefault((ctx, src["unit_id"]), []).append((h["_id"], int(src["revision"])))
        return out

    def _delete_docs(self, doc_ids: Sequence[str]) -> None:
        for start in range(0, len(doc_ids), BULK_CHUNK):
            self._bulk([{"delete": {"_index": self.index_name, "_id": d}} for d in doc_ids[start : start + BULK_CHUNK]])

    def _bulk(self, body: list[dict[str, Any]]) -> None:
        if not body:
            return
        kwargs: dict[str, Any] = {"body": body}
        if self.refresh and self.service != "aoss":  # Serverless has no refresh API
            kwargs["refresh"] = "wait_for"
        resp = self.client.bulk(**kwargs, **_call_timeout())
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

    def delete(self, context_id: str, unit_ids: Sequence[str]) -> None:
        ids = list(dict.fromkeys(unit_ids))
        if not ids:
            return
        self.ensure_index()
        if self.service == "aoss":
            copies = self._copies([(context_id, uid) for uid in ids])
            self._delete_docs([doc for stored in copies.values() for doc, _ in stored])
            return
        self._delete_docs([doc_id(context_id, uid) for uid in ids])

    def delete_context(self, context_id: str) -> None:
        """``delete_by_query`` on ``context_id``; on Serverless, page through the context's
        documents (``search_after`` on the unique ``copy_id``) and bulk-delete them."""
        self.ensure_index()
        if self.service == "aoss":
            doomed: list[str] = []
            after: list[Any] | None = None
            while True:
                body: dict[str, Any] = {
                    "size": 1000,
                    "_source": False,
                    "sort": [{"copy_id": "asc"}],
                    "query": {"term": {"context_id": context_id}},
                }
                if after is not None:
                    body["search_after"] = after
                hits = self.client.search(index=self.index_name, body=body, **_call_timeout())["hits"]["hits"]
                doomed.extend(h["_id"] for h in hits)
                if len(hits) < 1000:
                    break
                after = hits[-1]["sort"]
            self._delete_docs(doomed)
            return
        kwargs: dict[str, Any] = {
            "index": self.index_name,
            "body": {"query": {"term": {"context_id": context_id}}},
            "conflicts": "proceed",
        }
        if self.refresh:
            kwargs["refresh"] = True
        self.client.delete_by_query(**kwargs, **_call_timeout())

    # -- reads ---------------------------------------------------------------------

    def get(self, context_id: str, unit_id: str) -> SearchUnit | None:
        self.ensure_index()
        if self.service == "aoss":  # no client ids: newest copy by query
            body = {
                "size": 1,
                "_source": ["payload"],
                "sort": [{"revision": "desc"}],
                "query": {"bool": {"filter": [{"term": {"context_id": context_id}},
                                              {"term": {"unit_id": unit_id}}]}},
            }
            hits = self.client.search(index=self.index_name, body=body, **_call_timeout())["hits"]["hits"]
            return unit_from_dict(hits[0]["_source"]["payload"]) if hits else None
        from opensearchpy.exceptions import NotFoundError

        try:
            resp = self.client.get(index=self.index_name, id=doc_id(context_id, unit_id),
                                   _source_includes="payload")
        except NotFoundError:
            return None
        if not resp.get("found", True):
            return None
        return unit_from_dict(resp["_source"]["payload"])

    def search(self, query: str, flt: SearchFilter, *, k: int = 10, mode: SearchMode = "hybrid") -> list[SearchHit]:
        if mode not in ("hybrid", "vector", "bm25"):
            raise ValueError(f"unknown search mode {mode!r}")
        if k <= 0:
            return []
        self.ensure_index()
        depth = candidate_depth(k) if mode == "hybrid" else k
        now_iso = timeutil.iso(datetime.fromtimestamp(self._clock(), UTC))
        flt_body = build_filter(flt, now_iso)
        bm25_body = self.bm25_request(query, flt_body, depth) if mode != "vector" and query.strip() else None
        knn_body = None
        if mode != "bm25":
            vec = embed_all(self.embedder, [query])[0]
            if np.any(vec):
                knn_body = self.knn_request(vec, flt_body, depth)
        legs: dict[str, list[dict[str, Any]]] = {}
        if bm25_body is not None and knn_body is not None:
            resp = self.client.msearch(index=self.index_name, body=[{}, bm25_body, {}, knn_body])
            responses = resp["responses"]
            for r in responses:
                if "error" in r:
                    raise RuntimeError(f"OpenSearch search failed: {r['error']}")
            legs["bm25"], legs["vector"] = (r["hits"]["hits"] for r in responses)
        elif bm25_body is not None:
            legs["bm25"] = self.client.search(index=self.index_name, body=bm25_body, **_call_timeout())["hits"]["hits"]
        elif knn_body is not None:
            legs["vector"] = self.client.search(index=self.index_name, body=knn_body, **_call_timeout())["hits"]["hits"]
        # Keep the highest revision of each unit (Serverless may briefly hold two copies) and
        # its first, best-ranked position in each leg.
        units: dict[str, SearchUnit] = {}
        ranked_legs: dict[str, list[tuple[str, float]]] = {}
        for leg, hits in legs.items():
            seen: set[str] = set()
            ranked_legs[leg] = []
            for h in hits:
                u = unit_from_dict(h["_source"]["payload"])
                if u.id not in units or u.revision > units[u.id].revision:
                    units[u.id] = u
                if u.id not in seen:
                    seen.add(u.id)
                    ranked_legs[leg].append((u.id, float(h["_score"])))
        if mode == "vector":
            # cosinesimil scores are (1 + cos) / 2; report the cosine itself
            ranked = [(uid, 2.0 * score - 1.0) for uid, score in ranked_legs.get("vector", [])]
        elif mode == "bm25":
            ranked = [(uid, saturate(score)) for uid, score in ranked_legs.get("bm25", [])]
        else:
            ranked = reciprocal_rank_fusion(
                [[uid for uid, _ in ranked_legs.get(leg, [])] for leg in ("bm25", "vector")]
            )
        return [SearchHit(units[uid], float(score)) for uid, score in ranked[:k]]

    @staticmethod
    def bm25_request(query: str, flt_body: dict[str, Any], depth: int) -> dict[str, Any]:
        return {
            "size": depth,
            "_source": ["payload"],
            "query": {"bool": {"must": [{"match": {"text": {"query": query}}}], "filter": [flt_body]}},
        }

    @staticmethod
    def knn_request(vector: np.ndarray, flt_body: dict[str, Any], depth: int) -> dict[str, Any]:
        return {
            "size": depth,
            "_source": ["payload"],
            "query": {"knn": {"embedding": {"vector": [float(x) for x in vector], "k": depth,
                                            "filter": flt_body}}},
        }

"""OpenSearch search index: one k-NN index per tenant stack, BM25 and vector legs.

Why this shape:

- Every filter runs *inside* the search. The vector leg uses the k-NN plugin's efficient
  filtering (``"knn": {"embedding": {"vector", "k", "filter"}}``): the engine restricts the
  graph search to documents matching the filter, so ``k`` visible hits come back whenever
  ``k`` exist, unlike a post-filter that cuts after top-k. The BM25 leg carries the same
  bool filter. The index answers ranked legs; fusing them is ``agent_memory.ranking``'s, the
  same for both backends, so they rank alike. The legs of one ``rank_rows`` call go in one
  round trip (``_msearch`` on a domain, concurrent ``_search`` requests on Serverless).
- Projections are idempotent and order-tolerant. On a managed domain (``service="es"``) or a
  self-managed cluster, bulk writes use ``_id`` = (context, unit) and ``version_type:
  external_gte`` with the unit's ``revision`` as the version, so a stale stream record is
  rejected by OpenSearch (HTTP 409, treated as success) and an equal revision overwrites.
  Serverless vector collections (``service="aoss"``) refuse client-chosen ``_id``s (and so
  external versions), have no refresh API and may lack ``_delete_by_query``; there the
  adapter compares revisions itself (one search for the units' visible copies, then one bulk
  that indexes new copies and deletes replaced ones), ``get`` is a query, and
  ``delete_context`` pages through the context and bulk-deletes.
- Writes become searchable only at the next refresh (about a second on a domain, longer on
  Serverless), so the index can still show a superseded, deleted or reader-narrowed copy,
  or (Serverless) a copy its writer could not see to delete. Every hit therefore carries its
  revision and record key, and before ranking the reader drops hits that are not the current
  revision of a live record (``LiveRevisions``: one consistent batched read of the store).
- Every request names the index in its path (``POST /<index>/_bulk``, never ``/_bulk`` or
  ``GET /``), so IAM or a Serverless data access policy confines a tenant to its own index.
- The index records the embedder in the mapping's ``_meta``; a different embedder name or
  dimension raises ``EmbedderMismatch`` instead of mixing incomparable vectors.
- ``opensearchpy`` and ``boto3`` are imported lazily so the domain package (and the
  embedded mode) never pays for them.

Scope visibility as an index filter (DNF; see ``agent_memory.access.scopes``). A unit is visible
to a region when it is unscoped or some clause has *every* path covered, where a region path
covers itself and its descendants. Each document stores:

- ``scope_unscoped``: ``true`` when the DNF is empty.
- ``scope_single_anc``: for every *single-path* clause ``[p]``, all of ``ancestors(p)``
  (``org/acme/user/alice`` -> ``org``, ``org/acme``, ``org/acme/user``, ``org/acme/user/alice``).
  Region path ``r`` covers ``p`` exactly when ``r`` is one of ``p``'s ancestors, and OR over
  clauses distributes over the union, so "some single-path clause is covered" is one plain
  ``terms`` query of the region paths against this field. This is the common case and needs
  no script.
- ``scope_clauses``: for every clause with two or more paths (up to ``MAX_CLAUSE_PATHS``), a
  nested object whose ``p<i>`` holds the ancestors of the clause's i-th path. "Every path of
  the clause covered" is then a nested query: some clause object where each ``p<i>`` meets the
  region (``terms``) or is absent. Plain terms and bools: no script, on either engine.

The scope filter is ``should: [unscoped, terms(single_anc, region), nested(every p<i> in
region or absent)]`` with ``minimum_should_match: 1``. A region path with ``*`` segments
(``users/*/private``) cannot be a ``terms`` value: it becomes an anchored ``regexp`` query on
the same ancestor fields (``users/[^/]+/private``), one per such path (``region_match``).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar
from urllib.parse import urlparse

import numpy as np

from agent_memory.access.scopes import WILDCARD, ancestors
from agent_memory.adapters.search_units import embed_all, unit_from_dict, unit_to_dict
from agent_memory.kernel import timeutil
from agent_memory.kernel.cjk import has_cjk
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

Engine = Literal["faiss", "lucene"]
BULK_CHUNK = 500  # actions per bulk request
PAGE = 1000  # hits per page when listing copies
# 2: multi-path scope clauses as nested terms (no script); 3: ``text.cjk`` (the ``cjk`` analyzer:
# Chinese, Japanese and Korean as character bigrams). An older index works without CJK keyword
# matches until ``agent-memory reindex --rebuild`` recreates it.
SCHEMA_VERSION = 3

# Vector collections run HNSW with Faiss only ("Working with vector search collections", Limitations:
# https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-vector-search.html).
SERVERLESS_ENGINE = "OpenSearch Serverless vector collections support only the faiss engine, not lucene"

# Paths per multi-path scope clause the index encodes (``scope_clauses.p0`` ...). A longer
# clause is left out of the document: it then admits no region-restricted reader (fail closed).
MAX_CLAUSE_PATHS = 16


def search_failure(exc: BaseException) -> SearchUnavailable | None:
    """The ``SearchUnavailable`` a transport failure means (refused, timed out, a 5xx,
    throttled), or ``None`` for anything else (a bad query stays a bug, not an outage)."""
    from opensearchpy import exceptions as ose

    if isinstance(exc, ose.ConnectionTimeout | TimeoutError):
        return SearchUnavailable("timeout", str(exc))
    if isinstance(exc, ose.ConnectionError | ConnectionError):
        return SearchUnavailable("refused", str(exc))
    if isinstance(exc, ose.TransportError) and isinstance(exc.status_code, int):
        if exc.status_code == 429:
            return SearchUnavailable("throttled", str(exc))
        if exc.status_code >= 500:
            return SearchUnavailable("server-error", str(exc))
    return None


_F = TypeVar("_F", bound=Callable[..., Any])


def _unavailable_on_transport_failure(method: _F) -> _F:
    """Public index calls raise ``SearchUnavailable`` for a transport failure."""
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except SearchUnavailable:
            raise
        except Exception as exc:
            failure = search_failure(exc)
            if failure is None:
                raise
            raise failure from exc

    return call  # type: ignore[return-value]


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
    mirroring the porter tokenizer of the embedded index, and its ``text.cjk`` subfield the
    built-in ``cjk`` analyzer (standard tokenizer, ``cjk_width``, lowercase, ``cjk_bigram``, stop
    words: Chinese, Japanese and Korean runs as overlapping bigrams), mirroring the embedded
    index's ``kernel.cjk`` terms."""
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
                "scope_clauses": {
                    "type": "nested",
                    "properties": {f"p{i}": _keyword() for i in range(MAX_CLAUSE_PATHS)},
                },
                "valid_from": {"type": "date"},
                "valid_until": {"type": "date"},
                "occurred_at": {"type": "date"},
                "revision": {"type": "long"},
                "copy_id": _keyword(),
                "text": {"type": "text", "analyzer": "english",
                         "fields": {"cjk": {"type": "text", "analyzer": "cjk"}}},
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
    multi_clauses = sorted({tuple(sorted(set(c))) for c in unit.scopes if 1 < len(set(c)) <= MAX_CLAUSE_PATHS})
    clauses = [{f"p{i}": ancestors(p) for i, p in enumerate(clause)} for clause in multi_clauses]
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
        "scope_clauses": clauses,
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


def _multi_clause_covered(region: list[str]) -> dict[str, Any]:
    """Some multi-path clause has every path covered: a nested clause object whose every
    ``p<i>`` (that path's ancestors) meets the region, or is absent (the clause is shorter).
    Plain ``nested``/``terms``/``bool``, which both engines run inside k-NN filters; Serverless
    vector collections support nested queries and filtering ("Working with vector search
    collections", https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-vector-search.html),
    where a Painless script query is not among the documented features."""
    each_path: list[dict[str, Any]] = [region_match("scope_clauses.p0", region),
                                       region_match("scope_clauses.p1", region)]
    for i in range(2, MAX_CLAUSE_PATHS):
        field = f"scope_clauses.p{i}"
        each_path.append({"bool": {"should": [region_match(field, region),
                                              {"bool": {"must_not": [{"exists": {"field": field}}]}}],
                                   "minimum_should_match": 1}})
    return {"nested": {"path": "scope_clauses", "query": {"bool": {"filter": each_path}}}}


# Characters Lucene's regexp syntax gives a meaning (with every optional operator enabled).
_REGEXP_SPECIAL = set('.?+*|{}[]()"\\#@&<>~^$')


def _regexp_literal(segment: str) -> str:
    return "".join("\\" + c if c in _REGEXP_SPECIAL else c for c in segment)


def wildcard_regexp(region_path: str) -> str:
    """The Lucene regexp (anchored: it matches whole terms) of a region path with ``*``
    segments: ``users/*/private`` -> ``users/[^/]+/private``. Matched against a field of
    ancestors, it finds exactly the paths the region path covers: a path is covered when its
    ancestor with as many segments as the region path matches segment by segment."""
    return "/".join("[^/]+" if seg == WILDCARD else _regexp_literal(seg) for seg in region_path.split("/"))


def region_match(field: str, region: Sequence[str]) -> dict[str, Any]:
    """Some value of ``field`` (a path's ancestors) is covered by ``region``: a ``terms``
    query for the literal region paths, and one ``regexp`` query per path with a mid-path
    or trailing ``*`` segment (a ``terms`` query would look for a literal ``*``)."""
    literal = sorted({p for p in region if WILDCARD not in p.split("/")})
    wild = sorted({p for p in region if WILDCARD in p.split("/")})
    if not wild:
        return {"terms": {field: literal}}
    should: list[dict[str, Any]] = [{"terms": {field: literal}}] if literal else []
    should += [{"regexp": {field: {"value": wildcard_regexp(p), "flags": "NONE"}}} for p in wild]
    return should[0] if len(should) == 1 else {"bool": {"should": should, "minimum_should_match": 1}}


def _path_in_view(field: str, lens_path: str, view: str) -> dict[str, Any]:
    """Some path whose ancestors ``field`` holds lies in ``lens_path``'s view
    (``access.scopes.lens_admits``). ``merged``'s ancestors themselves: the field holds the
    ancestor and nothing below it (a record with a second path below that ancestor is left
    out: narrower than the embedded index, never wider)."""
    should: list[dict[str, Any]] = [{"term": {field: lens_path}}]
    if view == "crossTeam":
        parent = lens_path.rpartition("/")[0]
        should = [region_match(field, [f"{parent}/{WILDCARD}" if parent else WILDCARD])]
    elif view == "merged":
        for anc in ancestors(lens_path)[:-1]:
            should.append({"bool": {"filter": [{"term": {field: anc}}],
                                    "must_not": [{"regexp": {field: {"value": _regexp_literal_path(anc) + "/.+",
                                                                     "flags": "NONE"}}}]}})
    return should[0] if len(should) == 1 else {"bool": {"should": should, "minimum_should_match": 1}}


def _regexp_literal_path(path: str) -> str:
    return "/".join(_regexp_literal(seg) for seg in path.split("/"))


def lens_match(lens: list[list[str]], view: str) -> dict[str, Any]:
    """The recall ``lens`` (``SearchFilter.lens``): some lens clause has every path matched by
    a path of the unit, from its single-path clauses (``scope_single_anc``) or its multi-path
    ones (the nested ``scope_clauses.p<i>``)."""
    clauses: list[dict[str, Any]] = []
    for clause in lens:
        each: list[dict[str, Any]] = []
        for lens_path in clause:
            nested = [_path_in_view(f"scope_clauses.p{i}", lens_path, view) for i in range(MAX_CLAUSE_PATHS)]
            each.append({"bool": {"should": [
                _path_in_view("scope_single_anc", lens_path, view),
                {"nested": {"path": "scope_clauses",
                            "query": {"bool": {"should": nested, "minimum_should_match": 1}}}},
            ], "minimum_should_match": 1}})
        clauses.append({"bool": {"filter": each}})
    if view == "merged":
        clauses.append({"term": {"scope_unscoped": True}})
    return {"bool": {"should": clauses, "minimum_should_match": 1}}


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
    elif flt.valid_window is None:
        must.append(_open_or("valid_until", {"gt": now_iso}))
    if flt.valid_window is not None:
        start, end = flt.valid_window
        if end is not None:
            must.append(_open_or("valid_from", {"lt": timeutil.normalise(end)}))
        if start is not None:
            must.append(_open_or("valid_until", {"gt": timeutil.normalise(start)}))
    if flt.lens:
        must.append(lens_match(flt.lens, flt.lens_view))
    if flt.any_labels is not None:
        must.append({"terms": {"labels": sorted(set(flt.any_labels))}})
    if flt.source_ids is not None:
        must.append({"terms": {"source_ids": sorted(set(flt.source_ids))}})
    if flt.read_region is not None:
        region = sorted(set(flt.read_region))
        should: list[dict[str, Any]] = [{"term": {"scope_unscoped": True}}]
        if region:
            should.append(region_match("scope_single_anc", region))
            should.append(_multi_clause_covered(region))
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


CLIENT_TIMEOUT_S = 30


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
    Serverless collection. With ``create_index`` (local clusters, tests, the CLI) the index is
    created on first use if absent; without it (deployed functions) ``index_name`` is the
    alias the stack's deploy step made (``opensearch_admin.provision``), the functions never
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

    @_unavailable_on_transport_failure
    def upsert(self, units: Sequence[SearchUnit], *, timeout: float | None = None) -> None:
        """Index units so that the highest revision wins whatever the arrival order (a batch
        holding one unit twice keeps its highest revision). See ``write``."""
        latest: dict[tuple[str, str], SearchUnit] = {}
        for u in units:
            prev = latest.get((u.context_id, u.id))
            if prev is None or u.revision >= prev.revision:
                latest[(u.context_id, u.id)] = u
        self.write(list(latest.values()), {}, timeout=timeout)

    @_unavailable_on_transport_failure
    def delete(self, context_id: str, unit_ids: Sequence[str], *, timeout: float | None = None) -> None:
        self.write([], {context_id: list(unit_ids)}, timeout=timeout)

    @_unavailable_on_transport_failure
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

    @_unavailable_on_transport_failure
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

    @_unavailable_on_transport_failure
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

    @_unavailable_on_transport_failure
    def search(self, query: str, flt: SearchFilter, *, k: int = 10, mode: SearchMode,
               timeout: float | None = None) -> list[SearchHit]:
        """One leg (``SearchIndex.search``): cosines for ``vector``, saturated BM25 for ``bm25``."""
        if mode not in ("vector", "bm25"):
            raise ValueError(f"unknown search mode {mode!r}")
        if k <= 0:
            return []
        [hits] = self._legs(flt, [RowLeg(query, mode, k)], timeout)
        return [SearchHit(unit, score) for unit, score in hits]

    @_unavailable_on_transport_failure
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
                body = self.bm25_request(leg.query, build_filter(leg_flt, now_iso), leg.depth)
            elif leg.depth > 0 and leg.mode == "vector":
                if leg.query not in vectors:
                    vectors[leg.query] = embed_all(self.embedder, [leg.query])[0]
                if np.any(vectors[leg.query]):  # no words, no direction: nothing to rank by
                    body = self.knn_request(vectors[leg.query], build_filter(leg_flt, now_iso), leg.depth)
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
        retried = [self._excluding(bodies[i], ids) for i, ids in dead_by_leg.items()]  # type: ignore[arg-type]
        return {i: self._parse_hits(hits) for i, hits in zip(dead_by_leg, self._send(retried, opts), strict=True)}

    @staticmethod
    def _excluding(body: dict[str, Any], doc_ids: list[str]) -> dict[str, Any]:
        """``body``'s k-NN request with the documents ``doc_ids`` filtered out inside the search."""
        spec = body["query"]["knn"]["embedding"]
        flt = {"bool": {"filter": [spec["filter"]], "must_not": [{"ids": {"values": doc_ids}}]}}
        return {**body, "query": {"knn": {"embedding": {**spec, "filter": flt}}}}

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

    @staticmethod
    def bm25_request(query: str, flt_body: dict[str, Any], depth: int) -> dict[str, Any]:
        """BM25 over ``text``; a query with Chinese, Japanese or Korean characters also over
        ``text.cjk`` (either may match: its bigrams are what those scripts need, the english
        field what the rest of the query needs)."""
        if not has_cjk(query):
            match: dict[str, Any] = {"must": [{"match": {"text": {"query": query}}}]}
        else:
            match = {"should": [{"match": {"text": {"query": query}}}, {"match": {"text.cjk": {"query": query}}}],
                     "minimum_should_match": 1}
        return {
            "size": depth,
            "_source": ["payload"],
            "query": {"bool": {**match, "filter": [flt_body]}},
        }

    @staticmethod
    def knn_request(vector: np.ndarray, flt_body: dict[str, Any], depth: int) -> dict[str, Any]:
        """k-NN with the filter inside (efficient filtering, faiss and lucene engines; Serverless
        vector collections run the k-NN plugin API with filtering and nested queries:
        https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-vector-search.html).
        Several legs go in one ``POST /<index>/_msearch`` on a domain and as concurrent ``_search``
        requests on Serverless (``_send``; supported operations:
        https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-genref.html)."""
        return {
            "size": depth,
            "_source": ["payload"],
            "query": {"knn": {"embedding": {"vector": [float(x) for x in vector], "k": depth,
                                            "filter": flt_body}}},
        }

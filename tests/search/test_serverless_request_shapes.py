"""Every request the OpenSearch adapters send to a Serverless vector collection (``service="aoss"``),
checked against AWS's documentation of what such a collection accepts. No collection runs here:
the adapters run through the real ``opensearchpy`` client against the near-real-time double
(``nrt_double``), which records each request as sent, and each one is looked up in the tables
below, taken from AWS's pages (linked). ``make test-opensearch`` remains the run on a real cluster.

- ``OPERATIONS``: "Supported OpenSearch API operations and permissions" (SUPPORTED_OPERATIONS): the
  operations a Serverless collection serves, each with the data access permission it needs. Rows
  marked "for search collection types only" (client-chosen document ids) are refused by vector
  collections, so a request matching only such a row fails here.
- ``VECTOR_LIMITS``: "Working with vector search collections" (VECTOR_SEARCH): engines, methods and
  space types a vector collection's ``knn_vector`` mapping may use (HNSW with Faiss only: no
  Lucene engine, no IVF; cosine, Euclidean and dot product; up to 16,000 dimensions), no inline
  or stored scripts, no refresh API (the refresh interval is the service's: 60 s).

The same check on the managed-domain (``es``) requests must find what a collection refuses
(``_msearch``, external versions, ``_delete_by_query``, ``refresh``): a check that cannot fail
checks nothing.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from nrt_double import NrtCluster

from agent_memory.adapters.opensearch.admin import provision, switch
from agent_memory.adapters.opensearch.index import OpenSearchIndex
from agent_memory.ports import RowLeg, SearchFilter, SearchUnit

SUPPORTED_OPERATIONS = "https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-genref.html"
VECTOR_SEARCH = "https://docs.aws.amazon.com/opensearch-service/latest/developerguide/serverless-vector-search.html"

# (permission, method, path, only for SEARCH collections) from SUPPORTED_OPERATIONS, the rows an
# adapter could send (the table also lists _cat, _resolve, _explain, _field_caps, _analyze ...).
OPERATIONS: list[tuple[str, str, str, bool]] = [
    ("aoss:CreateIndex", "PUT", "<index>", False),
    ("aoss:DescribeIndex", "GET", "<index>", False),
    ("aoss:DescribeIndex", "HEAD", "<index>", False),
    ("aoss:DescribeIndex", "GET", "<index>/_mapping", False),
    ("aoss:DescribeIndex", "GET", "<index>/_mappings", False),
    ("aoss:DescribeIndex", "GET", "<index>/_settings", False),
    ("aoss:WriteDocument", "POST", "<index>/_bulk", False),
    ("aoss:WriteDocument", "POST", "<index>/_doc", False),
    ("aoss:WriteDocument", "DELETE", "<index>/_doc/<id>", False),
    ("aoss:WriteDocument", "PUT", "<index>/_doc/<id>", True),
    ("aoss:WriteDocument", "POST", "<index>/_create/<id>", True),
    ("aoss:WriteDocument", "PUT", "<index>/_create/<id>", True),
    ("aoss:WriteDocument", "POST", "<index>/_update/<id>", True),
    ("aoss:ReadDocument", "GET", "<index>/_doc/<id>", False),
    ("aoss:ReadDocument", "GET", "<index>/_mget", False),
    ("aoss:ReadDocument", "GET", "<index>/_count", False),
    ("aoss:ReadDocument", "GET", "<index>/_search", False),
    ("aoss:ReadDocument", "POST", "<index>/_search", False),
    ("aoss:DeleteIndex", "DELETE", "<index>", False),
    ("aoss:CreateCollectionItems", "POST", "_aliases", False),
    ("aoss:DescribeCollectionItems", "GET", "_alias/<alias>", False),
]
# From VECTOR_SEARCH, "Limitations" and its introduction.
VECTOR_LIMITS = {
    "engines": {"faiss"},  # "don't support the Apache Lucene ANN engine"; nmslib is the unset default
    "methods": {"hnsw"},  # "support only the HNSW algorithm with Faiss. They don't support IVF"
    "space_types": {"l2", "cosinesimil", "innerproduct"},  # Euclidean, cosine similarity, dot product
    "max_dimension": 16_000,
}
# Query parameters a vector collection refuses: no refresh API, no client-chosen versions.
REFUSED_PARAMS = {"refresh", "version", "version_type", "if_seq_no", "if_primary_term", "op_type"}

ALIAS = "agent-memory-acme"


def _pattern(path: str) -> re.Pattern[str]:
    """A table path as a regexp: ``<index>``, ``<alias>`` and ``<id>`` are one path segment,
    an index name never starts with ``_``."""
    parts = [r"[^/_][^/]*" if p in ("<index>", "<alias>") else r"[^/]+" if p == "<id>" else re.escape(p)
             for p in path.split("/")]
    return re.compile("/" + "/".join(parts))


def documented(method: str, path: str) -> list[tuple[str, str, str, bool]]:
    """The table's rows that ``method path`` matches."""
    return [row for row in OPERATIONS if row[1] == method and _pattern(row[2]).fullmatch(path)]


def violations(requests: list[tuple[str, str, dict[str, Any], Any]]) -> list[str]:
    """What a Serverless vector collection would refuse among ``(method, path, params, body)``."""
    found = []
    for method, path, params, body in requests:
        rows = documented(method, path)
        if not rows:
            found.append(f"{method} {path}: not in AWS's supported operations")
        elif all(search_only for *_, search_only in rows):
            found.append(f"{method} {path}: for search collection types only (a client-chosen id)")
        if set(params) & REFUSED_PARAMS:
            found.append(f"{method} {path}: parameters {sorted(set(params) & REFUSED_PARAMS)}")
        if '"script"' in repr(body).replace("'", '"'):
            found.append(f"{method} {path}: a script (vector collections run none)")
        if path.endswith("/_bulk"):
            found += [f"{method} {path}: {problem}" for problem in bulk_violations(body)]
        if method == "PUT" and "/" not in path.strip("/"):
            found += mapping_violations(path, body)
    return found


def bulk_violations(lines: list[dict[str, Any]]) -> list[str]:
    """Index actions carry nothing (the service makes the id; vector collections take no
    client ids or versions, nor an index name in the body); deletes name only the id."""
    found, i = [], 0
    while i < len(lines):
        (op, meta), = lines[i].items()
        if op == "index" and meta:
            found.append(f"index action with {sorted(meta)} (ids are the service's)")
        elif op == "delete" and set(meta) != {"_id"}:
            found.append(f"delete action with {sorted(meta)}")
        elif op not in ("index", "delete"):
            found.append(f"bulk action {op}")
        i += 2 if op == "index" else 1
    return found


def mapping_violations(path: str, body: dict[str, Any]) -> list[str]:
    found = []
    if not ((body.get("settings") or {}).get("index") or {}).get("knn"):
        found.append(f"PUT {path}: settings.index.knn is not true")
    for field, spec in (body.get("mappings") or {}).get("properties", {}).items():
        if spec.get("type") != "knn_vector":
            continue
        method = spec.get("method") or {}
        if method.get("engine") not in VECTOR_LIMITS["engines"]:
            found.append(f"PUT {path}: {field} engine {method.get('engine')!r}")
        if method.get("name") not in VECTOR_LIMITS["methods"]:
            found.append(f"PUT {path}: {field} method {method.get('name')!r}")
        if method.get("space_type", spec.get("space_type")) not in VECTOR_LIMITS["space_types"]:
            found.append(f"PUT {path}: {field} space type {method.get('space_type')!r}")
        if not 1 <= int(spec.get("dimension", 0)) <= VECTOR_LIMITS["max_dimension"]:
            found.append(f"PUT {path}: {field} dimension {spec.get('dimension')}")
    return found


class CurrentRevisions:
    def __init__(self) -> None:
        self.current: dict[str, int] = {}

    def live(self, units):
        return [self.current.get(u.id) == u.revision for u in units]


def unit(uid: str, text: str, revision: int = 1, ctx: str = "acme") -> SearchUnit:
    return SearchUnit(id=uid, context_id=ctx, kind="turn", text=text, revision=revision)


def every_request(embedder, service: str) -> list[tuple[str, str, dict[str, Any], Any]]:
    """Each kind of request the adapters make: the deploy step (index, alias, a changed
    configuration's index and the rebuild's switch), then a function's every public call
    through the alias, stale copies included (written within one refresh interval)."""
    cluster = NrtCluster(service=service)
    client = cluster.client()
    engine = "faiss"
    provision(client, ALIAS, embedder.name, int(embedder.dimension), engine)
    # a function: no index creation, everything through the alias
    live = CurrentRevisions()
    idx = OpenSearchIndex("https://x.invalid", ALIAS, embedder, service=service, client=client, live=live,
                          create_index=False, engine=engine)

    def put(uid: str, text: str, revision: int) -> None:
        live.current[uid] = revision
        idx.upsert([unit(uid, text, revision)])

    put("u-a", "garden roses bloom red", 1)
    put("u-a", "garden roses bloom red today", 2)  # revision 1's copy stays behind (not visible yet)
    put("u-b", "garden roses need water", 1)
    put("u-c", "我最喜欢吃寿司", 1)
    cluster.refresh()
    flt = SearchFilter(context_id="acme", kinds=["turn"], read_region=["org/acme/*"], principals=["bob"])
    idx.search("garden roses bloom red", SearchFilter(context_id="acme"), k=2, mode="vector")
    idx.search("寿司", flt, k=3, mode="bm25")
    idx.rank_rows(flt, [RowLeg("garden roses", "vector", 5), RowLeg("garden roses", "bm25", 5)])
    idx.get("acme", "u-b")
    idx.delete("acme", ["u-b"])
    idx.write([unit("u-d", "tulips", 1)], {"acme": ["u-c"]})
    idx.delete_context("acme")
    # a changed configuration's index beside the serving one, and the rebuild's switch
    changed = provision(client, ALIAS, embedder.name + "-v2", int(embedder.dimension), engine)
    switch(client, ALIAS, changed.index)
    # a local or CLI index that creates its own
    OpenSearchIndex("https://x.invalid", "agent-memory-cli", embedder, service=service, client=client).ensure_index()
    return [(m, p, params, body) for (m, p, params), (_, _, body) in zip(cluster.requests, cluster.bodies, strict=True)]


def test_every_serverless_request_is_a_documented_vector_collection_operation(embedder):
    requests = every_request(embedder, "aoss")
    assert violations(requests) == []
    used = {row[1:3] for m, p, _, _ in requests for row in documented(m, p)}
    # the drive reached every kind of call the adapters make on a collection
    assert used >= {("PUT", "<index>"), ("HEAD", "<index>"), ("GET", "<index>/_mapping"), ("POST", "<index>/_bulk"),
                    ("POST", "<index>/_search"), ("GET", "_alias/<alias>"), ("POST", "_aliases")}, used
    # ... stale copies excluded by id inside a k-NN filter, and deleted by id in a bulk
    bodies = [b for _, p, _, b in requests]
    assert any("'ids'" in repr(b) for b in bodies)
    assert any(isinstance(b, list) and any("delete" in line for line in b) for b in bodies)


def test_the_index_mapping_is_what_a_vector_collection_accepts(embedder):
    creates = [(p, b) for m, p, _, b in every_request(embedder, "aoss") if m == "PUT"]
    assert creates and all(mapping_violations(p, b) == [] for p, b in creates)
    vector = creates[0][1]["mappings"]["properties"]["embedding"]
    assert vector["method"] == {"name": "hnsw", "space_type": "cosinesimil", "engine": "faiss",
                                "parameters": {"ef_construction": 128, "m": 16}}
    # the checks fail on what AWS says a collection refuses
    lucene = {**creates[0][1], "mappings": {"properties": {"embedding": {
        **vector, "dimension": 16_001, "method": {**vector["method"], "engine": "lucene", "name": "ivf"}}}}}
    assert len(mapping_violations("/x", lucene)) == 3


def test_the_managed_domain_requests_would_be_refused_by_a_collection(embedder):
    """The es path sends what a vector collection refuses; the check finds each kind."""
    found = "\n".join(violations(every_request(embedder, "es")))
    assert "_msearch: not in AWS's supported operations" in found
    assert "_delete_by_query: not in AWS's supported operations" in found
    assert "index action with ['_id', 'version', 'version_type']" in found


def test_a_lucene_engine_on_serverless_is_refused_before_any_request(embedder):
    with pytest.raises(ValueError, match="only the faiss engine"):
        OpenSearchIndex("https://x.invalid", ALIAS, embedder, service="aoss", engine="lucene")

"""Query DSL of the OpenSearch index: the bool filter every leg carries (validity, scopes as
``terms``/``nested``/anchored ``regexp`` over the ancestors a document stores, the recall lens,
readers) and the request bodies of the BM25 and k-NN legs, the filter inside the search."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from agent_memory.access.scopes import WILDCARD, ancestors
from agent_memory.adapters.opensearch.mapping import MAX_CLAUSE_PATHS
from agent_memory.kernel import timeutil
from agent_memory.kernel.cjk import has_cjk
from agent_memory.ports import SearchFilter


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


def excluding(body: dict[str, Any], doc_ids: list[str]) -> dict[str, Any]:
    """``body``'s k-NN request with the documents ``doc_ids`` filtered out inside the search."""
    spec = body["query"]["knn"]["embedding"]
    flt = {"bool": {"filter": [spec["filter"]], "must_not": [{"ids": {"values": doc_ids}}]}}
    return {**body, "query": {"knn": {"embedding": {**spec, "filter": flt}}}}

"""The OpenSearch index's settings and mapping, and the document each search unit becomes:
filter fields, the scope encoding (the package docstring), text and vector, the unit itself
stored unindexed under ``payload``."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from agent_memory.access.scopes import ancestors
from agent_memory.adapters.search_units import unit_to_dict
from agent_memory.kernel import timeutil
from agent_memory.ports import SearchUnit

Engine = Literal["faiss", "lucene"]
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
    """The indexed document of a unit: filter fields, scope encoding (package docstring),
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

"""OpenSearchIndex without a cluster: a recording fake client captures every request and the
tests pin the exact bodies (mapping for both engines, the legs of a fused search in one
``_msearch`` with every filter inside the knn clause, bm25-only, bulk upsert with external_gte versioning, deletes). A small
evaluator of the query-DSL subset we emit then checks the filter semantics (DNF scopes,
reader lists, validity) against the reference rules in ``agent_memory.access.scopes`` on the
documents the adapter writes. The same contract suite as the embedded index runs against a
real cluster only when AGENT_MEMORY_OPENSEARCH_URL is set.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fused_search import fused_search
from opensearchpy.exceptions import NotFoundError
from query_dsl import matches

from agent_memory.access import scopes as scope_rules
from agent_memory.adapters.opensearch.client import make_client
from agent_memory.adapters.opensearch.index import OpenSearchBulkError, OpenSearchIndex
from agent_memory.adapters.opensearch.mapping import unit_document
from agent_memory.adapters.opensearch.queries import build_filter
from agent_memory.ports import EmbedderMismatch, SearchFilter, SearchUnit

REPO = Path(__file__).resolve().parents[2]
NOW = 1_735_689_600.0  # 2025-01-01T00:00:00Z
NOW_ISO = "2025-01-01T00:00:00.000Z"


class RecordingIndices:
    def __init__(self, client: RecordingClient, exists: bool, meta: dict[str, Any] | None) -> None:
        self._client, self._exists, self._meta = client, exists, meta

    def exists(self, **kw: Any) -> bool:
        self._client.calls.append(("indices.exists", kw))
        return self._exists

    def create(self, **kw: Any) -> dict[str, Any]:
        self._client.calls.append(("indices.create", kw))
        self._exists = True
        return {"acknowledged": True}

    def get_mapping(self, **kw: Any) -> dict[str, Any]:
        self._client.calls.append(("indices.get_mapping", kw))
        return {kw["index"]: {"mappings": {"_meta": self._meta or {}}}}


class RecordingClient:
    """Records ``(method, kwargs)``; answers from canned responses."""

    def __init__(self, *, version: str = "2.19.1", exists: bool = True, meta: dict[str, Any] | None = None,
                 responses: dict[str, Any] | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.version = version
        self.indices = RecordingIndices(self, exists, meta)
        self.responses = responses or {}

    def requests(self, method: str) -> list[dict[str, Any]]:
        return [kw for m, kw in self.calls if m == method]

    def info(self) -> dict[str, Any]:
        self.calls.append(("info", {}))
        return {"version": {"number": self.version, "distribution": "opensearch"}}

    def _answer(self, method: str, kw: dict[str, Any], default: Any) -> Any:
        self.calls.append((method, kw))
        answer = self.responses.get(method, default)
        if callable(answer):  # answers by request (concurrent calls arrive in any order)
            answer = answer(kw)
        if isinstance(answer, list):  # a queue of answers, one per call
            answer = answer.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def bulk(self, **kw: Any) -> dict[str, Any]:
        return self._answer("bulk", kw, {"errors": False, "items": []})

    def search(self, **kw: Any) -> dict[str, Any]:
        return self._answer("search", kw, {"hits": {"hits": []}})

    def msearch(self, **kw: Any) -> dict[str, Any]:
        return self._answer("msearch", kw, {"responses": [{"hits": {"hits": []}}, {"hits": {"hits": []}}]})

    def get(self, **kw: Any) -> dict[str, Any]:
        return self._answer("get", kw, {"found": False})

    def delete_by_query(self, **kw: Any) -> dict[str, Any]:
        return self._answer("delete_by_query", kw, {"deleted": 0})


def make(embedder, client: RecordingClient | None = None, **kw: Any) -> tuple[OpenSearchIndex, RecordingClient]:
    client = client or RecordingClient(meta={"embedder_name": embedder.name, "embedder_dimension": embedder.dimension})
    kw.setdefault("service", "es")
    idx = OpenSearchIndex("https://search-x.eu-west-1.es.amazonaws.com", "memory-tenant1", embedder,
                          client=client, clock=lambda: NOW, **kw)
    return idx, client


def hit(unit: SearchUnit, score: float) -> dict[str, Any]:
    return {"_id": f"{unit.context_id}|{unit.id}", "_score": score, "_source": {"payload": unit_payload(unit)}}


def unit_payload(unit: SearchUnit) -> dict[str, Any]:
    import dataclasses

    return dataclasses.asdict(unit)


# ---------------------------------------------------------------------------
# client construction and lazy imports
# ---------------------------------------------------------------------------


def test_module_import_does_not_import_opensearchpy_or_boto3() -> None:
    code = ("import sys, agent_memory.adapters.opensearch.index, agent_memory.adapters.opensearch.admin; "
            "bad = [m for m in ('opensearchpy', 'boto3', 'botocore') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_aws_endpoints_are_sigv4_signed_for_es_and_aoss(monkeypatch) -> None:
    from opensearchpy import AWSV4SignerAuth

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    for service, url in [("es", "https://search-x.eu-west-1.es.amazonaws.com"),
                         ("aoss", "https://abc123.eu-west-1.aoss.amazonaws.com")]:
        conn = make_client(url, service=service, region="eu-west-1").transport.get_connection()
        auth = conn.session.auth
        assert isinstance(auth, AWSV4SignerAuth)
        assert (auth.service, auth.signer.region) == (service, "eu-west-1")
        assert conn.host == url + ":443"


def test_local_urls_use_plain_http_without_signing() -> None:
    conn = make_client("http://localhost:9200", service="es").transport.get_connection()
    assert conn.host == "http://localhost:9200" and conn.session.auth is None
    conn = make_client("https://admin:pw@localhost:9200", service="es").transport.get_connection()
    assert conn.session.auth == ("admin", "pw")


# ---------------------------------------------------------------------------
# index creation
# ---------------------------------------------------------------------------


def expected_index_body(engine: str, name: str, dim: int) -> dict[str, Any]:
    kw = {"type": "keyword"}
    return {
        "settings": {"index": {"knn": True}},
        "mappings": {
            "dynamic": False,
            "_meta": {"embedder_name": name, "embedder_dimension": dim, "schema_version": 3},
            "properties": {
                "unit_id": kw, "context_id": kw, "kind": kw, "partition": kw, "role": kw, "session_id": kw,
                "thread_id": kw, "labels": kw, "entity_ids": kw, "source_ids": kw, "acl_mode": kw,
                "acl_readers": kw, "scope_unscoped": {"type": "boolean"}, "scope_single_anc": kw,
                "scope_clauses": {"type": "nested", "properties": {f"p{i}": kw for i in range(16)}},
                "valid_from": {"type": "date"}, "valid_until": {"type": "date"},
                "occurred_at": {"type": "date"}, "revision": {"type": "long"}, "copy_id": kw,
                # OpenSearch's built-in cjk analyzer (standard tokenizer, cjk_width, lowercase,
                # cjk_bigram, stop): Chinese, Japanese and Korean runs as overlapping bigrams
                "text": {"type": "text", "analyzer": "english", "fields": {"cjk": {"type": "text", "analyzer": "cjk"}}},
                "embedding": {
                    "type": "knn_vector",
                    "dimension": dim,
                    "method": {"name": "hnsw", "space_type": "cosinesimil", "engine": engine,
                               "parameters": {"ef_construction": 128, "m": 16}},
                },
                "payload": {"type": "object", "enabled": False},
            },
        },
    }


@pytest.mark.parametrize(
    ("service", "override", "engine"),
    [("es", None, "faiss"), ("es", "lucene", "lucene"), ("es", "faiss", "faiss"), ("aoss", None, "faiss")],
)
def test_index_creation_mapping(embedder, service, override, engine) -> None:
    client = RecordingClient(version="2.17.0", exists=False)
    idx, _ = make(embedder, client, service=service, engine=override)
    idx.search("anything", SearchFilter(context_id="c"), k=3, mode="bm25")
    created = client.requests("indices.create")
    assert created == [{"index": "memory-tenant1", "body": expected_index_body(engine, "test/bow", 64)}]
    # The engine is a deployment setting: never a root-level ``GET /`` outside the tenant's index.
    assert not client.requests("info")
    idx.search("again", SearchFilter(context_id="c"), k=3, mode="bm25")
    assert len(client.requests("indices.exists")) == 1  # checked once per instance


def test_a_query_with_cjk_characters_also_matches_the_cjk_subfield(embedder) -> None:
    client = RecordingClient(meta={"embedder_name": embedder.name, "embedder_dimension": embedder.dimension,
                                   "schema_version": 3})
    idx, _ = make(embedder, client)
    idx.search("东京 tea", SearchFilter(context_id="c"), k=3, mode="bm25")
    idx.search("green tea", SearchFilter(context_id="c"), k=3, mode="bm25")
    bodies = [r["body"]["query"]["bool"] for r in client.requests("search")]
    assert bodies[0]["should"] == [{"match": {"text": {"query": "东京 tea"}}},
                                   {"match": {"text.cjk": {"query": "东京 tea"}}}]
    assert bodies[0]["minimum_should_match"] == 1  # with a filter beside it, should alone would match all
    assert "must" not in bodies[0]
    assert bodies[1]["must"] == [{"match": {"text": {"query": "green tea"}}}] and "should" not in bodies[1]


def test_the_cjk_subfield_matches_what_the_cjk_analyzer_indexes():
    """The embedded index's terms (kernel.cjk) are the cjk_bigram filter's output, as
    OpenSearch documents it: adjacent CJK characters paired, a lone one kept, other scripts
    and punctuation ending a run."""
    from agent_memory.kernel.cjk import cjk_bigrams

    assert cjk_bigrams("我喜欢寿司").split() == ["我喜", "喜欢", "欢寿", "寿司"]
    assert cjk_bigrams("東京に住む").split() == ["東京", "京に", "に住", "住む"]
    assert cjk_bigrams("서울 날씨").split() == ["서울", "날씨"]
    assert cjk_bigrams("猫").split() == ["猫"]
    assert cjk_bigrams("ＡＢＣ株式会社").split() == ["ABC", "株式", "式会", "会社"]  # cjk_width folds full width
    assert cjk_bigrams("plain text, unchanged") == "plain text, unchanged"


def test_existing_index_with_another_embedder_raises(embedder) -> None:
    for meta in ({"embedder_name": "openai/text-embedding-3-small", "embedder_dimension": 64},
                 {"embedder_name": "test/bow", "embedder_dimension": 1536}, {}):
        idx, client = make(embedder, RecordingClient(meta=meta))
        with pytest.raises(EmbedderMismatch) as err:
            idx.upsert([SearchUnit(id="a", context_id="c", kind="turn", text="x")])
        assert "test/bow" in str(err.value) and "memory-tenant1" in str(err.value)
        assert not client.requests("bulk")


# ---------------------------------------------------------------------------
# queries
# ---------------------------------------------------------------------------

EVERY_FILTER = SearchFilter(
    context_id="ctx-1", partition="p1", read_region=["org/beta", "org/acme"], principals=["group:eng", "alice"],
    as_of="2024-05-01T12:00:00Z", kinds=["turn", "attribute"], roles=["user"], session_id="sess_1",
    thread_id="thr_1", labels=["b", "a"], exclude_ids=["turn_9", "turn_8"],
)

EVERY_FILTER_BODY = {
    "bool": {
        "filter": [
            {"term": {"context_id": "ctx-1"}},
            {"term": {"partition": "p1"}},
            {"terms": {"kind": ["turn", "attribute"]}},
            {"terms": {"role": ["user"]}},
            {"term": {"session_id": "sess_1"}},
            {"term": {"thread_id": "thr_1"}},
            {"term": {"labels": "a"}},
            {"term": {"labels": "b"}},
            {"bool": {"should": [{"range": {"valid_from": {"lte": "2024-05-01T12:00:00.000Z"}}},
                                 {"bool": {"must_not": [{"exists": {"field": "valid_from"}}]}}],
                      "minimum_should_match": 1}},
            {"bool": {"should": [{"range": {"valid_until": {"gt": "2024-05-01T12:00:00.000Z"}}},
                                 {"bool": {"must_not": [{"exists": {"field": "valid_until"}}]}}],
                      "minimum_should_match": 1}},
            {"bool": {"should": [
                {"term": {"scope_unscoped": True}},
                {"terms": {"scope_single_anc": ["org/acme", "org/beta"]}},
                {"nested": {"path": "scope_clauses", "query": {"bool": {"filter": [
                    {"terms": {"scope_clauses.p0": ["org/acme", "org/beta"]}},
                    {"terms": {"scope_clauses.p1": ["org/acme", "org/beta"]}},
                    *[{"bool": {"should": [
                        {"terms": {f"scope_clauses.p{i}": ["org/acme", "org/beta"]}},
                        {"bool": {"must_not": [{"exists": {"field": f"scope_clauses.p{i}"}}]}}],
                        "minimum_should_match": 1}} for i in range(2, 16)],
                ]}}}},
            ], "minimum_should_match": 1}},
            {"bool": {"should": [{"term": {"acl_mode": "open"}}, {"terms": {"acl_readers": ["alice", "group:eng"]}}],
                      "minimum_should_match": 1}},
        ],
        "must_not": [{"terms": {"unit_id": ["turn_8", "turn_9"]}}],
    }
}

MINIMAL_FILTER_BODY = {
    "bool": {
        "filter": [
            {"term": {"context_id": "ctx-1"}},
            {"term": {"partition": "default"}},
            {"bool": {"should": [{"range": {"valid_until": {"gt": NOW_ISO}}},
                                 {"bool": {"must_not": [{"exists": {"field": "valid_until"}}]}}],
                      "minimum_should_match": 1}},
            {"bool": {"should": [{"term": {"acl_mode": "open"}}], "minimum_should_match": 1}},
        ]
    }
}


def _units(n: int) -> list[SearchUnit]:
    return [SearchUnit(id=f"u{i}", context_id="ctx-1", kind="turn", text=f"text {i}") for i in range(n)]


def test_fused_legs_go_in_one_msearch_with_every_filter_inside_knn(embedder) -> None:
    u = _units(4)
    responses = {"msearch": {"responses": [
        {"hits": {"hits": [hit(u[0], 7.0), hit(u[1], 5.0), hit(u[2], 1.0)]}},
        {"hits": {"hits": [hit(u[1], 0.9), hit(u[3], 0.8), hit(u[0], 0.7)]}},
    ]}}
    idx, client = make(embedder, RecordingClient(meta={"embedder_name": "test/bow", "embedder_dimension": 64},
                                                 responses=responses))
    hits = fused_search(idx, "where does alice work", EVERY_FILTER, k=3)
    vector = [float(x) for x in embedder.embed(["where does alice work"])[0]]
    assert client.requests("msearch") == [{
        "index": "memory-tenant1",
        "body": [
            {},
            {"size": 50, "_source": ["payload"],
             "query": {"bool": {"must": [{"match": {"text": {"query": "where does alice work"}}}],
                                "filter": [EVERY_FILTER_BODY]}}},
            {},
            {"size": 50, "_source": ["payload"],
             "query": {"knn": {"embedding": {"vector": vector, "k": 50, "filter": EVERY_FILTER_BODY}}}},
        ],
    }]
    # RRF(k=60): u1 = 1/62 + 1/61, u0 = 1/61 + 1/63, u3 = 1/62, u2 = 1/63
    assert [h.unit.id for h in hits] == ["u1", "u0", "u3"]
    assert hits[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert hits[0].unit == u[1]


def test_every_leg_of_rank_rows_goes_in_one_round_trip(embedder) -> None:
    """A retrieval's legs (BM25, vectors, an entity's vectors) cost one request, not one each:
    one ``_msearch`` on a domain, concurrent ``_search`` requests on Serverless."""
    from agent_memory.ports import RowLeg

    u = _units(3)
    legs = [RowLeg("alice trip", "bm25", 7), RowLeg("alice trip", "vector", 5),
            RowLeg("trip", "vector", 4, ("person/alice",))]
    answers = [{"hits": {"hits": [hit(u[0], 3.0)]}}, {"hits": {"hits": [hit(u[1], 0.9), hit(u[0], 0.6)]}},
               {"hits": {"hits": [hit(u[2], 0.8)]}}]
    idx, client = make(embedder)
    client.responses["msearch"] = {"responses": answers}
    ranking = idx.rank_rows(SearchFilter(context_id="ctx-1"), legs)
    [request] = client.requests("msearch")
    bodies = request["body"][1::2]
    assert request["body"][0::2] == [{}, {}, {}] and not client.requests("search")
    assert [b["size"] for b in bodies] == [7, 5, 4]
    labelled = bodies[2]["query"]["knn"]["embedding"]["filter"]["bool"]["filter"]
    assert {"term": {"labels": "person/alice"}} in labelled
    assert [[ranking.ids[i] for i in rows] for rows in ranking.legs] == [["u0"], ["u1", "u0"], ["u2"]]
    assert ranking.leg_scores[0].tolist() == [0.75] and ranking.leg_scores[1].tolist() == pytest.approx([0.8, 0.2])
    # Serverless: the same legs as three concurrent _search requests
    idx, client = make(embedder, service="aoss")
    client.responses["search"] = lambda kw: answers[[b["size"] for b in bodies].index(kw["body"]["size"])]
    again = idx.rank_rows(SearchFilter(context_id="ctx-1"), legs)
    assert len(client.requests("search")) == 3 and not client.requests("msearch")
    assert again.ids == ranking.ids


def test_bm25_only_query(embedder) -> None:
    u = _units(2)
    idx, client = make(embedder)
    client.responses["search"] = {"hits": {"hits": [hit(u[1], 3.0), hit(u[0], 1.0)]}}
    hits = idx.search("budget review", SearchFilter(context_id="ctx-1"), k=7, mode="bm25")
    assert client.requests("search") == [{
        "index": "memory-tenant1",
        "body": {"size": 7, "_source": ["payload"],
                 "query": {"bool": {"must": [{"match": {"text": {"query": "budget review"}}}],
                                    "filter": [MINIMAL_FILTER_BODY]}}},
    }]
    assert not client.requests("msearch")
    assert [(h.unit.id, h.score) for h in hits] == [("u1", 0.75), ("u0", 0.5)]


def test_vector_only_query_reports_cosine(embedder) -> None:
    u = _units(1)
    idx, client = make(embedder)
    client.responses["search"] = {"hits": {"hits": [hit(u[0], 0.95)]}}
    hits = idx.search("budget review", SearchFilter(context_id="ctx-1", admin=True), k=2, mode="vector")
    body = client.requests("search")[0]["body"]
    assert body["query"]["knn"]["embedding"]["k"] == 2 and body["size"] == 2
    admin_filter = body["query"]["knn"]["embedding"]["filter"]["bool"]["filter"]
    assert {"terms": {"acl_readers": []}} not in admin_filter and len(admin_filter) == 3  # admin: no reader check
    assert hits[0].score == pytest.approx(0.9)  # (1 + cos) / 2 = 0.95


def test_empty_text_query_skips_both_legs(embedder) -> None:
    idx, client = make(embedder)
    assert fused_search(idx, "  ", SearchFilter(context_id="ctx-1"), k=3) == []
    assert not client.requests("search") and not client.requests("msearch")


# ---------------------------------------------------------------------------
# writes
# ---------------------------------------------------------------------------


def test_bulk_upsert_uses_external_gte_versioning(embedder) -> None:
    rich = SearchUnit(
        id="attr_1", context_id="ctx|1", kind="attribute", text="Alice works at Acme", revision=7, partition="p1",
        scopes=[["org/acme/user/alice"], ["org/beta", "org/acme/team"], ["org/gamma"]], labels=["b", "a"],
        role=None, session_id="sess_1", entity_ids=["person/alice"], acl_readers=["group:eng", "alice"],
        valid_from="2024-01-01T00:00:00Z", valid_until=None, source_ids=["turn_1"], metadata={"k": "v"},
    )
    plain = SearchUnit(id="turn_2", context_id="ctx-2", kind="turn", text="", revision=1, acl_readers=[])
    idx, client = make(embedder, refresh=True)
    idx.upsert([rich, plain])
    vec = [float(x) for x in embedder.embed(["Alice works at Acme"])[0]]
    assert client.requests("bulk") == [{
        "index": "memory-tenant1",  # POST /memory-tenant1/_bulk: the path names the index, no line does
        "refresh": "wait_for",
        "body": [
            {"index": {"_id": "ctx%7C1|attr_1", "version": 7, "version_type": "external_gte"}},
            {
                "unit_id": "attr_1", "context_id": "ctx|1", "kind": "attribute", "partition": "p1",
                "session_id": "sess_1", "labels": ["a", "b"], "entity_ids": ["person/alice"],
                "source_ids": ["turn_1"], "acl_mode": "list", "acl_readers": ["alice", "group:eng"],
                "scope_unscoped": False,
                "scope_single_anc": ["org", "org/acme", "org/acme/user", "org/acme/user/alice", "org/gamma"],
                "scope_clauses": [{"p0": ["org", "org/acme", "org/acme/team"], "p1": ["org", "org/beta"]}],
                "valid_from": "2024-01-01T00:00:00.000Z", "revision": 7, "text": "Alice works at Acme",
                "payload": unit_payload(rich), "embedding": vec,
            },
            {"index": {"_id": "ctx-2|turn_2", "version": 1, "version_type": "external_gte"}},
            {   # empty text embeds to the zero vector, which cosinesimil rejects: no embedding field
                "unit_id": "turn_2", "context_id": "ctx-2", "kind": "turn", "partition": "default",
                "labels": [], "entity_ids": [], "source_ids": [], "acl_mode": "quarantine", "acl_readers": [],
                "scope_unscoped": True, "scope_single_anc": [], "scope_clauses": [], "revision": 1, "text": "",
                "payload": unit_payload(plain),
            },
        ],
    }]


def test_version_conflicts_are_success_other_failures_raise(embedder) -> None:
    idx, client = make(embedder)
    client.responses["bulk"] = {"errors": True, "items": [
        {"index": {"_id": "ctx-1|u0", "status": 409, "error": {"type": "version_conflict_engine_exception"}}},
        {"index": {"_id": "ctx-1|u1", "status": 201}},
    ]}
    idx.upsert(_units(2))  # the stale one is refused by design: no error
    client.responses["bulk"] = {"errors": True, "items": [
        {"index": {"_id": "ctx-1|u0", "status": 400, "error": {"type": "mapper_parsing_exception"}}},
    ]}
    with pytest.raises(OpenSearchBulkError, match="mapper_parsing_exception"):
        idx.upsert(_units(1))


def test_delete_and_delete_context_requests(embedder) -> None:
    idx, client = make(embedder, refresh=True)
    idx.delete("ctx-1", ["u1", "u2", "u1"])
    idx.delete_context("ctx-1")
    assert client.requests("bulk") == [{
        "index": "memory-tenant1",
        "refresh": "wait_for",
        "body": [{"delete": {"_id": "ctx-1|u1"}}, {"delete": {"_id": "ctx-1|u2"}}],
    }]
    assert client.requests("delete_by_query") == [{
        "index": "memory-tenant1", "body": {"query": {"term": {"context_id": "ctx-1"}}},
        "conflicts": "proceed", "refresh": True,
    }]


def test_get_by_document_id(embedder) -> None:
    u = _units(1)[0]
    idx, client = make(embedder)
    client.responses["get"] = {"found": True, "_source": {"payload": unit_payload(u)}}
    assert idx.get("ctx-1", "u0") == u
    assert client.requests("get") == [{"index": "memory-tenant1", "id": "ctx-1|u0", "_source_includes": "payload"}]
    client.responses["get"] = NotFoundError(404, "not_found", {})
    assert idx.get("ctx-1", "nope") is None


# ---------------------------------------------------------------------------
# Serverless (aoss): no client _ids, no external versions, no refresh
# ---------------------------------------------------------------------------


def copy_hit(doc: str, uid: str, revision: int, ctx: str = "ctx-1") -> dict[str, Any]:
    return {"_id": doc, "_score": None, "_source": {"unit_id": uid, "context_id": ctx, "revision": revision},
            "sort": [doc]}


def copies_query(*contexts: tuple[str, list[str]]) -> dict[str, Any]:
    return {"size": 1000, "_source": ["unit_id", "context_id", "revision"], "sort": [{"copy_id": "asc"}],
            "query": {"bool": {"should": [
                {"bool": {"filter": [{"term": {"context_id": ctx}}, {"terms": {"unit_id": ids}}]}}
                for ctx, ids in contexts], "minimum_should_match": 1}}}


def test_serverless_write_compares_revisions_itself_in_one_search_and_one_bulk(embedder, monkeypatch) -> None:
    from agent_memory.adapters.opensearch import index as opensearch_index

    copy_ids = iter(["copy-1", "copy-2", "copy-3"])
    monkeypatch.setattr(opensearch_index, "new_copy_id", lambda: next(copy_ids))
    idx, client = make(embedder, service="aoss", refresh=True)
    client.responses["search"] = {"hits": {"hits": [
        copy_hit("srv-a", "u0", 5), copy_hit("srv-b", "u1", 1), copy_hit("srv-c", "u1", 1),
        copy_hit("srv-d", "gone", 4, ctx="ctx-2"),
    ]}}
    stale = SearchUnit(id="u0", context_id="ctx-1", kind="turn", text="old news", revision=3)
    newer = SearchUnit(id="u1", context_id="ctx-1", kind="turn", text="fresh news", revision=2)
    new = SearchUnit(id="u2", context_id="ctx-1", kind="turn", text="brand new", revision=1)
    idx.write([stale, newer, new], {"ctx-2": ["gone"]})
    assert client.requests("search") == [{"index": "memory-tenant1", "body": copies_query(
        ("ctx-1", ["u0", "u1", "u2"]), ("ctx-2", ["gone"]))}]
    vecs = embedder.embed(["fresh news", "brand new"])
    assert client.requests("bulk") == [
        {"index": "memory-tenant1", "body": [  # no _id, no version, no refresh parameter on Serverless
            {"index": {}},
            {**unit_document(newer, vecs[0]), "copy_id": "copy-1"},
            {"index": {}},
            {**unit_document(new, vecs[1]), "copy_id": "copy-2"},
            {"delete": {"_id": "srv-b"}},
            {"delete": {"_id": "srv-c"}},
            {"delete": {"_id": "srv-d"}},
        ]},
    ]
    assert not client.requests("info")


def test_serverless_get_delete_and_delete_context(embedder) -> None:
    u = _units(1)[0]
    idx, client = make(embedder, service="aoss")
    client.responses["search"] = [
        {"hits": {"hits": [{"_id": "srv-a", "_score": None, "_source": {"payload": unit_payload(u)}}]}},
        {"hits": {"hits": [copy_hit("srv-a", "u0", 1), copy_hit("srv-b", "u0", 2)]}},
        {"hits": {"hits": [{"_id": f"srv-{i}", "sort": [f"c{i:04d}"]} for i in range(1000)]}},
        {"hits": {"hits": [{"_id": "srv-last", "sort": ["c9999"]}]}},
    ]
    assert idx.get("ctx-1", "u0") == u
    idx.delete("ctx-1", ["u0"])
    idx.delete_context("ctx-1")
    searches = [r["body"] for r in client.requests("search")]
    assert searches[0] == {
        "size": 4, "_source": ["payload"], "sort": [{"revision": "desc"}],
        "query": {"bool": {"filter": [{"term": {"context_id": "ctx-1"}}, {"term": {"unit_id": "u0"}}]}},
    }
    assert searches[1] == copies_query(("ctx-1", ["u0"]))
    assert searches[2] == {"size": 1000, "_source": False, "sort": [{"copy_id": "asc"}],
                           "query": {"term": {"context_id": "ctx-1"}}}
    assert searches[3] == {**searches[2], "search_after": ["c0999"]}
    bulks = [r["body"] for r in client.requests("bulk")]
    assert bulks[0] == [{"delete": {"_id": "srv-a"}}, {"delete": {"_id": "srv-b"}}]
    deleted = [line["delete"]["_id"] for body in bulks[1:] for line in body]
    assert deleted == [f"srv-{i}" for i in range(1000)] + ["srv-last"]
    assert [len(body) for body in bulks[1:]] == [500, 500, 1]  # BULK_CHUNK actions per request
    assert not client.requests("delete_by_query") and not client.requests("get")


def test_readers_keep_the_highest_revision_of_duplicate_copies(embedder) -> None:
    old = SearchUnit(id="u1", context_id="ctx-1", kind="turn", text="old text", revision=1)
    new = SearchUnit(id="u1", context_id="ctx-1", kind="turn", text="new text", revision=2)
    other = _units(1)[0]
    idx, client = make(embedder, service="aoss")
    bm25 = {"hits": {"hits": [hit(old, 4.0), hit(other, 3.0), hit(new, 2.0)]}}
    knn = {"hits": {"hits": [hit(new, 0.9), hit(old, 0.8)]}}
    client.responses["search"] = lambda kw: knn if "knn" in kw["body"]["query"] else bm25
    hits = fused_search(idx, "text", SearchFilter(context_id="ctx-1"), k=5)
    assert [(h.unit.id, h.unit.revision) for h in hits] == [("u1", 2), ("u0", 1)]
    # Serverless: the legs as two _search requests (no _msearch)
    assert len(client.requests("search")) == 2 and not client.requests("msearch")


# ---------------------------------------------------------------------------
# filter semantics: evaluate the emitted DSL on the emitted documents
# ---------------------------------------------------------------------------


PATHS = ["org", "org/a", "org/a/x", "org/a/x/deep", "org/ab", "org/b", "org/b/y", "team/z", "team"]


def test_emitted_filter_agrees_with_reference_visibility_rules() -> None:
    """Random DNFs, regions, reader lists and validity windows: the OpenSearch filter over the
    OpenSearch document must accept exactly what the reference rules accept."""
    rng = random.Random(7)
    times = [None, "2020-01-01T00:00:00.000Z", "2022-01-01T00:00:00.000Z", "2030-01-01T00:00:00.000Z"]
    for trial in range(3000):
        dnf = [rng.sample(PATHS, rng.randint(1, 3)) for _ in range(rng.randint(0, 3))]
        region = None if rng.random() < 0.15 else rng.sample(PATHS, rng.randint(0, 3))
        readers = rng.choice([None, [], ["alice"], ["group:eng", "bob"]])
        principals = rng.sample(["alice", "bob", "group:eng", "carol"], rng.randint(0, 2))
        admin = rng.random() < 0.1
        vf, vu = rng.choice(times), rng.choice(times)
        as_of = rng.choice([None, "2021-01-01T00:00:00Z", "2022-01-01T00:00:00Z"])
        unit = SearchUnit(id=f"u{trial}", context_id="c", kind="turn", text="t", scopes=dnf,
                          acl_readers=readers, valid_from=vf, valid_until=vu)
        flt = SearchFilter(context_id="c", read_region=region, principals=principals, admin=admin, as_of=as_of)
        t = (as_of and as_of.replace("Z", ".000Z")) or NOW_ISO
        expected = (
            scope_rules.visible(dnf, region)
            and (admin or readers is None or bool(set(readers) & set(principals)))
            and (vu is None or vu > t)
            and (as_of is None or vf is None or vf <= t)
        )
        doc = unit_document(unit, None)
        assert matches(build_filter(flt, NOW_ISO), doc) is bool(expected), (dnf, region, readers, principals,
                                                                               admin, vf, vu, as_of)


def test_long_multi_path_clauses_are_covered_path_by_path_and_overlong_ones_fail_closed() -> None:
    from agent_memory.adapters.opensearch.mapping import MAX_CLAUSE_PATHS

    paths = [f"org/t{i}/x" for i in range(MAX_CLAUSE_PATHS + 1)]
    full = SearchUnit(id="a", context_id="c", kind="turn", text="t", scopes=[paths[:MAX_CLAUSE_PATHS]])
    overlong = SearchUnit(id="b", context_id="c", kind="turn", text="t", scopes=[paths])
    every = [f"org/t{i}" for i in range(MAX_CLAUSE_PATHS + 1)]
    for region, sees_full in ((every, True), (every[1:], False), (["org"], True)):
        flt = build_filter(SearchFilter(context_id="c", read_region=region), NOW_ISO)
        assert matches(flt, unit_document(full, None)) is sees_full
        assert matches(flt, unit_document(overlong, None)) is False  # never admitted by a region
        assert scope_rules.visible(full.scopes, region) is sees_full


class FakeLive:
    """Live unless listed as dead ``(unit id, revision)``; records every batch asked."""

    def __init__(self, dead: set[tuple[str, int]]) -> None:
        self.dead, self.batches = dead, []

    def live(self, units):
        self.batches.append([(u.id, u.revision) for u in units])
        return [(u.id, u.revision) not in self.dead for u in units]


def test_hits_that_are_not_live_are_dropped_before_ranking_in_one_batch(embedder) -> None:
    stale = SearchUnit(id="u0", context_id="ctx-1", kind="turn", text="old", revision=1)
    u1, u2 = _units(3)[1:]
    live = FakeLive({("u0", 1)})
    idx, client = make(embedder, live=live)
    client.responses["msearch"] = {"responses": [
        {"hits": {"hits": [hit(stale, 9.0), hit(u1, 5.0)]}},
        {"hits": {"hits": [hit(u1, 0.9), hit(u2, 0.8)]}},
    ]}
    hits = fused_search(idx, "text", SearchFilter(context_id="ctx-1"), k=5)
    assert [h.unit.id for h in hits] == ["u1", "u2"]
    assert hits[0].score == pytest.approx(2 / 61)  # first in both legs once the stale copy is gone
    assert live.batches == [[("u0", 1), ("u1", 1), ("u1", 1), ("u2", 1)]]
    assert not client.requests("bulk")  # a managed domain overwrites in place: nothing to sweep

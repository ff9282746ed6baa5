"""GET /export and POST /import (docs/export.md): a context exported from SQLite, imported into
DynamoDB (moto, the table from template.yaml) and back answers the same reads; import is
idempotent, re-keys into another context, and refuses bad streams whole, naming the line."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import jsonschema
import pytest
from moto import mock_aws

from agent_memory.adapters.dynamodb_table import create_table_from_template
from agent_memory.runtime import Runtime, get_runtime, set_runtime
from agent_memory.services.facts.fact_kinds import FACT_KINDS
from agent_memory.services.operations.portability import DERIVED_KINDS, RECORD_TYPES
from agent_memory.services.operations.reindex import reindex_context
from tests.conftest import REPO, InProcessApi, make_settings, serialise_moto

CTX = "/api/v1/exp"
HTML = (b"<html><head><title>Office guide</title></head><body><h1>Parking</h1>"
        b"<p>Bikes go in the yard behind the office.</p></body></html>")


def _form(api: InProcessApi, name: str, data: bytes, ctype: str) -> Any:
    boundary = "b0undary"
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            f"Content-Type: {ctype}\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return api.post(f"{CTX}/documents", raw=body, headers={"content-type": f"multipart/form-data; boundary={boundary}"})


def ok(r: Any, status: int = 200) -> Any:
    assert r.status == status, r.text
    return r.json()


def fill(api: InProcessApi) -> None:
    """A context with every fact kind, a supersession, a forget, a thread with readers, and a
    document with its original."""
    ok(api.post(f"{CTX}/facts", {"text": "I live in London. I like tea. I like sushi. Always answer in French."}))
    ok(api.post(f"{CTX}/facts", {"text": "I moved to Berlin."}))  # supersedes London
    ok(api.post(f"{CTX}/facts", {"text": "HR import", "infer": "triples", "triples": [
        {"entity": {"type": "person", "name": "Alice"}, "key": "employer", "value": "Acme"},
        {"entity": {"type": "person", "name": "Alice"}, "key": "manager", "target": {"type": "person", "name": "Bob"}},
        {"entity": {"type": "person", "name": "Alice"}, "verb": "joined", "object": "Acme",
         "occurred_at": "2024-01-02T00:00:00Z"}]}))
    ext = ok(api.post(f"{CTX}/facts", {"text": "Alice works at Globex."}))["extraction"]
    assert ext["uncertainties"]  # a turn against an authoritative fact: an uncertainty
    ok(api.post(f"{CTX}/forget", {"query": "sushi", "limit": 1, "minScore": 0.3}))
    ok(api.post(f"{CTX}/threads/t1/turns", {"text": "Planning the Apollo launch with Bob"}), 201)
    ok(api.request("PUT", f"{CTX}/threads/t1/acl", {"aclReaders": ["alice", "group:ops"]}))
    ok(api.post(f"{CTX}/scopes", {"path": "org/acme"}), 201)
    ok(_form(api, "guide.html", HTML, "text/html"), 202)
    get_runtime().ingestion_queue.join(timeout=60)


READS = ["/state", "/entities/person/user", "/entities/person/user/history/location",
         "/entities/person/alice", "/entities/person/user?asOf=2000-01-01T00:00:00Z",
         "/attributes", "/relations", "/actions", "/instructions", "/uncertainty", "/threads/t1",
         "/threads/t1/turns", "/scopes", "/documents", "/sessions"]
QUERIES = ["where do I live", "Alice employer", "parking bikes", "Apollo launch"]


def answers(api: InProcessApi, ctx: str = CTX) -> dict[str, Any]:
    out: dict[str, Any] = {path: ok(api.get(ctx + path)) for path in READS}
    doc = out["/documents"]["documents"][0]["id"]
    out["raw"] = api.get(f"{ctx}/documents/{doc}/raw").body.decode()
    out["chunks"] = ok(api.get(f"{ctx}/documents/{doc}/chunks"))
    for q in QUERIES:
        out[q] = _untimed(ok(api.post(f"{ctx}/query", {"query": q, "k": 8})))
    return out


def _untimed(body: Any) -> Any:
    """The body without its timings (``queryMs``), which no two runs share."""
    if isinstance(body, dict):
        return {k: _untimed(v) for k, v in body.items() if not k.endswith("Ms")}
    if isinstance(body, list):
        return [_untimed(v) for v in body]
    return body


def _same(got: dict[str, Any], want: dict[str, Any]) -> None:
    for key in want:
        assert got[key] == want[key], (key, json.dumps(got[key])[:3000], json.dumps(want[key])[:3000])


def export_lines(api: InProcessApi, ctx: str = CTX, query: str = "") -> list[str]:
    r = api.get(f"{ctx}/export{query}")
    assert r.status == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    return r.text.splitlines()


def body_of(lines: list[str]) -> list[str]:
    """Everything but the header (whose exportedAt is the moment of the export) and the
    trailer's count of skipped operational rows (audit rows, receipts, cache marks are the
    deployment's own: an import writes its own audit row, a forget's receipt stays behind)."""
    end = json.loads(lines[-1])
    end.pop("skipped", None)
    return [*lines[1:-1], json.dumps(end, sort_keys=True)]


@pytest.fixture
def two_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Runtime, Runtime]]:
    serialise_moto(monkeypatch)
    with mock_aws():
        dyn_settings = make_settings(tmp_path / "dynamodb", "dynamodb", audit_usage="off")
        create_table_from_template(boto3.client("dynamodb", region_name="us-east-1"), dyn_settings.table_name)
        sqlite = Runtime(make_settings(tmp_path / "sqlite", audit_usage="off"))
        dynamo = Runtime(dyn_settings)
        try:
            yield sqlite, dynamo
        finally:
            sqlite.close()
            dynamo.close()
            set_runtime(None)


def test_a_context_goes_from_sqlite_to_dynamodb_and_back_answering_the_same(two_stores):
    sqlite, dynamo = two_stores
    api = InProcessApi()
    set_runtime(sqlite)
    fill(api)
    # Import rebuilds the index from the records; BM25's statistics of an index that has seen
    # deletions (the forget, supersession) differ slightly from a rebuilt one's, so the original
    # answers from a rebuilt index too.
    reindex_context(sqlite.store, sqlite.search, "exp")
    original = answers(api)
    exported = export_lines(api)
    header, end = json.loads(exported[0]), json.loads(exported[-1])
    assert header["format"] == "agent-memory-export" and header["version"] == 1
    kinds = {json.loads(line)["type"] for line in exported}
    assert {k.kind for k in FACT_KINDS} <= kinds  # every kind of the registry travels
    assert {"session", "turn", "thread", "thread_turn", "document", "chunk", "scope", "original", "head"} <= kinds
    assert "deleted" in " ".join(exported)  # the forgotten fact travels as forgotten
    assert set(end["skipped"]) <= DERIVED_KINDS
    schema = json.loads((REPO / "docs" / "export.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for line in exported:
        validator.validate(json.loads(line))

    set_runtime(dynamo)
    result = ok(api.post(f"{CTX}/import", raw="\n".join(exported).encode(),
                         headers={"content-type": "application/x-ndjson"}))
    assert result["written"] == result["records"] == end["records"] and result["originals"] == 1
    _same(answers(api), original)
    assert body_of(export_lines(api)) == body_of(exported)
    again = ok(api.post(f"{CTX}/import", raw="\n".join(exported).encode()))
    assert again["written"] == 0 and again["unchanged"] == end["records"]  # the same file twice: nothing
    back = export_lines(api)

    set_runtime(sqlite)
    ok(api.post("/api/v1/exp/scopes/forget", {"path": "org/acme"}))  # nothing lives there: a no-op
    into = ok(api.post("/api/v1/back/import", raw="\n".join(back).encode()))  # re-keyed into "back"
    assert into["written"] == end["records"]
    assert json.dumps(answers(api, "/api/v1/back")).replace("/api/v1/back", CTX) == json.dumps(original)
    assert body_of(export_lines(api, "/api/v1/back")) == [
        line.replace('"contextId":"exp"', '"contextId":"back"') for line in body_of(exported)]


@pytest.mark.parametrize("store_kind", ["sqlite"])
def test_every_stored_kind_is_either_exported_or_named_derived(api):
    fill(api)
    ok(api.post(f"{CTX}/context", {"query": "where do I live"}))
    seen = {r.data.get("kind") for r in get_runtime().store.scan("c#exp#")}
    assert seen <= set(RECORD_TYPES) | DERIVED_KINDS, seen - set(RECORD_TYPES) - DERIVED_KINDS


HEADER = {"type": "header", "format": "agent-memory-export", "version": 1, "contextId": "exp"}
TURN = {"type": "session", "pk": "default#sessions", "sk": "sess_x", "version": 1,
        "data": {"kind": "session", "id": "sess_x", "contextId": "exp"}}


def stream(*objs: Any) -> bytes:
    return "\n".join(o if isinstance(o, str) else json.dumps(o) for o in objs).encode()


@pytest.mark.parametrize("body,line,code", [
    (stream(HEADER, TURN, "{not json", {"type": "end", "records": 1}), 3, "invalid_export_line"),
    (stream(HEADER, TURN, {**TURN, "sk": "sess_y", "data": {"kind": "turn"}}, {"type": "end", "records": 2}), 3,
     "invalid_export_line"),
    (stream(HEADER, TURN, {"type": "api_key", "pk": "x", "sk": "y", "data": {}}, {"type": "end", "records": 1}), 3,
     "invalid_export_line"),
    (stream(HEADER, TURN), 3, "invalid_export_line"),  # cut short: no trailer
    (stream(TURN), 1, "invalid_export_line"),
    (stream(HEADER, {**TURN, "gsi1pk": "#turn-ids", "gsi1sk": "x"}, {"type": "end", "records": 1}),
     2, "invalid_export_line"),  # keys are <partition>#..., always under the importing context
    (stream(HEADER, TURN, {"type": "original", "key": "originals/doc_x", "data": "aGk="},
            {"type": "end", "records": 1}), 3, "invalid_export_line"),  # an original of no document
    (stream({**HEADER, "version": 2}, TURN, {"type": "end", "records": 1}), 1, "export_version_unsupported"),
])
def test_a_bad_stream_is_refused_whole_naming_its_line(api, body, line, code):
    r = api.post(f"{CTX}/import", raw=body)
    assert r.status == 400, r.text
    assert (r.json()["line"], r.json()["code"]) == (line, code)
    assert list(get_runtime().store.scan("c#exp#")) == []  # nothing written, not even line 2


KEYS = {"admin": "key-admin-0000000000", "rita": "key-rita-00000000000"}


@pytest.mark.parametrize("principals_setting", [[{"key": KEYS["admin"], "principal": "ops", "admin": True},
                                                 {"key": KEYS["rita"], "principal": "rita"}]])
@pytest.mark.parametrize("store_kind", ["sqlite"])
def test_export_and_import_need_an_admin_and_principals_carry_no_key(api):
    admin = {"authorization": f"Bearer {KEYS['admin']}"}
    ok(api.post(f"{CTX}/facts", {"text": "I live in Paris."}, headers=admin))
    reader = {"authorization": f"Bearer {KEYS['rita']}"}
    assert api.get(f"{CTX}/export", headers=reader).status == 403
    assert api.get(f"{CTX}/export?includePrincipals=true", headers=reader).status == 403
    assert api.post(f"{CTX}/import", raw=stream(HEADER, {"type": "end", "records": 0}), headers=reader).status == 403
    ok(api.post(f"{CTX}/principals/rita/grants", {"path": "/", "verbs": ["delegate"]}, headers=admin))
    text = api.get(f"{CTX}/export?includePrincipals=true", headers=admin).text
    assert '"type":"principal_grants"' in text
    assert all(key not in text for key in KEYS.values()) and "api_key" not in text and "digest" not in text
    assert '"type":"principal_grants"' not in api.get(f"{CTX}/export", headers=admin).text
    # an admin's import carries the grant versions into the context it imports into
    assert "delegate" not in json.dumps(ok(api.get("/api/v1/elsewhere/principals/rita", headers=admin)))
    assert ok(api.post("/api/v1/elsewhere/import", raw=text.encode(), headers=admin))["principals"] >= 1
    source = ok(api.get(f"{CTX}/principals/rita", headers=admin))
    assert "delegate" in json.dumps(source)
    assert ok(api.get("/api/v1/elsewhere/principals/rita", headers=admin)) == source


def test_the_schema_names_every_record_type_of_the_registry():
    schema = json.loads((REPO / "docs" / "export.schema.json").read_text())
    assert schema["$defs"]["record"]["properties"]["type"]["enum"] == list(RECORD_TYPES)


@pytest.mark.parametrize("store_kind", ["sqlite"])
def test_export_streams_over_the_local_server_and_imports_back_over_it(any_api):
    ok(any_api.post(f"{CTX}/facts", {"text": "I live in Paris. I like tea."}))
    text = any_api.get(f"{CTX}/export").text
    assert text.endswith("\n") and json.loads(text.splitlines()[-1])["type"] == "end"
    result = ok(any_api.post("/api/v1/copy/import", raw=text.encode()))
    assert result["written"] == result["records"] > 0
    assert ok(any_api.get("/api/v1/copy/state"))["identity"] == ok(any_api.get(f"{CTX}/state"))["identity"]


@pytest.mark.parametrize("store_kind", ["sqlite"])
def test_an_import_never_replaces_another_documents_original(api):
    ok(_form(api, "guide.html", HTML, "text/html"), 202)
    get_runtime().ingestion_queue.join(timeout=60)
    lines = export_lines(api)
    forged = [line.replace(base64.b64encode(HTML).decode(), base64.b64encode(b"<p>other</p>").decode())
              for line in lines]
    r = api.post("/api/v1/elsewhere/import", raw="\n".join(forged).encode())
    assert (r.status, r.json()["code"]) == (409, "original_conflict")
    assert list(get_runtime().store.scan("c#elsewhere#")) == []
    assert ok(api.post("/api/v1/elsewhere/import", raw="\n".join(lines).encode()))["originals"] == 1

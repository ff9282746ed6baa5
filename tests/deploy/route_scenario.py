"""Every route of the API, in an order where each request finds what it needs (a session,
a turn, an uncertainty, a document, a trace). ``call(method, path, body)`` returns
``(status, json)``; the scenario asserts each status, so the same script can drive any host."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

Call = Callable[..., tuple[int, Any]]
CTX = "/api/v1/acme-ctx"


def run(call: Call) -> None:
    def ok(method: str, path: str, body: Any = None, status: int = 200, **kw: Any) -> Any:
        got, payload = call(method, path, body, **kw)
        assert got == status, f"{method} {path}: {got} {payload}"
        return payload

    assert ok("GET", "/api/v1/health")["status"] == "ok"
    assert "/api/v1/{context_id}/mcp" in ok("GET", "/api/v1/openapi.json")["paths"]  # the layer's copy
    assert ok("GET", "/api/v1/openapi.yaml").startswith("openapi: ")
    session = ok("POST", f"{CTX}/sessions", {}, 201)
    sid = session.get("id") or session.get("sessionId")
    ok("POST", f"{CTX}/facts", {"text": "I work at Acme.", "observedAt": "2026-01-01T00:00:00Z",
                                "sessionId": sid})
    ok("POST", f"{CTX}/facts", {"text": "I think I work at Globex."})
    ok("POST", f"{CTX}/facts/batch", {"messages": [{"role": "user", "content": "I live in Lisbon."},
                                                  {"role": "assistant", "content": "Nice city!"}]})
    ok("GET", f"{CTX}/sessions/{sid}/turns")
    assert sid in [s["id"] for s in ok("GET", f"{CTX}/sessions")["items"]]
    assert CTX.rsplit("/", 1)[1] in [c["contextId"] for c in ok("GET", "/api/v1/contexts")["items"]]
    ok("POST", f"{CTX}/sessions/{sid}/context", {"query": "where do I work"})
    ok("POST", f"{CTX}/sessions/{sid}/close")

    ok("GET", f"{CTX}/entities")
    ok("GET", f"{CTX}/entities/person/user")
    ok("GET", f"{CTX}/entities/person/user/history")
    ok("GET", f"{CTX}/entities/person/user/history/employer")
    for collection in ("attributes", "relations", "actions", "instructions"):
        ok("GET", f"{CTX}/{collection}")
    pending = ok("GET", f"{CTX}/uncertainty?resolved=false")["items"]
    assert pending, "the hedged fact should have left an uncertainty"
    ok("POST", f"{CTX}/uncertainty/{pending[0]['id']}/resolve", {"acceptedValue": "Globex"})
    # One fact by id (before projection: found through the current-facts index), corrected.
    employer = ok("GET", f"{CTX}/attributes?key=employer")["items"][0]
    ok("GET", f"{CTX}/attributes/{employer['id']}")
    fixed = ok("PATCH", f"{CTX}/attributes/{employer['id']}", {"value": "Initech", "note": "typo"})
    assert fixed["corrections"][0]["newValue"] == "Initech", fixed
    for collection, prefix in (("attributes", "attr"), ("relations", "rel"), ("actions", "act"),
                               ("instructions", "instr")):
        ok("GET", f"{CTX}/{collection}/{prefix}_missing", status=404)
        ok("DELETE", f"{CTX}/{collection}/{prefix}_missing", status=404)
    ok("PATCH", f"{CTX}/relations/rel_missing", {"value": "person/ann"}, status=404)
    assert ok("GET", f"{CTX}/inspect?ref=attribute:person/user/employer")["kind"] == "attribute"
    ok("GET", f"{CTX}/inspect?ref=entity:person", status=400)
    ok("GET", f"{CTX}/state")
    ok("GET", f"{CTX}/profile")
    ok("GET", f"{CTX}/audit")  # admin only: the scenario calls with an admin key
    # MCP on the API: the SDK's transport answers each JSON-RPC message with one JSON reply
    # (a tool call goes to the API's own domain: tests/mcp/test_mcp_route.py drives that).
    rpc = {"accept": "application/json, text/event-stream"}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "scenario", "version": "1"}}
    init = ok("POST", f"{CTX}/mcp", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}, headers=rpc)
    assert init["result"]["serverInfo"]["name"] == "agent-memory", init
    listed = ok("POST", f"{CTX}/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=rpc)
    assert {"remember", "recall"} <= {t["name"] for t in listed["result"]["tools"]}, listed
    # a tool call is a request to the API's own route with the caller's key (recall, here)
    recalled = ok("POST", f"{CTX}/mcp", {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                          "params": {"name": "recall", "arguments": {"query": "Where do I work?"}}},
                  headers=rpc)["result"]
    assert not recalled["isError"] and "hits" in recalled["structuredContent"], recalled
    # Administration: who am I, a key minted, listed, rotated and deleted, a principal's grants.
    # The caller is the stack's bootstrap key or an admin key minted from it.
    me = ok("GET", f"{CTX}/me")
    assert me["kind"] in ("bootstrap", "key") and me["enforce"] is True, me
    assert me["effectiveGrants"].get("admin") == ["/"], me
    ok("POST", f"{CTX}/keys?ttlSeconds=3600", {"name": "scenario", "grants": {"memory:read": ["/"]}}, 201)
    assert "scenario" in [k["name"] for k in ok("GET", f"{CTX}/keys")]
    ok("POST", f"{CTX}/keys/scenario/rotate?overlapSeconds=60")
    ok("DELETE", f"{CTX}/keys/scenario", status=204)
    ok("POST", f"{CTX}/principals/reader/grants", {"path": "org/acme", "verbs": ["memory:read"]})
    assert ok("GET", f"{CTX}/principals/reader/effective?path=org/acme/x")["verbs"] == ["memory:read"]
    ok("DELETE", f"{CTX}/principals/reader/grants", {"path": "org/acme", "verbs": ["memory:read"]})
    assert "reader" in [p["id"] for p in ok("GET", f"{CTX}/principals")]
    ok("GET", f"{CTX}/principals/reader")
    # The scopes registry, and a subtree forgotten with its derived copies (search units, replies).
    ok("POST", f"{CTX}/scopes", {"path": "org/scenario", "displayName": "Scenario"}, 201)
    assert [n["path"] for n in ok("GET", f"{CTX}/scopes")] == ["org/scenario"]
    ok("POST", f"{CTX}/facts", {"text": "I live in Porto.", "scopes": [["org/scenario"]]},
       headers={"Idempotency-Key": "scenario-scoped"})
    assert ok("POST", f"{CTX}/scopes/forget", {"path": "org/scenario"})["forgotten"] >= 1
    ok("DELETE", f"{CTX}/scopes?path=org/scenario", status=204)
    # The context's export, imported back: every record is already there, so nothing is written.
    export = ok("GET", f"{CTX}/export")
    assert export.splitlines()[-1].startswith('{"counts"'), export[-300:]
    assert ok("POST", f"{CTX}/import", export.encode())["written"] == 0

    ok("POST", f"{CTX}/query", {"query": "Where do I work?", "k": 5})
    ok("POST", f"{CTX}/context", {"query": "Where do I work?"})
    reply = ok("POST", f"{CTX}/chat", {"message": "Where do I work?", "bypassCache": True})
    ok("GET", f"{CTX}/traces/{reply['traceId']}")
    assert reply["traceId"] in [t["id"] for t in ok("GET", f"{CTX}/traces?limit=5")["traces"]]
    assert ok("GET", f"{CTX}/traces/stats")["totalQueries"] >= 1

    thread = f"{CTX}/threads/support-1"
    ok("POST", f"{thread}/turns", {"text": "The printer on floor 2 is broken."}, 201)
    ok("GET", f"{thread}/turns")
    ok("GET", f"{thread}/turns/1")
    ok("GET", thread)
    ok("GET", f"{CTX}/threads")
    ok("PUT", f"{thread}/acl", {"acl_readers": []})
    ok("POST", f"{thread}/context", {"query": "printer", "last_n_turns": 1})
    ok("POST", f"{thread}/turns", {"text": "It still jams on A4 paper."}, 201)

    # memory care (the official client sends no body with default arguments)
    # A relation past its stated end: the lifecycle schedule's expire (test_built_artifact)
    # removes it and its search unit.
    ended = {"entity": {"type": "person", "name": "user"}, "key": "manager",
             "target": {"type": "person", "name": "Ann"}, "valid_until": "2020-01-01T00:00:00Z"}
    ok("POST", f"{CTX}/facts", {"text": "My manager was Ann.", "infer": "triples", "triples": [ended]})
    ok("POST", f"{CTX}/fsck")
    ok("POST", f"{CTX}/lifecycle/decay")
    assert ok("POST", f"{CTX}/lifecycle/expire", {"dryRun": True})["affected"] == 1
    ok("POST", f"{CTX}/consolidate", {"dryRun": True})
    ok("POST", f"{CTX}/elaborate", {"dryRun": True})
    ok("POST", f"{CTX}/reflect", {"query": "printer"})

    doc = ok("POST", f"{CTX}/documents", {"title": "Handbook", "text": "# Travel\n\nBook trains, not flights."},
             202)
    doc_id = doc.get("id") or doc.get("documentId")
    ok("GET", f"{CTX}/documents/{doc_id}")
    ok("GET", f"{CTX}/documents/{doc_id}/chunks")
    ok("GET", f"{CTX}/documents/{doc_id}/raw")  # the original, from the upload bucket
    ok("PUT", f"{CTX}/documents/{doc_id}", status=202)  # reprocess from the original (or already queued)
    ok("POST", f"{CTX}/documents/recompute-links", status=202)
    assert doc_id in [d["id"] for d in ok("GET", f"{CTX}/documents")["documents"]]
    # Corpus search and the keyword index (the document may still be ingesting: shapes only).
    assert "queryMs" in ok("POST", f"{CTX}/documents/query", {"query": "trains", "expandGraph": True})
    ok("GET", f"{CTX}/documents/keywords?q=train")
    ok("POST", f"{CTX}/documents/keywords/search", {"query": "trains"})
    ok("GET", f"{CTX}/documents/keywords/zeppelin", status=404)
    ok("GET", f"{CTX}/documents/{doc_id}/keywords")

    ok("POST", f"{CTX}/forget", {"query": "Lisbon", "dryRun": True})
    # A forget that matches nothing still stores its (empty) erasure receipt: read it, verify it.
    receipt = ok("POST", f"{CTX}/forget", {"query": "zeppelin parade", "minScore": 0.99})["receipt"]
    assert ok("GET", f"{CTX}/receipts/{receipt['id']}")["id"] == receipt["id"]
    assert ok("POST", f"{CTX}/receipts/{receipt['id']}/verify")["clean"] is True
    ok("DELETE", f"{CTX}/documents/{doc_id}", status=204)
    ok("DELETE", f"{CTX}/entities/person/emma", status=404)
    # Kept, so that the ingestion worker has a document to finish (the first was deleted while queued).
    ok("POST", f"{CTX}/documents", {"title": "Parking", "text": "Parking is behind the building. I work at Acme."},
       202)
    # A large document's route: a presigned PUT to S3 (moto_server here), then complete.
    text = b"# Visitors\n\nVisitors sign in at reception."
    ticket = ok("POST", f"{CTX}/documents/uploads", {"size": len(text), "title": "Visitors"}, 201)
    put = httpx.put(ticket["uploadUrl"], content=text, headers=ticket["headers"], timeout=30)
    assert put.status_code == 200, put.text
    ok("POST", f"{CTX}/documents/{ticket['id']}/complete", status=202)
    ok("DELETE", f"{CTX}/sessions/{sid}", status=204)


# The README's worked example (docs/access.md) and the other modes a caller can reach: keys
# with regions, a delegated reader, an admin past a reader list, a second partition.
EXAMPLE = "/api/v1/acme"
EXAMPLE_KEYS = {
    "alice": ["--context", "acme", "--read", "org/acme/user/alice", "--read", "org/acme/shared",
              "--write", "org/acme/user/alice", "--default-scope", "org/acme/user/alice"],
    "bob": ["--context", "acme", "--read", "org/acme/user/bob", "--read", "org/acme/shared",
            "--write", "org/acme/user/bob", "--default-scope", "org/acme/user/bob"],
    "support": ["--context", "acme", "--read", "org/acme/user/*", "--read", "org/acme/shared",
                "--write", "org/acme/support", "--verb", "memory:read", "--verb", "delegate"],
}


def run_modes(call: Call) -> None:
    """``call(method, path, body, key=<principal>, headers=...)``; ``key="ops"`` is the admin."""
    def ok(method: str, path: str, body: Any = None, status: int = 200, **kw: Any) -> Any:
        got, payload = call(method, path, body, **kw)
        assert got == status, f"{method} {path} ({kw}): {got} {payload}"
        return payload

    ok("POST", f"{EXAMPLE}/facts", {"text": "I live in London."}, key="alice")
    ok("POST", f"{EXAMPLE}/facts", {"text": "I live in Rome."}, key="bob")
    ok("POST", f"{EXAMPLE}/facts", {"text": "I live in Oslo.", "scopes": [["org/acme/user/alice"]]}, 403, key="bob")
    on_behalf = {"X-Spectron-On-Behalf-Of": "alice"}
    # Delegated reads on every function that serves reads: each leaves an audit row.
    state = ok("GET", f"{EXAMPLE}/state", key="support", headers=on_behalf)
    assert "London" in str(state) and "Rome" not in str(state), state
    ok("GET", f"{EXAMPLE}/profile", key="support", headers=on_behalf)
    assert ok("GET", f"{EXAMPLE}/me", key="support", headers=on_behalf)["delegatedPrincipalId"] == "alice"
    ok("POST", f"{EXAMPLE}/query", {"query": "Where do I live?"}, key="support", headers=on_behalf)
    ok("POST", f"{EXAMPLE}/context", {"query": "Where do I live?"}, key="support", headers=on_behalf)
    ok("GET", f"{EXAMPLE}/entities", key="support", headers=on_behalf)
    ok("GET", f"{EXAMPLE}/sessions", key="support", headers=on_behalf)
    ok("GET", f"{EXAMPLE}/threads", key="support", headers=on_behalf)
    ok("GET", f"{EXAMPLE}/documents", key="support", headers=on_behalf)
    ok("POST", f"{EXAMPLE}/facts", {"text": "I moved to Paris."}, 403, key="support", headers=on_behalf)
    audit = ok("GET", f"{EXAMPLE}/audit", key="ops")["rows"]
    assert len(audit) >= 8, audit
    # A reader list: alice's thread; the admin reads past it (audited), bob gets 404.
    thread = f"{EXAMPLE}/threads/alice-only"
    ok("POST", f"{thread}/turns", {"text": "My locker code is 1234."}, 201, key="alice")
    ok("PUT", f"{thread}/acl", {"acl_readers": ["alice"]}, key="ops")
    ok("GET", f"{thread}/turns", key="ops")
    ok("POST", f"{EXAMPLE}/query", {"query": "locker code"}, key="ops")
    ok("GET", f"{thread}/turns", status=404, key="bob")
    # A second partition: its own records, its own catalogue entry.
    part = {"X-Memory-Partition": "eval"}
    ok("POST", f"{EXAMPLE}/facts", {"text": "I work at Initech."}, key="ops", headers=part)
    ok("POST", f"{EXAMPLE}/query", {"query": "Where do I work?"}, key="ops", headers=part)
    ok("GET", f"{EXAMPLE}/entities", key="ops", headers=part)
    ok("POST", f"{EXAMPLE}/sessions", {}, 201, key="ops", headers=part)
    # Refused writes under an Idempotency-Key leave nothing behind (the claim is released).
    ok("POST", f"{thread}/turns", {"text": "Let me in."}, 404, key="bob", headers={"Idempotency-Key": "bob-1"})
    ok("POST", f"{EXAMPLE}/facts", {"text": "I live in Oslo.", "scopes": [["org/acme/user/alice"]]}, 403, key="bob",
       headers={"Idempotency-Key": "bob-2"})
    ok("POST", f"{EXAMPLE}/chat", {"message": "Where does alice live?", "scopes": [["org/acme/user/alice"]]}, 403,
       key="bob", headers={"Idempotency-Key": "bob-3"})
    # Forgetting for real, and deleting an entity: the records go, and so do their search units.
    ok("POST", f"{EXAMPLE}/forget", {"query": "London"}, key="alice")
    entities = ok("GET", f"{EXAMPLE}/entities", key="alice")["entities"]
    assert entities, "alice's facts should have left entities"
    natural = entities[0]["id"].split(":", 1)[1]  # entity:<type>/<name>
    ok("DELETE", f"{EXAMPLE}/entities/{natural}", status=204, key="alice")


def run_after_projection(call: Call) -> None:
    """Routes that need the projector to have indexed the scenario's writes."""
    # Two turns and a window of one: the older turn is found through the search index.
    got, payload = call("POST", f"{CTX}/threads/support-1/context", {"query": "printer", "last_n_turns": 1})
    assert got == 200, payload
    # A page cursor the service did not issue is refused on every list route that pages by
    # cursor: checking it reads the stack's cursor key (which these functions may read).
    for path in (f"{CTX}/sessions", f"{CTX}/entities", f"{CTX}/threads", f"{CTX}/documents", f"{CTX}/audit"):
        got, payload = call("GET", f"{path}?cursor=forged.cursor")
        assert got == 400 and payload.get("field") == "cursor", (path, got, payload)
    # One fact by id through its search unit (_doc), then forgotten by id (its unit deleted).
    got, payload = call("GET", f"{CTX}/attributes?key=employer")
    assert got == 200 and payload["items"], payload
    fact_id = payload["items"][0]["id"]
    got, payload = call("GET", f"{CTX}/attributes/{fact_id}")
    assert got == 200, payload
    got, payload = call("DELETE", f"{CTX}/attributes/{fact_id}")
    assert got == 200 and payload["deleted"] == 1, payload

"""The official Spectron client's methods for the routes we serve, unchanged, on SQLite and
DynamoDB in process and over HTTP (``memory``), and ``AsyncSpectron`` over HTTP: each checks
the rows that come back, not only that they decode."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.spectron.conftest import API_KEY, CONTEXT

STU = {"entity": {"type": "person", "name": "Stu"}, "key": "job_title", "value": "CTO"}
POLICY = "# Returns\n\nReturns are accepted within 30 days.\n\n# Refunds\n\nThe refund window is 30 days."


def ready(memory: Any, doc_id: str) -> Any:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        doc = memory.documents.get(doc_id)
        if doc.status == "ready":
            return doc
        time.sleep(0.05)
    raise AssertionError(f"document {doc_id} did not become ready")


def test_remember_entities_and_history(memory):
    first = memory.remember("import", infer="triples", triples=[STU])
    assert first.mode == "triples" and first.session_id.startswith("sess_")
    memory.remember("import", infer="triples", triples=[{**STU, "value": "CEO"}])
    people = memory.entities.list(entity_type="person")
    assert [e.name for e in people.entities] == ["Stu"] and people.entities[0].entity_type == "person"
    detail = memory.entities.get("person", "Stu")
    assert detail.entity.id == "entity:person/stu"
    assert [(a.key, a.value) for a in detail.attributes] == [("job_title", "CEO")]
    history = memory.entities.history("person", "Stu", "job_title").history
    assert [a.value for a in history] == ["CEO", "CTO"] or [a.value for a in history] == ["CTO", "CEO"]
    assert any(a.superseded_by for a in history)
    memory.entities.delete("person", "Stu")
    assert memory.entities.list(entity_type="person").entities == []


def test_remember_many_turns_with_limit_and_offset(memory):
    batch = memory.remember_many([{"role": "user", "content": "I moved to Oslo"},
                                  {"role": "assistant", "content": "Noted"},
                                  {"role": "user", "content": "I like skiing"}])
    assert len(batch.turn_ids) == 3
    turns = memory.sessions.turns(batch.session_id).turns
    assert [t.id for t in turns] == batch.turn_ids and [t.seq for t in turns] == [1, 2, 3]
    assert turns[0].content == "I moved to Oslo" and turns[0].session == batch.session_id
    window = memory.sessions.turns(batch.session_id, limit=1, offset=1).turns
    assert [t.content for t in window] == ["Noted"]
    hits = memory.recall("where did I move", k=5)
    assert any(h.text == "I moved to Oslo" and h.source == "turn" for h in hits.hits)
    assert "Oslo" in memory.query_context("where did I move").context
    recent = memory.query_context("")  # the pydantic-ai integration's context tool sends one
    assert "I like skiing" in recent.context and "# Conversation so far" in recent.context


def test_sessions_create_with_metadata_context_and_delete(memory):
    session = memory.sessions.create(scopes="org/acme", metadata={"channel": "slack"})
    assert session.id.startswith("sess_") and session.scopes == [["org/acme"]]
    memory.remember("I work at Acme as CTO", session_id=session.id)
    assert "Acme" in memory.sessions.context(session.id, "where do I work").context
    memory.sessions.delete(session.id)
    from surrealdb.spectron import SpectronNotFoundError

    with pytest.raises(SpectronNotFoundError):
        memory.sessions.turns(session.id)


def test_chat_streaming_and_the_trace(memory):
    reply = memory.chat("what's my role?")
    assert reply.reply and reply.trace_id.startswith("trace_")
    trace = memory.traces.get(reply.trace_id)
    assert trace.id == reply.trace_id and trace.query_text == "what's my role?"
    assert trace.created_at and trace.latency_ms >= 0 and trace.resolution_tier and trace.tier_reason
    chunks = list(memory.chat("what's my role?", stream=True, session_id=reply.session_id))
    assert "".join(c.delta for c in chunks) and chunks[-1].done
    done = next(c for c in chunks if c.done and c.trace_id)
    assert memory.traces.get(done.trace_id).query_text == "what's my role?"


def test_traces_list_and_stats(memory):
    assert memory.traces.list().traces == [] and memory.traces.stats().total_queries == 0
    memory.remember("import", infer="triples", triples=[STU])
    first = memory.chat("what's my role?")
    second = memory.chat("what's my role?")  # the same question: the reply cache answers it
    done = memory.consolidate()
    listed = memory.traces.list(limit=10).traces
    assert [t.id for t in listed] == [done.trace_id, second.trace_id, first.trace_id]
    assert listed[1].cached and not listed[2].cached and listed[2].query_text == "what's my role?"
    assert listed[2].resolution_tier and listed[2].created_at and listed[0].tier_reason.startswith("consolidate")
    assert [t.id for t in memory.traces.list(limit=1).traces] == [done.trace_id]
    stats = memory.traces.stats()
    assert (stats.total_queries, stats.response_traces_total, stats.cache_hits) == (2, 2, 1)
    assert stats.cache_hit_rate == 0.5 and stats.response_traces_cached == 1 and stats.window_hours == 24
    assert stats.avg_latency_ms >= 0 and sum(stats.tier_counts.values()) == 2
    assert stats.tier_counts.get("2") == 1  # the cached reply
    assert sum(k["count"] for k in stats.source_kind_distribution) == stats.retrieval["hits"]
    assert stats.supersession["count"] == 0 and stats.contradiction["count"] == 0
    memory.remember("I live in London.")
    memory.chat("I moved to Berlin.")  # a correction: London is superseded
    memory.chat("I think I live in Paris.")  # hedged: held as uncertain, not superseding
    moved = memory.traces.stats()
    assert moved.total_queries == 4 and moved.supersession["count"] == 1
    assert moved.contradiction["count"] == 1 and moved.supersession["factsWritten"] >= 1


def test_inspect_by_reference(memory):
    from surrealdb.spectron import SpectronAPIError, SpectronNotFoundError

    memory.remember("import", infer="triples", triples=[{**STU, "validFrom": "2020-01-01T00:00:00Z"}])
    memory.remember("import", infer="triples", triples=[{**STU, "value": "CEO", "validFrom": "2023-01-01T00:00:00Z"},
                                                        {"entity": STU["entity"], "key": "manager",
                                                         "target": {"type": "person", "name": "Ann"}}])
    entity = memory.inspect("entity:person/Stu")
    assert (entity["kind"], entity["ref"], entity["entity"]["id"]) == ("entity", "entity:person/stu", "entity:person/stu")
    assert [(a["key"], a["value"]) for a in entity["attributes"]] == [("job_title", "CEO")]
    assert [(r["label"], r["object"]) for r in entity["relations"]] == [("manager", "entity:person/ann")]
    assert [a["value"] for a in entity["history"]] == ["CTO", "CEO"]
    assert {p["source"]["kind"] for p in entity["provenance"]} == {"upsert"}
    assert sorted(i for p in entity["provenance"] for i in p["factIds"]) == sorted(a["id"] for a in entity["history"])
    then = memory.inspect("attribute:person/stu/job_title", as_of="2021-06-01T00:00:00Z")
    assert then["kind"] == "attribute" and [a["value"] for a in then["attributes"]] == ["CTO"]
    assert then["view"]["asOf"].startswith("2021-06-01") and len(then["history"]) == 2
    assert [a["value"] for a in memory.inspect("attribute:person/stu/job_title",
                                               at_instant="2024-01-01T00:00:00Z")["attributes"]] == ["CEO"]
    window = memory.inspect("attribute:person/stu/job_title", valid_from="2019-01-01T00:00:00Z",
                            valid_until="2024-01-01T00:00:00Z")
    assert sorted(a["value"] for a in window["attributes"]) == ["CEO", "CTO"]
    rel = memory.inspect("relation:person/stu/manager/entity:person/ann")
    assert rel["kind"] == "relation" and [r["object"] for r in rel["relations"]] == ["entity:person/ann"]
    assert memory.inspect("relation:person/stu/manager/person/bob")["relations"] == []
    reply = memory.chat("what's my role?")
    trace = memory.inspect(f"trace:{reply.trace_id}")
    assert trace["kind"] == "trace" and trace["trace"]["queryText"] == "what's my role?" and trace["entity"] is None
    for bad in ("person/stu", "entity:person", "attribute:person/stu", "relation:person/stu/manager", "blob:x",
                "entity:spaceship/x", "trace:"):
        with pytest.raises(SpectronAPIError) as refused:
            memory.inspect(bad)
        assert refused.value.status_code == 400 and refused.value.body["field"] == "ref", bad
        assert "entity:<type>/<name>" in refused.value.body["detail"], bad
    with pytest.raises(SpectronAPIError) as both:
        memory.inspect("entity:person/stu", as_of="2021-01-01T00:00:00Z", valid_from="2020-01-01T00:00:00Z")
    assert both.value.status_code == 400
    with pytest.raises(SpectronNotFoundError):
        memory.inspect("entity:person/nobody")
    with pytest.raises(SpectronNotFoundError):
        memory.inspect("trace:trace_01hv0000000000000000000000")


def test_documents_upload_list_chunks_and_delete(memory):
    up = memory.documents.upload(POLICY.encode(), filename="policy.md", content_type="text/markdown",
                                 title="Returns policy", source="kb", scopes="org/acme")
    assert up.id.startswith("doc_") and not up.deduplicated
    doc = ready(memory, up.id)
    assert (doc.title, doc.source, doc.mime_type, doc.version) == ("Returns policy", "kb", "text/markdown", 1)
    assert doc.size_bytes == len(POLICY.encode())
    other = memory.documents.upload(b"Shipping takes five days.", filename="ship.txt", title="Shipping")
    ready(memory, other.id)
    page = memory.documents.list(page=1, page_size=1)
    assert (page.total, page.page, page.page_size, [d.id for d in page.documents]) == (2, 1, 1, [up.id])
    assert [d.id for d in memory.documents.list(page=2, page_size=1).documents] == [other.id]
    assert [d.id for d in memory.documents.list(mime_type="text/markdown").documents] == [up.id]
    assert memory.documents.list(status="Ready").total == 2 and memory.documents.list(status="failed").total == 0
    chunks = memory.documents.chunks(up.id)
    assert chunks.total == len(chunks.chunks) >= 2 and [c.position for c in chunks.chunks] == list(range(chunks.total))
    text = POLICY.strip()
    for c in chunks.chunks:
        assert c.document == up.id and text[c.char_start:c.char_end] == c.text
    memory.documents.delete(other.id)
    assert [d.id for d in memory.documents.list().documents] == [up.id]


def test_documents_reprocess_and_recompute_links(memory, monkeypatch):
    from agent_memory.services.documents import chunking

    long_section = " ".join(f"Rule {i}: items of kind {i} return within {i + 10} days." for i in range(10))
    text = f"# Returns\n\nReturns are accepted within 30 days. Alice works at Acme.\n\n# Rules\n\n{long_section}\n"
    up = memory.documents.upload(text.encode(), filename="rules.md", content_type="text/markdown")
    ready(memory, up.id)
    before = {c.text: c.id for c in memory.documents.chunks(up.id).chunks}
    monkeypatch.setattr(chunking, "MAX_CHARS", 200)
    again = memory.documents.reprocess(up.id)
    assert (again.id, again.status, again.deduplicated) == (up.id, "ingesting", False) and again.content_hash
    doc = ready(memory, up.id)
    assert doc.version == 2
    after = memory.documents.chunks(up.id).chunks
    assert len(after) > len(before)
    kept = [c for c in after if c.text in before]
    assert kept and all(c.id == before[c.text] for c in kept)
    assert all(c.id not in before.values() for c in after if c.text not in before)
    links = memory.documents.recompute_links()
    assert links.links_emitted >= 1  # the returns section names Alice (an entity its facts created)
    assert memory.documents.recompute_links().links_emitted == links.links_emitted


def test_documents_query_and_the_keyword_index(memory):
    returns = memory.documents.upload(POLICY.encode(), filename="policy.md", content_type="text/markdown",
                                      title="Returns policy", source="kb")
    ready(memory, returns.id)
    shipping = memory.documents.upload(b"Refund requests for shipping damage take 30 days. Shipping damage is rare.",
                                       filename="ship.txt", title="Shipping", source="wiki")
    ready(memory, shipping.id)
    found = memory.documents.query("refund window", k=3)
    assert found.results and found.results[0].score == 1.0 and found.query_ms >= 0
    top = found.results[0]
    assert top.chunk["documentId"] == returns.id and top.document["id"] == returns.id
    assert "refund window" in top.chunk["text"] and top.graph_evidence is None
    only_wiki = memory.documents.query("refund window", filter={"source": "wiki"})
    assert {r.document["id"] for r in only_wiki.results} == {shipping.id}
    strict = memory.documents.query("refund window", threshold=1.0)
    assert [r.chunk["id"] for r in strict.results] == [top.chunk["id"]]
    assert memory.documents.query("refund window", mode="bm25", expand_graph=True).results

    page = memory.documents.keywords.list(page=1, page_size=50)
    counts = {k.normalised: k.document_count for k in page.keywords}
    assert counts["refund"] == 2 and counts["shipping damage"] == 1 and page.total == len(page.keywords)
    assert [k.normalised for k in memory.documents.keywords.list(q="ship", page_size=50).keywords] == \
        sorted((n for n in counts if "ship" in n), key=lambda n: (-counts[n], n))
    assert all(k.document_count == 2 for k in memory.documents.keywords.list(min_document_count=2).keywords)
    one = memory.documents.keywords.get("refund")
    assert (one.id, one.document_count) == ("refund", 2)
    assert {d["id"] for d in one.documents} == {returns.id, shipping.id}
    hits = memory.documents.keywords.search("shipping damage", k=3)
    assert hits.results[0].normalised == "shipping damage" and hits.results[0].score == 1.0
    mine = memory.documents.keywords.for_document(shipping.id)
    assert mine.keywords[0].normalised == "shipping damage" and mine.keywords[0].score == 1.0
    assert memory.documents.get(shipping.id).keyword_count == len(mine.keywords)
    memory.documents.delete(shipping.id)
    assert memory.documents.keywords.get("refund").document_count == 1
    from surrealdb.spectron import SpectronNotFoundError

    with pytest.raises(SpectronNotFoundError):
        memory.documents.keywords.get("shipping damage")


def test_state_profile_forget_audit_and_health(memory):
    memory.remember("I work at Acme as CTO")
    assert memory.profile().dynamic and memory.state().identity
    assert memory.forget("Acme").deleted >= 1
    audit = memory.audit(kind="decision", limit=10)
    # the forget's erasure receipt is the one decision (issue 70): no admin bypass or delegation happened
    assert len(audit.rows) == 1 and audit.rows[0].rows_touched >= 1
    # a cost row per request, newest first: forget, state, profile, and the write
    costs = memory.audit(kind="retrieval").rows + memory.audit(kind="response").rows
    assert len(costs) >= 4 and {r.kind for r in costs} <= {"retrieval", "response"}
    caller = memory.whoami().principal_id  # local-admin on an open service, the key's principal else
    assert all(r.principal == caller and r.latency_ms >= 0 and r.created_at for r in costs)
    assert all(r.rows_touched > 0 for r in costs)  # each read or wrote the store
    reads = memory.audit(kind="retrieval").rows
    assert all(r.cost == 0.0 and r.model is None for r in reads)
    assert memory.health()["status"] == "ok"


@pytest.mark.parametrize("store_kind", ["sqlite"])
def test_async_client_over_http(server, api_key):
    from surrealdb.spectron import AsyncSpectron

    async def scenario() -> None:
        async with AsyncSpectron(CONTEXT, endpoint=server, api_key=api_key, max_retries=0) as memory:
            await memory.remember("import", infer="triples", triples=[STU])
            assert [e.name for e in (await memory.entities.list(entity_type="person")).entities] == ["Stu"]
            facts = await memory.recall("Stu's job title", include=["facts"], valid_from="2000-01-01T00:00:00Z")
            assert [h.text for h in facts.hits] == ["Stu job title: CTO"]
            assert (await memory.recall("Stu's job title", include=["facts"], at_instant="2000-01-01T00:00:00Z")).hits == []
            assert "CTO" in (await memory.query_context("Stu's job title", lens="org", scope_view="merged")).context
            batch = await memory.remember_many([{"role": "user", "content": "I moved to Oslo"},
                                                {"role": "assistant", "content": "Noted"}])
            turns = (await memory.sessions.turns(batch.session_id, offset=1)).turns
            assert [t.content for t in turns] == ["Noted"]
            up = await memory.documents.upload(POLICY.encode(), filename="p.md", content_type="text/markdown",
                                               title="Returns policy", source="kb")
            for _ in range(600):
                if (await memory.documents.get(up.id)).status == "ready":
                    break
                await asyncio.sleep(0.05)
            listed = await memory.documents.list(page=1, page_size=10)
            assert listed.total == 1 and listed.documents[0].source == "kb"
            assert (await memory.documents.chunks(up.id)).chunks[0].document == up.id
            found = await memory.documents.query("refund window", filter={"source": "kb"}, threshold=0.5)
            assert found.results[0].document["id"] == up.id and found.results[0].score == 1.0
            assert (await memory.documents.keywords.get("Refund")).documents[0]["id"] == up.id
            assert (await memory.documents.keywords.list(q="refund")).total >= 2
            assert (await memory.documents.keywords.search("refunds")).results
            assert (await memory.documents.keywords.for_document(up.id)).keywords
            stream = await memory.chat("where did I move?", stream=True)
            frames = [c async for c in stream]
            done = next(c for c in frames if c.done and c.trace_id)
            assert (await memory.traces.get(done.trace_id)).query_text == "where did I move?"

    asyncio.run(scenario())


def test_recall_and_query_context_filters(memory):
    memory.remember("import", infer="triples", triples=[{**STU, "validFrom": "2020-01-01T00:00:00Z"}])
    memory.remember("import", infer="triples", triples=[{**STU, "value": "CEO", "validFrom": "2023-01-01T00:00:00Z"}])
    ask = "What is Stu's job title?"

    def texts(result: Any) -> list[str]:
        return sorted(h.text for h in result.hits)

    assert texts(memory.recall(ask, include=["facts"])) == ["Stu job title: CEO"]
    assert texts(memory.recall(ask, include=["facts"], at_instant="2021-06-01T00:00:00Z")) == ["Stu job title: CTO"]
    window = memory.recall(ask, include=["facts"], valid_from="2021-01-01T00:00:00Z", valid_until="2022-01-01T00:00:00Z")
    assert texts(window) == ["Stu job title: CTO"]
    assert texts(memory.recall(ask, include=["facts"], valid_from="2022-06-01T00:00:00Z")) == [
        "Stu job title: CEO", "Stu job title: CTO"]
    for scope, text in (("org/acme/team/eng", "eng ships on Friday"), ("org/acme/team/ops", "ops ships on Monday"),
                        ("org/acme", "acme ships weekly")):
        memory.remember(text, infer="none", scopes=scope)
    ships = "who ships when"
    assert {h.text for h in memory.recall(ships, mode="bm25", include=["passages"], lens="org/acme/team/eng").hits} == {
        "eng ships on Friday"}
    merged = memory.recall(ships, mode="bm25", include=["passages"], lens="org/acme/team/eng", scope_view="merged")
    assert {h.text for h in merged.hits} == {"eng ships on Friday", "acme ships weekly"}
    cross = memory.recall(ships, mode="bm25", include=["passages"], lens="org/acme/team/eng", scope_view="crossTeam")
    assert {h.text for h in cross.hits} == {"eng ships on Friday", "ops ships on Monday"}
    context = memory.query_context(ships, lens="org/acme/team/eng", scope_view="strict").context
    assert "eng ships on Friday" in context and "ops ships" not in context and "acme ships" not in context
    assert {h.source for h in memory.recall(ships, source="turn").hits} == {"turn"}
    up = memory.documents.upload(POLICY.encode(), filename="policy.md", content_type="text/markdown", source="kb")
    ready(memory, up.id)
    kb = memory.recall("refund window", source="kb").hits
    assert kb and {h.source for h in kb} == {"chunk"}
    assert memory.recall("refund window", source="wiki").hits == []
    oslo = {"type": "location", "name": "Fiskebar"}
    memory.remember("import", infer="triples", triples=[
        {"entity": oslo, "key": "lat", "value": "59.9139"}, {"entity": oslo, "key": "lng", "value": "10.7522"},
        {"entity": oslo, "key": "cuisine", "value": "seafood"}])
    near = memory.recall("which cuisine", include=["attribute"],
                         location={"near": {"lat": 59.91, "lng": 10.75, "radiusKm": 5}}).hits
    assert "Fiskebar cuisine: seafood" in {h.text for h in near} and all(h.text.startswith("Fiskebar") for h in near)
    box = "POLYGON((10 59, 11 59, 11 60, 10 60, 10 59))"
    assert "Fiskebar cuisine: seafood" in {h.text for h in memory.recall("which cuisine", location={"within": box}).hits}
    assert memory.recall("which cuisine", location={"within": box.replace("59", "49").replace("60", "50")}).hits == []
    from surrealdb.spectron import SpectronAPIError

    with pytest.raises(SpectronAPIError) as bad:
        memory.recall(ask, scope_view="sideways", lens="org/acme")
    assert bad.value.status_code == 400 and bad.value.body["field"] == "scopeView"


def test_memory_care_verbs(memory):
    """consolidate, reflect, elaborate and lifecycle decay/expire/fsck, with default arguments
    (no body) and with the client's fields."""
    assert memory.consolidate().outcomes == []
    memory.remember("import", infer="triples", triples=[STU])
    memory.remember("import again", infer="triples", triples=[STU])  # (the same body twice is a client replay)
    memory.remember("import employers", infer="triples", triples=[{**STU, "key": "employer", "value": "Acme"},
                                                        {"entity": {"type": "person", "name": "Ann"},
                                                         "key": "employer", "value": "Acme"}])
    assert memory.consolidate(dry_run=True).dry_run
    done = memory.consolidate(fact_limit=100, observation_limit=10)
    assert done.created == 1 and done.trace_id.startswith("trace_")
    [made] = done.outcomes
    assert (made.kind, made.entity_name, made.key, made.value, made.proof_count) == ("create", "Stu", "job_title", "CTO", 2)
    assert made.observation_id and made.observation_id.startswith("attr_")
    nothing = memory.reflect("what about zebras")
    assert nothing.evidence == [] and nothing.reflection
    seen = memory.reflect("Stu job title employer", persist=True)
    assert seen.evidence and seen.persisted_attributes and seen.persisted_attributes[0]["source"]["kind"] == "reflection"
    ideas = memory.elaborate(entity_ref="person/stu", dry_run=True)
    assert [(p["label"], p["object"]) for o in ideas.outcomes for p in o.proposed_relations] == [
        ("colleague", "entity:person/ann")]
    assert memory.elaborate(entity_ref="person/stu").relations_emitted == 1
    assert memory.elaborate(sweep=True, budget=2).relations_emitted == 0
    assert memory.lifecycle.decay().affected == 0  # everything was stated just now
    assert memory.lifecycle.expire().affected == 0  # nothing has an end in the past
    memory.remember_many([{"role": "user", "content": "I moved to Oslo"}] * 2)
    report = memory.lifecycle.fsck(check="duplicates", duplicate_threshold=0.95, max_results=5)
    assert report.total == len(report.duplicates) >= 1 and report.contradictions == [] and report.injection == []


def test_whoami_principals_and_grants(memory, service_mode):
    me = memory.whoami()
    assert (me.kind, me.enforce) == (("local", False) if service_mode == "open" else ("key", True))
    assert me.effective_grants["admin"] == ["/"]
    granted = memory.principals.grant("reader", "org/acme", ["memory:read"])
    assert granted.id == "reader" and granted.grants == {"memory:read": ["org/acme"]}
    granted = memory.principals.grant("reader", "org/acme/team", ["memory:write"])
    assert granted.grants == {"memory:read": ["org/acme"], "memory:write": ["org/acme/team"]}
    assert memory.principals.effective("reader", "org/acme/team/x").verbs == ["memory:read", "memory:write"]
    assert memory.principals.effective("reader", "org/other").verbs == []
    revoked = memory.principals.revoke("reader", "org/acme/team", ["memory:write"])
    assert revoked.grants == {"memory:read": ["org/acme"]}
    assert memory.principals.get("reader").grants == revoked.grants
    assert "reader" in [p.id for p in memory.principals.list()]


def test_readme_grant_effective_and_on_behalf_of(memory):
    """The client README's access steps, unchanged: a wildcard grant, effective for its prefix,
    and calls on behalf of a principal known only by its grants (principal:<id> form)."""
    granted = memory.principals.grant("agent-7", "org/acme/*", ["memory:read", "memory:write"])
    assert granted.grants == {"memory:read": ["org/acme/*"], "memory:write": ["org/acme/*"]}
    assert memory.principals.effective("agent-7", "org/acme/").verbs == ["memory:read", "memory:write"]
    memory.remember("import", infer="triples", triples=[STU], scopes="org/acme/team")
    memory.remember("import", infer="triples", scopes="org/other",
                    triples=[{"entity": {"type": "person", "name": "Ann"}, "key": "job_title", "value": "CFO"}])
    hits = memory.recall("job title", on_behalf_of="principal:agent-7", k=10)
    texts = " ".join(h.text for h in hits.hits)
    assert "CTO" in texts and "CFO" not in texts  # agent-7 reads org/acme/* only
    # as the README writes it: no scopes; the write takes agent-7's own place under its wildcard
    memory.remember("ticket triaged", on_behalf_of="principal:agent-7")
    memory.remember("ticket escalated", scopes="org/acme/support", on_behalf_of="principal:agent-7")
    hits = memory.recall("ticket", on_behalf_of="principal:agent-7", k=10)
    assert {"ticket triaged", "ticket escalated"} <= {h.text for h in hits.hits}
    assert memory.whoami().kind in ("local", "key")


@pytest.mark.parametrize("service_mode", ["keys-bare"])
def test_keys_minted_listed_rotated_and_deleted(memory, runtime):
    """On a service started with keys required (AGENT_MEMORY_REQUIRE_KEYS=1, no key stored yet):
    the operator's first key, then the client's keys.create/list/rotate/delete; deleting every
    key does not open the service."""
    from surrealdb.spectron import SpectronAPIError, SpectronAuthError

    with pytest.raises(SpectronAuthError):
        memory.whoami()  # no key stored, and still no anonymous caller
    ops, _ = runtime.administration.operator_create_key("ops", admin=True, name="ops")
    memory._transport.api_key = ops
    assert memory.whoami().enforce is True and memory.whoami().kind == "key"
    minted = memory.keys.create(name="ci", grants={"memory:read": ["/"], "grant:manage": ["/"]}, ttl_seconds=3600)
    assert minted.key and minted.valid_until
    memory._transport.api_key = minted.key
    me = memory.whoami()
    assert me.enforce is True and me.effective_grants == {"grant:manage": ["/"], "memory:read": ["/"]}
    listed = {k.name: k for k in memory.keys.list()}
    assert sorted(listed) == ["ci", "ops"]  # the principal's keys
    assert listed["ci"].id == minted.id and listed["ci"].valid_until == minted.valid_until
    with pytest.raises(SpectronAPIError) as refused:
        memory.keys.delete("ops")  # a narrower key of the same principal: no key outranks its maker
    assert refused.value.status_code == 403
    rotated = memory.keys.rotate("ci", ttl_seconds=600)
    assert rotated.key != minted.key
    memory._transport.api_key = rotated.key
    memory.keys.delete("ci")
    with pytest.raises(SpectronAuthError):
        memory.whoami()  # the deleted key
    memory._transport.api_key = ops
    assert [k.name for k in memory.keys.list()] == ["ops"]
    memory.keys.delete("ops")  # the last key: the service still requires one
    for key in (ops, API_KEY):
        memory._transport.api_key = key
        with pytest.raises(SpectronAuthError):
            memory.whoami()


@pytest.mark.parametrize("service_mode", ["open"])
def test_keys_are_not_minted_on_a_service_started_open(memory):
    """Started without keys required: minting over HTTP is 409 (it would not take effect, and
    would close the service at its next start), and the service stays open."""
    from surrealdb.spectron import SpectronAPIError

    with pytest.raises(SpectronAPIError) as refused:
        memory.keys.create(name="ci", grants={"memory:read": ["/"]})
    assert refused.value.status_code == 409 and refused.value.body["code"] == "keys_not_required"
    assert "AGENT_MEMORY_REQUIRE_KEYS" in refused.value.body["detail"]
    assert memory.whoami().enforce is False and memory.keys.list() == []


def test_scopes_register_list_delete_and_forget(memory):
    node = memory.scopes.register("org/acme/team", display_name="Team", description="the team's")
    assert node.path == "org/acme/team" and node.created_at and node.tombstoned_at is None
    memory.scopes.register("org/acme/other")
    assert [n.path for n in memory.scopes.list()] == ["org/acme/other", "org/acme/team"]
    memory.scopes.delete("org/acme/other")
    assert {n.path: n.tombstoned_at is not None for n in memory.scopes.list()} == {"org/acme/other": True,
                                                                                  "org/acme/team": False}
    memory.remember("import", infer="triples", triples=[STU], scopes="org/acme/team")
    memory.remember("import", infer="triples", scopes="org/acme/other",
                    triples=[{"entity": {"type": "person", "name": "Ann"}, "key": "job_title", "value": "CFO"}])
    assert memory.scopes.forget("org/acme/team").forgotten >= 1
    names = {e.name for e in memory.entities.list(entity_type="person").entities}
    assert "Stu" not in names and "Ann" in names  # Stu had nothing left; Ann's scope was not forgotten
    assert memory.scopes.forget("org/acme/team").forgotten == 0

"""The SDK's whole surface against the local server: typed results, auto-paging iterators,
documents, traces, streaming chat, and typed errors, sync and async."""

from __future__ import annotations

import asyncio
import io

import pytest

from agent_memory.client import (
    AgentMemory,
    AsyncAgentMemory,
    ChatStream,
    ConflictError,
    Memory,
    NotFoundError,
    PayloadTooLargeError,
    ValidationError,
)
from agent_memory.models import wire

USER = "entity:person/user"


def seed(memory: AgentMemory) -> str:
    sid = memory.remember("I live in London.", observed_at="2026-03-10T10:00:00Z").session_id
    memory.remember("I moved to Berlin last month.", session_id=sid, observed_at="2026-05-20T10:00:00Z")
    memory.remember("I like sushi. My sister Emma lives in Oslo. Always answer in German.", session_id=sid)
    memory.remember("I work at Acme.", session_id=sid, observed_at="2026-01-01T00:00:00Z")
    memory.remember("I think I work at Globex.", session_id=sid)
    memory.remember("I ran a marathon yesterday.", session_id=sid, observed_at="2026-05-21T08:00:00Z")
    return sid


def test_collections_page_through_next_cursor(memory):
    seed(memory)
    every = list(memory.attributes.list())
    assert len(every) >= 4 and all(isinstance(a, wire.MemoryAttribute) for a in every)
    assert [a.id for a in memory.attributes.list(page_size=1)] == [a.id for a in every]  # one page per row
    assert [a.value for a in memory.attributes.list(entity="person/user", key="location")] == ["Berlin"]
    assert [(r.label, r.object) for r in memory.relations.list(src="person/user")] == [
        ("sister", "entity:person/emma")]
    assert [a.verb for a in memory.actions.list(page_size=1)] == ["ran"]
    assert [i.description for i in memory.instructions] == ["Always answer in German."]
    entities = list(memory.entities.list(page_size=1))
    assert USER in {e.id for e in entities} and len(entities) == len({e.id for e in entities})
    rows = list(memory.entities.all_history("person", "user", page_size=1))
    assert {"London", "Berlin"} <= {r.value for r in rows if r.key == "location"}


def test_uncertainty_list_and_resolve(memory):
    seed(memory)
    pending = list(memory.uncertainty.list(entity="person/user", resolved=False))
    assert [(u.key, u.proposed_value) for u in pending] == [("employer", "Globex")]
    resolved = memory.uncertainty.resolve(pending[0].id, "Globex", note="HR confirmed")
    assert resolved.uncertainty.resolved and resolved.fact.value == "Globex"
    assert list(memory.uncertainty.list(resolved=False)) == []


def test_recall_context_forget_and_batch_writes(memory):
    batch = memory.remember_many(["I live in Lisbon.", ("assistant", "Noted."), {"content": "I like tea."}])
    assert len(batch.turn_ids) == 3 and batch.extractions[0].attributes[0].value == "Lisbon"
    hits = memory.recall("Where do I live?", k=5).hits
    assert hits and "Lisbon" in hits[0].text
    assert memory.query("Where do I live?").hits[0].id == hits[0].id
    ctx = memory.context("Where do I live?", subject="person/user")
    assert ctx.sources and ctx.sources[0].marker == "[S1]" and "Lisbon" in ctx.context
    about_user = Memory("person/user", client=memory).recall("Where do I live?")
    assert "Lisbon" in about_user.context
    planned = memory.forget("tea", dry_run=True)
    assert planned.deleted == 0 and any("tea" in item.text for item in planned.items)
    assert memory.forget("tea").deleted >= 1


def test_sessions_context_turns_and_delete(memory, model):
    session = memory.sessions.create(labels=["support"])
    assert session.labels == ["support"] and session.closed_at is None
    first = session.chat("I live in London.")
    assert first.session_id == session.id
    assert "London" in session.context("Where do I live?").context
    assert [t.role for t in session.turns(page_size=1)] == ["user", "assistant"]
    trace = memory.traces.get(first.trace_id)
    assert trace.id == first.trace_id and trace.retrieval is not None
    recent = memory.traces.list(limit=5)
    assert isinstance(recent, wire.TraceList) and [t.id for t in recent.traces] == [first.trace_id]
    stats = memory.traces.stats(window_hours=1)
    assert (stats.window_hours, stats.total_queries, stats.response_traces_total) == (1, 1, 1)
    assert memory.inspect(f"trace:{first.trace_id}").trace.query_text == "I live in London."
    session.delete()
    with pytest.raises(NotFoundError):
        list(session.turns())


def test_entities_get_as_of_and_delete(memory):
    seed(memory)
    assert [a.value for a in memory.entities.get("person", "user", "2026-04-01T00:00:00Z").attributes
            if a.key == "location"] == ["London"]
    then = memory.inspect("attribute:person/user/location", as_of="2026-04-01T00:00:00Z")
    assert isinstance(then, wire.Inspection) and then.kind == "attribute"
    assert [a.value for a in then.attributes] == ["London"] and [a.value for a in then.history] == ["London", "Berlin"]
    assert then.provenance and all(p.source.kind == "turn" for p in then.provenance)
    memory.entities.delete("person", "emma")
    with pytest.raises(NotFoundError) as err:
        memory.entities.get("person", "emma")
    assert err.value.status == 404 and err.value.detail


def test_documents_from_a_path_bytes_and_a_file(memory, tmp_path):
    path = tmp_path / "handbook.md"
    path.write_text("# Handbook\n\nThe office is in Porto.\n\n## Hours\n\nWe open at nine.\n")
    doc = memory.documents.upload(path)
    assert doc.status in ("ready", "ingesting") and not doc.deduplicated
    ready = memory.documents.wait_ready(doc.id)
    assert ready.status == "ready" and ready.title == "Handbook" and ready.format == "markdown"
    chunks = list(memory.documents.chunks(doc.id, page_size=1))
    assert len(chunks) == ready.chunk_count and any("Porto" in c.text for c in chunks)
    assert memory.documents.upload(path.read_bytes(), filename="again.md").deduplicated
    other = memory.documents.upload(io.BytesIO(b"Parking is behind the building."), title="Parking")
    assert memory.documents.get(other.id).title == "Parking"
    # Settle first: a delete racing the worker's commit is a documented 409 (retry), which
    # the delete-while-ingesting tests cover; this test is about the SDK's surface.
    memory.documents.wait_ready(other.id)
    memory.documents.delete(other.id)
    with pytest.raises(NotFoundError):
        memory.documents.get(other.id)


def test_streaming_chat_yields_deltas_then_the_response(memory, model):
    memory.remember("I live in London.")
    stream = memory.chat("Where do I live?", stream=True)
    assert isinstance(stream, ChatStream)
    parts = list(stream)
    deltas, final = parts[:-1], parts[-1]
    assert deltas and all(isinstance(d, str) for d in deltas)
    assert isinstance(final, wire.ChatResponse) and "".join(deltas) == final.reply
    assert "London" in final.reply and final.citations and stream.response is final
    with memory.chat("And what do I like?", session_id=final.session_id, stream=True) as again:
        assert again.final().session_id == final.session_id


def test_errors_are_typed_and_keep_the_problem(memory):
    with pytest.raises(ValidationError) as err:
        memory.query("where", k=500)
    assert err.value.status == 400 and err.value.field == "k" and err.value.problem["status"] == 400
    with pytest.raises(PayloadTooLargeError):
        memory.remember("x" * (200 * 1024))
    session = memory.sessions.create()
    session.close()
    with pytest.raises(ConflictError) as conflict:
        memory.remember("I live in Paris.", session_id=session.id)
    assert conflict.value.status == 409
    with pytest.raises(NotFoundError):
        memory.traces.get("trace_missing")
    assert memory.health().status == "ok"


def test_recall_filters(memory):
    memory.remember("The deploy freeze is Friday", infer="none", scopes="org/acme/team/eng")
    memory.remember("The deploy freeze is Monday", infer="none", scopes="org/acme/team/ops")
    oslo = {"type": "location", "name": "Fiskebar"}
    memory.remember("import", infer="triples", triples=[
        {"entity": oslo, "key": "lat", "value": "59.91"}, {"entity": oslo, "key": "lng", "value": "10.75"},
        {"entity": oslo, "key": "cuisine", "value": "seafood"}])
    eng = memory.query("deploy freeze", mode="bm25", include=["passages"], lens=["org/acme/team/eng"])
    assert [h.text for h in eng.hits] == ["The deploy freeze is Friday"]
    cross = memory.query("deploy freeze", mode="bm25", lens="org/acme/team/eng", scope_view="crossTeam", source="turn")
    assert {h.text for h in cross.hits} == {"The deploy freeze is Friday", "The deploy freeze is Monday"}
    near = memory.query("cuisine", include=["attribute"], location={"near": {"lat": 59.9, "lng": 10.7, "radiusKm": 20}})
    assert "Fiskebar cuisine: seafood" in {h.text for h in near.hits}
    far = memory.context("cuisine", location={"within": "POLYGON((0 0, 1 0, 1 1, 0 1, 0 0))"})
    assert "seafood" not in far.context
    window = memory.query("deploy freeze", include=["facts"], valid_from="2000-01-01T00:00:00Z")
    assert all(h.source in ("attribute", "relation") for h in window.hits)
    # a hit's kind, named as a citation names it, beside the source the official client reads
    assert [h.kind for h in eng.hits + cross.hits + near.hits] == [h.source for h in eng.hits + cross.hits + near.hits]
    assert {h.kind for h in near.hits} >= {"attribute"}


def test_async_surface(env_server, model, tmp_path):
    async def main():
        async with AsyncAgentMemory("acme") as memory:
            await memory.remember("I live in London.")
            await memory.remember("I like sushi.")
            attrs = [a async for a in memory.attributes.list(page_size=1)]
            assert {a.value for a in attrs} >= {"London", "sushi"}
            assert [a.value async for a in memory.attributes if a.key == "likes"] == ["sushi"]
            stream = await memory.chat("Where do I live?", stream=True)
            parts = [p async for p in stream]
            assert all(isinstance(p, str) for p in parts[:-1]) and "".join(parts[:-1]) == parts[-1].reply
            session = await memory.sessions.create()
            await session.chat("I work at Acme.")
            assert [t.role async for t in session.turns()] == ["user", "assistant"]
            (tmp_path / "notes.txt").write_text("The gate code is 4711.")
            doc = await memory.documents.upload(tmp_path / "notes.txt")
            assert (await memory.documents.wait_ready(doc.id)).status == "ready"
            assert [c.text async for c in memory.documents.chunks(doc.id)] == ["The gate code is 4711."]
            await memory.remember("import", infer="triples", triples=[
                {"entity": {"type": "person", "name": "Stu"}, "key": "job_title", "value": "CTO",
                 "validFrom": "2020-01-01T00:00:00Z"}])
            then = await memory.query("Stu's job title", include=["facts"], at_instant="2021-01-01T00:00:00Z",
                                      lens=None, scope_view=None, source=None, location=None)
            assert [h.text for h in then.hits] == ["Stu job title: CTO"]
            before = await memory.context("Stu's job title", valid_until="2019-01-01T00:00:00Z", include=["facts"])
            assert "CTO" not in before.context
            assert [a.value for a in (await memory.inspect("attribute:person/stu/job_title")).attributes] == ["CTO"]
            assert (await memory.traces.stats()).total_queries == 2
            assert len((await memory.traces.list()).traces) == 2
            with pytest.raises(NotFoundError) as err:
                await memory.entities.get("person", "nobody")
            assert err.value.status == 404
            return (await memory.health()).status

    assert asyncio.run(main()) == "ok"


def test_one_fact_by_id_sync_and_async(memory, env_server):
    memory.remember("I live in London.")
    memory.remember("I like sushi.")
    home = next(a for a in memory.attributes if a.key == "location")
    assert memory.attributes.get(home.id) == home
    fixed = memory.attributes.update(home.id, "Leeds", note="misheard")
    c = fixed.corrections[0]
    assert (c.previous.value, c.current.value) == ("London", "Leeds")
    assert fixed.fact.value == "Leeds" and fixed.previous.superseded_by == fixed.fact.id
    assert [h.value for h in memory.entities.history("person", "user", "location")] == ["London", "Leeds"]
    sushi = next(a for a in memory.attributes if a.key == "likes")
    gone = memory.attributes.delete(sushi.id)
    assert gone.deleted == 1 and gone.items[0].id == sushi.id
    with pytest.raises(NotFoundError):
        memory.attributes.get(sushi.id)

    async def main():
        async with AsyncAgentMemory("acme") as aio:
            await aio.remember("import", infer="triples", triples=[
                {"entity": {"type": "person", "name": "user"}, "key": "manager",
                 "target": {"type": "person", "name": "Dana"}}])
            rel = [r async for r in aio.relations.list(label="manager")][0]
            assert (await aio.relations.get(rel.id)).object == "entity:person/dana"
            out = await aio.relations.update(rel.id, "person/erin")
            assert out.fact.object == "entity:person/erin"
            assert (await aio.relations.delete(out.fact.id, purge=True)).deleted == 1
            with pytest.raises(NotFoundError):
                await aio.relations.get(out.fact.id)
            with pytest.raises(NotFoundError):
                await aio.actions.get("act_missing")
            with pytest.raises(NotFoundError):
                await aio.instructions.delete("instr_missing")

    asyncio.run(main())

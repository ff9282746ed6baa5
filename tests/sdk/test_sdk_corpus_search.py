"""The SDK's corpus search and keyword methods (sync and async) against the local server."""

from __future__ import annotations

import asyncio

from agent_memory.client import AgentMemory, AsyncAgentMemory
from agent_memory.models import wire

GUIDE = "# Returns\n\nA return label comes by email. The return label is free within 30 days.\n"
NOTES = "Return label printers live in the warehouse office."


def test_corpus_query_and_keywords_sync(memory: AgentMemory):
    guide = memory.documents.upload(GUIDE.encode(), "Guide", filename="guide.md", labels=["kb"])
    notes = memory.documents.upload(NOTES.encode(), "Notes", filename="notes.txt")
    for doc in (guide, notes):
        assert memory.documents.wait_ready(doc.id).status == "ready"
    found = memory.documents.query("return label by email", k=2)
    top = found.results[0]
    assert top.score == 1.0 and top.document.id == guide.id
    # models all the way down, as docs/sdk.md promises: the chunk and its document
    assert isinstance(top.chunk, wire.DocumentQueryChunk) and isinstance(top.document, wire.Document)
    assert top.chunk.document_id == guide.id and "free within 30 days" in top.chunk.text
    assert top.chunk.heading_path == ["Returns"] and top.chunk.section == "Returns"
    assert top.document.title == "Guide" and top.document.size_bytes == len(GUIDE.encode())
    assert [r.chunk.document_id for r in memory.documents.query("return label", filter={"labels": ["kb"]}).results] \
        == [guide.id]
    assert memory.documents.query("return label", threshold=1.0).results[0].graph_evidence is None
    listed = {k.normalised: k.document_count for k in memory.documents.keywords(page_size=2)}  # pages followed
    assert listed["return"] == 2 and listed["return label"] == 1 and listed["warehouse"] == 1
    assert [k.normalised for k in memory.documents.keywords(q="label")] == ["label", "return label"]
    assert {d.id for d in memory.documents.keyword("Return").documents} == {guide.id, notes.id}
    assert memory.documents.search_keywords("return label", threshold=1.0).results[0].normalised == "return label"
    assert memory.documents.document_keywords(guide.id).keywords[0].normalised == "return label"
    memory.documents.delete(notes.id)
    assert memory.documents.keyword("return").document_count == 1


def test_corpus_query_and_keywords_async(env_server: str):
    async def scenario() -> None:
        async with AsyncAgentMemory("acme") as memory:
            doc = await memory.documents.upload(GUIDE.encode(), "Guide", filename="guide.md")
            assert (await memory.documents.wait_ready(doc.id)).status == "ready"
            found = await memory.documents.query("return label", expand_graph=True, mode="hybrid")
            assert found.results[0].chunk.document_id == doc.id
            assert isinstance(found.results[0].document, wire.Document)
            assert [k.normalised async for k in memory.documents.keywords(min_document_count=1, sort="normalised")]
            assert (await memory.documents.keyword("return label")).documents[0].document_id == doc.id
            assert (await memory.documents.search_keywords("label", k=1)).results
            assert (await memory.documents.document_keywords(doc.id)).keywords

    asyncio.run(scenario())

"""Extraction over windows of consecutive chunks (``limits.document_window_chars``): fewer model
calls per document, the same facts as chunk-by-chunk extraction, each fact still cited to the
chunk that states it; a model that leaves out or misnames a passage is placed by the text it
states; a window interrupted half-way commits its chunks and is not extracted again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_memory.kernel import storage_keys as keys
from agent_memory.models.document_records import DocumentPart
from agent_memory.models.documents import DocumentUpload
from agent_memory.models.extraction import (
    ExtractedAction,
    ExtractedAttribute,
    ExtractedEntity,
    ExtractedInstruction,
    ExtractedRelation,
    ExtractionOutput,
)
from agent_memory.runtime import Runtime, set_runtime
from agent_memory.services.documents.ingestion import IngestionInterrupted, IngestionJob, windows
from agent_memory.services.facts.extraction.windows import split_by_passage
from agent_memory.services.prompts.extraction import build_window_prompt
from agent_memory.testing.fake_openai import Behaviour, FakeOpenAIServer
from tests.documents.test_ingestion import RC, _runtime

FILLER = ("The handbook section below applies to every office. It was reviewed by the board. "
          "Questions about it go to the people team, who answer within a week. ") * 4


def handbook(n: int) -> str:
    """``n`` sections of about 640 characters, each stating one employer and one city."""
    sections = "\n\n".join(f"## Section {i}\n\n{FILLER}Employee{i} works at Company{i}. "
                           f"Employee{i} lives in Town{i}." for i in range(n))
    return f"# Handbook\n\n{sections}"


@pytest.fixture
def fake_model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(Behaviour(latency_ms=2, jitter_ms=1, seed=5)) as fake:
        yield fake


def cited_facts(rt: Runtime, doc_id: str, n: int) -> set[tuple[str, str, str, int]]:
    """(entity, key, value, ordinal of the cited chunk) of every current attribute about the sections' people."""
    ordinal = {r.data["id"]: r.data["ordinal"] for r in rt.store.query(keys.chunks_pk(RC, doc_id), limit=1000).records}
    out = set()
    for i in range(n):
        for r in rt.store.query(keys.attrs_pk(RC, f"entity:person/employee{i}"), limit=100).records:
            if r.data.get("kind") == "attribute" and r.data.get("validUntil") is None:
                source = r.data["source"]
                assert source["kind"] == "document"
                out.add((f"employee{i}", r.data["key"], r.data["value"], ordinal[source["ref"]]))
    return out


def ingest(tmp_path: Path, fake: FakeOpenAIServer, window: int, text: str) -> tuple[Runtime, str, int]:
    rt = _runtime(tmp_path, fake, concurrency=4, AGENT_MEMORY_LIMITS_DOCUMENT_WINDOW_CHARS=str(window))
    before = fake.stats.by_path.get("/v1/chat/completions", 0)
    doc_id = rt.documents.ingest(RC, DocumentUpload(text=text)).document.id
    rt.ingestion_queue.join(timeout=60)
    assert rt.store.get(keys.documents_pk(RC), doc_id).data["status"] == "ready"
    return rt, doc_id, fake.stats.by_path.get("/v1/chat/completions", 0) - before


def test_windows_take_fewer_calls_and_cite_the_same_facts_to_the_same_chunks(tmp_path, fake_model):
    n = 12
    text = handbook(n)
    per_chunk, doc_a, calls_a = ingest(tmp_path / "a", fake_model, 0, text)
    try:
        expected = cited_facts(per_chunk, doc_a, n)
        chunks = per_chunk.store.get(keys.documents_pk(RC), doc_a).data["chunkCount"]
    finally:
        per_chunk.close()
    windowed, doc_b, calls_b = ingest(tmp_path / "b", fake_model, 4000, text)
    try:
        assert calls_a == chunks >= n  # chunk by chunk: one call each
        assert calls_b < calls_a / 3  # about six 640-character chunks a window
        # every section's two facts, each cited to the chunk (by ordinal) that states it
        assert {(e, k) for e, k, _, _ in expected} == {(f"employee{i}", k) for i in range(n)
                                                      for k in ("employer", "location")}
        assert cited_facts(windowed, doc_b, n) == expected
    finally:
        windowed.close()
        set_runtime(None)


def test_an_interrupted_window_commits_its_chunks_and_the_rest_is_extracted_once(tmp_path, fake_model):
    rt = _runtime(tmp_path, fake_model, concurrency=1, AGENT_MEMORY_LIMITS_DOCUMENT_WINDOW_CHARS="4000")
    try:
        sent: list[IngestionJob] = []
        rt.__dict__["ingestion_queue"] = type("Q", (), {"send": staticmethod(sent.append)})()
        doc_id = rt.documents.ingest(RC, DocumentUpload(text=handbook(12))).document.id
        job = sent.pop()
        passages: list[int] = []
        extract_window = rt.facts.extract_window
        rt.facts.extract_window = lambda ctx, texts, observed: passages.append(len(texts)) or extract_window(
            ctx, texts, observed)
        with pytest.raises(IngestionInterrupted) as stopped:
            rt.ingestion.process(job, should_stop=lambda: bool(passages))  # stop after the first window
        assert stopped.value.done == passages[0] > 1
        assert rt.ingestion.process(job) == "ready"
        total = rt.store.get(keys.documents_pk(RC), doc_id).data["chunkCount"]
        assert sum(passages) == total  # no chunk extracted twice
        assert len(cited_facts(rt, doc_id, 12)) == 24
    finally:
        set_runtime(None)


def _part(ordinal: int, size: int) -> DocumentPart:
    return DocumentPart(chunk_id=f"c{ordinal}", document_id="d", text="x" * size, ordinal=ordinal, offset=0,
                        position_percent=0.0, heading_path=[])


def test_windows_pack_consecutive_chunks_within_the_budget():
    parts = [_part(i, size) for i, size in enumerate([1000, 1000, 1000, 1200, 900, 300, 1200])]
    assert [[p.ordinal for p in w] for w in windows(parts, 3000)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [[p.ordinal for p in w] for w in windows(parts, 0)] == [[i] for i in range(7)]
    assert windows([], 4000) == []


PASSAGES = ["Ann works at Acme. Ann has a cat.", "Bob lives in Oslo. Always answer briefly.",
            "Ann met Bob in Rome."]


def test_split_places_named_passages_and_locates_the_rest_by_their_text():
    output = ExtractionOutput(
        entities=[ExtractedEntity(name="Ann", passage=0), ExtractedEntity(name="Bob", passage=7)],
        attributes=[ExtractedAttribute(entity="Ann", key="employer", value="Acme", passage=0),
                    ExtractedAttribute(entity="Bob", key="location", value="Oslo"),  # no passage: found by its value
                    ExtractedAttribute(entity="Ann", key="pets", value="cat", passage=-1)],  # out of range
        relations=[ExtractedRelation(subject="Ann", label="acquaintance", object="Bob", passage=2)],
        actions=[ExtractedAction(actor="Ann", verb="met", object="Bob", summary="Ann met Bob in Rome.")],
        instructions=[ExtractedInstruction(label="reply_length", description="Always answer briefly.")],
    )
    first, second, third = split_by_passage(output, PASSAGES)
    assert [(a.key, a.value) for a in first.attributes] == [("employer", "Acme"), ("pets", "cat")]
    assert [(a.key, a.value) for a in second.attributes] == [("location", "Oslo")]
    assert [i.label for i in second.instructions] == ["reply_length"]
    # the action's object is in passages 1 and 2, its actor in 0 and 2, its verb only in 2
    assert [r.label for r in third.relations] == ["acquaintance"] and len(third.actions) == 1
    assert first.actions == second.actions == []
    # each passage lists the entities its own items use, as a per-chunk call would
    assert [e.name for e in first.entities] == ["Ann"]
    assert [e.name for e in second.entities] == ["Bob"]  # passage 7 is outside: placed by its name
    assert sorted(e.name for e in third.entities) == ["Ann", "Bob"]
    # what goes to the writer carries no passage index
    assert all(item.passage is None for out in (first, second, third)
               for name in ("entities", "attributes", "relations", "actions", "instructions")
               for item in getattr(out, name))


def test_the_window_prompt_carries_the_passages_as_data_and_asks_for_attribution():
    system, user = build_window_prompt(PASSAGES, speaker_name=None, known_entities=["Ann"],
                                       observed_at="2026-01-01T00:00:00Z")
    assert '"passage"' in system and "0-based" in system
    assert "3 document passages" in user
    from agent_memory.rules.turn_data import read_turn

    turn = read_turn(user)
    assert turn.passages == PASSAGES and turn.text == "" and turn.known_entities == ["Ann"]

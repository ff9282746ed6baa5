"""Texts over an embedding model's input limit (``adapters/long_text``): cut into pieces that
each fit, embedded and mean-pooled, for OpenAI (the fake model refuses over-long inputs as
OpenAI does) and Titan (a stand-in client refusing what Bedrock refuses); and, end to end, a
300,000-character thread turn and a 60,000-character fact become searchable. The
sentence-transformers model truncates by itself; it is covered in the benchmark environment
(torch stays out of the suite)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from fused_search import fused_search

from agent_memory.adapters.embedders import BedrockTitanEmbedder, HashingEmbedder, OpenAIEmbedder
from agent_memory.adapters.long_text import MAX_PIECE_BYTES, LongTextEmbedder, split_bytes
from agent_memory.config import load_settings
from agent_memory.ports import ModelError, SearchFilter
from agent_memory.runtime import Runtime, build_embedder, set_runtime
from agent_memory.testing.fake_openai import Behaviour, FakeOpenAIServer
from tests.conftest import TEST_SECRET, InProcessApi

SIZES = [60_000, 300_000]


def long_text(chars: int, tail: str = "") -> str:
    words = " ".join(f"filler{i % 997} word{i % 31}" for i in range(chars // 12))
    text = (words + " ")[: chars - len(tail) - 1]
    return f"{text} {tail}"


@pytest.fixture(scope="module")
def fake() -> FakeOpenAIServer:
    with FakeOpenAIServer(Behaviour(seed=1)) as server:
        yield server


def test_pieces_fit_the_byte_budget_cover_the_text_and_never_split_a_character():
    text = ("héllo wörld 日本語 " * 3000) + "x" * 20_000
    pieces = split_bytes(text, 8_000)
    assert "".join(pieces) == text
    assert all(len(p.encode("utf-8")) <= 8_000 for p in pieces) and len(pieces) > 1
    assert split_bytes("short", 8_000) == ["short"]


@pytest.mark.parametrize("chars", SIZES)
def test_openai_embeds_a_long_text_the_plain_adapter_cannot(fake, chars):
    plain = OpenAIEmbedder("text-embedding-3-small", dimensions=64, api_key="x", base_url=fake.url, max_retries=0)
    text = long_text(chars)
    with pytest.raises(ModelError):  # over 8,191 tokens: the provider refuses it
        plain.embed([text])
    wrapped = LongTextEmbedder(plain, MAX_PIECE_BYTES["openai"])
    vectors = wrapped.embed(["a short text", text])
    assert vectors.shape == (2, 64) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], plain.embed(["a short text"])[0], atol=1e-6)  # short texts are unchanged


class TitanStandIn:
    """Refuses inputs over Titan v2's limits (50,000 characters; 8,192 tokens, estimated as
    one per 4 bytes), answers with hashing vectors otherwise."""

    def __init__(self, dimension: int):
        self.hashing = HashingEmbedder(dimension)
        self.calls = 0

    def invoke_model(self, *, modelId, body, contentType, accept):
        self.calls += 1
        text = json.loads(body)["inputText"]
        if len(text) > 50_000 or len(text.encode()) / 4 > 8_192:
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "ValidationException", "Message": "Too many input tokens"}},
                              "InvokeModel")
        vector = self.hashing.embed([text])[0].tolist()
        return {"body": io.BytesIO(json.dumps({"embedding": vector}).encode())}


@pytest.mark.parametrize("chars", SIZES)
def test_titan_embeds_a_long_text_the_plain_adapter_cannot(chars):
    client = TitanStandIn(256)
    plain = BedrockTitanEmbedder(dimensions=256, client=client, max_workers=4, max_retries=0)
    text = long_text(chars)
    with pytest.raises(ModelError):
        plain.embed([text])
    vectors = LongTextEmbedder(plain, MAX_PIECE_BYTES["bedrock"]).embed([text])
    assert vectors.shape == (1, 256) and abs(float(np.linalg.norm(vectors[0])) - 1.0) < 1e-5
    assert client.calls > chars // 8_000  # one call per piece


@pytest.mark.parametrize("chars", SIZES)
def test_hashing_has_no_limit(chars):
    vectors = HashingEmbedder(64).embed([long_text(chars)])
    assert vectors.shape == (1, 64) and abs(float(np.linalg.norm(vectors[0])) - 1.0) < 1e-5


def test_the_runtime_wraps_every_bounded_embedder(tmp_path, fake):
    settings = load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path), "OPENAI_BASE_URL": fake.url,
                                  "AGENT_MEMORY_MODELS_EMBEDDING": "openai/text-embedding-3-small"})
    assert isinstance(build_embedder(settings), LongTextEmbedder)
    titan = load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path), "AWS_REGION": "us-east-1",
                               "AGENT_MEMORY_MODELS_EMBEDDING": "bedrock/amazon.titan-embed-text-v2:0"})
    assert isinstance(build_embedder(titan), LongTextEmbedder)


def test_a_300k_thread_turn_and_a_60k_fact_are_searchable_through_the_openai_embedder(tmp_path: Path, fake):
    settings = load_settings(env={
        "AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"), "AGENT_MEMORY_CURSOR_SECRET": TEST_SECRET,
        "OPENAI_BASE_URL": fake.url, "AGENT_MEMORY_MODELS_EMBEDDING": "openai/fake-embed",
        "AGENT_MEMORY_EMBEDDING_DIMENSIONS": "64"})
    rt = Runtime(settings)
    set_runtime(rt)
    try:
        api = InProcessApi()
        turn = api.post("/api/v1/acme/threads/t1/turns", {"text": "zebracorn lighthouse " + long_text(299_979)})
        assert turn.status == 201, turn.text
        fact = api.post("/api/v1/acme/facts", {"text": long_text(60_000, tail="quokkafish harbour"), "infer": "none"})
        assert fact.status == 200, fact.text
        assert rt.projector.drain(timeout_s=30)  # the local default indexes after the commit
        for words in ("zebracorn lighthouse", "quokkafish harbour"):
            hits = fused_search(rt.search, words, SearchFilter(context_id="acme"), k=5)
            assert hits and words.split()[0] in hits[0].unit.text, words
    finally:
        set_runtime(None)


def test_a_300k_fact_is_searchable_where_the_fact_cap_admits_it(tmp_path: Path, fake):
    """``/facts`` caps a text at 64 KiB by default (``limits.facts_text_bytes``, 413 above); a
    deployment that raises the cap gets a 300,000-character fact embedded in pooled pieces."""
    settings = load_settings(env={
        "AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"), "AGENT_MEMORY_CURSOR_SECRET": TEST_SECRET,
        "OPENAI_BASE_URL": fake.url, "AGENT_MEMORY_MODELS_EMBEDDING": "openai/fake-embed",
        "AGENT_MEMORY_EMBEDDING_DIMENSIONS": "64", "AGENT_MEMORY_LIMITS_FACTS_TEXT_BYTES": "400000"})
    rt = Runtime(settings)
    set_runtime(rt)
    try:
        text = long_text(300_000, tail="quokkafish harbour")
        assert len(text) >= 300_000
        fact = InProcessApi().post("/api/v1/acme/facts", {"text": text, "infer": "none"})
        assert fact.status == 200, fact.text
        assert rt.projector.drain(timeout_s=30)  # the local default indexes after the commit
        hits = fused_search(rt.search, "quokkafish harbour", SearchFilter(context_id="acme"), k=5)
        assert hits and "quokkafish" in hits[0].unit.text and len(hits[0].unit.text) >= 300_000
    finally:
        set_runtime(None)

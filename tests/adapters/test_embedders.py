"""Embedders: hashing (properties), OpenAI through the real client against a local
endpoint, Titan through botocore stubs, the local MiniLM's wiring (its model: test_local_minilm.py)."""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys

import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from agent_memory.adapters.embedders import (
    BedrockTitanEmbedder,
    HashingEmbedder,
    LocalEmbedder,
    OpenAIEmbedder,
    normalize_rows,
)
from agent_memory.kernel.errors import ConfigurationError
from agent_memory.ports import Embedder, ModelError, ModelTimeout

EMBEDDINGS_PATH = "/v1/embeddings"


def _unit_rows(vectors: np.ndarray) -> bool:
    return bool(np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5))


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


# ---------------------------------------------------------------------------
# Hashing
# ---------------------------------------------------------------------------

TEXTS = ["Alice moved to Berlin in 2021.", "Where does Alice live?", "", "?!", "the", "Bob likes pizza"]


def test_hashing_shape_dtype_and_unit_norm():
    embedder = HashingEmbedder()
    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dimension) == ("hashing/v1", 384)
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    assert not np.isnan(vectors).any()
    assert _unit_rows(vectors)
    assert embedder.embed([]).shape == (0, 384)


@pytest.mark.parametrize("dimension", [2, 64, 1024])
def test_hashing_dimension_is_honoured(dimension):
    vectors = HashingEmbedder(dimension).embed(TEXTS)
    assert vectors.shape == (len(TEXTS), dimension)
    assert _unit_rows(vectors)


def test_hashing_empty_text_is_a_fixed_unit_vector_unlike_real_text():
    embedder = HashingEmbedder()
    empty, punctuation, text = embedder.embed(["", "  ?! ", "Alice lives in Berlin"])
    assert np.array_equal(empty, punctuation)
    assert abs(_cos(empty, text)) < 0.3


def test_hashing_is_deterministic_across_processes_and_batches():
    here = HashingEmbedder().embed(TEXTS)
    code = (
        "import json, sys\n"
        "from agent_memory.adapters.embedders import HashingEmbedder\n"
        "print(HashingEmbedder().embed(json.loads(sys.argv[1])).tobytes().hex())\n"
    )
    out = subprocess.run([sys.executable, "-c", code, json.dumps(TEXTS)], capture_output=True, text=True,
                         check=True, env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"})
    there = np.frombuffer(bytes.fromhex(out.stdout.strip()), dtype=np.float32).reshape(here.shape)
    assert np.array_equal(here, there)
    # batch composition does not change a text's vector
    singles = np.stack([HashingEmbedder().embed([t])[0] for t in TEXTS])
    assert np.allclose(singles, here, atol=1e-6)


def test_hashing_related_texts_are_closer_than_unrelated():
    embedder = HashingEmbedder()
    query, related, paraphrase, unrelated = embedder.embed([
        "Where does Alice live now?",
        "Alice lives in Berlin.",
        "Alice's new home is in Berlin",
        "Bob enjoys pizza and long hikes.",
    ])
    assert _cos(query, related) > _cos(query, unrelated) + 0.2
    assert _cos(query, paraphrase) > _cos(query, unrelated)
    hiking, hikes, pizza = embedder.embed(["I went hiking", "hikes in the alps", "we ordered pizza"])
    assert _cos(hiking, hikes) > _cos(hiking, pizza)  # character trigrams bridge word forms


def test_hashing_a_large_batch_gives_one_unit_row_per_text():
    # Its speed is measured by bench/embedder_speed.py, not asserted here.
    rng = random.Random(0)
    vocab = ["".join(rng.choices("abcdefghij", k=rng.randint(3, 9))) for _ in range(3000)]
    texts = [" ".join(rng.choices(vocab, k=15)) for _ in range(10_000)]
    embedder = HashingEmbedder()
    vectors = embedder.embed(texts)
    assert len(vectors) == len(texts) and _unit_rows(vectors)
    assert np.array_equal(embedder.embed(texts[:3]), vectors[:3])  # a vector does not depend on its batch


def test_normalize_rows_never_makes_nan():
    rows = normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert rows.dtype == np.float32
    assert np.allclose(rows, [[0.6, 0.8], [0.0, 0.0]])


# ---------------------------------------------------------------------------
# OpenAI embeddings, real client against a local endpoint
# ---------------------------------------------------------------------------


def _openai(server, http_client, **kw) -> OpenAIEmbedder:
    kw.setdefault("backoff", 0.01)
    return OpenAIEmbedder(api_key="sk-test", base_url=server.url, http_client=http_client, **kw)


def test_openai_embedder_batches_and_normalises(openai_server, http_client):
    embedder = _openai(openai_server, http_client, model="text-embedding-3-small", dimensions=8, batch_size=256)
    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dimension) == ("openai/text-embedding-3-small", 8)
    texts = [f"text number {i}" for i in range(600)]

    vectors = embedder.embed(texts)

    bodies = openai_server.bodies(EMBEDDINGS_PATH)
    assert [len(b["input"]) for b in bodies] == [256, 256, 88]
    assert all(b["model"] == "text-embedding-3-small" and b["dimensions"] == 8 for b in bodies)
    assert all(b["encoding_format"] == "float" for b in bodies)
    assert [t for b in bodies for t in b["input"]] == texts
    assert vectors.shape == (600, 8) and vectors.dtype == np.float32 and _unit_rows(vectors)
    # rows follow input order although the server answered in reverse index order
    expected = normalize_rows(np.array([openai_server.vector(texts[300], 300 - 256, 8)]))[0]
    assert np.allclose(vectors[300], expected)


def test_openai_embedder_sends_dimensions_only_when_set(openai_server, http_client, monkeypatch):
    embedder = _openai(openai_server, http_client, model="text-embedding-3-large")
    assert embedder.dimension == 3072
    with pytest.raises(ModelError, match="expected 3072"):  # the fake returns 8-d vectors
        embedder.embed(["a", ""])
    (body,) = openai_server.bodies(EMBEDDINGS_PATH)
    assert "dimensions" not in body
    assert body["input"] == ["a", " "]  # the API rejects empty input


def test_openai_embedder_probes_the_dimension_of_unknown_models(openai_server, http_client):
    embedder = _openai(openai_server, http_client, model="nomic-embed-text")
    assert embedder.dimension == 8
    assert embedder.embed(["x"]).shape == (1, 8)
    assert len(openai_server.bodies(EMBEDDINGS_PATH)) == 2  # probe once, then the real call


def test_openai_embedder_retries_transient_errors(openai_server, http_client):
    openai_server.enqueue(EMBEDDINGS_PATH, openai_server.Reply(status=503, body=openai_server.error("busy")))
    vectors = _openai(openai_server, http_client, dimensions=8).embed(["a", "b"])
    assert vectors.shape == (2, 8)
    assert len(openai_server.bodies(EMBEDDINGS_PATH)) == 2


def test_openai_embedder_timeout(openai_server, http_client):
    openai_server.enqueue(EMBEDDINGS_PATH, openai_server.Reply(body={"data": []}, delay=1.5))
    with pytest.raises(ModelTimeout):
        _openai(openai_server, http_client, dimensions=8, timeout=0.3).embed(["a"])


# ---------------------------------------------------------------------------
# Bedrock Titan through botocore stubs
# ---------------------------------------------------------------------------

TITAN = "amazon.titan-embed-text-v2:0"


def _titan_response(vector: list[float]) -> dict:
    payload = json.dumps({"embedding": vector, "inputTextTokenCount": 4}).encode()
    return {"body": StreamingBody(io.BytesIO(payload), len(payload)), "contentType": "application/json"}


def _titan_params(text: str, dimensions: int) -> dict:
    body = json.dumps({"inputText": text, "dimensions": dimensions, "normalize": True})
    return {"modelId": TITAN, "body": body, "contentType": "application/json", "accept": "application/json"}


def test_titan_invokes_one_text_per_call(bedrock_client):
    embedder = BedrockTitanEmbedder(dimensions=256, client=bedrock_client, max_workers=1)
    assert isinstance(embedder, Embedder)
    assert (embedder.name, embedder.dimension) == (f"bedrock/{TITAN}", 256)
    with Stubber(bedrock_client) as stub:
        for i, text in enumerate(["first", "second"]):
            stub.add_response("invoke_model", _titan_response([float(i + 1)] * 256), _titan_params(text, 256))
        vectors = embedder.embed(["first", "second"])
        stub.assert_no_pending_responses()
    assert vectors.shape == (2, 256) and vectors.dtype == np.float32 and _unit_rows(vectors)


def test_titan_batch_runs_on_a_thread_pool(bedrock_client):
    texts = [f"text {i}" for i in range(12)]
    with Stubber(bedrock_client) as stub:
        for _ in texts:
            stub.add_response("invoke_model", _titan_response([0.5] * 512),
                              {"modelId": TITAN, "body": ANY, "contentType": "application/json",
                               "accept": "application/json"})
        vectors = BedrockTitanEmbedder(dimensions=512, client=bedrock_client, max_workers=4).embed(texts)
        stub.assert_no_pending_responses()
    assert vectors.shape == (12, 512) and _unit_rows(vectors)


def test_titan_throttling_then_success(bedrock_client):
    with Stubber(bedrock_client) as stub:
        stub.add_client_error("invoke_model", "ThrottlingException", "slow down", http_status_code=429)
        stub.add_response("invoke_model", _titan_response([1.0] * 1024), _titan_params("hello", 1024))
        vectors = BedrockTitanEmbedder(client=bedrock_client, backoff=0.01).embed(["hello"])
        stub.assert_no_pending_responses()
    assert vectors.shape == (1, 1024)


def test_titan_rejects_unsupported_dimensions_and_wrong_shapes(bedrock_client):
    with pytest.raises(ConfigurationError):
        BedrockTitanEmbedder(dimensions=300, client=bedrock_client)
    with Stubber(bedrock_client) as stub:
        stub.add_response("invoke_model", _titan_response([1.0] * 10), _titan_params(" ", 1024))
        with pytest.raises(ModelError, match="shape"):
            BedrockTitanEmbedder(client=bedrock_client).embed([""])


def test_titan_v1_body_has_no_v2_fields(bedrock_client):
    embedder = BedrockTitanEmbedder("amazon.titan-embed-text-v1", client=bedrock_client)
    assert embedder.dimension == 1536
    assert json.loads(embedder.request_body("hi")) == {"inputText": "hi"}


# ---------------------------------------------------------------------------
# Local MiniLM (the `semantic` extra): the real model is tested in test_local_minilm.py
# ---------------------------------------------------------------------------


def test_without_the_extra_a_local_model_is_a_configuration_error(monkeypatch):
    from agent_memory.adapters import onnx_encoder

    monkeypatch.setattr(onnx_encoder, "bundled_minilm_graph", lambda: None)  # the graph package missing
    onnx_encoder.load_local_encoder.cache_clear()
    with pytest.raises(ConfigurationError, match="semantic"):
        LocalEmbedder()
    onnx_encoder.load_local_encoder.cache_clear()


def test_a_graph_other_than_the_validated_one_is_refused(tmp_path, monkeypatch):
    from agent_memory.adapters import onnx_encoder

    other = tmp_path / "model.onnx"
    other.write_bytes(b"not the pinned graph")
    monkeypatch.setattr(onnx_encoder, "bundled_minilm_graph", lambda: other)
    with pytest.raises(ConfigurationError, match="SHA-256"):
        onnx_encoder.model_files("all-MiniLM-L6-v2")


def test_a_local_folder_model_needs_its_graph_and_tokenizer(tmp_path):
    from agent_memory.adapters import onnx_encoder

    with pytest.raises(ConfigurationError, match="not a folder"):
        onnx_encoder.model_files("some-hub-model")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ConfigurationError, match="model.onnx"):
        onnx_encoder.model_files(str(tmp_path))
    (tmp_path / "model.onnx").write_bytes(b"x")
    (tmp_path / "sentence_bert_config.json").write_text('{"max_seq_length": 128}')
    files = onnx_encoder.model_files(str(tmp_path))
    assert (files.graph, files.max_tokens, files.name) == (tmp_path / "model.onnx", 128, tmp_path.name)
    with pytest.raises(ConfigurationError, match="cannot load"):
        onnx_encoder.LocalEncoder(files)


def test_the_local_embedder_over_a_stand_in_encoder():
    class Encoder:
        name, dimension = "all-MiniLM-L6-v2", 4

        def sentences(self, texts):
            return np.full((len(texts), 4), 2.0, dtype=np.float32)

    embedder = LocalEmbedder(encoder=Encoder())
    assert (embedder.name, embedder.dimension) == ("local/all-MiniLM-L6-v2", 4)
    assert _unit_rows(embedder.embed(["a", "b"])) and embedder.embed([]).shape == (0, 4)

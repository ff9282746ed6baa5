"""The packaged MiniLM graph with its int8 weights multiplied as int8.

The graph stores each projection's weights as int8 with one scale per output column and turns
them back into fp32 inside the graph (``Cast`` then ``Mul``); ONNX Runtime folds that at load,
so every matrix product reads fp32 weights. For a question of 15-20 tokens that pass is bound
by reading those weights (about 42 MB). Here each such product becomes ONNX Runtime's
``MatMulNBits`` (8 bits, blocks of 32 along the input dimension) holding the same int8 values
and scales, so the weights are exactly the graph's, with ``accuracy_level`` 4: the activations
are quantized per block and the product runs in int8. Vectors move by at most about 3e-4 cosine
from the folded graph's (tests/adapters/test_local_minilm.py holds both to sentence-transformers'
reference); a question's pass is about 28% faster and the resident weights a quarter of the size
(docs/benchmarks.md, "MiniLM without torch").

Rewritten when the encoder first loads (``onnx`` reads and writes the protobuf, about 2 s with
its import) and kept in the user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``, then
``agent-memory/``), named by the source graph's SHA-256 and this rewrite's version, so later
starts read the rewritten graph and never import ``onnx``. Where that folder cannot be written
the graph is rewritten in memory at every start. A graph without the pattern (another local
model) is left as it is.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

REWRITE_VERSION = 1  # part of the cached file's name: a change to the rewrite below bumps it
BLOCK = 32  # MatMulNBits' block along K: both of MiniLM's input sizes (384, 1536) are multiples
ACCURACY_INT8 = 4  # MatMulNBits: activations quantized to int8, int8 products


def cache_folder() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agent-memory"


def int8_graph(graph: Path, source_sha256: str, folder: Path | None = None) -> str | bytes | None:
    """The rewritten graph (``int8_matmuls``) for ONNX Runtime: the cached file's path when the
    cache has it or takes it, else the bytes; ``None`` when there is nothing to rewrite."""
    folder = folder or cache_folder()
    cached = folder / f"{graph.stem}-{source_sha256[:16]}-int8-v{REWRITE_VERSION}.onnx"
    if cached.is_file():
        return str(cached)
    rewritten = int8_matmuls(graph)
    if rewritten is None:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # Written whole, then renamed: a reader never sees half a graph.
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".int8-", suffix=".onnx")
        with os.fdopen(fd, "wb") as fh:
            fh.write(rewritten)
        os.replace(tmp, cached)
    except OSError as exc:
        log.info("cannot keep the rewritten graph in %s (%s); rewriting it at each start", folder, exc)
        return rewritten
    return str(cached)


def int8_matmuls(graph: Path) -> bytes | None:
    """``graph`` serialized with every ``MatMul(x, Cast(int8 W) * scale[1, N])`` as a
    ``MatMulNBits`` over the same values; ``None`` when nothing matches or ``onnx`` is missing
    (the caller then loads the graph as it is)."""
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError:
        log.warning("onnx is not installed: the local encoder multiplies its int8 weights in fp32 (slower)")
        return None
    model = onnx.load(str(graph))
    initializers = {i.name: i for i in model.graph.initializer}
    producer = {out: node for node in model.graph.node for out in node.output}
    nodes: list = []
    added: list = []
    rewritten = 0
    for node in model.graph.node:
        weights = _int8_weights(node, producer, initializers, numpy_helper)
        if weights is None:
            nodes.append(node)
            continue
        q, scale = weights
        k, n = q.shape
        if k % BLOCK:
            nodes.append(node)
            continue
        blocks = k // BLOCK
        # MatMulNBits' layout: [N, blocks, BLOCK] unsigned, zero point 128 (its default at 8 bits)
        packed = (q.astype(np.int16) + 128).astype(np.uint8).T.reshape(n, blocks, BLOCK)
        name = f"{node.name or node.output[0]}_int8"
        added += [numpy_helper.from_array(np.ascontiguousarray(packed), f"{name}_q"),
                  numpy_helper.from_array(np.repeat(scale, blocks).astype(np.float32), f"{name}_scales")]
        nodes.append(helper.make_node("MatMulNBits", [node.input[0], f"{name}_q", f"{name}_scales"],
                                      list(node.output), name=name, domain="com.microsoft",
                                      K=k, N=n, bits=8, block_size=BLOCK, accuracy_level=ACCURACY_INT8))
        rewritten += 1
    if not rewritten:
        return None
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model.graph.initializer.extend(added)
    used = {name for node in model.graph.node for name in node.input}
    kept = [i for i in model.graph.initializer if i.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model.SerializeToString()


def _int8_weights(node, producer, initializers, numpy_helper) -> tuple[np.ndarray, np.ndarray] | None:
    """``(W int8 [K, N], scale [N])`` when ``node`` is a MatMul whose weights are an int8
    initializer cast to float and scaled per column; else ``None``."""
    if node.op_type != "MatMul" or len(node.input) != 2:
        return None
    mul = producer.get(node.input[1])
    if mul is None or mul.op_type != "Mul" or len(mul.input) != 2:
        return None
    for cast_out, scale_name in ((mul.input[0], mul.input[1]), (mul.input[1], mul.input[0])):
        cast = producer.get(cast_out)
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in initializers \
                or scale_name not in initializers:
            continue
        q = numpy_helper.to_array(initializers[cast.input[0]])
        scale = numpy_helper.to_array(initializers[scale_name])
        if q.dtype != np.int8 or q.ndim != 2 or scale.size != q.shape[1] or scale.shape not in ((q.shape[1],), (1, q.shape[1])):
            continue
        return q, scale.reshape(-1).astype(np.float32)
    return None

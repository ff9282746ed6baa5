"""Rerankers (``ports.Reranker``): a second look at a retrieval's best candidates.

``LateInteractionReranker`` scores with a local encoder's *token*
vectors instead of one vector per text (late interaction, as ColBERT does): every content
word of the query finds its best match among a candidate's tokens, and the candidate's score
is the average of those matches. One vector per turn blurs a long turn's several topics and
weighs the question's scaffolding like its subject; token matching keeps "boat" and
"repairs" separate. Query words that match nearly every candidate (the person the question
names, a common verb) carry little evidence, so each query token is weighed by its rarity
among the candidates (an IDF computed over the candidate set: no corpus statistics needed,
the same on either search index).

The model is the embedder's (``adapters.onnx_encoder.load_local_encoder``, loaded once per
process: one ONNX Runtime pass gives a text's sentence vector and its token vectors). It needs
the ``semantic`` extra (onnxruntime and tokenizers, no torch): a local or container option,
not one for the Lambda layer. Measured on LoCoMo in
``bench/locomo.py --reranker``.

``BedrockReranker`` is the deployed stack's: Bedrock's Rerank API (``models.reranker =
bedrock/<rerank model id>``, template parameter ``RerankModel``).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from agent_memory.lexicon import QUERY_STOP_WORDS

#: A candidate "has" a query token when its best match is at least this similar; the share of
#: candidates that have it sets the token's weight, ``idf ** IDF_POWER`` (``late_interaction_scores``;
#: both chosen on LoCoMo's tuning split, where 0.7-0.9 and powers 1-2 measured within 0.005).
MATCH_SIMILARITY = 0.8
IDF_POWER = 1.5
_SPECIAL = frozenset({"[CLS]", "[SEP]", "[PAD]", "<s>", "</s>", "<pad>"})
_PUNCTUATION = re.compile(r"^\W+$")


def late_interaction_scores(query: np.ndarray, candidates: Sequence[np.ndarray]) -> np.ndarray:
    """MaxSim of each candidate against the query's token vectors, weighed by rarity.

    ``query`` is ``(q, d)`` and each candidate ``(n_i, d)``, rows unit-norm. For query token
    ``t``, ``S[c, t]`` is its best cosine in candidate ``c``; the token's weight is
    ``log((N + 1) / (df_t + 1)) ** IDF_POWER`` with ``df_t`` the candidates matching it at
    least ``MATCH_SIMILARITY`` (uniform when every token is everywhere), normalised to sum 1.
    Returns ``S @ w`` (float64, one score per candidate; 0 for a candidate with no tokens)."""
    n = len(candidates)
    if n == 0 or query.size == 0:
        return np.zeros(n)
    best = np.zeros((n, query.shape[0]))
    for i, tokens in enumerate(candidates):
        if tokens.size:
            best[i] = (query @ tokens.T.astype(np.float32)).max(axis=1)
    df = (best >= MATCH_SIMILARITY).sum(axis=0)
    weights = np.log((n + 1) / (df + 1)) ** IDF_POWER
    total = float(weights.sum())
    weights = weights / total if total > 0 else np.full(query.shape[0], 1.0 / query.shape[0])
    return best @ weights


def _keep(pieces: Sequence[str], *, drop_stop_words: bool) -> np.ndarray:
    """Which tokens take part: no special or punctuation tokens; for the query, no stop words."""
    keep = np.ones(len(pieces), dtype=bool)
    for i, piece in enumerate(pieces):
        word = piece[2:] if piece.startswith("##") else piece.lstrip("\u2581\u0120")
        if piece in _SPECIAL or not word or _PUNCTUATION.match(word) or \
                (drop_stop_words and word.lower() in QUERY_STOP_WORDS):
            keep[i] = False
    return keep


class LateInteractionReranker:
    """``ports.Reranker`` over a local encoder's token vectors.

    ``model`` names the local model as the embedder setting does (``all-MiniLM-L6-v2``, from
    the bundled package, or a local folder); ``encoder`` is anything with the
    ``onnx_encoder.LocalEncoder.encode`` shape (tests pass a stand-in). Candidate token vectors are kept in a small
    LRU (float16, ``cache_texts`` texts): a conversation's strong turns come back question
    after question."""

    def __init__(self, model: str = "all-MiniLM-L6-v2", *, batch_size: int = 64,
                 cache_texts: int = 4096, encoder: Any = None, store: TokenVectorStore | None = None):
        if encoder is None:
            from agent_memory.adapters.onnx_encoder import load_local_encoder

            encoder = load_local_encoder(model)
        self._encoder = encoder
        self.name = f"local/{encoder.name}"
        self.batch_size = batch_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_texts = cache_texts
        self._lock = threading.Lock()
        self.store = store

    def precompute(self, texts: Sequence[str]) -> int:
        """Encode and store the token vectors of ``texts`` the store lacks (write time, so a
        query encodes only its question); returns how many were encoded. No store: nothing."""
        if self.store is None:
            return 0
        missing = self.store.missing(list(dict.fromkeys(t for t in texts if t)))
        for start in range(0, len(missing), self.batch_size):
            batch = missing[start:start + self.batch_size]
            self.store.put_many(dict(zip(batch, self._tokens(batch, drop_stop_words=False), strict=True)))
        return len(missing)

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        q = self._tokens([query], drop_stop_words=True)[0]
        if not q.size:  # a query of stop words only: every token counts
            q = self._tokens([query], drop_stop_words=False)[0]
        with self._lock:
            cached = {t: self._cache[t] for t in dict.fromkeys(texts) if t in self._cache}
            for t in cached:
                self._cache.move_to_end(t)
        missing = [t for t in dict.fromkeys(texts) if t not in cached]
        if missing and self.store is not None:
            stored = self.store.get_many(missing)
            self._remember(stored)
            cached.update(stored)
            missing = [t for t in missing if t not in stored]
        if missing:  # not seen at write time (no store, or a unit written before it existed)
            fresh = dict(zip(missing, self._tokens(missing, drop_stop_words=False), strict=True))
            if self.store is not None:
                self.store.put_many(fresh)
            self._remember(fresh)
            cached.update(fresh)
        return late_interaction_scores(q.astype(np.float32), [cached[t] for t in texts])

    def _remember(self, tokens: dict[str, np.ndarray]) -> None:
        with self._lock:
            for t, vectors in tokens.items():
                self._cache[t] = vectors
            while len(self._cache) > self._cache_texts:
                self._cache.popitem(last=False)

    def _tokens(self, texts: list[str], *, drop_stop_words: bool) -> list[np.ndarray]:
        """Each text's kept token vectors, unit-norm, float16."""
        out = []
        for start in range(0, len(texts), self.batch_size):
            for encoded in self._encoder.encode(texts[start:start + self.batch_size]):
                matrix = np.asarray(encoded.tokens, dtype=np.float32)[: len(encoded.pieces)]
                matrix = matrix[_keep(encoded.pieces[: matrix.shape[0]], drop_stop_words=drop_stop_words)]
                norms = np.linalg.norm(matrix, axis=1, keepdims=True)
                out.append((matrix / np.clip(norms, 1e-6, None)).astype(np.float16))
        return out


class TokenVectorStore:
    """The late-interaction reranker's per-text token vectors, computed when a unit is written
    and kept on disk beside the embedded search index, so a query's candidates are read, not
    encoded (the reranker's cold path is its warm one).

    Storage budget: at most ``MAX_TOKENS`` (128) kept tokens per text, each quantised to int8
    (one byte a dimension: 384 bytes a token with MiniLM), so at most 48 KiB a unit (about
    10.6 KiB a LoCoMo turn); rows are unit-norm again when read (the int8 rounding moves a
    cosine by under 0.01). Keyed by a digest of the text, so units with the same text
    share a row; one model per file (a different model empties it: its vectors would not
    compare). Rows of removed units stay until ``agent-memory reindex`` rebuilds the index
    (which also backfills the rows of units written before the store existed)."""

    MAX_TOKENS = 128

    def __init__(self, path: str, model: str):
        import sqlite3

        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        self._db.execute("CREATE TABLE IF NOT EXISTS tokens (digest BLOB PRIMARY KEY, n INTEGER, dim INTEGER, "
                         "data BLOB)")
        row = self._db.execute("SELECT value FROM meta WHERE key = 'model'").fetchone()
        if row is None or row[0] != model:
            with self._lock:
                self._db.execute("DELETE FROM tokens")
                self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('model', ?)", (model,))

    @staticmethod
    def digest(text: str) -> bytes:
        import hashlib

        return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()

    def missing(self, texts: list[str]) -> list[str]:
        have = self._present([self.digest(t) for t in texts])
        return [t for t in texts if self.digest(t) not in have]

    def get_many(self, texts: list[str]) -> dict[str, np.ndarray]:
        """The stored token vectors (float16, rows unit-norm) of those ``texts`` that have them."""
        by_digest = {self.digest(t): t for t in texts}
        out: dict[str, np.ndarray] = {}
        for chunk in _chunks(list(by_digest), 500):
            with self._lock:
                rows = self._db.execute(f"SELECT digest, n, dim, data FROM tokens WHERE digest IN "
                                        f"({','.join('?' * len(chunk))})", chunk).fetchall()
            for digest, n, dim, data in rows:
                matrix = np.frombuffer(data, dtype=np.int8).reshape(n, dim).astype(np.float32)
                norms = np.linalg.norm(matrix, axis=1, keepdims=True)
                out[by_digest[bytes(digest)]] = (matrix / np.clip(norms, 1e-6, None)).astype(np.float16)
        return out

    def put_many(self, tokens: dict[str, np.ndarray]) -> None:
        rows = []
        for text, matrix in tokens.items():
            kept = np.asarray(matrix, dtype=np.float32)[: self.MAX_TOKENS]
            quantised = np.clip(np.rint(kept * 127.0), -127, 127).astype(np.int8)
            rows.append((self.digest(text), int(quantised.shape[0]),
                         int(quantised.shape[1]) if quantised.ndim == 2 else 0, quantised.tobytes()))
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO tokens (digest, n, dim, data) VALUES (?, ?, ?, ?)", rows)
            self._db.execute("COMMIT")

    def stats(self) -> tuple[int, int]:
        """(texts stored, bytes of token data)."""
        with self._lock:
            count, size = self._db.execute("SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM tokens").fetchone()
        return int(count), int(size)

    def _present(self, digests: list[bytes]) -> set[bytes]:
        found: set[bytes] = set()
        for chunk in _chunks(digests, 500):
            with self._lock:
                found |= {bytes(r[0]) for r in self._db.execute(
                    f"SELECT digest FROM tokens WHERE digest IN ({','.join('?' * len(chunk))})", chunk)}
        return found

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


class PrecomputingIndex:
    """A ``SearchIndex`` that hands each upserted unit's text to the reranker first
    (``LateInteractionReranker.precompute``), so every path that projects (writes, the
    projector's catch-up, ``agent-memory reindex``) stores the unit's token vectors."""

    def __init__(self, index: Any, reranker: LateInteractionReranker, text_of: Callable[[Any], str]):
        # text_of: the text retrieval hands the reranker for a unit (services.retrieval.hit_text)
        self.__dict__.update(_index=index, _reranker=reranker, _text_of=text_of)

    def upsert(self, units: Sequence[Any]) -> None:
        self._index.upsert(units)
        try:
            self._reranker.precompute([self._text_of(u) for u in units])
        except Exception as exc:  # noqa: BLE001 - a query encodes what is missing
            import logging

            logging.getLogger(__name__).warning("reranker token precompute failed: %s", exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)

    def __setattr__(self, name: str, value: Any) -> None:  # e.g. a bench swapping the embedder
        setattr(self._index, name, value)


class BedrockReranker:
    """``ports.Reranker`` over Amazon Bedrock's Rerank API (``bedrock-agent-runtime``), for the
    deployed stack, where no local model fits a layer: ``amazon.rerank-v1:0`` or
    ``cohere.rerank-v3-5:0``, in the regions that offer them.

    One ``Rerank`` call per query scores every candidate (``numberOfResults`` = the candidates;
    Bedrock answers them best first, we map them back by ``index``). The call has its own short
    deadline (``timeout_s``, no retries): reranking is a refinement, and any failure or a slow
    answer raises, which retrieval turns into the fused order with the reason in its trace
    (``ranking.rerank``). Texts are cut to ``max_chars`` (a candidate's start carries its
    subject; both models truncate long documents themselves anyway).

    Cost: Bedrock prices reranking per query, where one query covers up to 100 documents
    (``recipe.rerank_depth`` stays below that, so one query each); see the Bedrock pricing
    page for the region's rate (docs/deploying.md)."""

    MAX_SOURCES = 100

    def __init__(self, model_id: str, *, region: str | None, timeout_s: float = 1.5, max_chars: int = 2000,
                 client: Any = None):
        if client is None:
            import boto3
            from botocore.config import Config

            client = boto3.client("bedrock-agent-runtime", region_name=region, config=Config(
                read_timeout=timeout_s, connect_timeout=min(timeout_s, 2.0),
                retries={"total_max_attempts": 1, "mode": "standard"}))
        self._client = client
        self.model_id = model_id
        self.name = f"bedrock/{model_id}"
        self.max_chars = max_chars
        region = region or client.meta.region_name
        self.model_arn = f"arn:aws:bedrock:{region}::foundation-model/{model_id}"

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0)
        if len(texts) > self.MAX_SOURCES:
            raise ValueError(f"Bedrock reranks at most {self.MAX_SOURCES} texts a query, got {len(texts)}")
        response = self._client.rerank(
            queries=[{"type": "TEXT", "textQuery": {"text": query[: self.max_chars]}}],
            sources=[{"type": "INLINE", "inlineDocumentSource": {"type": "TEXT",
                                                                 "textDocument": {"text": t[: self.max_chars] or " "}}}
                     for t in texts],
            rerankingConfiguration={"type": "BEDROCK_RERANKING_MODEL", "bedrockRerankingConfiguration": {
                "numberOfResults": len(texts), "modelConfiguration": {"modelArn": self.model_arn}}})
        scores = np.full(len(texts), np.nan)
        for result in response.get("results", []):
            index = int(result["index"])
            if 0 <= index < len(texts):
                scores[index] = float(result["relevanceScore"])
        if np.isnan(scores).any():  # ranking.rerank keeps the fused order on a partial answer
            raise ValueError(f"Bedrock scored {int((~np.isnan(scores)).sum())} of {len(texts)} texts")
        return scores

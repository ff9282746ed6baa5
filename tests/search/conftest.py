"""Fixtures for the SearchIndex contract suite.

The suite runs against the embedded index and the OpenSearch adapter (both services, against
the in-process double) always, and against a real OpenSearch cluster when
``AGENT_MEMORY_OPENSEARCH_URL`` is set (``make test-opensearch``); it uses
its own tiny deterministic embedder so it does not depend on any production embedder.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pytest

from agent_memory.ports import Embedder, SearchIndex

OPENSEARCH_ENV = "AGENT_MEMORY_OPENSEARCH_URL"
OPENSEARCH_SKIP_REASON = "set AGENT_MEMORY_OPENSEARCH_URL to run against a real cluster"
# "embedded-ann": the embedded index with its ANN graph used for every context and filter
# (thresholds 0), so the contract holds on the approximate path too. "double-es"/"double-aoss":
# the OpenSearch adapter, through the real client, against the in-process double of both
# services (tests/search/nrt_double.py), refreshed after each write.
BACKENDS = ["embedded", "embedded-ann", "double-es", "double-aoss",
            pytest.param("opensearch", marks=pytest.mark.opensearch)]


def opensearch_url() -> str | None:
    """The real cluster to test against, or ``None`` (the opensearch backend is skipped)."""
    return os.environ.get(OPENSEARCH_ENV) or None


class BagOfWordsEmbedder:
    """Deterministic test embedder: lower-cased words (a trailing ``s`` dropped) hashed with
    md5 into ``dimension`` buckets with a hashed sign, L2-normalised. Texts sharing words are
    close; texts sharing none are near-orthogonal. Empty text gives the zero vector."""

    def __init__(self, name: str = "test/bow", dimension: int = 64) -> None:
        self.name = name
        self.dimension = dimension
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                if len(word) > 3 and word.endswith("s"):
                    word = word[:-1]
                h = hashlib.md5(word.encode()).digest()
                bucket = int.from_bytes(h[:4], "little") % self.dimension
                out[i, bucket] += 1.0 if h[4] & 1 else -1.0
            norm = float(np.linalg.norm(out[i]))
            if norm:
                out[i] /= norm
        return out


@pytest.fixture
def embedder() -> BagOfWordsEmbedder:
    return BagOfWordsEmbedder()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "opensearch" and opensearch_url() is None:
        pytest.skip(OPENSEARCH_SKIP_REASON)
    if request.param == "embedded-ann":
        pytest.importorskip("faiss")
    return request.param


MakeIndex = Callable[..., SearchIndex]


@pytest.fixture
def make_index(backend: str, tmp_path, embedder: BagOfWordsEmbedder) -> Iterator[MakeIndex]:
    """``make_index(embedder=None)`` opens (or reopens) the same underlying index: the same
    SQLite file for ``embedded``, the same OpenSearch index name for ``opensearch``."""
    opened: list[object] = []
    clusters: dict[str, object] = {}
    index_name = f"agent-memory-test-{uuid.uuid4().hex[:12]}"

    def make(emb: Embedder | None = None) -> SearchIndex:
        emb = emb or embedder
        if backend.startswith("embedded"):
            from agent_memory.adapters.embedded.index import EmbeddedSearchIndex

            thresholds = {"ann_min_rows": 0, "ann_exact_below": 0} if backend == "embedded-ann" else {}
            idx: SearchIndex = EmbeddedSearchIndex(tmp_path / "search.sqlite", emb, **thresholds)
        elif backend.startswith("double-"):
            from nrt_double import NrtCluster

            from agent_memory.adapters.opensearch.index import OpenSearchIndex

            service = backend.removeprefix("double-")
            cluster = clusters.setdefault(service, NrtCluster(service=service, auto_refresh=True))
            idx = OpenSearchIndex("https://nrt.invalid", index_name, emb, service=service,  # type: ignore[arg-type]
                                  refresh=service == "es", client=cluster.client())
        else:
            from agent_memory.adapters.opensearch.index import OpenSearchIndex

            url = opensearch_url()
            assert url is not None
            idx = OpenSearchIndex(url, index_name, emb, service="es", refresh=True)
        opened.append(idx)
        return idx

    yield make
    for idx in opened:
        close = getattr(idx, "close", None)
        if close is not None:
            close()
    if backend == "opensearch" and opened:
        client = opened[0].client  # type: ignore[attr-defined]
        client.indices.delete(index=index_name, ignore_unavailable=True)


@pytest.fixture
def index(make_index: MakeIndex) -> SearchIndex:
    return make_index()

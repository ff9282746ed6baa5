"""What both search indexes (and the recent-writes log) store of a unit: its payload as a dict,
and its embedding in checked batches. One module, so no adapter imports another for them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from agent_memory.ports import Embedder, EmbedderMismatch, SearchUnit

EMBED_BATCH = 256

_UNIT_FIELDS = frozenset(f.name for f in dataclasses.fields(SearchUnit))


def unit_to_dict(unit: SearchUnit) -> dict[str, Any]:
    return dataclasses.asdict(unit)


def unit_from_dict(data: dict[str, Any]) -> SearchUnit:
    """Rebuild a ``SearchUnit`` from its stored dict, ignoring unknown keys (forward compatible)."""
    return SearchUnit(**{k: v for k, v in data.items() if k in _UNIT_FIELDS})


def embed_all(embedder: Embedder, texts: Sequence[str], batch: int = EMBED_BATCH) -> np.ndarray:
    """Embed ``texts`` in chunks of ``batch`` and check the embedder honours its contract."""
    dim = int(embedder.dimension)
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    parts = []
    for start in range(0, len(texts), batch):
        chunk = list(texts[start : start + batch])
        out = np.asarray(embedder.embed(chunk), dtype=np.float32)
        if out.shape != (len(chunk), dim):
            raise EmbedderMismatch(
                f"embedder {embedder.name!r} returned shape {out.shape}, expected ({len(chunk)}, {dim})"
            )
        parts.append(out)
    return np.ascontiguousarray(np.concatenate(parts) if len(parts) > 1 else parts[0])

"""Texts longer than an embedding model accepts: embedded in pieces and mean-pooled.

OpenAI's embedding models take at most 8,191 tokens per input and Titan v2 8,192 tokens (or
50,000 characters); a longer input is an error, which would leave a long fact or thread turn
without a vector. ``LongTextEmbedder`` cuts such a text into pieces of at most
``max_piece_bytes`` UTF-8 bytes (at whitespace when there is some), embeds every piece, and
returns the length-weighted mean of the piece vectors, normalised.

Why pooling rather than cutting to a head: a long text's later parts stay findable by
meaning (the mean keeps a component of each piece), while a short text embeds exactly as
before. The cost is one vector per piece (a 300,000-character text is ~38 inputs of 8,000
bytes, sent in the inner embedder's batches).

Why bytes: a byte-level BPE token (OpenAI) covers at least one byte, so 8,000 bytes can never
pass 8,191 tokens whatever the script; for Titan it is far inside both of its limits.
The local MiniLM encoder truncates over-long inputs itself (256 tokens) and is not wrapped.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agent_memory.adapters.embedders import normalize_rows

# The safe piece size per provider (see the module docstring).
MAX_PIECE_BYTES = {"openai": 8_000, "bedrock": 8_000}


def split_bytes(text: str, max_bytes: int) -> list[str]:
    """``text`` as consecutive pieces of at most ``max_bytes`` UTF-8 bytes, cut at the last
    whitespace of a piece when it has some (never inside a character)."""
    if len(text.encode("utf-8")) <= max_bytes:
        return [text]
    pieces: list[str] = []
    start = 0
    while start < len(text):
        # Characters are 1-4 bytes: take max_bytes // 4 at least, then grow while it fits.
        end = min(len(text), start + max_bytes)
        while len(text[start:end].encode("utf-8")) > max_bytes:
            over = len(text[start:end].encode("utf-8")) - max_bytes
            end -= max(1, over // 4)
        if end < len(text):
            cut = text.rfind(" ", start + 1, end)
            cut = max(cut, text.rfind("\n", start + 1, end))
            if cut > start + (end - start) // 2:
                end = cut
        pieces.append(text[start:end])
        start = end
    return pieces


class LongTextEmbedder:
    """Wraps an ``Embedder`` whose inputs are bounded; same ``name`` and ``dimension``."""

    def __init__(self, inner, max_piece_bytes: int):
        self.inner = inner
        self.name = inner.name
        self.max_piece_bytes = max_piece_bytes

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        split = [split_bytes(t, self.max_piece_bytes) for t in texts]
        if all(len(pieces) == 1 for pieces in split):
            return self.inner.embed(texts)
        flat = [p for pieces in split for p in pieces]
        vectors = self.inner.embed(flat)
        out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
        at = 0
        for row, pieces in enumerate(split):
            block = vectors[at:at + len(pieces)]
            weights = np.array([max(1, len(p)) for p in pieces], dtype=np.float32)[:, None]
            out[row] = (block * weights).sum(axis=0) / weights.sum()
            at += len(pieces)
        return normalize_rows(out)

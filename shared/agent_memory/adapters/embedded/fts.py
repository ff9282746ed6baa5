"""Query text of the embedded index's BM25 leg: the words of a query, the FTS5 tokenizer
both SQLite and the in-memory postings use, and MATCH expressions no user text can steer."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from agent_memory.kernel.cjk import cjk_bigrams
from agent_memory.lexicon import SEARCH_STOP_WORDS

# Words that carry no retrieval signal; dropped from the BM25 query (when other words remain)
# because OR-ing them in makes FTS5 score nearly every row of a large index.
_STOPWORDS = SEARCH_STOP_WORDS
_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_QUERY_TERMS = 32
TOKENIZE = "porter unicode61 remove_diacritics 2"


def query_terms(query: str) -> list[str]:
    """Lower-cased word tokens of ``query`` (Chinese, Japanese and Korean runs as character
    bigrams, ``kernel.cjk``, as the index stores them), deduplicated in order, stopwords dropped
    when anything else remains, capped at 32 terms."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(cjk_bigrams(query.lower())):
        seen.setdefault(w, None)
    words = list(seen)
    content = [w for w in words if w not in _STOPWORDS]
    return (content or words)[:_MAX_QUERY_TERMS]


def fts_match_expression(terms: Sequence[str], ctx_token: str | None = None) -> str | None:
    """Turn query words into a safe FTS5 MATCH expression: an OR of double-quoted terms on
    the ``text`` column, ANDed with the context token when given.

    Quoting every term means no user input is ever parsed as FTS5 syntax (``NEAR``, ``-``,
    ``col:``, ``*``, parentheses); ``None`` when there are no terms. The context token makes
    FTS5 score only rows of the caller's context (doclist intersection is cheap; ``bm25()``
    per row is not), so other contexts in the same file cost next to nothing.
    """
    if not terms:
        return None
    words = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    if ctx_token is None:
        return words
    return f'ctx_token : "{ctx_token}" AND text : ({words})'


def context_token(context_id: str) -> str:
    """A single FTS token naming a context: ``ctx`` + 20 digits of a hash. Digits end the
    token so the porter stemmer leaves it alone; context ids themselves may hold any text."""
    digest = hashlib.blake2b(context_id.encode("utf-8"), digest_size=8).digest()
    return f"ctx{int.from_bytes(digest, 'big'):020d}"

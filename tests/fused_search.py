"""Both legs of an index, fused the way a thread's semantic matches are (``RECIPES["rrf"]``,
plain reciprocal-rank fusion): for tests that check what an index shows a reader, whichever
leg finds it. Indexes answer single legs; fusion is ``agent_memory.ranking``'s."""

from __future__ import annotations

from agent_memory.ports import SearchFilter, SearchHit, SearchIndex
from agent_memory.ranking.recipes import RECIPES
from agent_memory.ranking.search import search


def fused_search(index: SearchIndex, query: str, flt: SearchFilter, k: int = 10) -> list[SearchHit]:
    return search(index, query, flt, RECIPES["rrf"], k)

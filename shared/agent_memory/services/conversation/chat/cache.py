"""Tier-2 response cache: a reply reused for a near-identical question in the same scope.

Key (docs/decisions.md, "Chat cache key"): context + partition + canonical (sorted) read region + response model; a
hit needs cosine >= ``threshold`` (0.95 by default) between query embeddings. Entries live
in the record store under one partition per key (at most ``max_entries``, oldest evicted,
TTL ``ttl_s``), compared in memory: a scope holds few enough entries for a dot product.

Invalidation, two ways:

- Any write that could add to an answer in a context's partition (facts changed, a statement
  or document passage becoming searchable) moves that partition's
  *write mark* (``mark_written``): an entry taken before the mark is never served again. This
  is what keeps a refusal from outliving the fact that answers it: a refusal cites nothing,
  so no entity or unit names it. An entry's id is taken when its turn starts, before retrieval
  (``begin``), so a write that commits while the reply is being made also outdates it. The
  mark is per context and partition, whatever the writer's scopes: coarser than a reader's
  region, never stale. It moves at commit (``FactsChanged``) and again when the write's units
  are applied to the search index (projection may run after the commit). A removal adds no
  evidence: it deletes the entries that cited or used what it removed (below), no others.
- An entry remembers the entities its reply cited and the units it used; a later write that
  changes facts about one of those entities deletes it, and forget / session delete of one of
  those units deletes it (pointer rows make both lookups direct): erased text leaves the cache.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import fan_out, timeutil
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.ids import new_id
from agent_memory.ports import Condition, Delete, Put, Record, RecordStore


@dataclass
class CacheHit:
    entry_id: str
    similarity: float
    response: dict[str, Any]


def scope_key(ctx: RequestContext, model: str) -> str:
    # Everything that decides what the caller may read: region and reader-list identity (a
    # cached reply may quote a turn only some principals can read).
    region = sorted(ctx.read_region) if ctx.read_region is not None else None
    readers = None if ctx.admin else sorted(set(ctx.principals))
    raw = json.dumps([ctx.context_id, ctx.partition, region, readers, model], separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


MARK_SK = "mark"
DEFAULT_TTL_S = 24 * 3600


def mark_pk(context_id: str, partition: str) -> str:
    """The write mark's row of a context's partition."""
    return f"{keys.base_of(context_id, partition)}#cache-mark"


def mark_written(store: RecordStore, context_id: str, partition: str, ttl_s: int = DEFAULT_TTL_S) -> None:
    """Move the write mark of ``context_id``/``partition`` to now (kept ``ttl_s``: no entry
    outlives that)."""
    store.put(Record(pk=mark_pk(context_id, partition), sk=MARK_SK,
                     data={"kind": "cache_mark", "after": new_id("cache")}, expires_at=int(time.time()) + ttl_s))


class ResponseCache:
    def __init__(self, store: RecordStore, *, threshold: float = 0.95, ttl_s: int = DEFAULT_TTL_S,
                 max_entries: int = 500):
        self.store = store
        self.threshold = threshold
        self.ttl_s = ttl_s
        self.max_entries = max_entries

    def _pk(self, ctx: RequestContext, model: str) -> str:
        return f"{keys.base(ctx)}#cache#{scope_key(ctx, model)}"

    def _entries(self, ctx: RequestContext, model: str) -> list[Record]:
        page = self.store.query(self._pk(ctx, model), limit=self.max_entries + 50)
        now = int(time.time())
        return [r for r in page.records if (r.expires_at or 0) > now]

    @staticmethod
    def begin() -> str:
        """The id of an entry a turn starting now may store: ids sort by time, so an entry is
        outdated by every write mark set after its turn began."""
        return new_id("cache")

    def mark_written(self, context_id: str, partition: str) -> None:
        """A write that could change answers in ``context_id``/``partition``: every entry begun
        before now is outdated."""
        mark_written(self.store, context_id, partition, self.ttl_s)

    def lookup(self, ctx: RequestContext, model: str, query_vector: np.ndarray) -> CacheHit | None:
        # The mark and the entries are independent reads: one round trip for both.
        mark, entries = fan_out.run_at_once(
            [lambda: self.store.get(mark_pk(ctx.context_id, ctx.partition), MARK_SK),
             lambda: self._entries(ctx, model)], name="cache")
        after = mark.data.get("after", "") if mark is not None else ""
        entries = [r for r in entries if r.sk > after]
        if not entries:
            return None
        matrix = np.asarray([r.data["embedding"] for r in entries], dtype=np.float32)
        sims = matrix @ np.asarray(query_vector, dtype=np.float32)
        best = int(np.argmax(sims))
        if float(sims[best]) < self.threshold:
            return None
        record = entries[best]
        return CacheHit(record.sk, float(sims[best]), record.data["response"])

    def store_reply(self, ctx: RequestContext, model: str, query: str, query_vector: np.ndarray,
                    response: dict[str, Any], entity_ids: Iterable[str], unit_ids: Iterable[str],
                    entry_id: str | None = None) -> str:
        """Store a reply under ``entry_id`` (``begin()``'s, taken when its turn started)."""
        entry_id = entry_id or self.begin()
        pk = self._pk(ctx, model)
        entities, units = sorted(set(entity_ids)), sorted(set(unit_ids))
        data = {"kind": "cache_entry", "contextId": ctx.context_id, "query": query, "model": model,
                "embedding": [round(float(x), 6) for x in query_vector], "response": response,
                "entities": entities, "units": units, "createdAt": timeutil.now_iso()}
        expires = int(time.time()) + self.ttl_s
        ops: list = [Put(Record(pk=pk, sk=entry_id, data=data, expires_at=expires), Condition.absent())]
        for ref in [*(f"e#{e}" for e in entities), *(f"u#{u}" for u in units)][:90]:
            ops.append(Put(Record(pk=f"{keys.base(ctx)}#cache-refs#{ref}", sk=entry_id,
                                  data={"kind": "cache_ref", "entryPk": pk}, expires_at=expires)))
        self.store.transact(ops)
        self._evict(ctx, model)
        return entry_id

    def _evict(self, ctx: RequestContext, model: str) -> None:
        entries = self.store.query(self._pk(ctx, model), limit=self.max_entries + 50).records
        for record in entries[: max(0, len(entries) - self.max_entries)]:  # ULID order: oldest first
            self.store.delete(record.pk, record.sk)

    def invalidate(self, ctx: RequestContext, *, entity_ids: Iterable[str] = (), unit_ids: Iterable[str] = ()) -> int:
        """Delete every entry that cited one of ``entity_ids`` or used one of ``unit_ids``."""
        removed = 0
        refs = [*(f"e#{e}" for e in set(entity_ids)), *(f"u#{u}" for u in set(unit_ids))]
        for ref in refs:
            pk = f"{keys.base(ctx)}#cache-refs#{ref}"
            for pointer in self.store.query(pk, limit=1000).records:
                ops = [Delete(pointer.pk, pointer.sk)]
                if self.store.get(pointer.data["entryPk"], pointer.sk) is not None:
                    ops.append(Delete(pointer.data["entryPk"], pointer.sk))
                    removed += 1
                self.store.transact(ops)
        return removed

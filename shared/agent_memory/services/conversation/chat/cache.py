"""Tier-2 response cache: a reply reused for a near-identical question in the same scope.

Key (docs/decisions.md, "Chat cache key"): context + partition + canonical (sorted) read region + response model; a
hit needs cosine >= ``threshold`` (0.95 by default) between query embeddings. Entries live
in the record store under one partition per key (at most ``max_entries``, oldest evicted,
TTL ``ttl_s``), compared in memory: a scope holds few enough entries for a dot product.

Invalidation: an entry remembers the entities its reply cited and the units it used.
A later write that changes facts about one of those entities deletes it, and forget /
session delete of one of those units deletes it (pointer rows make both lookups direct).
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
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel import timeutil
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


class ResponseCache:
    def __init__(self, store: RecordStore, *, threshold: float = 0.95, ttl_s: int = 24 * 3600,
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

    def lookup(self, ctx: RequestContext, model: str, query_vector: np.ndarray) -> CacheHit | None:
        entries = self._entries(ctx, model)
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
                    response: dict[str, Any], entity_ids: Iterable[str], unit_ids: Iterable[str]) -> str:
        entry_id = new_id("cache")
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

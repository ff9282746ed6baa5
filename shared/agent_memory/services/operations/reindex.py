"""Rebuild a context's search index from the record store (after an embedder change, a
lost or new OpenSearch index, or a projection that failed past its retries).

Units are rebuilt from the records themselves with the same builders the projector uses,
so a reindexed unit is identical to a projected one; upserts are revision-ordered, so a
projection racing the rebuild cannot be overwritten by an older copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent_memory.ports import RecordStore, SearchIndex, SearchUnit
from agent_memory.services.operations.projection import change_for

BATCH = 500


@dataclass
class ReindexStats:
    records: int = 0
    units: int = 0


def reindex_context(store: RecordStore, index: SearchIndex, context_id: str, *, clear: bool = True,
                    progress: Callable[[int], None] | None = None) -> ReindexStats:
    """Re-project every record of ``context_id`` (all partitions). With ``clear`` the
    context's units are dropped first, so units of records that no longer exist go too.
    ``progress(n)`` is told each batch of ``n`` records written to the index."""
    if clear:
        index.delete_context(context_id)
    stats = ReindexStats()
    reported = 0
    batch: list[SearchUnit] = []
    for record in store.scan(f"c#{context_id}#"):
        stats.records += 1
        change = change_for(record, None)
        batch.extend(change.upserts)
        for ctx, ids in change.deletes.items():
            index.delete(ctx, ids)
        if len(batch) >= BATCH:
            index.upsert(batch)
            stats.units += len(batch)
            batch = []
            if progress is not None:
                progress(stats.records - reported)
                reported = stats.records
    if batch:
        index.upsert(batch)
        stats.units += len(batch)
    if progress is not None and stats.records > reported:
        progress(stats.records - reported)
    return stats


def context_ids(store: RecordStore) -> list[str]:
    """Every context that holds records (one scan of the context partitions)."""
    seen: set[str] = set()
    for record in store.scan("c#"):
        seen.add(record.pk.split("#", 2)[1])
    return sorted(seen)

"""Redrive the projector's dead letters (``agent-memory redrive``).

A dead letter names a failed stream batch. While the stream still holds it, its records say
which items changed; each is re-projected from the item's *current* state in the table (a
replayed old image could be older than what the index already has), as one collapsed write.
Once the stream has trimmed the batch (24 hours), the contexts it touched are unknown, so the
affected contexts (named by the operator, else every context in the table) are reindexed.
A letter is deleted only after its repair succeeded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_memory.ports import Record, RecordStore, SearchIndex
from agent_memory.services.operations.projection import ProjectionChange, apply, change_for, collapse
from agent_memory.services.operations.reindex import reindex_context


class DeadLetterSource(Protocol):
    def letters(self) -> Iterator[Any]: ...

    def changes(self, letter: Any) -> Sequence[Any] | None: ...  # items with pk, sk, image

    def settle(self, letter: Any) -> None: ...


@dataclass
class RedriveStats:
    letters: int = 0
    replayed_records: int = 0
    reindexed_contexts: list[str] = field(default_factory=list)


def redrive(source: DeadLetterSource, store: RecordStore, index: SearchIndex, *,
            contexts: Sequence[str] = (), progress: Callable[[str, int], None] | None = None) -> RedriveStats:
    """``progress(phase, n)`` is told of each dead letter handled (phase ``dead letters``)
    and of the records each reindexed context rewrote (phase ``reindex <context>``)."""
    stats = RedriveStats()
    tell = progress or (lambda phase, n: None)
    expired: list[Any] = []
    for letter in source.letters():
        stats.letters += 1
        changes = source.changes(letter)
        if changes is None:
            expired.append(letter)
            tell("dead letters", 1)
            continue
        current = {(r.pk, r.sk): r for r in store.batch_get([(c.pk, c.sk) for c in changes])}
        parts: list[ProjectionChange] = []
        for c in changes:
            record = current.get((c.pk, c.sk))
            parts.append(change_for(record, None) if record is not None else change_for(None, c.image))
        apply(index, collapse(parts))
        stats.replayed_records += len(changes)
        source.settle(letter)
        tell("dead letters", 1)
    if expired:
        for context_id in contexts or _all_contexts(store):
            phase = f"reindex {context_id}"
            reindex_context(store, index, context_id, progress=lambda n, phase=phase: tell(phase, n))
            stats.reindexed_contexts.append(context_id)
        for letter in expired:
            source.settle(letter)
    return stats


def _all_contexts(store: RecordStore) -> list[str]:
    """Every context with a record (a full scan: only for batches older than the stream)."""
    seen: dict[str, None] = {}
    for record in store.scan("c#"):
        seen.setdefault(_context_of(record), None)
    return list(seen)


def _context_of(record: Record) -> str:
    return record.pk.split("#", 2)[1]

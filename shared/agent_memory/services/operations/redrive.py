"""Redrive the projector's dead letters (``agent-memory redrive``).

A dead letter names a failed stream batch. While the stream still holds it, its records say
which items changed; each is re-projected from the item's *current* state in the table (a
replayed old image could be older than what the index already has), as one collapsed write.
Once the stream has trimmed the batch (24 hours), the contexts it touched are unknown, so the
affected contexts (named by the operator, else every context in the table) are reindexed.
A letter is deleted only after its repair succeeded.

``redrive_when_search_answers`` is the automatic form the projector function runs on the
stack's schedule: nothing while the index's circuit is open, stops at the first
``SearchUnavailable`` (the letters stay for the next run) or when the invocation's time runs
short, and leaves letters the stream no longer holds in the queue (counted as ``expired``):
those need a reindex, which is the operator's step (docs/deploying.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_memory.ports import Record, RecordStore, SearchIndex, SearchUnavailable
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
    expired: int = 0  # letters the stream no longer holds, left for a reindex (automatic runs)
    search_unavailable: bool = False  # an automatic run found the index still failing
    stopped_early: bool = False  # an automatic run ran out of time with letters left


def redrive(source: DeadLetterSource, store: RecordStore, index: SearchIndex, *,
            contexts: Sequence[str] = (), progress: Callable[[str, int], None] | None = None) -> RedriveStats:
    """``progress(phase, n)`` is told of each dead letter handled (phase ``dead letters``)
    and of the records each reindexed context rewrote (phase ``reindex <context>``)."""
    stats = RedriveStats()
    _redrive(stats, source, store, index, contexts=contexts, progress=progress, reindex_expired=True)
    return stats


def redrive_when_search_answers(source: DeadLetterSource, store: RecordStore, index: SearchIndex, *,
                                should_stop: Callable[[], bool] = lambda: False) -> RedriveStats:
    """Replay what the stream still holds, once the index answers again; never raises for
    an index that is still down (the next scheduled run tries again)."""
    stats = RedriveStats()
    if getattr(index, "is_open", False):  # the breaker saw it fail within its cool-down
        stats.search_unavailable = True
        return stats
    try:
        _redrive(stats, source, store, index, reindex_expired=False, should_stop=should_stop)
    except SearchUnavailable:
        stats.search_unavailable = True
    return stats


def _redrive(stats: RedriveStats, source: DeadLetterSource, store: RecordStore, index: SearchIndex, *,
             contexts: Sequence[str] = (), progress: Callable[[str, int], None] | None = None,
             reindex_expired: bool, should_stop: Callable[[], bool] = lambda: False) -> None:
    tell = progress or (lambda phase, n: None)
    expired: list[Any] = []
    release = getattr(source, "release", lambda letter: None)
    for letter in source.letters():
        if should_stop():
            stats.stopped_early = True
            release(letter)  # the rest of its page comes back after the visibility timeout
            return
        stats.letters += 1
        try:
            _replay(stats, letter, source, store, index, expired, reindex_expired, tell)
        except SearchUnavailable:
            release(letter)
            raise
    if expired:
        for context_id in contexts or _all_contexts(store):
            phase = f"reindex {context_id}"
            reindex_context(store, index, context_id, progress=lambda n, phase=phase: tell(phase, n))
            stats.reindexed_contexts.append(context_id)
        for letter in expired:
            source.settle(letter)


def _replay(stats: RedriveStats, letter: Any, source: DeadLetterSource, store: RecordStore, index: SearchIndex,
            expired: list[Any], reindex_expired: bool, tell: Callable[[str, int], None]) -> None:
    changes = source.changes(letter)
    if changes is None:
        if reindex_expired:
            expired.append(letter)
        else:
            stats.expired += 1  # left invisible until its timeout, so this run does not see it again
        tell("dead letters", 1)
        return
    current = {(r.pk, r.sk): r for r in store.batch_get([(c.pk, c.sk) for c in changes])}
    parts: list[ProjectionChange] = []
    for c in changes:
        record = current.get((c.pk, c.sk))
        parts.append(change_for(record, None) if record is not None else change_for(None, c.image))
    apply(index, collapse(parts))
    stats.replayed_records += len(changes)
    source.settle(letter)
    tell("dead letters", 1)


def _all_contexts(store: RecordStore) -> list[str]:
    """Every context with a record (a full scan: only for batches older than the stream)."""
    seen: dict[str, None] = {}
    for record in store.scan("c#"):
        seen.setdefault(_context_of(record), None)
    return list(seen)


def _context_of(record: Record) -> str:
    return record.pk.split("#", 2)[1]

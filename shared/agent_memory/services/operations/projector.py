"""Running the projection locally: ``Projector`` (a background worker that embeds and writes
each batch of committed changes to the search index, with read-your-writes by waiting for a
context's pending changes) and ``ProjectingRecordStore`` (the record store wrapper that hands
every committed write to it, through an outbox where the store keeps one). On AWS the
``projector`` Lambda plays this part from DynamoDB streams, with ``projection.change_for``
alone; what a record projects to is ``projection.py``.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory import faults
from agent_memory.ports import Delete, Put, Record, RecordStore, SearchIndex, WriteOp
from agent_memory.services.operations.projection import (
    ProjectionChange,
    apply,
    change_for,
    collapse,
    is_projected,
)

log = logging.getLogger("agent_memory.projection")


#: Writes a store without an outbox keeps pending in memory while the index is down; past
#: this the oldest are dropped (and counted), so a long outage cannot exhaust memory.
MAX_HELD_PROJECTIONS = 10_000


#: The most units (upserts plus deletes) the background worker writes to the index in one
#: batch: every change queued so far, up to this, becomes one index write, so the embedder
#: embeds a batch of texts in one call instead of one call per write.
MAX_BATCH_UNITS = 256

#: Outbox entries a replay (start-up, catch-up after an outage) writes to the index at once.
REPLAY_BATCH = 64

#: How long a read waits, by default, for the pending projections of its context
#: (``Settings.projection_wait_s``).
DEFAULT_SETTLE_S = 2.0


@dataclass
class _Queued:
    change: ProjectionChange
    on_applied: Callable[[], None] | None
    on_failed: Callable[[], None] | None
    seq: int
    contexts: frozenset[str]

    @property
    def units(self) -> int:
        return len(self.change.upserts) + sum(len(ids) for ids in self.change.deletes.values())


class Projector:
    """Applies projection changes to a search index, inline or on a background thread.

    In the background, the worker takes every change queued so far (up to
    ``MAX_BATCH_UNITS`` units) and writes them as one collapsed change (``collapse``: per
    unit the last operation in commit order wins, so a delete after an upsert deletes), so
    a burst of writes is embedded in one call. ``on_applied`` and ``on_searchable`` still
    run per change, in commit order; when a batch's write fails, each of its changes is
    tried alone, and each that fails again calls its ``on_failed`` (its pending entry is
    then retried by the projecting store), so one bad change never holds back the others.

    ``settle(context_id)`` is read-your-writes: a read waits (up to ``settle_s``) for the
    changes of its context queued before it began. ``pause()``/``resume()`` hold projection
    back (tests of projection lag; a paused projector is not waited for); ``drain()`` waits
    until everything queued so far is applied.
    """

    def __init__(self, index: SearchIndex, *, background: bool = False,
                 on_searchable: Callable[[ProjectionChange], None] | None = None,
                 settle_s: float = DEFAULT_SETTLE_S, batch_units: int = MAX_BATCH_UNITS):
        self.index = index
        self.background = background
        self.settle_s = settle_s
        self.batch_units = max(1, batch_units)
        # Called with each change once the index has it (the response cache's write mark).
        self.on_searchable = on_searchable
        self._queue: queue.Queue[_Queued] = queue.Queue()
        self._resumed = threading.Event()
        self._resumed.set()
        # Changes queued and not yet applied (or given up on), per context, by sequence number
        # (inserted in increasing order, so a context's first key is its oldest pending change).
        self._pending: dict[str, dict[int, None]] = {}
        self._seq = 0
        self._settled = threading.Condition()
        self._worker: threading.Thread | None = None
        if background:
            self._worker = threading.Thread(target=self._run, name="projector", daemon=True)
            self._worker.start()

    def submit(self, change: ProjectionChange, on_applied: Callable[[], None] | None = None,
               on_failed: Callable[[], None] | None = None) -> None:
        """Inline, a failure of the index raises here; on the background thread it calls
        ``on_failed`` instead (the projecting store then retries from its pending entries)."""
        if not change:
            if on_applied is not None:
                on_applied()
            return
        if self.background or not self._resumed.is_set():
            self._queue.put(self._track(change, on_applied, on_failed))
        else:
            self._apply_then(change, on_applied)

    def _track(self, change: ProjectionChange, on_applied: Callable[[], None] | None,
               on_failed: Callable[[], None] | None) -> _Queued:
        contexts = frozenset({u.context_id for u in change.upserts} | set(change.deletes))
        with self._settled:
            self._seq += 1
            for context_id in contexts:
                self._pending.setdefault(context_id, {})[self._seq] = None
            return _Queued(change, on_applied, on_failed, self._seq, contexts)

    def _done(self, item: _Queued) -> None:
        with self._settled:
            for context_id in item.contexts:
                seqs = self._pending.get(context_id)
                if seqs is not None:
                    seqs.pop(item.seq, None)
                    if not seqs:
                        del self._pending[context_id]
            self._settled.notify_all()

    def pending(self, context_id: str | None = None) -> int:
        """Changes queued and not yet applied (for ``context_id``, or in all)."""
        with self._settled:
            if context_id is not None:
                return len(self._pending.get(context_id, ()))
            return len({seq for seqs in self._pending.values() for seq in seqs})

    def settle(self, context_id: str, timeout_s: float | None = None) -> bool:
        """Wait until every change touching ``context_id`` queued before this call has
        reached the index (or was given up on for a later retry), at most ``timeout_s``
        (``settle_s`` by default). True when nothing of it is pending any more; False past
        the bound, or at once while projection is paused (nothing would move): the read then
        answers with what is searchable. Changes queued after the call are not waited for, so
        a steady stream of other writers cannot hold a read back."""
        with self._settled:
            seqs = self._pending.get(context_id)
            if not seqs:
                return True
            target = next(reversed(seqs))
            deadline = time.monotonic() + (self.settle_s if timeout_s is None else timeout_s)
            while True:
                seqs = self._pending.get(context_id)
                if not seqs or next(iter(seqs)) > target:
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._resumed.is_set():
                    return False
                self._settled.wait(remaining)

    def pause(self) -> None:
        self._resumed.clear()

    def resume(self) -> None:
        self._resumed.set()
        if not self.background:
            self.drain()

    def drain(self, timeout_s: float | None = None) -> bool:
        """Wait until everything queued so far is applied (at most ``timeout_s`` in the
        background; None: no bound). Returns whether nothing is left pending."""
        if self.background:
            if timeout_s is None:
                self._queue.join()
                return True
            deadline = time.monotonic() + timeout_s
            with self._settled:
                while self._pending:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._settled.wait(remaining)
            return True
        while not self._queue.empty():
            item = self._queue.get()
            try:
                self._apply_then(item.change, item.on_applied)
            finally:
                self._done(item)
                self._queue.task_done()
        return True

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            self._resumed.wait()
            units = batch[0].units
            while units < self.batch_units:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                batch.append(item)
                units += item.units
            try:
                self._apply_batch(batch)
            finally:
                for _ in batch:
                    self._queue.task_done()

    def _apply_batch(self, batch: list[_Queued]) -> None:
        """One index write for the batch; on failure each change alone (see the class)."""
        try:
            apply(self.index, batch[0].change if len(batch) == 1 else collapse([i.change for i in batch]))
        except Exception:  # keep the worker alive; the pending entries are retried later
            if len(batch) == 1:
                self._failed(batch[0])
                return
            log.warning("projection of a batch of %d changes failed; trying each alone", len(batch), exc_info=True)
            for item in batch:
                try:
                    apply(self.index, item.change)
                except Exception:
                    self._failed(item)
                else:
                    self._applied(item)
            return
        for item in batch:
            self._applied(item)

    def _applied(self, item: _Queued) -> None:
        try:
            self._after(item.change, item.on_applied)
        except Exception:
            self._failed(item)
        else:
            self._done(item)

    def _failed(self, item: _Queued) -> None:
        log.warning("projection failed; kept for a later retry", exc_info=True)
        try:
            if item.on_failed is not None:
                item.on_failed()
        finally:
            self._done(item)

    def _apply_then(self, change: ProjectionChange, on_applied: Callable[[], None] | None) -> None:
        apply(self.index, change)
        self._after(change, on_applied)

    def _after(self, change: ProjectionChange, on_applied: Callable[[], None] | None) -> None:
        if on_applied is not None:
            on_applied()
        self.searchable(change)

    def searchable(self, change: ProjectionChange) -> None:
        """``change`` reached the index: tell ``on_searchable`` (never raises)."""
        if self.on_searchable is not None and change:
            try:
                self.on_searchable(change)
            except Exception:  # noqa: BLE001 - the index has the change; the mark moved at commit too
                log.warning("could not move the response cache's write mark after projection", exc_info=True)


class ProjectingRecordStore:
    """A RecordStore that hands every committed change of a projected record to a
    ``Projector``: the embedded equivalent of DynamoDB Streams -> projector Lambda.

    A write that changes the index leaves a pending entry (the keys it wrote, and for
    deleted records the units to remove) until the index has the change. Over a store with
    a projection outbox (SQLite) the entry is committed in the same transaction as the
    records, so it survives a crash; over one without (DynamoDB here) it is kept in this
    process. A projection that fails after the commit (the index refuses, times out,
    throttles) never fails the write: its entry stays pending, and the next write (or the
    next start, for the outbox) replays the pending entries from the records' current
    state (``replay_outbox``), so the index catches up once it answers again. With
    ``retry_interval_s`` a timer also retries while entries are pending, so the index
    catches up without another write (or an operator).
    """

    def __init__(self, inner: RecordStore, projector: Projector, *, retry_interval_s: float | None = None):
        self.inner = inner
        self.projector = projector
        self.retry_interval_s = retry_interval_s
        self._timer: threading.Timer | None = None
        self._timer_lock = threading.Lock()
        self._catching_up = threading.Lock()
        self._closed = False
        self._outbox = inner if callable(getattr(inner, "apply_with_outbox", None)) else None
        # Without an outbox: (id, entry) of writes whose projection failed, in commit order.
        self._held: list[tuple[int, str]] = []
        self._held_ids = 0
        self.dropped_projections = 0  # held entries dropped past MAX_HELD_PROJECTIONS
        self._held_lock = threading.Lock()
        # Set when a projection failed, so a write replays pending entries only then.
        self._behind = self._outbox is not None
        self.catch_up()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get(self, pk: str, sk: str) -> Record | None:
        return self.inner.get(pk, sk)

    def batch_get(self, keys: Sequence[tuple[str, str]]) -> list[Record]:
        return self.inner.batch_get(keys)

    def query(self, pk: str, **kw: Any):
        return self.inner.query(pk, **kw)

    def put(self, record: Record, condition=None) -> None:
        self._commit([Put(record, condition)], change_for(record, None), _outbox_entry([record], []), single=True)

    def delete(self, pk: str, sk: str, condition=None) -> None:
        old = self.inner.get(pk, sk)
        self._commit([Delete(pk, sk, condition)], change_for(None, old),
                     _outbox_entry([], [old] if old is not None else []), single=True)

    def transact(self, ops: Sequence[WriteOp]) -> None:
        deleted_keys = [(op.pk, op.sk) for op in ops if isinstance(op, Delete)]
        olds = self.inner.batch_get(deleted_keys) if deleted_keys else []
        change = ProjectionChange()
        for op in ops:
            if isinstance(op, Put):
                part = change_for(op.record, None)
                change.upserts.extend(part.upserts)
                for ctx, ids in part.deletes.items():
                    change.deletes.setdefault(ctx, []).extend(ids)
        for old in olds:
            for ctx, ids in change_for(None, old).deletes.items():
                change.deletes.setdefault(ctx, []).extend(ids)
        self._commit(ops, change, _outbox_entry([op.record for op in ops if isinstance(op, Put)], olds),
                     single=False)

    def _commit(self, ops: Sequence[WriteOp], change: ProjectionChange, entry: str | None, *,
                single: bool) -> None:
        outbox = self._outbox
        if entry is None:
            self._apply_inner(ops, single=single)
            return
        if outbox is not None:
            row = outbox.apply_with_outbox(ops, entry, single=single)
            faults.point("projection-after-commit")
            self._project(change, lambda: outbox.clear_outbox([row]))
        else:
            self._apply_inner(ops, single=single)
            held = self._hold(entry)
            self._project(change, lambda: self._release([held]))
        if self._behind:
            self.catch_up()

    def _apply_inner(self, ops: Sequence[WriteOp], *, single: bool) -> None:
        if not single:
            self.inner.transact(ops)
        elif isinstance(ops[0], Put):
            self.inner.put(ops[0].record, ops[0].condition)
        else:
            self.inner.delete(ops[0].pk, ops[0].sk, ops[0].condition)

    def _project(self, change: ProjectionChange, on_applied: Callable[[], None]) -> None:
        """Project a committed change; a failure leaves its entry pending, never fails the write."""
        try:
            self.projector.submit(change, on_applied=on_applied, on_failed=self._fell_behind)
        except Exception:
            log.warning("projection failed after commit; kept pending for a later retry", exc_info=True)
            self._fell_behind()

    def _fell_behind(self) -> None:
        self._behind = True
        self._schedule_retry()

    def _schedule_retry(self) -> None:
        if self.retry_interval_s is None or self._closed:
            return
        with self._timer_lock:
            if self._timer is not None:
                return
            self._timer = threading.Timer(self.retry_interval_s, self._retry)
            self._timer.daemon = True
            self._timer.start()

    def _retry(self) -> None:
        with self._timer_lock:
            self._timer = None
        if self._behind and not self._closed:
            self.catch_up()

    def stop_retries(self) -> None:
        """No timer retries after this (the runtime closes)."""
        self._closed = True
        with self._timer_lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _hold(self, entry: str) -> int:
        with self._held_lock:
            self._held_ids += 1
            self._held.append((self._held_ids, entry))
            if len(self._held) > MAX_HELD_PROJECTIONS:
                # An outage longer than the bound: memory stays bounded, and what is dropped
                # is named so an operator knows a reindex is due (the SQLite outbox has no bound).
                dropped = len(self._held) - MAX_HELD_PROJECTIONS
                del self._held[:dropped]
                self.dropped_projections += dropped
                log.error("%d pending projections dropped (over %d held): run `agent-memory reindex`",
                          dropped, MAX_HELD_PROJECTIONS)
            return self._held_ids

    def _release(self, ids: Sequence[int]) -> None:
        done = set(ids)
        with self._held_lock:
            self._held = [(i, e) for i, e in self._held if i not in done]

    def _pending(self) -> list[tuple[int, str]]:
        if self._outbox is not None:
            return self._outbox.outbox_entries()
        with self._held_lock:
            return list(self._held)

    @property
    def pending_projections(self) -> int:
        """Committed writes whose change has not reached the index yet (a bounded count)."""
        return len(self._pending())

    def catch_up(self) -> int:
        """Replay the pending entries, without raising: an index still down leaves them
        pending for the next try. Returns the entries replayed."""
        if not self._catching_up.acquire(blocking=False):
            return 0  # another thread is replaying them now
        try:
            replayed = self.replay_outbox()
        except Exception:
            log.warning("search index still unavailable; projections stay pending", exc_info=True)
            self._fell_behind()
            return 0
        finally:
            self._catching_up.release()
        self._behind = False
        if replayed:
            log.warning("replayed %d pending projection entries", replayed)
        return replayed

    def replay_outbox(self) -> int:
        """Apply what committed writes left pending: each written key is projected from its
        current record (so a later write is never undone), and a deleted one that is still
        absent has its recorded units removed. Up to ``REPLAY_BATCH`` entries go to the index
        as one write (their texts embedded together), and what became searchable moves the
        response cache's write mark (``Projector.on_searchable``), as a live projection does.
        Returns the entries replayed; raises (leaving the rest pending) when the index fails."""
        replayed, seen = 0, set()
        while rows := [r for r in self._pending() if r[0] not in seen]:
            for start in range(0, len(rows), REPLAY_BATCH):
                chunk = rows[start:start + REPLAY_BATCH]
                try:
                    self._replay(chunk)
                except Exception:
                    if len(chunk) == 1:
                        raise
                    # One entry the index refuses must not hold back the others: each alone,
                    # in order, stopping (as before batching) at the first that still fails.
                    log.warning("replaying %d pending entries together failed; one at a time", len(chunk))
                    for row in chunk:
                        self._replay([row])
                        seen.add(row[0])
                        replayed += 1
                    continue
                seen.update(row_id for row_id, _ in chunk)
                replayed += len(chunk)
        return replayed

    def _replay(self, rows: Sequence[tuple[int, str]]) -> None:
        changes: list[ProjectionChange] = []
        for _, text in rows:
            for pk, sk, deletes in json.loads(text)["keys"]:
                current = self.inner.get(pk, sk)
                if current is not None:
                    changes.append(change_for(current, None))
                elif deletes:
                    changes.append(ProjectionChange(deletes=deletes))
        change = collapse(changes)
        apply(self.projector.index, change)
        ids = [row_id for row_id, _ in rows]
        if self._outbox is not None:
            self._outbox.clear_outbox(ids)
        else:
            self._release(ids)
        self.projector.searchable(change)


def _outbox_entry(written: Sequence[Record], deleted: Sequence[Record]) -> str | None:
    """The outbox entry for a write, or ``None`` when it changes nothing in the index."""
    keys: list[list[Any]] = [[r.pk, r.sk, None] for r in written if is_projected(r.data)]
    for old in deleted:
        if is_projected(old.data):
            keys.append([old.pk, old.sk, change_for(None, old).deletes])
    return json.dumps({"keys": keys}) if keys else None

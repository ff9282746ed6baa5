"""The deployed stack's scheduled lifecycle run (template.yaml ``LifecycleSchedule``, off by
default; docs/memory-care.md "Schedule"): ``POST /lifecycle/decay`` and
``POST /lifecycle/expire`` (``LifecycleService``, the same use cases the routes call) for
every context and partition written to (the context catalogue), as the stack itself: an
admin caller with no region, so nothing is out of reach, under the principal
``SCHEDULE_PRINCIPAL``.

The run is bounded by ``budget_s`` (the invocation's time less its margin): before each
partition it checks that ``reserve_s`` seconds are left, and a partition the deadline cuts short stops the run (what it removed
stays removed: each removal is its own transaction, and expire is idempotent). It starts at
a partition ``start`` picks (a random one on the stack), so a tenant with more partitions
than one run reaches is still swept over a few runs. Every partition reached is counted:
``decayed`` (decay's ``affected``) and ``expired`` (rows expire removed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import deadline
from agent_memory.kernel import storage_keys as keys
from agent_memory.ports import RecordStore
from agent_memory.services import paging
from agent_memory.services.care.lifecycle import LifecycleService

SCHEDULE_PRINCIPAL = "system:lifecycle-schedule"


@dataclass
class ScheduledRun:
    partitions: int = 0  # partitions the catalogue lists
    reached: int = 0  # partitions both verbs ran on
    decayed: int = 0
    expired: int = 0
    stopped: str | None = None  # why the run ended before the last partition
    expired_ids: list[str] = field(default_factory=list)


class LifecycleSchedule:
    def __init__(self, store: RecordStore, lifecycle: LifecycleService):
        self.store = store
        self.lifecycle = lifecycle

    def targets(self) -> list[tuple[str, str]]:
        """Every (context, partition) the catalogue lists, in key order."""
        out: list[tuple[str, str]] = []
        for context in paging.scan(self.store, paging.Source(keys.CONTEXTS_PK), batch=200):
            parts = [r.sk for r in paging.scan(self.store, paging.Source(keys.partitions_pk(context.sk)), batch=200)]
            out += [(context.sk, p) for p in (parts or ["default"])]
        return out

    def run(self, budget_s: float, *, reserve_s: float = 3.0, start: Callable[[int], int] = lambda n: 0) -> ScheduledRun:
        """One run within ``budget_s`` seconds (the invocation's time less its margin)."""
        with deadline.within(budget_s):
            return self._run(reserve_s, start)

    def _run(self, reserve_s: float, start: Callable[[int], int]) -> ScheduledRun:
        targets = self.targets()
        result = ScheduledRun(partitions=len(targets))
        first = start(len(targets)) % len(targets) if targets else 0
        for context_id, partition in targets[first:] + targets[:first]:
            left = deadline.remaining()
            if left is not None and left < reserve_s:
                result.stopped = f"{left:.1f}s left before the invocation's deadline"
                break
            ctx = RequestContext(context_id=context_id, principal=SCHEDULE_PRINCIPAL, partition=partition,
                                 admin=True)
            try:
                decayed = self.lifecycle.decay(ctx).affected
                expired = self.lifecycle.expire(ctx, dry_run=False)
            except deadline.DeadlineExceeded as exc:
                result.stopped = f"{context_id}/{partition}: {exc.detail}"
                break
            result.reached += 1
            result.decayed += decayed
            result.expired += expired.affected
            result.expired_ids += expired.ids
        return result

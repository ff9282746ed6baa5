"""Independent calls run at once: store reads that do not depend on each other (a named
entity's attribute and relation partitions, a search's recent-units shards) cost one round
trip instead of one each.

Usage::

    attrs, rels = fan_out.run_at_once([lambda: store.query(a), lambda: store.query(r)])

Each call runs in its own thread (a pool of at most ``max_workers``, ended before returning),
in a copy of the caller's context, so the request's deadline follows it (``kernel.deadline``);
a single call runs in the caller's thread. Results come back in the order of ``calls``; the
first call to fail raises its exception once all have ended.

``branch()`` says where in nested fan-outs the current code runs: one ``(fan-out id, call
index)`` pair per enclosing ``run_at_once``, outermost first (``()`` outside any). The
round-trip bench (``bench/round_trips.py``) labels each store call with it and so counts the
calls of one fan-out as one round (the longest of its calls' own rounds), from what the code
does rather than from a list of which reads it is known to run in parallel.
"""

from __future__ import annotations

import contextvars
import itertools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

_branch: contextvars.ContextVar[tuple[tuple[int, int], ...]] = contextvars.ContextVar(
    "agent_memory_fan_out_branch", default=())
_ids = itertools.count(1)


def branch() -> tuple[tuple[int, int], ...]:
    return _branch.get()


def run_at_once(calls: Sequence[Callable[[], T]], *, max_workers: int = 8, name: str = "fan-out") -> list[T]:
    """``[call() for call in calls]``, the calls running concurrently (see the module doc)."""
    if len(calls) <= 1:
        return [call() for call in calls]
    fan_id, outer = next(_ids), _branch.get()

    def in_branch(index: int, call: Callable[[], T]) -> T:
        _branch.set((*outer, (fan_id, index)))
        return call()

    with ThreadPoolExecutor(max_workers=min(max_workers, len(calls)), thread_name_prefix=name) as pool:
        futures = [pool.submit(contextvars.copy_context().run, in_branch, i, call) for i, call in enumerate(calls)]
        return [future.result() for future in futures]

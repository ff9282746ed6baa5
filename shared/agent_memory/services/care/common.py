"""What the memory-care verbs share: bounded reads of the caller's memory and the
model-call budget (per call and per UTC day for the whole stack)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agent_memory.access import scopes as scope_lib
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import deadline, timeutil
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import ServiceBusy, UpstreamModelError, UpstreamModelTimeout
from agent_memory.ports import (
    Condition,
    ConditionFailed,
    ModelError,
    ModelOutputInvalid,
    ModelTimeout,
    Put,
    Record,
    RecordStore,
)
from agent_memory.services import paging
from agent_memory.services.facts.readable import Readable
from agent_memory.services.operations.traces import TraceStore

T = TypeVar("T")
TRACE_OUTCOMES = 50  # outcomes a trace lists (the response lists them all)
BUDGET_PK = "care#model-calls"  # not under c#<ctx>#: one counter row per UTC day for the stack


def current_rows(store: RecordStore, ctx: RequestContext, kind: str, cap: int) -> list[Record]:
    """Up to ``cap`` current facts of ``kind`` (``attribute``/``relation``) the caller may read."""
    keep = Readable(store, ctx, kinds=[kind])
    src = paging.Source(keys.current_gsi(ctx, kind), index="gsi1")
    return bounded(store, src, keep, cap)


def bounded(store: RecordStore, src: paging.Source, keep: Readable, cap: int) -> list[Record]:
    out: list[Record] = []
    batch: list[Record] = []
    for record in paging.scan(store, src, batch=200):
        batch.append(record)
        if len(batch) == 200:
            out += keep(batch)
            batch = []
            deadline.check("the scan")
            if len(out) >= cap:
                break
    if batch:
        out += keep(batch)
    return out[:cap]


def rows_of(store: RecordStore, ctx: RequestContext, pk: str, kinds: list[str], cap: int,
            index: str | None = None) -> list[Record]:
    src = paging.Source(pk, index="gsi1") if index == "gsi1" else paging.Source(pk)
    return bounded(store, src, Readable(store, ctx, kinds=kinds), cap)


def writable(ctx: RequestContext, scopes: list[list[str]]) -> bool:
    """The caller may change a row with these scopes (every path inside its write region)."""
    if ctx.write_region is None:
        return True
    return bool(scopes) and not scope_lib.writable(scopes, ctx.write_region)


def new_trace_id() -> str:
    from agent_memory.kernel.ids import new_id

    return new_id("trace")


@dataclass
class CareTrace:
    """The trace a care request leaves under its ``traceId`` (``GET /traces/{id}``, as a
    /chat call's): ``retrieval`` is what the verb read (``verb``, the request's fields, what
    it looked at), ``response`` what it did (its outcomes in short, ``modelCalls``,
    ``dryRun``, ``latencyMs``). Written once the verb's work succeeded, with the verb's own
    writes where it has any (the same transaction), so a failed request leaves none; a dry
    run stores its trace and nothing else."""

    verb: str
    trace_id: str = field(default_factory=new_trace_id)
    started: float = field(default_factory=time.monotonic)
    read: dict[str, Any] = field(default_factory=dict)

    def rows(self, traces: TraceStore, ctx: RequestContext, did: dict[str, Any]) -> list[Put]:
        """The two trace rows, for the caller's own transaction."""
        latency = round((time.monotonic() - self.started) * 1000, 1)
        return [Put(traces.record(ctx, self.trace_id, "retrieval", {"verb": self.verb, **self.read,
                                                                    "latencyMs": latency})),
                Put(traces.record(ctx, self.trace_id, "response", {"verb": self.verb, **did, "latencyMs": latency}))]

    def store(self, store: RecordStore, traces: TraceStore, ctx: RequestContext, did: dict[str, Any]) -> None:
        store.transact(self.rows(traces, ctx, did))


@dataclass
class ModelBudget:
    """Model calls of one care request: at most ``per_call``, and all care requests of this
    stack at most ``per_day`` per UTC day (0: unlimited), counted in one store row per day
    under a version condition. Spending past either answers before the call is made."""

    store: RecordStore
    per_call: int
    per_day: int
    used: int = 0

    def spend(self, what: str) -> None:
        if self.used >= self.per_call:
            raise ServiceBusy(f"{what}: this request's model-call budget ({self.per_call}) is spent",
                              code="model_budget_spent", retry_after=1)
        if self.per_day > 0:
            self._count_day(what)
        self.used += 1

    def left(self) -> int:
        return max(0, self.per_call - self.used)

    def _count_day(self, what: str) -> None:
        day = timeutil.now_iso()[:10]
        for _ in range(20):
            row = self.store.get(BUDGET_PK, day)
            used = int(row.data.get("used", 0)) if row is not None else 0
            if used >= self.per_day:
                raise ServiceBusy(f"{what}: today's model-call budget for memory care ({self.per_day}) is spent",
                                  code="model_budget_spent", retry_after=3600)
            fresh = Record(pk=BUDGET_PK, sk=day, data={"kind": "budget", "used": used + 1},
                           version=(row.version + 1) if row is not None else 1,
                           expires_at=int(timeutil.now().timestamp()) + 3 * 86400)
            try:
                self.store.put(fresh, Condition.version_is(row.version) if row is not None else Condition.absent())
                return
            except ConditionFailed:
                continue
        raise ServiceBusy(f"{what}: the model-call counter is busy; retry", code="model_budget_busy", retry_after=1)


def call_model(fn: Callable[[], T], what: str) -> T:
    """One model call (no retry: each call is one of the budget's) with the write path's
    error mapping: 504 on a timeout, 502 otherwise; the caller has written nothing yet."""
    try:
        return fn()
    except ModelTimeout as exc:
        raise UpstreamModelTimeout(f"{what} model timed out: {exc}") from exc
    except ModelOutputInvalid as exc:
        raise UpstreamModelError(f"{what} model returned invalid output: {exc}") from exc
    except ModelError as exc:
        raise UpstreamModelError(f"{what} model failed: {exc}") from exc


def iter_turns(store: RecordStore, ctx: RequestContext, cap: int) -> Iterator[Record]:
    yield from rows_of(store, ctx, keys.turn_ids_gsi(ctx), ["turn"], cap, index="gsi1")

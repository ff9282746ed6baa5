"""The scope index: a context's records found by scope path, by key, never by a scan.

``POST /scopes/forget`` must find every record written under a subtree. Each record that
scope forget may take (``indexed``: memory with scope paths, not bookkeeping) has one
*membership row* per distinct scope path it names, written in the same transaction as the
record by ``ScopeIndexingStore`` (the store every service writes through):

====================  =============================================  ==============================
row                   pk                                             sk
====================  =============================================  ==============================
membership            ``c#<ctx>#<part>#scope-members#<shard, 0-f>``  ``<path>/#<digest of pk, sk>``
backfill progress     ``c#~scope-index``                             ``backfill``
====================  =============================================  ==============================

- **Finding a subtree**: ``path/`` is a prefix of exactly the rows of ``path`` and of the
  paths below it (a digest holds no ``/``), so forgetting ``org/acme`` reads the 16 shards'
  rows under ``org/acme/`` and then the records they name (``BatchGetItem``): the scope's
  records and nothing else, however large the table.
- **Hot keys** (no key takes more than 1,000 WCU/s: docs/benchmarks.md, "Partition heat"):
  the shard is a digest of the record's key, so a busy scope (every write of ``org/acme``)
  spreads over 16 partition keys like the idempotency records do.
- **Write cost**: one extra item per distinct scope path of each record put (about 150 bytes:
  1 WCU, 2 inside a transaction, where nearly every record is written). A record put again
  (superseded, soft-deleted) writes its rows again: idempotent, same keys.
- **Rows that outlive their record** (a record deleted by a purge, a session delete, or one
  written again under other scopes): readers check the record itself, as they always must, and
  scope forget deletes a row whose record is gone or no longer under the path. A row newer
  than ``STALE_AFTER_S`` whose record is missing is left alone: it may belong to a
  transaction that has not committed yet (rows written before an oversized transaction).
- **Tables written before the index**: ``backfill`` walks the table (``RecordStore.scan_page``)
  page by page, writes the rows of each page, then moves its progress row on: idempotent (a
  row written twice is the same row) and resumable (a crash redoes at most one page). Until it
  has finished, scope forget refuses with 503 ``scope_index_backfilling`` and its progress
  (each refusal advances the backfill within the request's time; ``agent-memory scopes
  backfill`` runs it to the end).

Membership rows carry no ``kind``: the stream's filter never sends them to the projector,
and every reader that walks a context's rows by kind passes over them.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import deadline, stored_item, timeutil, usage
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import DomainError
from agent_memory.ports import (
    MAX_TRANSACT_OPS,
    Condition,
    ConditionFailed,
    Delete,
    Page,
    Put,
    Record,
    RecordStore,
    WriteOp,
)

SHARDS = keys.SCOPE_MEMBER_SHARDS
STATE_PK, STATE_SK = keys.SCOPE_INDEX_STATE
# A membership row whose record is missing is only taken for stale past this age: until then
# it may precede a transaction still in flight (a Lambda runs at most 15 minutes).
STALE_AFTER_S = 900
BACKFILL_PAGE = 500

# Kinds of record that are bookkeeping, not memory written under a scope: scope forget leaves
# them (entities go when nothing is left of them, as forget removes them).
NOT_MEMORY = frozenset({"head", "idempotency", "idempotency_ref", "audit", "cache_entry", "cache_ref", "budget",
                        "entity", "scope"})


class ScopeIndexBackfilling(DomainError):
    status = 503
    title = "The scope index is still being built"
    type_slug = "scope-index-backfilling"

    def __init__(self, detail: str, **kw: Any):
        kw.setdefault("code", "scope_index_backfilling")
        kw.setdefault("headers", {"Retry-After": "5"})
        super().__init__(detail, **kw)


def base_of_pk(pk: str) -> str | None:
    """``c#<ctx>#<part>`` of a context record's pk (``None`` for any other row)."""
    parts = pk.split("#", 3)
    if len(parts) < 4 or parts[0] != "c" or parts[1].startswith("~"):
        return None
    return "#".join(parts[:3])


def indexed(record: Record) -> bool:
    """Whether scope forget may take ``record``: memory that names scope paths."""
    data = record.data
    if data.get("kind") in NOT_MEMORY or not data.get("scopes"):
        return False
    base = base_of_pk(record.pk)
    return base is not None and record.pk != f"{base}#scopes"


def paths_of(data: dict[str, Any]) -> list[str]:
    scopes = data.get("scopes") or []
    return sorted({p for clause in scopes if isinstance(clause, list) for p in clause if isinstance(p, str) and p})


def _digest(pk: str, sk: str) -> bytes:
    return hashlib.sha256(f"{pk}\x00{sk}".encode("utf-8", "surrogatepass")).digest()


def members_pk(base: str, shard: int) -> str:
    return keys.scope_members_pk(base, shard)


def member_key(pk: str, sk: str, path: str) -> tuple[str, str]:
    digest = _digest(pk, sk)
    return members_pk(base_of_pk(pk) or "", digest[0] % SHARDS), keys.scope_member_sk(path, digest[:12].hex())


def member_rows(record: Record) -> list[Record]:
    """The membership rows of ``record`` (none when it is not ``indexed``)."""
    if not indexed(record):
        return []
    at = int(time.time())
    out = []
    for path in paths_of(record.data):
        pk, sk = member_key(record.pk, record.sk, path)
        out.append(Record(pk=pk, sk=sk, data={"path": path, "pk": record.pk, "sk": record.sk, "at": at}))
    return out


def member_keys(record: Record) -> list[tuple[str, str]]:
    return [member_key(record.pk, record.sk, p) for p in paths_of(record.data)] if indexed(record) else []


def _member_puts(ops: Sequence[WriteOp]) -> list[WriteOp]:
    taken = {(op.record.pk, op.record.sk) if isinstance(op, Put) else (op.pk, op.sk) for op in ops}
    out: list[WriteOp] = []
    for op in ops:
        if isinstance(op, Put):
            for row in member_rows(op.record):
                if (row.pk, row.sk) not in taken:
                    taken.add((row.pk, row.sk))
                    out.append(Put(row))
    return out


class ScopeIndexingStore:
    """A RecordStore that writes each indexed record's membership rows with it, in the same
    transaction; everything else passes through. When the rows do not fit beside the write
    (DynamoDB's 100 items or 4 MB), they are written just before it, on their own: a row
    whose record never came is stale, and readers treat it so (see the module docstring)."""

    def __init__(self, inner: RecordStore):
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get(self, pk: str, sk: str) -> Record | None:
        return self.inner.get(pk, sk)

    def batch_get(self, keys_: Sequence[tuple[str, str]]) -> list[Record]:
        return self.inner.batch_get(keys_)

    def query(self, pk: str, **kw: Any) -> Page:
        return self.inner.query(pk, **kw)

    def delete(self, pk: str, sk: str, condition: Any = None) -> None:
        self.inner.delete(pk, sk, condition)

    def put(self, record: Record, condition: Any = None) -> None:
        members = _member_puts([Put(record, condition)])
        if not members:
            self.inner.put(record, condition)
            return
        ops = self._fit([Put(record, condition)], members, reserve=0)
        try:
            self.inner.transact(ops)
        except ConditionFailed as exc:  # as a single put reports it: no transaction position
            raise ConditionFailed(index=None) from exc

    def transact(self, ops: Sequence[WriteOp]) -> None:
        self.inner.transact(self._fit(list(ops), _member_puts(ops), reserve=0))

    def apply_with_outbox(self, ops: Sequence[WriteOp], entry: str, *, single: bool) -> Any:
        """The projection outbox's write (``ProjectingRecordStore``), its rows added the same way."""
        return self.inner.apply_with_outbox(self._fit(list(ops), _member_puts(ops), reserve=1), entry,
                                            single=single)

    def _fit(self, ops: list[WriteOp], members: list[WriteOp], *, reserve: int) -> list[WriteOp]:
        if not members:
            return ops
        usage.add(rows_written=len(members))  # the metering above counts only the write's own rows
        together = [*ops, *members]
        if len(together) + reserve <= MAX_TRANSACT_OPS and stored_item.fits_one_transaction(together):
            return together
        for batch in stored_item.transaction_batches(members):
            self.inner.transact(batch)
        return ops


# --- reading a subtree ---------------------------------------------------------------------


@dataclass(frozen=True)
class Position:
    """Where a walk of a subtree's membership rows stands: a shard and the key after which it
    resumes there."""

    shard: int = 0
    after: dict[str, str] | None = None

    def wire(self) -> dict[str, str]:
        return {"shard": str(self.shard), **({f"k.{k}": v for k, v in self.after.items()} if self.after else {})}

    @classmethod
    def from_wire(cls, data: dict[str, str]) -> Position:
        after = {k[2:]: v for k, v in data.items() if k.startswith("k.")}
        return cls(int(data.get("shard", "0")), after or None)


@dataclass
class BackfillState:
    complete: bool = False
    after: dict[str, str] | None = None
    scanned: int = 0
    indexed: int = 0
    started_at: str | None = None
    finished_at: str | None = None
    version: int = 0

    def wire(self) -> dict[str, Any]:
        return {"complete": self.complete, "scanned": self.scanned, "indexed": self.indexed,
                "startedAt": self.started_at, "finishedAt": self.finished_at}


class ScopeIndex:
    """Reads of the membership rows, their clean-up, and the backfill."""

    def __init__(self, store: RecordStore, *, page: int = BACKFILL_PAGE):
        self.store = store
        self.page = page

    # -- reads --------------------------------------------------------------------------

    def members(self, ctx: RequestContext, path: str, position: Position, *,
                limit: int = 100) -> tuple[list[Record], Position | None]:
        """Up to ``limit`` membership rows of ``path``'s subtree from ``position``, and where
        the next call resumes (``None``: the walk is done)."""
        base = keys.base(ctx)
        shard, after = position.shard, position.after
        out: list[Record] = []
        while shard < SHARDS and len(out) < limit:
            page = self.store.query(members_pk(base, shard), prefix=f"{path}/", after=after,
                                    limit=limit - len(out))
            out.extend(page.records)
            if page.last_key is None:
                shard, after = shard + 1, None
            else:
                after = page.last_key
        return out, (Position(shard, after) if shard < SHARDS else None)

    # -- the backfill -------------------------------------------------------------------

    def state(self) -> BackfillState:
        row = self.store.get(STATE_PK, STATE_SK)
        if row is None:
            return BackfillState()
        d = row.data
        return BackfillState(bool(d.get("complete")), d.get("after"), int(d.get("scanned", 0)),
                             int(d.get("indexed", 0)), d.get("startedAt"), d.get("finishedAt"), row.version)

    def backfill(self, *, pages: int | None = None, seconds: float | None = None,
                 progress: Callable[[BackfillState], None] | None = None) -> BackfillState:
        """Advance the backfill by up to ``pages`` pages or ``seconds`` (and never past the
        request's deadline); returns where it stands. Each page: its rows first, then the
        progress row, so a crash between the two only redoes that page."""
        state = self.state()
        if state.complete:
            return state
        if state.started_at is None:
            state.started_at = timeutil.now_iso()
        stop_at = None if seconds is None else time.monotonic() + seconds
        done, slowest = 0, 0.0
        while not state.complete:
            started = time.monotonic()
            page = self.store.scan_page("c#", after=state.after, limit=self.page)
            rows = [Put(row) for record in page.records for row in member_rows(record)]
            for batch in stored_item.transaction_batches(rows):
                self.store.transact(batch)
            state.scanned += page.scanned if page.scanned is not None else len(page.records)
            state.indexed += len(rows)
            state.after = page.last_key
            if page.last_key is None:
                state.complete, state.finished_at = True, timeutil.now_iso()
            self._save(state)
            if progress is not None:
                progress(state)
            done += 1
            slowest = max(slowest, time.monotonic() - started)
            # Stop while another page still fits: before the limit, never past the deadline.
            if (pages is not None and done >= pages) or (
                    stop_at is not None and time.monotonic() + 2 * slowest >= stop_at):
                break
            left = deadline.remaining()
            if left is not None and left < max(2.0, 2 * slowest):
                break
        return state

    def _save(self, state: BackfillState) -> None:
        """Move the progress row on, conditioned on the version read: when another run (the
        schedule, a forget, the command) moved it meanwhile, this run goes on from there
        instead of moving it back (the pages both indexed are the same rows)."""
        condition = Condition.absent() if state.version == 0 else Condition.version_is(state.version)
        try:
            self.store.put(Record(pk=STATE_PK, sk=STATE_SK, version=state.version + 1, data={
                "complete": state.complete, "after": state.after, "scanned": state.scanned,
                "indexed": state.indexed, "startedAt": state.started_at, "finishedAt": state.finished_at,
                "updatedAt": timeutil.now_iso()}), condition)
        except ConditionFailed:
            newer = self.state()
            for name in ("complete", "after", "scanned", "indexed", "started_at", "finished_at", "version"):
                setattr(state, name, getattr(newer, name))
            return
        state.version += 1

    # -- clean-up -----------------------------------------------------------------------

    def stale(self, member: Record, record: Record | None, path: str) -> bool:
        """Whether ``member`` no longer stands for a record under ``path``."""
        if record is None:
            return time.time() - int(member.data.get("at", 0)) > STALE_AFTER_S
        return member.data.get("path") not in paths_of(record.data) or not indexed(record)

    def drop(self, rows: Sequence[tuple[str, str]]) -> None:
        for batch in stored_item.transaction_batches([Delete(pk, sk) for pk, sk in dict.fromkeys(rows)]):
            self.store.transact(batch)

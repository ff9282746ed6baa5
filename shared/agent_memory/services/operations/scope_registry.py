"""The scopes registry (``/scopes``): named scope paths of a context and partition, and
forgetting a whole subtree (``POST /scopes/forget``).

- ``register``: a path inside the caller's write region (403 otherwise), with a display name
  and a description; registering it again updates them and lifts a tombstone.
- ``list``: the registered paths the caller's read region covers, tombstoned ones included
  (``tombstonedAt``), a bare array in path order.
- ``delete``: a tombstone (the path stays listed, with when it was retired); what was
  written there is untouched.
- ``forget``: every record written under the subtree (a record with a scope path at or below
  it) that the caller may both read and write goes, hard-deleted, with what forget removes
  with it (``ForgetService``: a fact's superseded history, entities left with nothing, the
  search units, stored idempotency replies and response-cache entries, a document's kept
  original in object storage); records the caller
  may not write stay. Answers how many records went. The records are found through the scope
  index (``scope_index``: membership rows by path, written with each record), never by a
  scan; they go in batches, and a forget that would outlast the request deadline answers what
  it removed so far with a ``continuation`` that the next call resumes from.

Records: ``pk = c#<ctx>#<part>#scopes``, ``sk = <path>``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from agent_memory.access import scopes as scope_lib
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import cursor, deadline, timeutil
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import Forbidden, InvalidRequest, NotFound
from agent_memory.ports import Record, RecordStore
from agent_memory.services.operations.scope_index import (
    Position,
    ScopeIndex,
    ScopeIndexBackfilling,
    indexed,
    member_keys,
)

# Membership rows per batch of a scope forget, and the time kept back for answering: a batch
# that would not finish before the deadline is left to the continuation.
_BATCH = 200
_RESERVE_S = 3.0


@dataclass(frozen=True)
class ScopeForgotten:
    """How many records this call removed, and where the next call resumes (``None``: done)."""

    forgotten: int
    continuation: str | None = None


@dataclass(frozen=True)
class ScopeNode:
    path: str
    created_at: str
    display_name: str | None
    description: str | None
    tombstoned_at: str | None


def _pk(ctx: RequestContext) -> str:
    return f"{keys.base(ctx)}#scopes"


def _node(data: dict) -> ScopeNode:
    return ScopeNode(data["path"], data["created_at"], data.get("display_name"), data.get("description"),
                     data.get("tombstoned_at"))


def _path(path: object) -> str:
    try:
        normal = scope_lib.normalise_path(path)  # type: ignore[arg-type]
    except scope_lib.InvalidScope as exc:
        raise InvalidRequest(f"path: {exc}", field="path") from exc
    if scope_lib.WILDCARD in normal.split("/"):
        raise InvalidRequest("path: a registered scope cannot hold a wildcard", field="path")
    return normal


def _writable(ctx: RequestContext, path: str) -> None:
    if not scope_lib.path_covered(path, ctx.write_region):
        raise Forbidden(f"scope {path!r} is outside this key's write region", code="scope_outside_write_region",
                        scope=path)


class ScopeRegistry:
    def __init__(self, store: RecordStore, forget_service: object, index: ScopeIndex,
                 cursor_secret: bytes | cursor.CursorSecret):
        self.store = store
        self._forget = forget_service  # services.facts.forget.ForgetService
        self._index = index
        self._secret = cursor_secret

    def register(self, ctx: RequestContext, path: object, display_name: str | None,
                 description: str | None) -> tuple[ScopeNode, bool]:
        """The node, and whether it is new."""
        path = _path(path)
        _writable(ctx, path)
        existing = self.store.get(_pk(ctx), path)
        data = dict(existing.data) if existing is not None else {
            "kind": "scope", "path": path, "created_at": timeutil.now_iso(), "created_by": ctx.principal}
        for name, value in (("display_name", display_name), ("description", description)):
            if value is not None:
                data[name] = value
        data.pop("tombstoned_at", None)
        self.store.put(Record(pk=_pk(ctx), sk=path, data=data))
        return _node(data), existing is None

    def list(self, ctx: RequestContext) -> list[ScopeNode]:
        from agent_memory.services import paging

        return [_node(r.data) for r in paging.scan(self.store, paging.Source(_pk(ctx)), batch=500)
                if r.data.get("kind") == "scope" and scope_lib.path_covered(r.data["path"], ctx.read_region)]

    def delete(self, ctx: RequestContext, path: object) -> None:
        path = _path(path)
        record = self.store.get(_pk(ctx), path)
        if record is None or not scope_lib.path_covered(path, ctx.read_region):
            raise NotFound(f"no registered scope {path!r}")
        _writable(ctx, path)
        if not record.data.get("tombstoned_at"):
            self.store.put(Record(pk=record.pk, sk=record.sk, data={**record.data,
                                                                    "tombstoned_at": timeutil.now_iso()}))

    def forget(self, ctx: RequestContext, path: object, continuation: str | None = None) -> ScopeForgotten:
        """Remove the subtree's records, found through the scope index (``scope_index``), in
        batches; before the request deadline would cut a batch short, stop and answer a
        continuation that the next call resumes from (a repeat without one starts over, which
        finds only what is left)."""
        path = _path(path)
        _writable(ctx, path)
        position = self._position(ctx, path, continuation)
        index = self._index
        state = index.state()
        if not state.complete:
            state = index.backfill()  # within this request's time
            if not state.complete:
                raise ScopeIndexBackfilling(
                    "the scope index is still being built for records written before it (agent-memory scopes "
                    "backfill); each call moves it on, retry after Retry-After", backfill=state.wire())
        forgotten = 0
        counted: set[str] = set()
        while position is not None:
            started = time.monotonic()
            members, position = index.members(ctx, path, position, limit=_BATCH)
            forgotten += self._forget_batch(ctx, path, members, counted)
            left = deadline.remaining()
            if position is not None and left is not None and left < max(_RESERVE_S, 2 * (time.monotonic() - started)):
                return ScopeForgotten(forgotten, self._token(ctx, path, position))
        return ScopeForgotten(forgotten, None)

    def _collection(self, ctx: RequestContext, path: str) -> str:
        return f"scope-forget#{ctx.partition}#{path}"

    def _position(self, ctx: RequestContext, path: str, continuation: str | None) -> Position | None:
        if not continuation:
            return Position()
        data = cursor.decode(self._secret, ctx.context_id, self._collection(ctx, path), continuation)
        try:
            return Position.from_wire(data or {})
        except ValueError as exc:
            raise InvalidRequest("continuation: not one this service issued", field="continuation") from exc

    def _token(self, ctx: RequestContext, path: str, position: Position) -> str | None:
        return cursor.encode(self._secret, ctx.context_id, self._collection(ctx, path), position.wire())

    def _forget_batch(self, ctx: RequestContext, path: str, members: list[Record], counted: set[str]) -> int:
        """Remove what ``members`` name that is still under ``path`` and the caller may take,
        and the membership rows that no longer stand for anything."""
        from agent_memory.services.facts.fact_kinds import BY_KIND
        from agent_memory.services.facts.forget import (
            FORGETTERS,
            OrphanedEntities,
            record_text,
            remove_records,
        )

        if not members:
            return 0
        index, svc = self._index, self._forget
        found = {(r.pk, r.sk): r for r in self.store.batch_get(
            list(dict.fromkeys((m.data["pk"], m.data["sk"]) for m in members)))}
        going: dict[tuple[str, str], Record] = {}
        dropped: list[tuple[str, str]] = []
        for member in members:
            record = found.get((member.data["pk"], member.data["sk"]))
            if index.stale(member, record, path):
                dropped.append((member.pk, member.sk))
                continue
            if record is None or not _takes(ctx, path, record):
                continue
            going[(record.pk, record.sk)] = record
        deadline.check("finding the scope's records")
        records = list(going.values())
        # The originals (object storage) of the documents going, and of those losing chunks, go
        # first, once each: a failure there removes nothing. Chunks then go as plain records.
        svc.remove_originals([r.data.get("id") or "" for r in records  # type: ignore[attr-defined]
                              if r.data.get("kind") == "document"]
                             + [r.data.get("documentId") or "" for r in records if r.data.get("kind") == "chunk"])
        removed: set[str] = set()
        generic: list[Record] = []
        taken: list[Record] = list(records)  # what this forget counts
        gone: list[Record] = list(records)  # what went, whose membership rows go too
        for record in records:
            if record.data.get("kind") == "chunk":
                generic.append(record)
                continue
            forgetter = BY_KIND[record.data["kind"]].forgetter if record.data.get("kind") in BY_KIND else \
                FORGETTERS.get(str(record.data.get("id", "")).split("_", 1)[0])
            if forgetter is None:
                generic.append(record)
                continue
            history = forgetter.history(svc, ctx, record)
            taken += [h for h in history if _takes(ctx, path, h)]
            gone += history
            removed |= forgetter.remove(svc, ctx, [record, *history], True)
        removed |= remove_records(self.store, generic, purge=True)
        orphans = OrphanedEntities(svc, ctx).find(records)
        if orphans:
            removed |= remove_records(self.store, orphans, purge=True)
        # The membership rows of what went, under every path it named.
        index.drop(dropped + [k for r in gone for k in member_keys(r)])
        svc.after_removal(ctx, removed, [record_text(r.data) for r in gone])  # type: ignore[attr-defined]
        new = {r.data.get("id") or r.sk for r in taken} - counted
        counted |= new
        return len(new)


def _takes(ctx: RequestContext, path: str, record: Record) -> bool:
    """Whether scope forget of ``path`` takes ``record``: memory under the subtree that the
    caller may both read and write, as forget removes."""
    if not indexed(record):
        return False
    scopes = record.data.get("scopes") or []
    if not any(scope_lib.covers(path, p) for clause in scopes for p in clause):
        return False
    return scope_lib.visible(scopes, ctx.read_region) and not scope_lib.writable(scopes, ctx.write_region)

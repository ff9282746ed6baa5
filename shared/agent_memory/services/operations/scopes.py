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
  may not write stay. Answers how many records went. It walks the partition's records
  (``RecordStore.scan``): an administrative act, never a hot path; a walk that outlasts the
  request deadline answers 503 having removed nothing.

Records: ``pk = c#<ctx>#<part>#scopes``, ``sk = <path>``.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_memory.access import scopes as scope_lib
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import deadline, timeutil
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import Forbidden, InvalidRequest, NotFound
from agent_memory.ports import Record, RecordStore

# Kinds of record that are bookkeeping, not memory written under a scope: forgetting a
# subtree leaves them (entities go when nothing is left of them, as forget removes them).
_NOT_MEMORY = {"head", "idempotency", "idempotency_ref", "audit", "cache_entry", "cache_ref", "budget", "entity",
               "scope"}


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
    def __init__(self, store: RecordStore, forget_service: object):
        self.store = store
        self._forget = forget_service  # services.facts.forget.ForgetService

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

    def forget(self, ctx: RequestContext, path: object) -> int:
        from agent_memory.services.facts.fact_kinds import BY_KIND
        from agent_memory.services.facts.forget import FORGETTERS, OrphanedEntities, remove_records

        path = _path(path)
        _writable(ctx, path)
        svc = self._forget
        going: list[Record] = []
        for record in self.store.scan(f"{keys.base(ctx)}#"):
            # Nothing is removed before the walk ends: past the deadline, a 503 that wrote nothing.
            deadline.check("finding the scope's records")
            data = record.data
            if data.get("kind") in _NOT_MEMORY or record.pk == _pk(ctx):
                continue
            scopes = data.get("scopes") or []
            if not any(scope_lib.covers(path, p) for clause in scopes for p in clause):
                continue
            # Only what the caller may both read and write, as forget removes.
            if not scope_lib.visible(scopes, ctx.read_region) or scope_lib.writable(scopes, ctx.write_region):
                continue
            going.append(record)
        # The originals (object storage) of the documents going, and of those losing chunks, go
        # first, once each: a failure there removes nothing. Chunks then go as plain records.
        svc.remove_originals([r.data.get("id") or "" for r in going  # type: ignore[attr-defined]
                              if r.data.get("kind") == "document"]
                             + [r.data.get("documentId") or "" for r in going if r.data.get("kind") == "chunk"])
        removed: set[str] = set()
        generic: list[Record] = []
        for record in going:
            if record.data.get("kind") == "chunk":
                generic.append(record)
                continue
            forgetter = BY_KIND[record.data["kind"]].forgetter if record.data.get("kind") in BY_KIND else \
                FORGETTERS.get(str(record.data.get("id", "")).split("_", 1)[0])
            if forgetter is None:
                generic.append(record)
                continue
            rows = [record, *forgetter.history(svc, ctx, record)]
            removed |= forgetter.remove(svc, ctx, rows, True)
        removed |= remove_records(self.store, generic, purge=True)
        orphans = OrphanedEntities(svc, ctx).find(going)
        if orphans:
            removed |= remove_records(self.store, orphans, purge=True)
        svc.after_removal(ctx, removed)  # type: ignore[attr-defined]
        return len({r.data.get("id") or r.sk for r in going})

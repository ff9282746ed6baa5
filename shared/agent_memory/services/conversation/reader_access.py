"""Reader lists and the audit trail of admin bypasses.

A reader list has three distinct states, and the difference matters:

- ``None`` (omitted): no list; every caller of the tenant may read (within scope);
- a non-empty list: only callers whose principal, or one of whose ``group:`` memberships,
  is listed (``RequestContext.principals``);
- ``[]`` (explicit empty list): quarantine; nobody but an admin.

Admins read everything, but a read that succeeds *only* because the caller is an admin is a
bypass, and every bypass is written to the audit log (a record in the store: who, what,
when) before the content is returned. If the audit write fails the read fails: content is
never handed out unaudited.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import cursor, timeutil
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.ids import new_id
from agent_memory.models.records import Page
from agent_memory.ports import AuditSink, Condition, Record, RecordStore
from agent_memory.services import paging

if TYPE_CHECKING:
    from agent_memory.kernel.usage import Usage


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    bypass: bool = False  # allowed only because the caller is an admin


def check(readers: Sequence[str] | None, ctx: RequestContext) -> Verdict:
    if readers is None:
        return Verdict(True)
    if set(ctx.principals).intersection(readers):
        return Verdict(True)
    return Verdict(True, bypass=True) if ctx.admin else Verdict(False)


def effective(own: Sequence[str] | None, default: Sequence[str] | None) -> list[str] | None:
    """An explicit list of the item's own wins; without one, the container's default applies."""
    chosen = own if own is not None else default
    return None if chosen is None else list(chosen)


# The Spectron client's row kinds: an access ``decision`` (an admin bypass or a delegated
# call), and a request's cost: ``retrieval`` (a request that made no model call: its rows
# and latency) or ``response`` (one that did: the models, calls and tokens too).
AUDIT_KIND = "decision"
COST_KINDS = ("retrieval", "response")


class AuditLog:
    """Append-only audit records: ``c#<ctx>#<part>#audit`` / ``<at>#<audit id>`` (time order).

    Decisions are written by the request that makes them, before it answers (an admin
    bypass is never handed out unaudited). Cost rows (``usage``) go to ``sink``, which
    writes them after the response (docs/decisions.md, "Audit costs")."""

    def __init__(self, store: RecordStore, ttl_s: int | None = None, sink: AuditSink | None = None):
        self.store = store
        self.ttl_s = ttl_s
        self.sink = sink

    def usage(self, ctx: RequestContext, route: str, status: int, latency_ms: float, spent: Usage) -> None:
        """The cost row of one request (``kernel.usage``), handed to the sink."""
        if self.sink is None:
            return
        at = timeutil.now_iso()
        audit_id = new_id("audit")
        kind = "response" if spent.model_calls else "retrieval"
        data = {"kind": "audit", "auditKind": kind, "id": audit_id, "at": at, "contextId": ctx.context_id,
                "partition": ctx.partition, "principal": ctx.principal, "action": route, "reason": "usage",
                "status": status, "requestId": ctx.request_id, "latencyMs": int(round(latency_ms)),
                "rowsRead": spent.rows_read, "rowsWritten": spent.rows_written, "modelCalls": spent.model_calls,
                "promptTokens": spent.prompt_tokens, "completionTokens": spent.completion_tokens,
                "model": spent.models[0] if spent.models else None}
        if ctx.delegated_by is not None:
            data["onBehalfOf"], data["principal"] = ctx.principal, ctx.delegated_by
        if ctx.key is not None and ctx.key.key_id:
            data["keyId"] = ctx.key.key_id  # the key's last use is read off these rows (access.key_use)
        expires = int(time.time()) + self.ttl_s if self.ttl_s else None
        self.sink.emit(Record(pk=keys.audit_pk(ctx), sk=f"{at}#{audit_id}", data=data, expires_at=expires))

    def bypass(self, ctx: RequestContext, action: str, record_ids: Sequence[str], **subject: Any) -> None:
        """Record that ``ctx``'s admin principal read ``record_ids`` past their reader lists."""
        if not record_ids:
            return
        at = timeutil.now_iso()
        audit_id = new_id("audit")
        data = {"kind": "audit", "id": audit_id, "at": at, "contextId": ctx.context_id,
                "partition": ctx.partition, "principal": ctx.principal, "groups": list(ctx.groups),
                "action": action, "reason": "admin-bypass", "recordIds": list(record_ids),
                "requestId": ctx.request_id, **subject}
        if ctx.delegated_by is not None:
            data["onBehalfOf"], data["principal"] = ctx.principal, ctx.delegated_by
        self._write(ctx, at, audit_id, data)

    def delegated(self, ctx: RequestContext, route: str) -> None:
        """Record a call made by ``ctx.delegated_by`` on behalf of ``ctx.principal``."""
        at = timeutil.now_iso()
        audit_id = new_id("audit")
        self._write(ctx, at, audit_id, {
            "kind": "audit", "id": audit_id, "at": at, "contextId": ctx.context_id, "partition": ctx.partition,
            "principal": ctx.delegated_by, "onBehalfOf": ctx.principal, "action": route, "reason": "delegation",
            "requestId": ctx.request_id})

    def _write(self, ctx: RequestContext, at: str, audit_id: str, data: dict[str, Any]) -> None:
        expires = int(time.time()) + self.ttl_s if self.ttl_s else None
        self.store.put(Record(pk=keys.audit_pk(ctx), sk=f"{at}#{audit_id}", data=data, expires_at=expires),
                       Condition.absent())

    def page(self, ctx: RequestContext, secret: bytes | cursor.CursorSecret, limit: int, page_cursor: str | None, *,
             principal: str | None = None, since: str | None = None, until: str | None = None,
             kinds: Sequence[str] | None = None) -> Page[dict[str, Any]]:
        """``GET /audit``: newest first, expired records left out, paged by cursor; ``since`` and
        ``until`` (normalised instants) bound ``at`` inclusively in the query itself, ``principal``
        keeps the records that principal made (directly or on someone's behalf). Every record is
        a decision (``AUDIT_KIND``) or a cost row (``COST_KINDS``); ``kinds`` keeps those."""
        if since is not None and until is not None and since > until:
            from agent_memory.kernel.errors import InvalidRequest

            raise InvalidRequest("since must be before until", field="since")
        if self.sink is not None:
            self.sink.flush()  # locally, the cost rows still queued; deployed, nothing to wait for
        wanted = set(kinds) if kinds is not None else None
        collection = f"audit:{ctx.partition}:{principal or ''}:{since or ''}:{until or ''}:{','.join(sorted(wanted or []))}"
        after = cursor.decode(secret, ctx.context_id, collection, page_cursor)
        now = int(time.time())
        # No until: "~" sorts after every "<at>#<id>" key, a since in year 9999 included.
        between = (since or "0", f"{until}#~" if until else "~") if since or until else None

        def keep(records: list[Record]) -> list[Record]:
            return [r for r in records if (r.expires_at is None or r.expires_at > now)
                    and (principal is None or principal in (r.data.get("principal"), r.data.get("onBehalfOf")))
                    and (wanted is None or r.data.get("auditKind", AUDIT_KIND) in wanted)]

        records, last = paging.read_page(self.store, paging.Source(keys.audit_pk(ctx), between=between, forward=False),
                                         limit=limit, after=after, keep=keep)
        return Page([r.data for r in records], cursor.encode(secret, ctx.context_id, collection, last))

    def list(self, ctx: RequestContext, limit: int = 100) -> list[dict[str, Any]]:
        """Newest first, expired records left out."""
        now = int(time.time())
        return [r.data for r in self.store.query(keys.audit_pk(ctx), limit=limit, forward=False).records
                if r.expires_at is None or r.expires_at > now]

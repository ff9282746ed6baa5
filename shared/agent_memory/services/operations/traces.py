"""Retrieval and response traces, read back with GET /traces/{id}.

A chat call writes its retrieval trace first (always: what was asked, what retrieval
returned) and its response trace only on success (tier, hits used, model, token counts,
latency). Both share the returned ``traceId``. A memory-care verb (consolidate, reflect,
elaborate: ``services/care/common.CareTrace``) writes both parts under its ``traceId``, each
naming its ``verb``: what it read, and what it did.
"""

from __future__ import annotations

import time
from typing import Any

from agent_memory.access import scopes as scope_lib
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import NotFound
from agent_memory.kernel.ids import new_id
from agent_memory.ports import Record, RecordStore

TRACE_TTL_S = 30 * 24 * 3600


def traces_pk(ctx: RequestContext) -> str:
    return f"{keys.base(ctx)}#traces"


def readable(ctx: RequestContext, data: dict[str, Any]) -> bool:
    """A trace shows what one caller's retrieval saw: it is readable by the principal it was
    made for, when the reader's region covers the region it was made with (so a delegated
    or narrower reader never sees hits from outside its own region), and by an admin.
    Anyone else gets the same 404 as for a missing trace."""
    if ctx.admin:
        return True
    if data.get("principal", ctx.principal) != ctx.principal:
        return False
    made_with = data.get("readRegion", ctx.read_region)
    if ctx.read_region is None:
        return True
    if made_with is None:
        return False
    return all(scope_lib.path_covered(p, ctx.read_region) for p in made_with)


class TraceStore:
    def __init__(self, store: RecordStore):
        self.store = store

    def new_id(self) -> str:
        return new_id("trace")

    def put(self, ctx: RequestContext, trace_id: str, part: str, data: dict[str, Any]) -> None:
        self.store.put(self.record(ctx, trace_id, part, data))

    def record(self, ctx: RequestContext, trace_id: str, part: str, data: dict[str, Any]) -> Record:
        """The row ``put`` writes, for a caller that commits it in its own transaction."""
        return Record(pk=traces_pk(ctx), sk=f"{trace_id}#{part}", expires_at=int(time.time()) + TRACE_TTL_S,
                        data={"kind": "trace", "part": part, "traceId": trace_id, "createdAt": timeutil.now_iso(),
                              "principal": ctx.principal,
                              "readRegion": None if ctx.read_region is None else sorted(ctx.read_region),
                              **data})

    def get(self, ctx: RequestContext, trace_id: str) -> dict[str, Any]:
        records = self.store.query(traces_pk(ctx), prefix=f"{trace_id}#", limit=10).records if trace_id else []
        if not records or not all(readable(ctx, r.data) for r in records):
            raise NotFound(f"trace {trace_id} does not exist")
        out: dict[str, Any] = {"id": trace_id, "retrieval": None, "response": None}
        for record in records:
            body = {k: v for k, v in record.data.items()
                    if k not in ("kind", "part", "traceId", "principal", "readRegion")}
            out[record.data["part"]] = body
        return {**out, **summary(out["retrieval"] or {}, out["response"] or {})}


def summary(retrieval: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    """A trace's headline (the Spectron client's ``TraceRecord``): the query, the tier that
    answered it and why, the whole latency in milliseconds, whether the reply came from the
    cache, and when the trace began."""
    cached = bool(response.get("cached"))
    degraded = retrieval.get("degraded")
    verb = retrieval.get("verb") or response.get("verb")
    if verb:
        reason = f"{verb}: memory care" + (" (dry run)" if response.get("dryRun") else "") + (
            f", {response['modelCalls']} model call{'s' if response['modelCalls'] != 1 else ''}"
            if isinstance(response.get("modelCalls"), int) else "")
    elif cached:
        reason = "cache: a semantically equal question was answered from the reply cache"
    elif degraded:
        reason = f"degraded: {degraded.get('reason') if isinstance(degraded, dict) else degraded}"
    elif response:
        reason = "retrieval: the reply was generated from retrieved memory"
    else:
        reason = "retrieval: no reply was recorded (the request failed or is still running)"
    tier = response.get("tier", retrieval.get("tier"))
    latency = response.get("latencyMs", retrieval.get("latencyMs")) or 0
    created = [t for t in (retrieval.get("createdAt"), response.get("createdAt")) if t]
    return {"queryText": retrieval.get("query", ""), "resolutionTier": "" if tier is None else str(tier),
            "tierReason": reason, "latencyMs": int(round(float(latency))), "cached": cached,
            "createdAt": min(created) if created else ""}

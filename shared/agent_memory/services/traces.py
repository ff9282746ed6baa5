"""Retrieval and response traces, read back with GET /traces/{id}.

A chat call writes its retrieval trace first (always: what was asked, what retrieval
returned) and its response trace only on success (tier, hits used, model, token counts,
latency). Both share the returned ``traceId``.
"""

from __future__ import annotations

import time
from typing import Any

from agent_memory import keys, timeutil
from agent_memory.errors import NotFound
from agent_memory.ids import new_id
from agent_memory.ports import Record, RecordStore
from agent_memory.request_context import RequestContext

TRACE_TTL_S = 30 * 24 * 3600


def traces_pk(ctx: RequestContext) -> str:
    return f"{keys.base(ctx)}#traces"


class TraceStore:
    def __init__(self, store: RecordStore):
        self.store = store

    def new_id(self) -> str:
        return new_id("trace")

    def put(self, ctx: RequestContext, trace_id: str, part: str, data: dict[str, Any]) -> None:
        record = Record(pk=traces_pk(ctx), sk=f"{trace_id}#{part}", expires_at=int(time.time()) + TRACE_TTL_S,
                        data={"kind": "trace", "part": part, "traceId": trace_id, "createdAt": timeutil.now_iso(),
                              **data})
        self.store.put(record)

    def get(self, ctx: RequestContext, trace_id: str) -> dict[str, Any]:
        records = self.store.query(traces_pk(ctx), prefix=f"{trace_id}#", limit=10).records if trace_id else []
        if not records:
            raise NotFound(f"trace {trace_id} does not exist")
        out: dict[str, Any] = {"id": trace_id, "retrieval": None, "response": None}
        for record in records:
            body = {k: v for k, v in record.data.items() if k not in ("kind", "part", "traceId")}
            out[record.data["part"]] = body
        return out

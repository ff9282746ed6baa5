"""POST /facts: store a turn and, depending on ``infer``, extract and reconcile facts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_memory.errors import PayloadTooLarge
from agent_memory.models.requests import WriteFactsRequest
from agent_memory.request_context import RequestContext
from agent_memory.services.sessions import NewTurn

if TYPE_CHECKING:
    from agent_memory.runtime import Runtime


class FactsService:
    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    def write(self, ctx: RequestContext, req: WriteFactsRequest) -> dict[str, Any]:
        cap = self.runtime.settings.limits.facts_text_bytes
        if len(req.text.encode("utf-8")) > cap:
            raise PayloadTooLarge(f"text is over the {cap}-byte limit")
        sessions = self.runtime.sessions
        session = sessions.resolve_for_write(ctx, req.session_id, req.scopes, req.labels)
        turns = sessions.append_turns(ctx, session, [NewTurn(req.role, req.text, req.observed_at, req.infer)],
                                      req.scopes, req.labels)
        return {"mode": req.infer, "sessionId": session.sk, "turnId": turns[0]["id"], "extraction": None}

"""Formatted context for a caller's own model call: ``POST /context`` and
``POST /sessions/{id}/context`` ("caller drives the loop" in the chat spec).

``session_context`` returns what chat would inject for that session: the session's
transcript window (the chat window rules, ``services/conversation/chat/window.py``) rendered as
``# Conversation so far``, and retrieval that skips the turns already in that window
(older turns of the same session stay eligible).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_memory.access import scopes
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel.errors import NotFound
from agent_memory.services.retrieval.context_format import format_context

if TYPE_CHECKING:
    from agent_memory.ports import RecordStore
    from agent_memory.services.conversation.sessions import SessionService
    from agent_memory.services.retrieval.retrieval_service import RetrievalService


RECENT_SESSIONS = 20  # an empty /context query looks for the latest session among the newest these
RECENT_INSTRUCTIONS = 20  # as many as chat injects


@dataclass
class PromptContext:
    """Formatted context: the text, what each marker (``S1``...) stands for, and for a
    session the window turns retrieval skipped (``excluded``)."""

    text: str
    tier: int
    query_ms: float
    markers: dict[str, Any]
    excluded: list[str] | None = None
    degraded: str | None = None  # the retrieval's (``RetrievalResult.degraded``)


class PromptContextService:
    """Context formatted for the caller's own prompt (what chat would inject), not a request's
    ``RequestContext`` nor a tenant's ``context_id``."""

    def __init__(self, store: RecordStore, sessions: SessionService, retrieval: RetrievalService,
                 entity_turns: Callable[[RequestContext, str, str, int], Sequence[Any]] | None = None):
        """``entity_turns(ctx, entity_id, query, k)``: an entity's best matching thread turns
        across its threads (``ThreadService.entity_matches``), which ``context`` with a
        ``subject`` adds: ``Memory.recall`` is entity-wide."""
        self._store = store
        self._sessions = sessions
        self._retrieval = retrieval
        self._entity_turns = entity_turns

    def context(self, ctx: RequestContext, query: str, *, k: int = 10, subject: str | None = None,
                **filters: Any) -> PromptContext:
        """Retrieval for ``query`` (with the recall filters of ``RetrievalService.retrieve``); an
        empty query (the Spectron integrations' ``context`` tool sends one) answers what an
        agent starts from instead: the latest session's transcript window and the standing
        instructions, no retrieval."""
        if not query.strip():
            return self.recent(ctx)
        result = self._retrieval.retrieve(ctx, query, k=k, subject=subject, **filters)
        hits = list(result.hits)
        if subject and self._entity_turns is not None:
            hits = _with_thread_turns(hits, self._entity_turns(ctx, subject, query, k), k)
        formatted = format_context(hits)
        return PromptContext(formatted.text, result.tier, result.query_ms, formatted.markers,
                             degraded=result.degraded)

    def recent(self, ctx: RequestContext) -> PromptContext:
        """The window of the session written to last (of the newest ``RECENT_SESSIONS`` the
        caller may read) and the active instructions the caller may read."""
        from agent_memory.kernel import storage_keys as keys
        from agent_memory.models.conversation_records import Session
        from agent_memory.models.facts import Instruction
        from agent_memory.services.conversation.chat.window import session_window

        started = time.perf_counter()
        sessions = [Session.from_item(r.data)
                    for r in self._store.query(keys.sessions_pk(ctx), limit=RECENT_SESSIONS, forward=False).records]
        readable = [s for s in sessions if s is not None and not s.deleted and s.last_turn_at
                    and scopes.visible(s.scopes or [], ctx.read_region)]
        latest = max(readable, key=lambda s: s.last_turn_at or "", default=None)
        window = session_window(self._store, ctx, latest.id) if latest is not None else []
        rows = self._store.query(keys.instructions_pk(ctx), limit=RECENT_INSTRUCTIONS).records
        instructions = [i.description for i in (Instruction.from_dict(r.data) for r in rows)
                        if i.active and not i.deleted and scopes.visible(i.scopes or [], ctx.read_region)]
        formatted = format_context([], transcript=[(t.role, t.content) for t in window], instructions=instructions)
        return PromptContext(formatted.text, 0, (time.perf_counter() - started) * 1000, formatted.markers,
                             excluded=[t.id for t in window])

    def session_context(self, ctx: RequestContext, session_id: str, query: str, *, k: int = 10) -> PromptContext:
        from agent_memory.services.conversation.chat.window import session_window

        session = self._sessions.get(ctx, session_id)
        if not scopes.visible(session.scopes or [], ctx.read_region):
            raise NotFound(f"session {session_id} does not exist")
        window = session_window(self._store, ctx, session_id)
        result = self._retrieval.retrieve(ctx, query, k=k, exclude_ids=[t.id for t in window])
        formatted = format_context(result.hits, transcript=[(t.role, t.content) for t in window])
        return PromptContext(formatted.text, result.tier, result.query_ms, formatted.markers,
                             excluded=[t.id for t in window], degraded=result.degraded)


def _with_thread_turns(hits: list[Any], matches: Sequence[Any], k: int) -> list[Any]:
    """``hits`` then the subject's thread turns (``EntityMatch``, best first), at most ``k`` in
    all, the turns keeping up to half of them (their scores come from another ranking, so the
    two lists are not merged by score): each as a turn hit that names its thread."""
    from agent_memory.services.retrieval.hits import Hit

    seen = {h.id for h in hits}
    turns = [Hit(id=m.turn.id, kind="turn", text=m.text, score=m.score, occurred_at=m.turn.created_at,
                 metadata={"threadId": m.turn.thread_id, "turnIndex": m.turn.turn_index})
             for m in matches if m.text and m.turn.id not in seen][:max(1, k // 2)]
    return hits[:k - len(turns)] + turns

"""Sessions and their raw turns on the wire (``/sessions``, ``/sessions/{id}/turns``)."""

from __future__ import annotations

from typing import Any

from agent_memory.models.conversation_records import Session
from agent_memory.models.records import Page, Turn
from agent_memory.presenters.paging import page_wire


def session_wire(session: Session) -> dict[str, Any]:
    return {"id": session.id, "scopes": session.scopes, "labels": session.labels,
            "createdAt": session.created_at, "closedAt": session.closed_at, "metadata": session.metadata}


def turn_wire(turn: Turn) -> dict[str, Any]:
    out = {"id": turn.id, "session": turn.session, "role": turn.role, "content": turn.content,
           "seq": turn.seq, "createdAt": turn.created_at, "observedAt": turn.observed_at}
    if turn.speaker:
        out["speaker"] = dict(turn.speaker)
    return out


def turn_page(page: Page[Turn]) -> dict[str, Any]:
    return {"turns": [turn_wire(t) for t in page.items], "page": page_wire(page)}


def session_page(page: Page[Session]) -> dict[str, Any]:
    return {"items": [session_wire(s) for s in page.items], "page": page_wire(page)}

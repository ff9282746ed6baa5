"""The transcript window: the session's recent user/assistant turns, which the prompt
renders as ``# Conversation so far`` inside the untrusted-data block.

Rules (docs/decisions.md, "Chat window"): the last 10 user/assistant messages, newest kept; whole
messages are dropped from the oldest end once the total passes 8,000 characters; a
single newest message longer than that is cut to its last 8,000 characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.models.records import Turn
from agent_memory.ports import RecordStore

WINDOW_MESSAGES = 10
WINDOW_CHARS = 8000
WINDOW_FETCH = 40  # turns read from the session's end to find the last 10 user/assistant ones


@dataclass(frozen=True)
class WindowTurn:
    id: str
    role: str
    content: str


def transcript_window(turns: Sequence[WindowTurn], *, max_messages: int = WINDOW_MESSAGES,
                      max_chars: int = WINDOW_CHARS) -> list[WindowTurn]:
    """``turns`` oldest first (any roles); returns the window, oldest first."""
    conversational = [t for t in turns if t.role in ("user", "assistant")][-max_messages:]
    kept: list[WindowTurn] = []
    total = 0
    for turn in reversed(conversational):
        if not kept and len(turn.content) > max_chars:
            kept.append(WindowTurn(turn.id, turn.role, turn.content[-max_chars:]))
            break
        if total + len(turn.content) > max_chars:
            break
        kept.append(turn)
        total += len(turn.content)
    return list(reversed(kept))


def stored_window(stored: Sequence[Turn]) -> list[WindowTurn]:
    """The window of a session's stored turns (oldest first; forgotten ones left out)."""
    return transcript_window([WindowTurn(t.id, t.role, t.content) for t in stored if not t.deleted])


def session_window(store: RecordStore, ctx: RequestContext, session_id: str) -> list[WindowTurn]:
    """The window of a stored session, read from ``store`` (the prompt context, which has no
    session service; chat reads ``SessionService.latest_turns``)."""
    page = store.query(keys.turns_pk(ctx, session_id), limit=WINDOW_FETCH, forward=False)
    return stored_window([Turn.from_item(r.data) for r in reversed(page.records)])

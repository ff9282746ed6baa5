"""Chat on the wire: ``ChatResponseJson`` and the stream's events (docs/decisions.md, "SSE").

``stream`` turns the service's events into ``(event, data)`` pairs; the HTTP layer frames
them (``http.sse_stream``), writing an ``error`` event's domain error as a problem document."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from agent_memory.presenters.facts import extraction
from agent_memory.services.conversation.chat.chat_service import (
    ChatDelta,
    ChatDone,
    ChatFailed,
    ChatReply,
    Citation,
)


def citation(c: Citation) -> dict[str, Any]:
    return {"marker": c.marker, "id": c.id, "kind": c.kind, "snippet": c.snippet, "score": c.score,
            "documentId": c.document_id, "sessionId": c.session_id, "documentTitle": c.document_title,
            "positionPercent": c.position_percent,
            "page": c.page,
            "occurredAt": c.occurred_at, "role": c.role}


def reply(r: ChatReply) -> dict[str, Any]:
    return {"reply": r.reply, "sessionId": r.session_id, "traceId": r.trace_id,
            "citations": [citation(c) for c in r.citations], "memoryUpdates": extraction(r.memory_updates)}


def stream(events: Iterable[ChatDelta | ChatDone | ChatFailed]) -> Iterator[tuple[str, Any]]:
    for event in events:
        if isinstance(event, ChatDelta):
            yield "delta", {"delta": event.text}
        elif isinstance(event, ChatDone):
            yield "done", reply(event.reply)
        else:
            yield "error", event.error


def trace_list(traces: list[dict[str, Any]]) -> dict[str, Any]:
    """``TraceList``: the Spectron client's ``TraceListResponse`` (``{"traces": [...]}``)."""
    return {"traces": traces}


def trace_stats(stats: dict[str, Any]) -> dict[str, Any]:
    """``TraceStats``: the service's figures as they are (already the wire's names)."""
    return stats

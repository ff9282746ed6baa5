"""Threads on the wire (``/threads``, ``/threads/{id}/turns``, ``/context``, ``/acl``)."""

from __future__ import annotations

from typing import Any

from agent_memory.models.conversation_records import Thread
from agent_memory.models.records import Page, ThreadTurn
from agent_memory.presenters.paging import page_wire
from agent_memory.services.conversation.threads import RecalledTurn, TurnText


def thread_wire(thread: Thread) -> dict[str, Any]:
    return {"threadId": thread.id, "partition": thread.partition, "turnCount": thread.turn_count,
            "aclReaders": thread.acl_readers, "createdAt": thread.created_at, "updatedAt": thread.updated_at}


def thread_page(page: Page[Thread]) -> dict[str, Any]:
    return {"items": [thread_wire(t) for t in page.items], "page": page_wire(page)}


def appended(turn: ThreadTurn) -> dict[str, Any]:
    """The reply to an append (201; its replay under the same idempotency key is a 200)."""
    return {"threadId": turn.thread_id, "turnIndex": turn.turn_index, "turnId": turn.id, "entityId": turn.entity_id,
            "createdAt": turn.created_at}


def appended_refs(body: dict[str, Any]) -> list[str]:
    """The record ids a stored append reply mentions (forget removes replies naming them)."""
    return [body["turnId"]]


def turn_wire(item: TurnText) -> dict[str, Any]:
    turn = item.turn
    return {"threadId": turn.thread_id, "turnId": turn.id, "turnIndex": turn.turn_index, "text": item.text,
            "entityId": turn.entity_id, "metadata": turn.metadata or {}, "aclReaders": turn.acl_readers,
            "createdAt": turn.created_at, "createdBy": turn.created_by, "textBytes": turn.text_bytes}


def turn_page(page: Page[TurnText]) -> dict[str, Any]:
    return {"items": [turn_wire(t) for t in page.items], "page": page_wire(page)}


def recalled_turn(item: RecalledTurn) -> dict[str, Any]:
    turn = item.turn
    out = {"turnId": turn.id, "turnIndex": turn.turn_index, "text": item.text, "metadata": turn.metadata or {},
           "entityId": turn.entity_id, "origin": item.origin, "createdAt": turn.created_at,
           "textBytes": turn.text_bytes, "textInline": item.text is not None}
    if item.score is not None:
        out["score"] = item.score
    return out


def recalled_turns(items: list[RecalledTurn]) -> dict[str, Any]:
    return {"items": [recalled_turn(i) for i in items]}

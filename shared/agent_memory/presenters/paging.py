"""The wire form of a cursor page (``{"hasMore", "nextCursor"}``)."""

from __future__ import annotations

from typing import Any

from agent_memory.models.records import Page
from agent_memory.services.conversation.reader_access import AUDIT_KIND


def page_wire(page: Page[Any]) -> dict[str, Any]:
    return {"hasMore": page.has_more, "nextCursor": page.next_cursor}


def audit_row(record: dict[str, Any]) -> dict[str, Any]:
    """An audit record as stored (its keys are the wire's) with the Spectron client's row fields:
    the request it belongs to, its kind, the rows it touched. A decision (an admin bypass, a
    delegation) costs and times nothing (``cost`` and ``latencyMs`` 0, ``rowsTouched`` the
    records it covered); a cost row says its latency, the rows read and written, and the model
    tokens spent (``cost``: prompt plus completion tokens)."""
    kind = record.get("auditKind", AUDIT_KIND)
    body = {k: v for k, v in record.items() if k != "auditKind"}
    if kind == AUDIT_KIND:
        return {**body, "kind": kind, "traceId": record.get("requestId") or record.get("id"),
                "createdAt": record.get("at"), "cost": 0.0, "latencyMs": 0,
                "rowsTouched": len(record.get("recordIds") or []), "model": None,
                "principal": record.get("principal")}
    return {**body, "kind": kind, "traceId": record.get("requestId") or record.get("id"),
            "createdAt": record.get("at"),
            "cost": float((record.get("promptTokens") or 0) + (record.get("completionTokens") or 0)),
            "latencyMs": int(record.get("latencyMs") or 0),
            "rowsTouched": int(record.get("rowsRead") or 0) + int(record.get("rowsWritten") or 0),
            "model": record.get("model"), "principal": record.get("principal")}


def audit_page(page: Page[dict[str, Any]]) -> dict[str, Any]:
    """``GET /audit``: ``{rows, page}``, newest first."""
    return {"rows": [audit_row(r) for r in page.items], "page": page_wire(page)}

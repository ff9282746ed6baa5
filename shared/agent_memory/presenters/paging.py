"""The wire form of a cursor page (``{"hasMore", "nextCursor"}``)."""

from __future__ import annotations

from typing import Any

from agent_memory.models.records import Page
from agent_memory.services.conversation.reader_access import AUDIT_KIND


def page_wire(page: Page[Any]) -> dict[str, Any]:
    return {"hasMore": page.has_more, "nextCursor": page.next_cursor}


def audit_row(record: dict[str, Any]) -> dict[str, Any]:
    """An audit record as stored (its keys are the wire's) with the Spectron client's row fields:
    the request it belongs to, its kind (every record is an access ``decision``), the rows it
    touched; audit records cost nothing and time nothing, so ``cost`` and ``latencyMs`` are 0."""
    return {**record, "kind": AUDIT_KIND, "traceId": record.get("requestId") or record.get("id"),
            "createdAt": record.get("at"), "cost": 0.0, "latencyMs": 0,
            "rowsTouched": len(record.get("recordIds") or []), "model": None,
            "principal": record.get("principal")}


def audit_page(page: Page[dict[str, Any]]) -> dict[str, Any]:
    """``GET /audit``: ``{rows, page}``, newest first."""
    return {"rows": [audit_row(r) for r in page.items], "page": page_wire(page)}

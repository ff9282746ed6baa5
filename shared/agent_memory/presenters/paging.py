"""The wire form of a cursor page (``{"hasMore", "nextCursor"}``)."""

from __future__ import annotations

from typing import Any

from agent_memory.models.records import Page


def page_wire(page: Page[Any]) -> dict[str, Any]:
    return {"hasMore": page.has_more, "nextCursor": page.next_cursor}


def audit_page(page: Page[dict[str, Any]]) -> dict[str, Any]:
    """``GET /audit``: the audit records as stored (their keys are the wire's)."""
    return {"items": page.items, "page": page_wire(page)}

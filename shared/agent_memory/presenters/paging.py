"""The wire form of a cursor page (``{"hasMore", "nextCursor"}``)."""

from __future__ import annotations

from typing import Any

from agent_memory.models.records import Page


def page_wire(page: Page[Any]) -> dict[str, Any]:
    return {"hasMore": page.has_more, "nextCursor": page.next_cursor}

"""What a caller may pick, on the wire (``GET /contexts``); the sessions, threads and
documents lists use their own areas' presenters."""

from __future__ import annotations

from typing import Any

from agent_memory.models.records import Page
from agent_memory.presenters.paging import page_wire
from agent_memory.services.operations.catalogue import ContextEntry


def context_page(page: Page[ContextEntry]) -> dict[str, Any]:
    return {"items": [{"contextId": c.context_id, "partitions": c.partitions} for c in page.items],
            "page": page_wire(page)}

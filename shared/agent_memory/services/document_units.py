"""How a stored document chunk becomes a search unit (``kind="chunk"``).

Kept apart from ``services/documents.py`` so the projection registry can import it without
pulling in the service: ``services/projection.py`` imports this module and registers
``chunk_units`` for the kind, so every path that projects (the local ``ProjectingRecordStore``,
the projector Lambda, reindex) knows it. This module imports nothing from the projection.

The unit's text is the chunk's context line (its heading path, "Handbook > Travel >
Expenses", or the document title when the chunk sits under no heading) followed by the chunk
text, so a query that names a section or the document matches its passages. ``metadata``
carries what a citation needs (``documentId``, ``documentTitle``, ``positionPercent``,
``ordinal``, ``headingPath``); ``occurred_at`` is the document's ``observedAt``.
"""

from __future__ import annotations

from typing import Any

from agent_memory.ports import SearchUnit

HEADING_SEPARATOR = " > "


def context_line(data: dict[str, Any]) -> str:
    path = data.get("headingPath") or []
    return HEADING_SEPARATOR.join(path) if path else (data.get("documentTitle") or "")


def chunk_units(data: dict[str, Any], version: int) -> list[SearchUnit]:
    context = context_line(data)
    return [SearchUnit(
        id=data["id"], context_id=data["contextId"], kind="chunk",
        text=f"{context}\n\n{data['text']}" if context else data["text"], revision=version,
        partition=data.get("partition", "default"), scopes=data.get("scopes", []), labels=data.get("labels", []),
        occurred_at=data.get("observedAt"), source_ids=[data["documentId"]],
        metadata={"documentId": data["documentId"], "documentTitle": data.get("documentTitle"),
                  "positionPercent": data.get("positionPercent"), "ordinal": data.get("ordinal"),
                  "headingPath": HEADING_SEPARATOR.join(data.get("headingPath") or [])},
    )]

"""How a stored document chunk becomes a search unit (``kind="chunk"``).

Kept apart from ``services/documents/document_service.py`` so the projection registry can import it without
pulling in the service: ``services/operations/projection.py`` imports this module and registers
``chunk_units`` for the kind, so every path that projects (the local ``ProjectingRecordStore``,
the projector Lambda, reindex) knows it. This module imports nothing from the projection.

The unit's text is the chunk's context line (its heading path, "Handbook > Travel >
Expenses", or the document title when the chunk sits under no heading) followed by the chunk
text, so a query that names a section or the document matches its passages. ``metadata``
carries what a citation needs (``documentId``, ``documentTitle``, ``positionPercent``,
``ordinal``, ``headingPath``); ``occurred_at`` is the document's ``observedAt``. The entities the chunk mentions
(``entityIds``, ``services/documents/links.py``) are its ``entity_ids`` and labels.
"""

from __future__ import annotations

from typing import Any

from agent_memory.models.records import Chunk
from agent_memory.ports import SearchUnit

HEADING_SEPARATOR = " > "


def context_line(chunk: Chunk) -> str:
    path = chunk.heading_path or []
    return HEADING_SEPARATOR.join(path) if path else (chunk.document_title or "")


def chunk_units(data: dict[str, Any], version: int) -> list[SearchUnit]:
    chunk = Chunk.from_item(data)
    context = context_line(chunk)
    entities = list(chunk.entity_ids or [])  # the entities it mentions (``links.py``), as labels too
    return [SearchUnit(
        id=chunk.id, context_id=chunk.context_id, kind="chunk",
        text=f"{context}\n\n{chunk.text}" if context else chunk.text, revision=version,
        partition=chunk.partition, scopes=chunk.scopes, labels=sorted({*chunk.labels, *entities}),
        # valid from when the document was observed: an asOf read before that does not see it
        occurred_at=chunk.observed_at, valid_from=chunk.observed_at, source_ids=[chunk.document_id],
        entity_ids=entities,
        metadata={"documentId": chunk.document_id, "documentTitle": chunk.document_title,
                  "positionPercent": chunk.position_percent, "ordinal": chunk.ordinal,
                  "headingPath": HEADING_SEPARATOR.join(chunk.heading_path or []),
                  **({"page": chunk.page} if chunk.page is not None else {})},
    )]

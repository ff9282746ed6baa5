"""Documents on the wire (``/documents``, ``/documents/uploads``, ``/documents/{id}/chunks``)."""

from __future__ import annotations

from typing import Any

from agent_memory.models.records import Chunk, Document, Page
from agent_memory.presenters.paging import page_wire
from agent_memory.services.documents.service import IngestResult, UploadTicket


def document_wire(doc: Document) -> dict[str, Any]:
    wire = {"id": doc.id, "title": doc.title, "contentHash": doc.content_hash, "size": doc.size,
            "chunkCount": doc.chunk_count, "chunksTotal": doc.chunk_count,
            "chunksDone": doc.chunks_done if doc.chunks_done is not None else doc.chunk_count, "status": doc.status,
            "format": doc.format, "filename": doc.filename, "createdAt": doc.created_at,
            "observedAt": doc.observed_at, "scopes": doc.scopes, "labels": doc.labels}
    if doc.error:
        wire["error"] = doc.error
    return wire


def document_page(page: Page[Document]) -> dict[str, Any]:
    return {"items": [document_wire(d) for d in page.items], "page": page_wire(page)}


def ingested(result: IngestResult) -> tuple[dict[str, Any], int]:
    """An upload's reply: 202 when this upload created the document (ingestion runs in the
    background), 200 with ``deduplicated: true`` when the content was already stored."""
    doc = result.document
    body = {"id": doc.id, "status": doc.status, "contentHash": doc.content_hash,
            "deduplicated": not result.created, "title": doc.title, "chunkCount": doc.chunk_count,
            "chunksTotal": doc.chunk_count}
    return body, 202 if result.created else 200


def upload_ticket(ticket: UploadTicket) -> tuple[dict[str, Any], int]:
    doc = ticket.document
    return {"id": doc.id, "status": doc.status, "uploadUrl": ticket.url, "method": "PUT",
            "headers": {"Content-Type": ticket.content_type, "Content-Length": str(doc.size)},
            "expiresAt": ticket.expires_at, "size": doc.size}, 201


def completed(doc: Document, queued: bool) -> tuple[dict[str, Any], int]:
    """``POST /documents/{id}/complete``: 202 when ingestion was queued, else 200 as it is."""
    return document_wire(doc), 202 if queued else 200


def chunk_wire(chunk: Chunk) -> dict[str, Any]:
    return {"id": chunk.id, "documentId": chunk.document_id, "documentTitle": chunk.document_title,
            "ordinal": chunk.ordinal, "offset": chunk.offset, "positionPercent": chunk.position_percent,
            "headingPath": chunk.heading_path, "text": chunk.text}


def chunk_page(page: Page[Chunk]) -> dict[str, Any]:
    return {"items": [chunk_wire(c) for c in page.items], "page": page_wire(page)}

"""Documents on the wire (``/documents``, ``/documents/uploads``, ``/documents/{id}/chunks``, corpus
search ``/documents/query`` and the keyword index ``/documents/keywords``, in the Spectron client's shapes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_memory.models.document_records import Document, DocumentKeyword
from agent_memory.models.documents import FORMAT_MIME_TYPES
from agent_memory.models.records import Chunk
from agent_memory.services.documents.document_service import IngestResult, NumberedPage, RelinkResult
from agent_memory.services.documents.uploads import UploadTicket

if TYPE_CHECKING:  # corpus search ranks with numpy: the other document routes never load it
    from agent_memory.services.documents.keywords import KeywordDetailView, KeywordView
    from agent_memory.services.retrieval.corpus import CorpusHit, CorpusResult

# A document's content version: 1 as uploaded, one more for each reprocess (PUT /documents/{id}).
DOCUMENT_VERSION = 1


def mime_type(doc: Document) -> str:
    return doc.mime_type or FORMAT_MIME_TYPES.get(doc.format, "text/plain")


def document_wire(doc: Document) -> dict[str, Any]:
    wire = {"id": doc.id, "title": doc.title, "contentHash": doc.content_hash, "size": doc.size,
            "chunkCount": doc.chunk_count, "chunksTotal": doc.chunk_count,
            "chunksDone": doc.chunks_done if doc.chunks_done is not None else doc.chunk_count, "status": doc.status,
            "format": doc.format, "filename": doc.filename, "createdAt": doc.created_at,
            "observedAt": doc.observed_at, "scopes": doc.scopes, "labels": doc.labels,
            # The Spectron client's names (docs/decisions.md, "One shape for both readers")
            "sizeBytes": original_bytes(doc), "mimeType": mime_type(doc), "version": doc.content_version or DOCUMENT_VERSION,
            "source": doc.source, "updatedAt": doc.updated_at or doc.created_at,
            "keywordCount": doc.keyword_count}
    if doc.error:
        wire["error"] = doc.error
    if doc.passages_forgotten:
        wire["passagesForgotten"] = doc.passages_forgotten
    return wire


def original_bytes(doc: Document) -> int:
    """``sizeBytes``: bytes of the original as uploaded (the Spectron client reads it as the
    file's size). While uploading, the bytes the upload declared; a document ingested before
    originals were kept has only its text's size."""
    return doc.original_size if doc.original_size is not None else doc.size


def numbered(key: str, page: NumberedPage[Any], item: Any) -> dict[str, Any]:
    """A list paged by number and by cursor: ``{<key>, page, pageSize, total, hasMore, nextCursor}``."""
    return {key: [item(i) for i in page.items], "page": page.page, "pageSize": page.page_size,
            "total": page.total, "hasMore": page.next_cursor is not None, "nextCursor": page.next_cursor}


def document_page(page: NumberedPage[Document]) -> dict[str, Any]:
    return numbered("documents", page, document_wire)


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


def reprocessed(doc: Document, queued: bool) -> dict[str, Any]:
    """``PUT /documents/{id}`` (202): the document's status and whether this call queued the
    re-ingest (``false``: one was already running, or the document is still being uploaded)."""
    return {"id": doc.id, "status": doc.status, "contentHash": doc.content_hash, "deduplicated": False,
            "title": doc.title, "chunkCount": doc.chunk_count, "chunksTotal": doc.chunk_count, "queued": queued}


def relinked(result: RelinkResult) -> dict[str, Any]:
    """``POST /documents/recompute-links`` (202): what this call relinked; ``continued`` when the
    remaining documents were queued for the worker."""
    return {"linksEmitted": result.links, "documentsRelinked": result.documents,
            "continued": result.next_after is not None}


def chunk_wire(chunk: Chunk) -> dict[str, Any]:
    return {"id": chunk.id, "documentId": chunk.document_id, "documentTitle": chunk.document_title,
            "ordinal": chunk.ordinal, "offset": chunk.offset, "positionPercent": chunk.position_percent,
            "headingPath": chunk.heading_path, "page": chunk.page, "text": chunk.text,
            # The Spectron client's names: characters of the normalised document text
            "document": chunk.document_id, "position": chunk.ordinal, "charStart": chunk.offset,
            "charEnd": None if chunk.offset is None else chunk.offset + len(chunk.text),
            "section": " / ".join(chunk.heading_path) or None}


def chunk_page(page: NumberedPage[Chunk]) -> dict[str, Any]:
    return numbered("chunks", page, chunk_wire)


# --- corpus search --------------------------------------------------------------------------


def _hit_chunk(hit: CorpusHit) -> dict[str, Any]:
    """A chunk hit as ``chunk_wire`` shows a chunk (its text without the context line the
    search unit leads with, ``services/documents/units.py``)."""
    h = hit.hit
    meta = h.metadata
    heading = meta.get("headingPath") or ""
    context = heading or meta.get("documentTitle") or ""
    text = h.text[len(context) + 2:] if context and h.text.startswith(context + "\n\n") else h.text
    path = heading.split(" > ") if heading else []
    ordinal = meta.get("ordinal")
    return {"id": h.id, "documentId": meta.get("documentId"), "documentTitle": meta.get("documentTitle"),
            "ordinal": ordinal, "positionPercent": meta.get("positionPercent"), "headingPath": path,
            "page": meta.get("page"), "text": text, "document": meta.get("documentId"), "position": ordinal,
            "section": " / ".join(path) or None}


def corpus_result(result: CorpusResult) -> dict[str, Any]:
    """``{results: [{score, chunk, document, graphEvidence}], queryMs}``, best first."""
    results = []
    for hit in result.hits:
        doc = result.documents.get(hit.hit.metadata.get("documentId") or "")
        results.append({"score": hit.score, "chunk": _hit_chunk(hit),
                         "document": document_wire(doc) if doc is not None else {"id": hit.hit.metadata.get("documentId")},
                         "graphEvidence": hit.graph_evidence})
    return {"results": results, "queryMs": round(result.query_ms)}


# --- the keyword index ----------------------------------------------------------------------


def keyword_wire(view: KeywordView) -> dict[str, Any]:
    """A keyword; its ``id`` is its normalised form (what ``/documents/keywords/{normalised}`` takes)."""
    return {"id": view.normalised, "normalised": view.normalised, "text": view.text,
            "documentCount": view.document_count}


def keyword_page(page: NumberedPage[KeywordView]) -> dict[str, Any]:
    return numbered("keywords", page, keyword_wire)


def keyword_detail(detail: KeywordDetailView) -> dict[str, Any]:
    return {**keyword_wire(detail.keyword),
            "documents": [{"id": m.document_id, "documentId": m.document_id, "title": m.title, "score": m.score}
                          for m in detail.documents]}


def keyword_search(found: list[KeywordView], query_ms: float) -> dict[str, Any]:
    return {"results": [{**keyword_wire(v), "score": v.score} for v in found], "queryMs": round(query_ms)}


def document_keywords(found: list[DocumentKeyword]) -> dict[str, Any]:
    return {"keywords": [{"id": k.normalised, "normalised": k.normalised, "text": k.text, "score": k.score}
                         for k in found]}

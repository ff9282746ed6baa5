"""Presigned uploads: how a document over the synchronous body cap reaches the service.

``create`` (``POST /documents/uploads``) writes the document row ``uploading`` and answers a
URL to PUT exactly the declared bytes to (``ports.UploadStore``: S3, or the local server's
store); ``complete`` (``POST /documents/{id}/complete``) queues the ingestion job; the worker's
first step (``claim``) reads the object and does what a synchronous upload does before its
claim (cap, read, normalise, hash, chunk, part rows), then claims the content (content-hash row
and ``ingesting`` in one transaction). Content already stored as another live document fails
the upload with a 409 problem naming it (``code: duplicate_document``). The object is deleted
once its parts are stored; the bucket's lifecycle rule removes what an abandoned upload left.
The documents service (``document_service.py``) owns the claims these steps check and the reads."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import (
    Conflict,
    DomainError,
    InvalidRequest,
    NotAvailable,
    PayloadTooLarge,
)
from agent_memory.kernel.ids import new_id
from agent_memory.kernel.storage_keys import scope_sig
from agent_memory.kernel.stored_item import transaction_batches
from agent_memory.models.document_records import Document
from agent_memory.models.documents import MARKDOWN_SUFFIXES, DocumentFileUpload, DocumentUploadTicketRequest
from agent_memory.ports import Condition, ConditionFailed, JobQueue, Put, Record, RecordStore, UploadStore
from agent_memory.services.documents import chunking, formats
from agent_memory.services.documents.content import (
    CLAIM_ATTEMPTS,
    OriginalFile,
    default_title,
    document_of,
    drop_object,
    hash_row,
    mark_failed,
    original_key,
    read_content,
    staging_key,
)
from agent_memory.services.documents.ingestion import IngestionJob, part_rows, remove_parts

log = logging.getLogger("agent_memory.documents")

@dataclass(frozen=True)
class UploadTicket:
    """A presigned upload: the ``uploading`` document and where (and how) to PUT its bytes."""

    document: Document
    url: str
    content_type: str
    expires_at: str


class PresignedUploads:
    """The upload protocol of large documents. ``load`` reads a document row the caller may
    see (404 otherwise); ``live_document`` is the live document a content-hash row names
    (clearing an abandoned claim): both the documents service's."""

    def __init__(self, store: RecordStore, *, ingestion_queue: Callable[[], JobQueue],
                 upload_store: Callable[[], UploadStore | None], document_bytes: int, upload_url_ttl_s: int,
                 load: Callable[[RequestContext, str], Record],
                 live_document: Callable[[RequestContext, tuple[str, str]], Document | None]):
        self.store = store
        self._queue = ingestion_queue
        self._uploads = upload_store
        self._document_bytes = document_bytes
        self._upload_url_ttl_s = upload_url_ttl_s
        self._load = load
        self._live_document = live_document

    def create(self, ctx: RequestContext, req: DocumentUploadTicketRequest) -> UploadTicket:
        uploads = self._uploads()
        if uploads is None:
            raise NotAvailable("presigned uploads need an upload bucket (AGENT_MEMORY_UPLOAD_BUCKET), and this "
                               "deployment has none configured; a document up to the synchronous limit can "
                               "still go to POST /documents", code="uploads_unavailable")
        cap = self._document_bytes
        if req.size > cap:
            raise PayloadTooLarge(f"document is over the {cap}-byte limit", limit=cap)
        now = timeutil.now_iso()
        doc_id = new_id("doc")
        fmt = req.format or ("markdown" if (req.filename or "").lower().endswith(MARKDOWN_SUFFIXES) else None)
        content_type = formats.ticket_type(req.mime_type, req.filename, fmt)
        ttl = self._upload_url_ttl_s
        expires = timeutil.iso(timeutil.now() + timedelta(seconds=ttl))
        doc = Document(id=doc_id, context_id=ctx.context_id, partition=ctx.partition, title=req.title or "",
                       title_given=req.title, format_given=fmt, content_hash="", size=req.size, chunk_count=0,
                       chunks_done=0, status="uploading", format=fmt or "text", filename=req.filename,
                       created_at=now, updated_at=now, observed_at=req.observed_at or now, scopes=req.scopes,
                       labels=req.labels, created_by=ctx.principal, upload_key=staging_key(doc_id),
                       upload_expires_at=expires, mime_type=content_type)
        url = uploads.presign_put(staging_key(doc_id), req.size, content_type, ttl)
        self.store.put(Record(keys.documents_pk(ctx), doc_id, doc.to_item()), Condition.absent())
        return UploadTicket(doc, url, content_type, expires)

    def complete(self, ctx: RequestContext, doc_id: str) -> tuple[Document, bool]:
        """Queue the ingestion of an uploaded document; ``(document, queued)``. A document
        already past ``uploading`` answers as it is (a repeated call queues nothing)."""
        doc = document_of(self._load(ctx, doc_id))
        if doc.status != "uploading":
            return doc, False
        self._queue().send(IngestionJob.for_document(ctx, doc_id))
        return doc, True

    def claim(self, ctx: RequestContext, record: Record) -> str:
        """The worker's first step for an uploaded document: read the object, store its chunks'
        sources, claim it (``ingesting``). Returns the document's status after the step
        (``ingesting``, ``failed`` or ``gone``). Idempotent: a redelivery before the claim
        redoes it, after the claim finds ``ingesting``."""
        doc = document_of(record)
        uploads = self._uploads()
        cap = self._document_bytes
        try:
            if uploads is None:
                raise NotAvailable("the ingestion worker has no upload bucket configured", code="uploads_unavailable")
            try:
                raw = uploads.read(doc.upload_key or "", cap)
            except ValueError as exc:
                raise PayloadTooLarge(str(exc), limit=cap) from exc
            if raw is None:
                raise InvalidRequest("nothing was uploaded to the document's upload URL", code="upload_missing")
            upload = DocumentFileUpload(title=doc.title_given, format=doc.format_given, filename=doc.filename)
            content = read_content(upload, OriginalFile(raw, doc.mime_type), cap)
        except DomainError as exc:
            drop_object(uploads, doc.upload_key)
            return mark_failed(self.store, record, exc)
        text, fmt, chunks = content.text, content.format, content.chunks
        digest = chunking.content_hash(text)
        hash_key = (keys.document_hashes_pk(ctx), f"{digest}#{scope_sig(doc.scopes)}")
        # Sources first (a redelivery before the claim replaces them), then the claim.
        remove_parts(self.store, ctx, doc.id)
        parts = part_rows(ctx, doc.id, chunks, lambda: new_id("chunk"))
        for batch in transaction_batches(parts):
            self.store.transact(batch)
        # The original is kept before the claim names it (a redelivery writes it again).
        uploads.write(original_key(doc.id), content.raw, content.mime_type)  # type: ignore[union-attr]
        claimed = replace(doc, title=upload.title or content.title or default_title(text, fmt, upload.filename),
                          content_hash=digest, size=len(text.encode("utf-8")), chunk_count=len(chunks),
                          chunks_done=0, status="ingesting", format=content.kind, updated_at=timeutil.now_iso(),
                          mime_type=content.mime_type, original_key=original_key(doc.id),
                          original_size=len(content.raw))
        for _ in range(CLAIM_ATTEMPTS):
            existing = self._live_document(ctx, hash_key)
            if existing is not None and existing.id != doc.id:
                remove_parts(self.store, ctx, doc.id)
                drop_object(uploads, original_key(doc.id))
                drop_object(uploads, doc.upload_key)
                return mark_failed(self.store, record, Conflict(
                    f"the same content is already stored as document {existing.id}",
                    code="duplicate_document", documentId=existing.id))
            try:
                self.store.transact([
                    Put(hash_row(ctx, hash_key, doc.id, digest), Condition.absent()),
                    Put(Record(record.pk, record.sk, claimed.to_item(), version=record.version + 1),
                        Condition.version_is(record.version)),
                ])
                break
            except ConditionFailed:
                current = self.store.get(record.pk, record.sk)
                if current is None or document_of(current).deleted:
                    remove_parts(self.store, ctx, doc.id)
                    drop_object(uploads, original_key(doc.id))
                    return "gone"
                if current.version != record.version:
                    return document_of(current).status  # another delivery claimed it
        else:
            raise Conflict("a document with this content is being written concurrently; retry")
        try:
            uploads.delete(doc.upload_key or "")  # type: ignore[union-attr]
        except Exception:  # the bucket's lifecycle rule removes it later
            log.warning("could not delete the uploaded object of %s", doc.id, exc_info=True)
        return "ingesting"

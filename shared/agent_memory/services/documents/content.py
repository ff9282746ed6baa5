"""A document's content as the documents service stores it: the uploaded bytes read into
text, chunks and a title (every refusal before anything is written), the object keys its bytes
are kept under (``staging/`` while a presigned upload waits, ``originals/`` once claimed), and
the content-hash row that claims its text in its scopes."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import DomainError, InvalidRequest, PayloadTooLarge
from agent_memory.models.document_records import Document, DocumentHash
from agent_memory.models.documents import FORMAT_MIME_TYPES, DocumentFileUpload
from agent_memory.models.records import Chunk
from agent_memory.ports import Condition, ConditionFailed, Record, RecordStore, UploadStore
from agent_memory.services.documents import chunking, formats
from agent_memory.services.documents.ingestion import problem_of

log = logging.getLogger("agent_memory.documents")

STALE_INGEST_S = 15 * 60  # an ingest this long without progress died: its claim may be taken over
TITLE_FROM_TEXT_CHARS = 120
CLAIM_ATTEMPTS = 3  # tries to claim content whose claim turns out abandoned meanwhile


def document_of(record: Record) -> Document:
    return Document.from_item(record.data)


@dataclass(frozen=True)
class OriginalFile:
    """An uploaded file as it came: its bytes and declared content type (``None``: untyped)."""

    data: bytes
    content_type: str | None


def staging_key(doc_id: str) -> str:
    return f"staging/{doc_id}"


def original_key(doc_id: str) -> str:
    return f"originals/{doc_id}"


def drop_object(uploads: UploadStore | None, key: str | None) -> None:
    if uploads is None or not key:
        return
    try:
        uploads.delete(key)
    except Exception:  # the staging lifecycle rule, or the next delete, removes it later
        log.warning("could not delete object %s", key, exc_info=True)


@dataclass(frozen=True)
class DocumentContent:
    raw: bytes
    kind: str
    mime_type: str
    text: str
    format: str
    chunks: list[chunking.Chunk]
    title: str | None = None


def read_content(upload: DocumentFileUpload, original: OriginalFile | None, cap: int) -> DocumentContent:
    """An upload's bytes, text and chunks; every refusal (413/415/422/400) before anything is written."""
    if original is None:
        text_in = upload.text  # type: ignore[attr-defined]
        raw = text_in.encode("utf-8")
        if len(raw) > cap:
            raise PayloadTooLarge(f"document is over the {cap}-byte limit")
        text = chunking.normalise(text_in)
        if not text:
            raise InvalidRequest("text: the document is empty", field="text")
        fmt = upload.format or ("markdown" if chunking.looks_like_markdown(text) else "text")
        return DocumentContent(raw, fmt, upload.mime_type or FORMAT_MIME_TYPES[fmt], text, fmt, chunking.chunk(text, fmt))
    if len(original.data) > cap:
        raise PayloadTooLarge(f"document is over the {cap}-byte limit", limit=cap)
    if not original.data:
        raise InvalidRequest("the document is empty (the file part has no content)", field="file")
    got = formats.extract(original.data, original.content_type, upload.filename, format_hint=upload.format)
    if got.pages is not None:
        text, chunks = chunking.paged(got.pages)
        fmt = "text"
    else:
        text = chunking.normalise(got.text)
        fmt = got.format
        if got.kind in ("text", "markdown") and upload.format is None:
            fmt = "markdown" if got.kind == "markdown" or chunking.looks_like_markdown(text) else "text"
        chunks = chunking.chunk(text, fmt)  # type: ignore[arg-type]
    if not text:
        raise InvalidRequest("the document is empty", field="file")
    kind = got.kind if got.kind not in ("text", "markdown") else fmt
    return DocumentContent(original.data, kind, got.mime_type, text, fmt, chunks, got.title)


def rebuilt_content(doc: Document, old: list[Chunk]) -> DocumentContent:
    """A document whose original forget removed, as its remaining (live) chunks say."""
    kept = [(c.text, tuple(c.heading_path or ()), c.page)
            for c in sorted((c for c in old if not c.deleted and c.text), key=lambda c: c.ordinal or 0)]
    text, chunks = chunking.rebuilt(kept)
    return DocumentContent(b"", doc.format, doc.mime_type or FORMAT_MIME_TYPES.get(doc.format, "text/plain"),
                    text, doc.format, chunks, doc.title)


def hash_row(ctx: RequestContext, hash_key: tuple[str, str], doc_id: str, digest: str) -> Record:
    """The content-hash row that claims ``digest`` (in these scopes) for a document."""
    return Record(hash_key[0], hash_key[1],
                  DocumentHash(context_id=ctx.context_id, document_id=doc_id, content_hash=digest).to_item())


def is_stale(doc: Document) -> bool:
    if doc.status != "ingesting":
        return False
    age = timeutil.now() - timeutil.parse(doc.updated_at or doc.created_at)
    return age.total_seconds() > STALE_INGEST_S


def default_title(text: str, fmt: str, filename: str | None) -> str:
    """No title given: the first markdown heading, else the file name without its extension,
    else the start of the first line."""
    heading = chunking.first_heading(text) if fmt == "markdown" else None
    if heading:
        return heading[:TITLE_FROM_TEXT_CHARS]
    if filename:
        stem = filename.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
        stem = stem.rsplit(".", 1)[0] if "." in stem.strip(".") else stem
        if stem.strip():
            return stem.strip()
    return text.split("\n", 1)[0].strip()[:TITLE_FROM_TEXT_CHARS]


def mark_failed(store: RecordStore, record: Record, exc: DomainError) -> str:
    """The worker's first step (an upload's or a reprocess's claim) failed: the document row
    says ``failed`` with the problem. Returns the status it ends in (``gone`` if deleted)."""
    doc = document_of(record)
    log.warning("uploaded document %s failed: %s", doc.id, exc.detail)
    failed = replace(doc, status="failed", error=problem_of(exc), updated_at=timeutil.now_iso())
    try:
        store.put(Record(record.pk, record.sk, failed.to_item(), version=record.version + 1),
                  Condition.version_is(record.version))
    except ConditionFailed:
        current = store.get(record.pk, record.sk)
        if current is None:
            return "gone"
        now = document_of(current)
        return "gone" if now.deleted else now.status
    return "failed"

"""Documents area: upload (JSON or multipart/form-data), read, page chunks, reprocess, relink, delete;
corpus search (``POST /documents/query``) and the keyword index (``/documents/keywords``,
``/documents/{id}/keywords``).

Ingest behaviour (chunking, dedupe, extraction, the order of writes) is documented in
``agent_memory.services.documents.document_service``; this module only parses and answers. Chunk pages are
written with ``ensure_ascii=False`` (escaping non-ASCII text would multiply their size).
"""

import time
from dataclasses import replace
from typing import Any
from urllib.parse import unquote, urljoin

from agent_memory.http import api as http
from agent_memory.http import multipart
from agent_memory.kernel.errors import InvalidRequest, NotFound, PayloadTooLarge
from agent_memory.models.documents import (
    DocumentFileUpload,
    DocumentQueryRequest,
    DocumentUpload,
    DocumentUploadTicketRequest,
    KeywordSearchRequest,
)
from agent_memory.observability import instrumented
from agent_memory.presenters import documents as documents_wire
from agent_memory.runtime import get_runtime

app = http.make_resolver()

BASE = "/api/v1/<context_id>/documents"
DOCUMENT_STATUSES = ("uploading", "ingesting", "ready", "failed")
KEYWORD_SORTS = ("documentCount", "normalised")
QUERY_BODY_CAP = 64 * 1024


def _upload(context_id: str) -> tuple[DocumentFileUpload, Any]:
    limits = get_runtime().settings.limits
    # A synchronous request stays below Lambda's 6 MB payload limit (limits.sync_body_bytes);
    # a larger document goes through a presigned upload, which the 413 names.
    body = http.raw_body(app)
    if len(body) > limits.sync_body_bytes:
        raise PayloadTooLarge(
            f"request body is {len(body)} bytes; a synchronous upload takes at most {limits.sync_body_bytes}. "
            f"Upload larger documents (up to {limits.document_bytes} bytes) with "
            f"POST /api/v1/{context_id}/documents/uploads", code="use_presigned_upload",
            limit=limits.sync_body_bytes, uploadRoute=f"/api/v1/{context_id}/documents/uploads")
    content_type = http.header(app, "content-type")
    if multipart.is_multipart(content_type):
        from agent_memory.services.documents.content import OriginalFile

        parts = multipart.parse_form(content_type, body)
        fields = multipart.document_upload_fields(parts, keep_file=True)
        file = parts.get("file")
        if file is None:
            return http.validate(DocumentUpload, fields), None
        return http.validate(DocumentFileUpload, fields), OriginalFile(file.data, file.declared_type)
    return http.body(app, DocumentUpload), None


def _page_size() -> int:
    """``limit``, or ``page_size`` (the Spectron client's spelling), which wins over it."""
    limit = http.page_limit(app)  # checked even where page_size wins: a bad limit is a 400 either way
    if http.query_text(app, "page_size") is None:
        return limit
    limits = get_runtime().settings.limits
    return http.query_int(app, "page_size", limits.page_default, maximum=limits.page_max)


@app.post(BASE)
def upload_document(context_id: str):
    ctx = http.context(app, context_id)
    upload, original = _upload(context_id)
    result = get_runtime().documents.ingest(ctx, ctx.scoped(upload), original)
    return http.json_response(*documents_wire.ingested(result))


@app.post(f"{BASE}/uploads")
def create_document_upload(context_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, DocumentUploadTicketRequest)
    ticket = get_runtime().documents.uploads.create(ctx, ctx.scoped(req))
    # The local upload store signs a path on this server: made absolute against the caller's origin.
    ticket = replace(ticket, url=urljoin(http.request_origin(app) + "/", ticket.url))
    return http.json_response(*documents_wire.upload_ticket(ticket))


@app.post(f"{BASE}/<document_id>/complete")
def complete_document_upload(context_id: str, document_id: str):
    ctx = http.context(app, context_id)
    document, queued = get_runtime().documents.uploads.complete(ctx, document_id)
    return http.json_response(*documents_wire.completed(document, queued))


@app.get(BASE)
def list_documents(context_id: str):
    ctx = http.context(app, context_id)
    page = get_runtime().catalogue.list_documents(
        ctx, _page_size(), http.query_str(app, "cursor"), page=http.query_int(app, "page", 1),
        status=http.query_choice(app, "status", DOCUMENT_STATUSES), mime_type=http.query_text(app, "mime_type"))
    return http.json_response(documents_wire.document_page(page), ensure_ascii=False)


# Literal paths before ``<document_id>`` ones: the resolver takes the first route that matches.
@app.post(f"{BASE}/query")
def query_documents(context_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, DocumentQueryRequest, max_bytes=QUERY_BODY_CAP)
    mode = "hybrid" if req.mode == "graph" else req.mode
    result = get_runtime().corpus.query(ctx, req.query, k=req.k, mode=mode, threshold=req.threshold,
                                        expand_graph=req.expand_graph or req.mode == "graph", filter=req.filter)
    return http.answer(documents_wire.corpus_result(result), result.degraded)


@app.get(f"{BASE}/keywords")
def list_document_keywords(context_id: str):
    ctx = http.context(app, context_id)
    q = http.query_text(app, "q")
    if q is not None and len(q) > 200:
        raise InvalidRequest("q: at most 200 characters", field="q")
    page = get_runtime().keywords.page(
        ctx, q=q, min_document_count=http.query_int(app, "minDocumentCount", 1, minimum=1),
        sort=http.query_choice(app, "sort", KEYWORD_SORTS) or "documentCount", limit=_page_size(),
        page_cursor=http.query_str(app, "cursor"), page=http.query_int(app, "page", 1))
    return http.json_response(documents_wire.keyword_page(page), ensure_ascii=False)


@app.post(f"{BASE}/keywords/search")
def search_document_keywords(context_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, KeywordSearchRequest, max_bytes=QUERY_BODY_CAP)
    started = time.perf_counter()
    found = get_runtime().keywords.search(ctx, req.query, k=req.k, threshold=req.threshold)
    return http.json_response(documents_wire.keyword_search(found, (time.perf_counter() - started) * 1000),
                              ensure_ascii=False)


@app.get(f"{BASE}/keywords/<normalised>")
def get_document_keyword(context_id: str, normalised: str):
    ctx = http.context(app, context_id)
    term = unquote(normalised)
    detail = get_runtime().keywords.keyword(ctx, term)
    if detail is None:
        raise NotFound(f"no document carries the keyword {term[:200]!r}")
    return http.json_response(documents_wire.keyword_detail(detail), ensure_ascii=False)


@app.get(f"{BASE}/<document_id>/keywords")
def list_keywords_of_document(context_id: str, document_id: str):
    ctx = http.context(app, context_id)
    found = get_runtime().documents.keywords_of(ctx, document_id)
    return http.json_response(documents_wire.document_keywords(found), ensure_ascii=False)


@app.get(f"{BASE}/<document_id>")
def get_document(context_id: str, document_id: str):
    ctx = http.context(app, context_id)
    return http.json_response(documents_wire.document_wire(get_runtime().documents.get(ctx, document_id)))


@app.delete(f"{BASE}/<document_id>")
def delete_document(context_id: str, document_id: str):
    ctx = http.context(app, context_id)
    rt = get_runtime()
    with rt.receipts.collect(ctx, "document.delete") as erasure:
        rt.documents.delete(ctx, document_id)
    return http.receipted_empty(erasure.receipt)


@app.put(f"{BASE}/<document_id>")
def reprocess_document(context_id: str, document_id: str):
    ctx = http.context(app, context_id)
    documents = get_runtime().documents
    return http.idempotent(app, ctx, "reprocess-document", {"documentId": document_id},
                           lambda: documents_wire.reprocessed(*documents.reprocess(ctx, document_id)), status=202)


@app.post(f"{BASE}/recompute-links")
def recompute_document_links(context_id: str):
    ctx = http.context(app, context_id)
    documents = get_runtime().documents
    return http.idempotent(app, ctx, "recompute-links", {},
                           lambda: documents_wire.relinked(documents.recompute_links(ctx)), status=202)


@app.get(f"{BASE}/<document_id>/raw")
def get_document_raw(context_id: str, document_id: str):
    ctx = http.context(app, context_id)
    limits = get_runtime().settings.limits
    # Inline below Lambda's 6 MB response limit (base64 adds a third); larger: a presigned GET.
    raw = get_runtime().documents.raw(ctx, document_id, inline_bytes=limits.sync_body_bytes)
    if raw.data is None:
        return http.redirect_response(raw.url or "")
    return http.bytes_response(raw.data, raw.content_type, headers=http.DOWNLOAD_HEADERS)


@app.get(f"{BASE}/<document_id>/chunks")
def list_document_chunks(context_id: str, document_id: str):
    ctx = http.context(app, context_id)
    page = get_runtime().documents.list_chunks(ctx, document_id, _page_size(), http.query_str(app, "cursor"),
                                               page=http.query_int(app, "page", 1))
    return http.json_response(documents_wire.chunk_page(page), ensure_ascii=False)


@instrumented
def lambda_handler(event, lambda_context):
    return app.resolve(event, lambda_context)

"""A document's typed stored records: the document, its content hash, its staged parts and its
keywords (both directions). Kept apart from ``models.records`` (whose ``StoredItem`` they
share) so the functions that project and rank units without reading documents (recall, state)
do not build these classes at import (docs/decisions.md, "Cold import: what waits for its
use, and what does not"); ``Chunk``, which projection reads, stays there."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from agent_memory.models.records import StoredItem, _optional


@dataclass(frozen=True, kw_only=True)
class Document(StoredItem):
    """A document row. ``status``: uploading, ingesting, ready or failed. A presigned upload
    keeps what the caller declared (``title_given``, ``format_given``) and its object key."""

    KIND: ClassVar[str] = "document"
    id: str
    context_id: str
    partition: str
    title: str
    content_hash: str
    size: int
    chunk_count: int
    chunks_done: int | None = _optional()  # rows written before progress was kept lack it
    status: str
    format: str
    filename: str | None = None
    created_at: str
    updated_at: str | None = None
    observed_at: str
    scopes: list[list[str]]
    labels: list[str]
    created_by: str | None = None
    title_given: str | None = _optional()
    format_given: str | None = _optional()
    upload_key: str | None = _optional()
    upload_expires_at: str | None = _optional()
    error: dict[str, Any] | None = _optional()
    deleted: bool = _optional(False)
    source: str | None = _optional()  # where the caller says it came from (a knowledge base, a URL)
    mime_type: str | None = _optional()  # as uploaded; rows without it: from ``format``
    original_key: str | None = _optional()  # the original's object key (``originals/<id>``); rows before: none kept
    original_size: int | None = _optional()  # bytes of the original as uploaded
    reprocess: bool = _optional(False)  # PUT /documents/{id} queued a re-ingest from the original
    content_version: int | None = _optional()  # 1 as uploaded (absent), +1 for each reprocess
    keyword_count: int | None = _optional()  # keywords indexed when it became ready (none before)
    # Chunks removed by ``POST /forget``: the original went with them, and a reprocess rebuilds
    # the document from the chunks it has left (services/documents/document_service.py, ``claim_reprocess``).
    passages_forgotten: int | None = _optional()


@dataclass(frozen=True, kw_only=True)
class DocumentHash(StoredItem):
    """The row that claims a content hash (per context, partition and scopes) for a document."""

    KIND: ClassVar[str] = "document-hash"
    context_id: str
    document_id: str
    content_hash: str


@dataclass(frozen=True, kw_only=True)
class DocumentPart(StoredItem):
    """A chunk's stored source, written at upload and removed once the chunk is committed."""

    KIND: ClassVar[str] = "document-part"
    chunk_id: str
    document_id: str
    text: str
    ordinal: int
    offset: int
    position_percent: float
    heading_path: list[str] = field(default_factory=list)
    page: int | None = _optional()  # a paged document's (PDF) 1-based page


@dataclass(frozen=True, kw_only=True)
class Keyword(StoredItem):
    """A term of the context's keyword index (``services/documents/keywords.py``): how many
    documents carry it per scope set (``counts`` by ``scope_sig``; ``scope_sets`` the sets)."""

    KIND: ClassVar[str] = "keyword"
    normalised: str
    text: str
    counts: dict[str, int] = field(default_factory=dict)
    scope_sets: dict[str, list[list[str]]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class KeywordDocument(StoredItem):
    """A document carrying a keyword (listed under the keyword), with the document's scopes
    (``document_scopes``: a scope forget removes the document, and the keyword index follows
    through the ``RecordsForgotten`` event, so that its counts stay right)."""

    KIND: ClassVar[str] = "keyword-document"
    document_id: str
    normalised: str
    title: str = ""
    score: float = 0.0
    document_scopes: list[list[str]] = field(default_factory=list)
    scope_sig: str = "-"


@dataclass(frozen=True, kw_only=True)
class DocumentKeyword(StoredItem):
    """One keyword of a document (listed under the document), with its score there."""

    KIND: ClassVar[str] = "document-keyword"
    document_id: str
    normalised: str
    text: str
    score: float = 0.0
    scope_sig: str = "-"  # which of the keyword's counts the document is in

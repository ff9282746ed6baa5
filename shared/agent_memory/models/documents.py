"""Request bodies of the documents area (``/api/v1/{context}/documents``).

One model, ``DocumentUpload``, serves both content types: a JSON body validates into it
directly, a ``multipart/form-data`` body is mapped onto the same fields by the HTTP edge
(``agent_memory.http.multipart.document_upload_fields``), so both paths share every check
and name the same fields in their 400s.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field, field_validator

from agent_memory.models.request_base import RequestModel, ScopedRequest, both, rfc3339
from agent_memory.models.retrieval import K_DEFAULT, K_MAX, QUERY_MAX_CHARS, not_blank

MAX_TITLE_CHARS = 512
MARKDOWN_TYPES = {"text/markdown", "text/x-markdown"}
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd")
# type/subtype (RFC 6838 restricted names), without parameters
MIME_TYPE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$"
FORMAT_MIME_TYPES = {"text": "text/plain", "markdown": "text/markdown", "pdf": "application/pdf", "html": "text/html",
                     "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}


def document_text(value: str | None) -> str | None:
    """A document's text (or title) as stored: valid Unicode without NUL characters."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("is not valid Unicode (lone surrogate)") from exc
    if "\x00" in value:
        raise ValueError("contains NUL characters: only text and markdown documents are accepted")
    return value


def document_title(value: str | None) -> str | None:
    """A title: ``document_text``'s rules, not blank, stripped (uploads and upload tickets alike)."""
    value = document_text(value)
    if value is not None and not value.strip():
        raise ValueError("must not be blank")
    return value.strip() if value is not None else None


class DocumentFileUpload(ScopedRequest):
    """An upload's fields beside its content: a multipart file part travels as bytes (its
    format detected and its text extracted by ``services.documents.formats``)."""

    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    format: Literal["text", "markdown"] | None = None
    observed_at: str | None = both("observed_at", "observedAt")
    filename: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    source: str | None = Field(default=None, min_length=1, max_length=MAX_TITLE_CHARS)
    mime_type: str | None = Field(default=None, pattern=MIME_TYPE_PATTERN, max_length=255,
                                  validation_alias=AliasChoices("mime_type", "mimeType"))

    _observed = field_validator("observed_at")(classmethod(lambda cls, v: rfc3339(v)))
    _title = field_validator("title")(classmethod(lambda cls, v: document_title(v)))


class DocumentUpload(DocumentFileUpload):
    """A JSON upload (or a form's ``text`` field): the document as text."""

    text: str = Field(min_length=1)

    _text = field_validator("text")(classmethod(lambda cls, v: document_text(v)))


class DocumentUploadTicketRequest(ScopedRequest):
    """``POST /documents/uploads``: the metadata of a document the caller then PUTs to S3."""

    size: int = Field(ge=1, description="Bytes the caller will PUT (the URL is signed for exactly this).")
    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    format: Literal["text", "markdown"] | None = None
    observed_at: str | None = both("observed_at", "observedAt")
    filename: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    mime_type: str | None = Field(default=None, pattern=MIME_TYPE_PATTERN, max_length=255,
                                  validation_alias=AliasChoices("mime_type", "mimeType", "contentType"),
                                  description="The file's type (PDF, DOCX, HTML, Markdown, text); default from "
                                              "the file name's suffix, else format.")

    _observed = field_validator("observed_at")(classmethod(lambda cls, v: rfc3339(v)))
    _title = field_validator("title")(classmethod(lambda cls, v: document_title(v)))


class DocumentQueryRequest(RequestModel):
    """``POST /documents/query``: corpus search (``services/retrieval/corpus.py``)."""

    query: str = Field(min_length=1, max_length=QUERY_MAX_CHARS)
    k: int = Field(default=K_DEFAULT, ge=1, le=K_MAX)
    mode: Literal["hybrid", "vector", "bm25", "graph"] = Field(
        default="hybrid", description="graph: hybrid with expandGraph.")
    threshold: float | None = Field(default=None, ge=0, le=1)
    expand_graph: bool = Field(default=False, validation_alias=AliasChoices("expand_graph", "expandGraph"))
    filter: dict[str, str | list[str]] | None = None

    _query = field_validator("query")(staticmethod(not_blank))


class KeywordSearchRequest(RequestModel):
    """``POST /documents/keywords/search``."""

    query: str = Field(min_length=1, max_length=1024)
    k: int = Field(default=K_DEFAULT, ge=1, le=100)
    threshold: float | None = Field(default=None, ge=0, le=1)

    _query = field_validator("query")(staticmethod(not_blank))

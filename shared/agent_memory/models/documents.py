"""Request bodies of the documents area (``/api/v1/{context}/documents``).

One model, ``DocumentUpload``, serves both content types: a JSON body validates into it
directly, a ``multipart/form-data`` body is mapped onto it by ``from_form`` (the ``file``
part, or a ``text`` field, becomes ``text``; ``scopes`` and ``labels`` are JSON fields), so
both paths share every check and name the same fields in their 400s.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field, field_validator

from agent_memory import safe_json
from agent_memory.errors import InvalidRequest
from agent_memory.models.requests import ScopedRequest, both, rfc3339
from agent_memory.multipart import FormPart

MAX_TITLE_CHARS = 512
MARKDOWN_TYPES = {"text/markdown", "text/x-markdown"}
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd")
_FORM_FIELDS = {"file", "text", "title", "filename", "scopes", "labels", "observedAt", "observed_at", "format"}


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


class DocumentUpload(ScopedRequest):
    text: str = Field(min_length=1)
    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    format: Literal["text", "markdown"] | None = None
    observed_at: str | None = both("observed_at", "observedAt")
    filename: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)

    _observed = field_validator("observed_at")(classmethod(lambda cls, v: rfc3339(v)))
    _text = field_validator("text")(classmethod(lambda cls, v: document_text(v)))
    _title = field_validator("title")(classmethod(lambda cls, v: document_title(v)))

    @classmethod
    def form_fields(cls, parts: dict[str, FormPart]) -> dict[str, Any]:
        """A multipart form as the JSON fields this model validates (400 on a bad field)."""
        unknown = sorted(set(parts) - _FORM_FIELDS)
        if unknown:
            raise InvalidRequest(f"unknown form field {unknown[0]!r}", field=unknown[0])
        if "file" in parts and "text" in parts:
            raise InvalidRequest("send the document as a file part or a text field, not both", field="file")
        data: dict[str, Any] = {}
        upload = parts.get("file") or parts.get("text")
        if upload is None:
            raise InvalidRequest("a file part (or text field) is required", field="file")
        part_name = "file" if "file" in parts else "text"
        data["text"] = upload.text(part_name)
        if not data["text"]:
            raise InvalidRequest(f"the document is empty (the {part_name} part has no content)", field=part_name)
        if upload.filename:
            data["filename"] = upload.filename
        for name in ("title", "filename", "format", "observedAt", "observed_at"):
            if name in parts:
                data[name] = parts[name].text()
        if "format" not in data and "file" in parts and _markdown_file(parts["file"]):
            data["format"] = "markdown"
        for name in ("scopes", "labels"):
            if name in parts:
                raw = parts[name].text()
                try:
                    value = safe_json.loads(raw)
                except safe_json.JsonLimitExceeded as exc:
                    raise InvalidRequest(f"{name}: {exc}", field=name, limit=exc.limit) from exc
                except json.JSONDecodeError:
                    value = raw
                # A bare scope path or label is accepted as itself, and so is one that happens
                # to parse as a JSON number, boolean or null (a scope path "0" is no number).
                if not isinstance(value, list | str):
                    value = raw
                data[name] = value if name == "scopes" or isinstance(value, list) else [value]
        return data


def _markdown_file(part: FormPart) -> bool:
    return part.content_type in MARKDOWN_TYPES or (part.filename or "").lower().endswith(MARKDOWN_SUFFIXES)


class DocumentUploadTicketRequest(ScopedRequest):
    """``POST /documents/uploads``: the metadata of a document the caller then PUTs to S3."""

    size: int = Field(ge=1, description="Bytes the caller will PUT (the URL is signed for exactly this).")
    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    format: Literal["text", "markdown"] | None = None
    observed_at: str | None = both("observed_at", "observedAt")
    filename: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)

    _observed = field_validator("observed_at")(classmethod(lambda cls, v: rfc3339(v)))
    _title = field_validator("title")(classmethod(lambda cls, v: document_title(v)))

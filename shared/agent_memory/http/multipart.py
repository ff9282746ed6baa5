"""``multipart/form-data`` request bodies, parsed with the standard library's MIME parser.

API Gateway hands a Lambda the raw body (base64-encoded when it is binary; ``http.raw_body``
undoes that), so uploads are parsed here rather than by a web framework. The parser is
lenient by design (it is an e-mail parser), so anything it had to repair (no start or
close boundary, a missing boundary parameter, a part without a name) is rejected as a 400
instead of being guessed at.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from email import policy
from email.message import Message
from email.parser import BytesParser
from typing import Any

from agent_memory.http import safe_json
from agent_memory.kernel.errors import InvalidRequest
from agent_memory.models.documents import MARKDOWN_SUFFIXES, MARKDOWN_TYPES

_UPLOAD_FIELDS = {"file", "text", "title", "filename", "scopes", "labels", "observedAt", "observed_at", "format",
                  "source", "mime_type", "mimeType", "metadata"}
# The keys a ``metadata`` JSON part may hold (the official Spectron client sends title, source
# and scopes there): the same fields as the plain ones.
_METADATA_KEYS = _UPLOAD_FIELDS - {"file", "text", "metadata"}
# A file part's content type that says nothing about the content.
_UNTYPED = {"application/octet-stream", "text/plain"}


@dataclass(frozen=True)
class FormPart:
    name: str
    data: bytes
    filename: str | None = None
    content_type: str = "text/plain"
    charset: str | None = None
    declared_type: str | None = None  # the part's Content-Type header as sent (None: none sent)

    def text(self, field: str | None = None) -> str:
        """The part as text: its declared charset, else UTF-8 (a byte-order mark is dropped)."""
        charset = self.charset or "utf-8-sig"
        if charset.lower().replace("_", "-") in ("utf-8", "utf8"):
            charset = "utf-8-sig"
        try:
            return self.data.decode(charset)
        except (LookupError, UnicodeDecodeError) as exc:
            raise InvalidRequest(f"{field or self.name}: not valid {self.charset or 'UTF-8'} text",
                                 field=field or self.name) from exc


def is_multipart(content_type: str | None) -> bool:
    return (content_type or "").split(";", 1)[0].strip().lower() == "multipart/form-data"


def parse_form(content_type: str, body: bytes) -> dict[str, FormPart]:
    """The parts of a form by field name (400 when malformed or a name repeats)."""
    try:
        header = content_type.encode("ascii")
    except UnicodeEncodeError as exc:
        raise InvalidRequest("Content-Type header must be ASCII", field="Content-Type") from exc
    message = BytesParser(policy=policy.HTTP).parsebytes(
        b"Content-Type: " + header + b"\r\nMIME-Version: 1.0\r\n\r\n" + body)
    if not message.get_param("boundary"):
        raise InvalidRequest("multipart/form-data needs a boundary parameter", field="Content-Type")
    if not message.is_multipart() or message.defects:
        found = ", ".join(type(d).__name__ for d in message.defects) or "no parts"
        raise InvalidRequest(f"malformed multipart body ({found})", field="body")
    parts: dict[str, FormPart] = {}
    for part in message.iter_parts():
        form_part = _form_part(part)
        if form_part.name in parts:
            raise InvalidRequest(f"form field {form_part.name!r} appears more than once", field=form_part.name)
        parts[form_part.name] = form_part
    return parts


def _form_part(part: Message) -> FormPart:
    if part.defects or part.is_multipart():
        raise InvalidRequest("malformed multipart part", field="body")
    name = part.get_param("name", header="content-disposition")
    if part.get_content_disposition() != "form-data" or not isinstance(name, str) or not name:
        raise InvalidRequest("each multipart part needs Content-Disposition: form-data with a name", field="body")
    data = part.get_payload(decode=True)
    declared = part.get("content-type")
    return FormPart(name=name, data=data if isinstance(data, bytes) else b"", filename=part.get_filename(),
                    content_type=part.get_content_type(), charset=part.get_content_charset(),
                    declared_type=str(declared) if declared else None)


def document_upload_fields(parts: dict[str, FormPart], *, keep_file: bool = False) -> dict[str, Any]:
    """An upload form as the JSON fields ``models.documents.DocumentUpload`` validates (400 on a bad field).

    The ``file`` part, or a ``text`` field, becomes ``text``; with ``keep_file`` a file part is
    left out (the caller passes its bytes on: ``models.documents.DocumentFileUpload``).
    ``scopes`` and ``labels`` are JSON fields (or one bare value)."""
    unknown = sorted(set(parts) - _UPLOAD_FIELDS)
    if unknown:
        raise InvalidRequest(f"unknown form field {unknown[0]!r}", field=unknown[0])
    if "file" in parts and "text" in parts:
        raise InvalidRequest("send the document as a file part or a text field, not both", field="file")
    data: dict[str, Any] = {}
    upload = parts.get("file") or parts.get("text")
    if upload is None:
        raise InvalidRequest("a file part (or text field) is required", field="file")
    part_name = "file" if "file" in parts else "text"
    if not upload.data:
        raise InvalidRequest(f"the document is empty (the {part_name} part has no content)", field=part_name)
    if not (keep_file and part_name == "file"):
        data["text"] = upload.text(part_name)
        if not data["text"]:
            raise InvalidRequest(f"the document is empty (the {part_name} part has no content)", field=part_name)
    if upload.filename:
        data["filename"] = upload.filename
    for name in ("title", "filename", "format", "observedAt", "observed_at", "source", "mime_type", "mimeType"):
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
    if "metadata" in parts:
        for key, value in _metadata(parts["metadata"]).items():
            if key in data or (key in ("mime_type", "mimeType") and {"mime_type", "mimeType"} & set(data)):
                raise InvalidRequest(f"{key} is given both as a form field and in metadata", field=f"metadata.{key}")
            data[key] = value
    file_part = parts.get("file")
    if (file_part is not None and not {"mime_type", "mimeType"} & set(data)
            and file_part.content_type and file_part.content_type not in _UNTYPED):
        data["mime_type"] = file_part.content_type
    return data


def _metadata(part: FormPart) -> dict[str, Any]:
    """The ``metadata`` part: one JSON object of upload fields (400 naming ``metadata.<key>``)."""
    try:
        value = safe_json.loads(part.text())
    except safe_json.JsonLimitExceeded as exc:
        raise InvalidRequest(f"metadata: {exc}", field="metadata", limit=exc.limit) from exc
    except json.JSONDecodeError as exc:
        raise InvalidRequest(f"metadata: not JSON ({exc.msg})", field="metadata") from exc
    if not isinstance(value, dict):
        raise InvalidRequest("metadata: must be a JSON object", field="metadata")
    unknown = sorted(set(value) - _METADATA_KEYS)
    if unknown:
        raise InvalidRequest(f"unknown metadata field {unknown[0]!r}", field=f"metadata.{unknown[0]}")
    return value


def _markdown_file(part: FormPart) -> bool:
    return part.content_type in MARKDOWN_TYPES or (part.filename or "").lower().endswith(MARKDOWN_SUFFIXES)

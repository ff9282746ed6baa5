"""Document formats: what an upload is, checked against its bytes, and its text (pure, no I/O).

Accepted: PDF, DOCX, HTML, Markdown and plain text. ``extract`` decides the kind from the
declared content type (then the file name's suffix, then the bytes themselves when the type
says nothing: ``application/octet-stream`` or none) and checks the claim against the bytes'
magic numbers before parsing anything:

- PDF: ``%PDF-`` within the first 1024 bytes; DOCX: a zip (``PK\\x03\\x04``) holding
  ``word/document.xml``; text kinds: no PDF/zip/OLE magic, no NUL, decodable in their charset
  (UTF-8 by default). A mismatch, or a type outside these, is a 415 naming what was found.
- PDF (pypdf, imported on this path only): text per page (``Extracted.pages``, 1-based page
  numbers kept by the chunker); encrypted (not openable with the empty password) -> 422
  ``encrypted_document``; more than ``FormatLimits.pages`` pages -> 422 ``too_many_pages``;
  parsing past ``FormatLimits.parse_s`` seconds (checked between pages; pypdf bounds every
  stream's decompressed size itself) -> 422 ``parse_time_exceeded``; unreadable -> 422
  ``malformed_document``.
- DOCX (standard library only: ``zipfile`` + ``xml.etree``): before anything is inflated,
  the member count, each member's declared size and compression ratio and the total are
  checked (a zip bomb -> 422 ``archive_limits``); ``word/document.xml`` is read with a bound
  (the declared size is not trusted) and a DTD is refused (no entity expansion). Paragraphs in
  document order (table cells included); ``Heading N`` styles become markdown headings, so
  they are sections; the first ``Title`` paragraph is the default title. A password-protected Word file is an OLE container, not a
  zip -> 422 ``encrypted_document``.
- HTML (``html.parser``): text without markup; ``<h1>``..``<h6>`` become markdown headings
  (sections), block elements end paragraphs, ``<script>``/``<style>``/``<template>`` and the
  ``<head>`` are dropped (``<title>`` is the default title).
- No text left after extraction -> 422 ``no_extractable_text``; extracted text over
  ``FormatLimits.text_chars`` -> 422 ``text_limit``.

Nothing here writes: the service calls ``extract`` before its claim, so a refused file stores
nothing.
"""

from __future__ import annotations

import io
import re
import time
import zipfile
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Literal

from agent_memory.kernel.errors import DomainError, Unprocessable

Kind = Literal["pdf", "docx", "html", "markdown", "text"]

PDF_TYPE = "application/pdf"
DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
KIND_TYPES: dict[str, Kind] = {
    PDF_TYPE: "pdf", "application/x-pdf": "pdf",
    DOCX_TYPE: "docx",
    "text/html": "html", "application/xhtml+xml": "html",
    "text/markdown": "markdown", "text/x-markdown": "markdown",
    "text/plain": "text",
}
MIME_OF: dict[Kind, str] = {"pdf": PDF_TYPE, "docx": DOCX_TYPE, "html": "text/html", "markdown": "text/markdown",
                            "text": "text/plain"}
SUFFIXES: dict[str, Kind] = {".pdf": "pdf", ".docx": "docx", ".html": "html", ".htm": "html", ".xhtml": "html",
                             ".md": "markdown", ".markdown": "markdown", ".mdown": "markdown", ".mkd": "markdown",
                             ".txt": "text", ".text": "text"}
UNTYPED = {"", "application/octet-stream", "binary/octet-stream"}
SUPPORTED = "PDF, DOCX, HTML, Markdown or plain text"

_PDF_MAGIC = b"%PDF-"
_ZIP_MAGIC = b"PK\x03\x04"
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ATX_LIKE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


@dataclass(frozen=True)
class FormatLimits:
    """Bounds on parsing one upload (the byte cap is the service's ``document_bytes``)."""

    pages: int = 2000
    parse_s: float = 20.0
    text_chars: int = 5_000_000
    zip_members: int = 2000
    zip_member_bytes: int = 50_000_000
    zip_total_bytes: int = 200_000_000
    zip_ratio: int = 200


@dataclass(frozen=True)
class Extracted:
    """An upload's text. ``format`` is what the chunker reads it as (HTML and DOCX arrive as
    markdown, their headings as ATX headings); ``pages`` is a PDF's text page by page."""

    kind: Kind
    mime_type: str
    text: str
    format: Literal["text", "markdown"]
    pages: tuple[str, ...] | None = None
    title: str | None = None


class UnsupportedDocument(DomainError):
    """The upload is not one of the accepted formats, or not what its content type says."""

    status = 415
    title = "Unsupported document"
    type_slug = "unsupported-media-type"


def _unprocessable(detail: str, code: str, **extra) -> Unprocessable:
    return Unprocessable(detail, code=code, field="file", **extra)


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def charset_of(content_type: str | None) -> str | None:
    match = re.search(r";\s*charset\s*=\s*\"?([A-Za-z0-9._:-]+)", content_type or "", re.IGNORECASE)
    return match.group(1) if match else None


def sniff(data: bytes) -> str | None:
    """What the bytes' magic number says (``pdf``, ``zip``, ``ole``), else None."""
    if _PDF_MAGIC in data[:1024]:
        return "pdf"
    if data.startswith(_ZIP_MAGIC):
        return "zip"
    if data.startswith(_OLE_MAGIC):
        return "ole"
    return None


def kind_of(content_type: str | None, filename: str | None, data: bytes, format_hint: str | None = None) -> Kind:
    """The upload's kind from its declared type (or suffix, or bytes), 415 when unsupported."""
    declared = media_type(content_type)
    if declared in KIND_TYPES:
        kind = KIND_TYPES[declared]
        if kind == "text" and format_hint == "markdown":
            return "markdown"
        if kind == "text" and format_hint is None and _suffix_kind(filename) in ("markdown", "html"):
            return _suffix_kind(filename)  # type: ignore[return-value]
        return kind
    if declared not in UNTYPED:
        raise UnsupportedDocument(f"content type {declared} is not supported; upload {SUPPORTED}",
                                  code="unsupported_format", field="file", contentType=declared)
    if format_hint in ("markdown", "text"):
        return format_hint  # type: ignore[return-value]
    suffix = _suffix_kind(filename)
    if suffix is not None:
        return suffix
    magic = sniff(data)
    if magic == "pdf":
        return "pdf"
    if magic == "zip" and _is_docx_zip(data):
        return "docx"
    if magic is not None:
        raise UnsupportedDocument(f"the file is a {magic} container that is not {SUPPORTED}",
                                  code="unsupported_format", field="file")
    head = data[:2048].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return "html" if head.startswith((b"<!doctype html", b"<html")) else "text"


def ticket_type(mime_type: str | None, filename: str | None, fmt: str | None) -> str:
    """The content type a presigned upload is signed for: the declared one (415 unless
    supported), else the file name's suffix, else ``format`` (text by default)."""
    declared = media_type(mime_type)
    if declared:
        if declared not in KIND_TYPES and declared not in UNTYPED:
            raise UnsupportedDocument(f"content type {declared} is not supported; upload {SUPPORTED}",
                                      code="unsupported_format", field="mimeType", contentType=declared)
        return declared
    suffix = _suffix_kind(filename)
    if suffix is not None:
        return MIME_OF[suffix]
    return "text/markdown" if fmt == "markdown" else "text/plain"


def _suffix_kind(filename: str | None) -> Kind | None:
    name = (filename or "").lower()
    for suffix, kind in SUFFIXES.items():
        if name.endswith(suffix):
            return kind
    return None


def _is_docx_zip(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return "word/document.xml" in archive.namelist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return False


def extract(data: bytes, content_type: str | None, filename: str | None, *, format_hint: str | None = None,
            limits: FormatLimits = FormatLimits()) -> Extracted:
    """The upload's text, or a 415/422 problem naming why there is none."""
    kind = kind_of(content_type, filename, data, format_hint)
    magic = sniff(data)
    if kind == "pdf":
        if magic != "pdf":
            raise UnsupportedDocument("the file claims to be a PDF but has no %PDF- header", code="not_what_it_claims",
                                      field="file", claimed=PDF_TYPE)
        pages, title = _pdf_pages(data, limits)
        text = "\n\n".join(p for p in pages if p.strip())
        return _checked(Extracted("pdf", PDF_TYPE, text, "text", tuple(pages), title), limits)
    if kind == "docx":
        if magic == "ole":
            raise _unprocessable("the Word file is encrypted (password-protected) or a legacy .doc; "
                                 "save it as an unprotected .docx", "encrypted_document")
        if magic != "zip" or not _is_docx_zip(data):
            raise UnsupportedDocument("the file claims to be DOCX but is not a zip holding word/document.xml",
                                      code="not_what_it_claims", field="file", claimed=DOCX_TYPE)
        body, title = _docx_markdown(data, limits)
        return _checked(Extracted("docx", DOCX_TYPE, body, "markdown", title=title), limits)
    if magic is not None:
        found = {"pdf": "a PDF", "zip": "a zip archive", "ole": "an OLE (legacy Office) file"}[magic]
        raise UnsupportedDocument(f"the file claims to be {MIME_OF[kind]} but is {found}", code="not_what_it_claims",
                                  field="file", claimed=MIME_OF[kind])
    text = _decode(data, charset_of(content_type), MIME_OF[kind])
    if kind == "html":
        body, title = html_markdown(text)
        return _checked(Extracted("html", MIME_OF[kind], body, "markdown", title=title), limits)
    return _checked(Extracted(kind, media_type(content_type) if media_type(content_type) in KIND_TYPES
                              and KIND_TYPES[media_type(content_type)] == kind else MIME_OF[kind],
                              text, "markdown" if kind == "markdown" else "text"), limits)


def _checked(extracted: Extracted, limits: FormatLimits) -> Extracted:
    if not extracted.text.strip():
        raise _unprocessable(f"the {extracted.kind.upper() if extracted.kind in ('pdf', 'docx', 'html') else 'file'} "
                             "has no extractable text" + (" (a scanned PDF needs OCR first)" if extracted.kind == "pdf"
                                                          else ""), "no_extractable_text")
    if len(extracted.text) > limits.text_chars:
        raise _unprocessable(f"the extracted text is over the {limits.text_chars}-character limit", "text_limit",
                             limit=limits.text_chars)
    return extracted


def _decode(data: bytes, charset: str | None, claimed: str) -> str:
    if b"\x00" in data:
        raise UnsupportedDocument(f"the file claims to be {claimed} but holds NUL bytes (binary data)",
                                  code="not_what_it_claims", field="file", claimed=claimed)
    codec = charset or "utf-8-sig"
    if codec.lower().replace("_", "-") in ("utf-8", "utf8"):
        codec = "utf-8-sig"
    try:
        return data.decode(codec)
    except (LookupError, UnicodeDecodeError) as exc:
        raise UnsupportedDocument(f"the file claims to be {claimed} but is not valid {charset or 'UTF-8'} text",
                                  code="not_what_it_claims", field="file", claimed=claimed) from exc


# --- PDF ------------------------------------------------------------------------------


def _pdf_pages(data: bytes, limits: FormatLimits) -> tuple[list[str], str | None]:
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a damaged file's warnings are not ours to log
    deadline = time.monotonic() + limits.parse_s
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except Exception:  # noqa: BLE001 - an unsupported cipher is as closed as a password
                opened = 0
            if not opened:
                raise _unprocessable("the PDF is encrypted (password-protected); upload an unprotected copy",
                                     "encrypted_document")
        count = len(reader.pages)
        if count > limits.pages:
            raise _unprocessable(f"the PDF has {count} pages; at most {limits.pages} are accepted", "too_many_pages",
                                 limit=limits.pages)
        pages: list[str] = []
        chars = 0
        for page in reader.pages:
            if time.monotonic() > deadline:
                raise _unprocessable(f"parsing the PDF took over {limits.parse_s:g} s", "parse_time_exceeded",
                                     limit=limits.parse_s)
            text = page.extract_text() or ""
            chars += len(text)
            if chars > limits.text_chars:
                raise _unprocessable(f"the extracted text is over the {limits.text_chars}-character limit",
                                     "text_limit", limit=limits.text_chars)
            pages.append(text)
        if time.monotonic() > deadline:
            raise _unprocessable(f"parsing the PDF took over {limits.parse_s:g} s", "parse_time_exceeded",
                                 limit=limits.parse_s)
        title = None
        try:
            meta = reader.metadata
            title = str(meta.title).strip() if meta is not None and meta.title else None
        except Exception:  # noqa: BLE001 - a damaged info dictionary is no reason to refuse the text
            title = None
        return pages, title or None
    except DomainError:
        raise
    except Exception as exc:  # noqa: BLE001 - pypdf raises many types for a damaged file
        raise _unprocessable(f"the PDF could not be read ({type(exc).__name__}: {str(exc)[:200]})",
                             "malformed_document") from exc


# --- DOCX -----------------------------------------------------------------------------


def _docx_markdown(data: bytes, limits: FormatLimits) -> tuple[str, str | None]:
    from xml.etree import ElementTree

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise _unprocessable(f"the DOCX is not a readable zip ({exc})", "malformed_document") from exc
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.zip_members:
            raise _unprocessable(f"the DOCX holds {len(infos)} members; at most {limits.zip_members}",
                                 "archive_limits", limit=limits.zip_members)
        total = 0
        for info in infos:
            total += info.file_size
            if info.flag_bits & 0x1:
                raise _unprocessable("the DOCX is encrypted", "encrypted_document")
            if info.file_size > limits.zip_member_bytes or total > limits.zip_total_bytes:
                raise _unprocessable(f"the DOCX inflates past the archive limits ({info.filename})", "archive_limits")
            if info.file_size > 1_000_000 and info.file_size > limits.zip_ratio * max(info.compress_size, 1):
                raise _unprocessable(f"the DOCX member {info.filename} has a compression ratio over "
                                     f"{limits.zip_ratio} (a zip bomb?)", "archive_limits")
        try:
            with archive.open("word/document.xml") as member:
                xml = member.read(limits.zip_member_bytes + 1)
        except (KeyError, zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError, EOFError) as exc:
            raise _unprocessable(f"the DOCX could not be read ({exc})", "malformed_document") from exc
    if len(xml) > limits.zip_member_bytes:
        raise _unprocessable("the DOCX's document part inflates past the archive limits", "archive_limits")
    if b"<!DOCTYPE" in xml[:4096].upper() or b"<!ENTITY" in xml.upper():
        raise _unprocessable("the DOCX's document part declares a DTD, which is refused", "malformed_document")
    try:
        root = ElementTree.fromstring(xml)
    except ElementTree.ParseError as exc:
        raise _unprocessable(f"the DOCX's document part is not well-formed XML ({exc})", "malformed_document") from exc
    body = root.find(f"{_W}body")
    blocks: list[str] = []
    title = None
    for para in (body.iter(f"{_W}p") if body is not None else ()):
        text = _docx_text(para).strip()
        if not text:
            continue
        level = _heading_level(para)
        if level < 0:  # the Title style: the document's title, not a section
            title = title or " ".join(text.split())
            continue
        blocks.append(f"{'#' * level} {' '.join(text.split())}" if level else _escape_heading(text))
    return "\n\n".join(blocks), title


def _docx_text(para) -> str:
    out: list[str] = []
    for node in para.iter():
        if node.tag == f"{_W}t":
            out.append(node.text or "")
        elif node.tag == f"{_W}tab":
            out.append("\t")
        elif node.tag in (f"{_W}br", f"{_W}cr"):
            out.append("\n")
    return "".join(out)


def _heading_level(para) -> int:
    style = para.find(f"{_W}pPr/{_W}pStyle")
    name = (style.get(f"{_W}val") or "") if style is not None else ""
    compact = name.replace(" ", "").lower()
    if compact == "title":
        return -1
    match = re.fullmatch(r"heading([1-6])", compact)
    return int(match.group(1)) if match else 0


def _escape_heading(text: str) -> str:
    """A paragraph that merely starts with ``#`` stays a paragraph (the chunker reads markdown)."""
    return "\n".join(("\\" + line) if _ATX_LIKE.match(line) else line for line in text.split("\n"))


# --- HTML -----------------------------------------------------------------------------

_SKIP = {"script", "style", "template", "noscript", "head", "svg", "math"}
_BLOCK = {"p", "div", "section", "article", "header", "footer", "main", "nav", "aside", "blockquote", "pre",
          "ul", "ol", "li", "table", "tr", "dl", "dt", "dd", "figure", "figcaption", "form", "fieldset", "address",
          "hr", "br", "body", "html"}
_HEADINGS = {f"h{i}": i for i in range(1, 7)}


class _HtmlText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.current: list[str] = []
        self.skip = 0
        self.heading = 0
        self.pre = 0
        self.title: list[str] = []
        self.in_title = False

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag == "title":
            self.in_title = True
        if tag in _SKIP:
            self.skip += 1
            return
        if tag in _HEADINGS or tag in _BLOCK:
            self._flush()
        if tag in _HEADINGS:
            self.heading = _HEADINGS[tag]
        if tag == "pre":
            self.pre += 1
        if tag == "li":
            self.current.append("- ")

    def handle_startendtag(self, tag: str, attrs) -> None:
        if tag in ("br", "hr"):
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
            return
        if tag in _HEADINGS or tag in _BLOCK or tag in ("td", "th"):
            if tag in ("td", "th"):
                self.current.append(" ")
                return
            self._flush()
            if tag in _HEADINGS:
                self.heading = 0
            if tag == "pre":
                self.pre = max(0, self.pre - 1)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        if self.skip:
            return
        self.current.append(data)

    def _flush(self) -> None:
        raw = "".join(self.current)
        self.current = []
        if self.pre:
            text = raw.strip("\n")
        else:
            text = " ".join(raw.split())
        if not text.strip():
            return
        if self.heading:
            self.blocks.append(f"{'#' * self.heading} {' '.join(text.split())}")
        else:
            self.blocks.append(_escape_heading(text))


def html_markdown(html: str) -> tuple[str, str | None]:
    """An HTML page's text as markdown (headings as ATX headings), and its ``<title>``."""
    parser = _HtmlText()
    parser.feed(html)
    parser.close()
    parser._flush()
    title = " ".join("".join(parser.title).split()) or None
    return "\n\n".join(parser.blocks), title

"""Structure-aware chunking of text and markdown documents (pure, no I/O).

A chunk is the unit a document is searched, cited and extracted by, so its boundaries
follow the document's own structure rather than a fixed window:

- **Normalisation** (``normalise``) comes first and is what ``content_hash`` hashes: Unicode
  NFC, ``\\r\\n``/``\\r`` -> ``\\n``, trailing whitespace of each line dropped, leading and
  trailing blank space of the whole text dropped. Offsets refer to the normalised text, and
  every chunk's ``text`` is the exact slice ``normalised[offset:offset + len(text)]``.
- **Sections** (markdown only): ATX headings (``#`` .. ``######``) and setext headings (a
  one-line paragraph underlined with ``===`` or ``---``) start a new section; a chunk never
  spans two sections. Each chunk keeps its *heading path*, the titles of the enclosing
  headings from the outermost down (``("Handbook", "Travel", "Expenses")``). Heading lines
  are not part of chunk text (the path carries them); fenced code blocks (``` or ~~~) are
  opaque, so a ``#`` inside them is not a heading; thematic breaks (``---``, ``***``) only
  separate paragraphs. Plain text has one section with an empty path.
- **Blocks** are paragraphs: runs of lines between blank lines (a fenced block is one).
- **Sizing**: blocks longer than ``MAX_CHARS`` are split at sentence boundaries (``. ! ?``
  followed by whitespace, or a line break) into nearly equal pieces, each at most
  ``MAX_CHARS``; a single sentence longer than that is cut at the last whitespace before the
  limit (or at the limit when there is none). Consecutive blocks/pieces of one section are
  then merged while the merged span stays within ``MAX_CHARS``. So chunks are at most
  ``MAX_CHARS`` (1200) characters, long prose lands between half of that and all of it
  (about 800-1200 for typical paragraphs), and a short section stays a short chunk of its own.
- ``position_percent`` = ``offset * 100 // len(normalised)``: 0 for a chunk at the start,
  never above 100.
- **Pages** (PDF, ``paged``): each page is normalised on its own, the non-empty pages are
  joined by one blank line (that joined text is what is hashed and offsets refer to), and each
  page is chunked as plain text of its own, so a chunk never spans two pages and carries its
  1-based ``page`` (page numbers of the file, empty pages included in the count).
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

MAX_CHARS = 1200

Format = Literal["text", "markdown"]
Span = tuple[int, int]

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_SENTENCE_END = re.compile(r"[.!?\u2026]+[\"'\u2019\u201d)\]]*\s+|\n\s*")
_HEADING_HINT = re.compile(r"^ {0,3}#{1,6}[ \t]+\S", re.MULTILINE)


@dataclass(frozen=True)
class Chunk:
    ordinal: int  # 0-based, in document order
    offset: int  # character offset of the chunk's first character in the normalised text
    text: str
    heading_path: tuple[str, ...]
    position_percent: int
    page: int | None = None  # 1-based, a paged document's (PDF) chunks only


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFC", text.removeprefix("\ufeff"))
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip()


def content_hash(normalised: str) -> str:
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


def looks_like_markdown(text: str) -> bool:
    """The default format when none is given: markdown when some line is an ATX heading."""
    return bool(_HEADING_HINT.search(text))


def first_heading(text: str) -> str | None:
    """The first markdown heading's title (a default document title)."""
    for path, _ in _sections(text, "markdown"):
        if path:
            return path[0]
    return None


def chunk(normalised: str, fmt: Format = "text", *, max_chars: int | None = None) -> list[Chunk]:
    """Chunks of an already ``normalise``d text (see the module docstring for the rules);
    ``max_chars`` defaults to ``MAX_CHARS`` as it is when called."""
    max_chars = MAX_CHARS if max_chars is None else max_chars
    total = len(normalised)
    out: list[Chunk] = []
    for path, blocks in _sections(normalised, fmt):
        pieces = [p for b in blocks for p in _split_block(normalised, b, max_chars)]
        for start, end in _pack(pieces, max_chars):
            out.append(Chunk(ordinal=len(out), offset=start, text=normalised[start:end], heading_path=path,
                             position_percent=min(100, start * 100 // max(1, total))))
    return out


def paged(pages: list[str] | tuple[str, ...], *, max_chars: int | None = None) -> tuple[str, list[Chunk]]:
    """The joined normalised text of a paged document and its chunks, each within one page."""
    spans: list[tuple[int, int, str]] = []  # (page number, offset in the joined text, page text)
    offset = 0
    for number, raw in enumerate(pages, start=1):
        text = normalise(raw)
        if not text:
            continue
        if spans:
            offset += 2  # the "\n\n" between pages
        spans.append((number, offset, text))
        offset += len(text)
    joined = "\n\n".join(text for _, _, text in spans)
    total = len(joined)
    out: list[Chunk] = []
    for number, start, text in spans:
        for c in chunk(text, "text", max_chars=max_chars):
            at = start + c.offset
            out.append(Chunk(ordinal=len(out), offset=at, text=c.text, heading_path=(),
                             position_percent=min(100, at * 100 // max(1, total)), page=number))
    return joined, out


def rebuilt(kept: list[tuple[str, tuple[str, ...], int | None]], *,
            max_chars: int | None = None) -> tuple[str, list[Chunk]]:
    """A document rebuilt from the chunks it has left (``(text, heading path, page)`` in
    order) after some were forgotten: each is chunked again as plain text of its own (never
    merged with a neighbour across a forgotten gap, its heading path and page kept), and the
    texts are joined by one blank line (what is hashed, and what offsets refer to)."""
    out: list[Chunk] = []
    texts: list[str] = []
    offset = 0
    placed: list[tuple[int, str, tuple[str, ...], int | None]] = []
    for text, path, page in kept:
        text = normalise(text)
        if not text:
            continue
        if texts:
            offset += 2  # the "\n\n" between kept chunks
        placed.append((offset, text, tuple(path), page))
        texts.append(text)
        offset += len(text)
    joined = "\n\n".join(texts)
    total = len(joined)
    for start, text, path, page in placed:
        for c in chunk(text, "text", max_chars=max_chars):
            at = start + c.offset
            out.append(Chunk(ordinal=len(out), offset=at, text=c.text, heading_path=path,
                             position_percent=min(100, at * 100 // max(1, total)), page=page))
    return joined, out


# --- structure ------------------------------------------------------------------------


def _lines(text: str) -> list[tuple[int, str]]:
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, line))
        pos += len(line) + 1
    return out


def _sections(text: str, fmt: Format) -> list[tuple[tuple[str, ...], list[Span]]]:
    """``(heading path, paragraph spans)`` per section, in order; empty sections dropped."""
    markdown = fmt == "markdown"
    sections: list[tuple[tuple[str, ...], list[Span]]] = []
    stack: list[tuple[int, str]] = []  # (level, title) of the enclosing headings
    blocks: list[Span] = []
    block: list[int] | None = None  # [start, end, line count] of the paragraph being read
    fence: str | None = None

    def end_block() -> None:
        nonlocal block
        if block is not None:
            blocks.append((block[0], block[1]))
            block = None

    def end_section() -> None:
        nonlocal blocks
        end_block()
        if blocks:
            sections.append((tuple(t for _, t in stack if t), blocks))
        blocks = []

    def heading(level: int, title: str) -> None:
        end_section()
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title.strip()))

    for start, line in _lines(text):
        end = start + len(line)
        if markdown and fence is not None:
            block[1] = end  # type: ignore[index]
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
            continue
        if not line.strip():
            end_block()
            continue
        if markdown:
            opened = _FENCE.match(line)
            if opened:
                if block is None:
                    block = [start, end, 0]
                block[1] = end
                block[2] += 2  # a paragraph with code in it is never a setext heading
                fence = opened.group(1)
                continue
            atx = _ATX.match(line)
            if atx:
                heading(len(atx.group(1)), atx.group(2) or "")
                continue
            setext = _SETEXT.match(line)
            if setext and block is not None and block[2] == 1:
                title = text[block[0]:block[1]]
                block = None
                heading(1 if setext.group(1).startswith("=") else 2, title)
                continue
            if _BREAK.match(line):
                end_block()
                continue
        if block is None:
            block = [start, end, 0]
        block[1] = end
        block[2] += 1
    end_section()
    return sections


# --- sizing ---------------------------------------------------------------------------


def _trim(text: str, span: Span) -> Span | None:
    start, end = span
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _sentences(text: str, span: Span, max_chars: int) -> list[Span]:
    start, end = span
    cuts = [start] + [m.end() for m in _SENTENCE_END.finditer(text, start, end)] + [end]
    out: list[Span] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        trimmed = _trim(text, (a, b))
        if trimmed is not None:
            out.extend(_hard_split(text, trimmed, max_chars))
    return out


def _hard_split(text: str, span: Span, max_chars: int) -> list[Span]:
    """A sentence over the limit, cut at the last whitespace before it (else at it)."""
    start, end = span
    out: list[Span] = []
    while end - start > max_chars:
        window = text[start:start + max_chars + 1]
        cut = max(window.rfind(" "), window.rfind("\t"), window.rfind("\n"))
        cut = start + cut if cut > max_chars // 2 else start + max_chars
        piece = _trim(text, (start, cut))
        if piece is not None:
            out.append(piece)
        rest = _trim(text, (cut, end))
        if rest is None:
            return out
        start = rest[0]
    out.append((start, end))
    return out


def _split_block(text: str, span: Span, max_chars: int) -> list[Span]:
    """A paragraph as pieces of at most ``max_chars``, as equal as sentence boundaries allow."""
    length = span[1] - span[0]
    if length <= max_chars:
        return [span]
    goal = length / math.ceil(length / max_chars)
    pieces: list[Span] = []
    current: Span | None = None
    for sentence in _sentences(text, span, max_chars):
        if current is not None and sentence[1] - current[0] <= max_chars and current[1] - current[0] < goal:
            current = (current[0], sentence[1])
            continue
        if current is not None:
            pieces.append(current)
        current = sentence
    if current is not None:
        pieces.append(current)
    return pieces


def _pack(pieces: list[Span], max_chars: int) -> list[Span]:
    """Merge consecutive pieces of one section while the merged span fits ``max_chars``."""
    out: list[Span] = []
    current: Span | None = None
    for piece in pieces:
        if current is not None and piece[1] - current[0] <= max_chars:
            current = (current[0], piece[1])
            continue
        if current is not None:
            out.append(current)
        current = piece
    if current is not None:
        out.append(current)
    return out

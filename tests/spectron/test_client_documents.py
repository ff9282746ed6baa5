"""Documents as users have them, through the official client's ``documents.upload`` (unchanged):
PDF, DOCX, HTML, Markdown and text end ``ready`` on SQLite and DynamoDB in process and over
HTTP to the local server; a PDF's citations carry its page; a hostile or unreadable file is a
415/422 problem with nothing stored; ``fetch_raw`` gives the bytes back. Files are built in
the tests (tests/support/documents.py)."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.runtime import get_runtime
from tests.spectron.conftest import CONTEXT
from tests.support.documents import DOCX_TYPE, docx, docx_bomb, encrypted_pdf, pdf

DOCS = f"/api/v1/{CONTEXT}/documents"
POLICY_PDF = [["Returns policy", "Items can be returned within 30 days of delivery."], [],
              ["Shipping", "Parcels leave the warehouse within two working days."]]
HANDBOOK_DOCX = [("Title", "Handbook"), ("Heading1", "Travel"), (None, "Book trains, not flights."),
                 ("Heading2", "Expenses"), (None, "Submit receipts within 30 days.")]
GUIDE_HTML = (b"<!doctype html><html><head><title>Office guide</title><script>var x = 1;</script></head><body>"
              b"<h1>Office</h1><p>The office opens at <b>8am</b>.</p><h2>Parking</h2><p>Bikes go in the yard.</p>"
              b"</body></html>")
NOTES_MD = b"# Notes\n\nThe canteen serves lunch at noon.\n\n## Coffee\n\nThe machine is on floor two.\n"
NOTES_TXT = b"The library closes at six.\n\nBooks are due back within three weeks.\n"

# name, bytes, content type, our format, its title, a chunk's heading path (None: no sections)
FILES = {
    "pdf": ("policy.pdf", pdf(POLICY_PDF, title="Returns and shipping"), "application/pdf", "pdf",
            "Returns and shipping"),
    "docx": ("handbook.docx", docx(HANDBOOK_DOCX), DOCX_TYPE, "docx", "Handbook"),
    "html": ("guide.html", GUIDE_HTML, "text/html", "html", "Office guide"),
    "markdown": ("notes.md", NOTES_MD, "text/markdown", "markdown", "Notes"),
    "text": ("library.txt", NOTES_TXT, "text/plain", "text", None),
}


def settle() -> None:
    get_runtime().ingestion_queue.join(timeout=60)


def bearer(memory: Any) -> dict[str, str]:
    """The client's own key, for the direct reads beside it (a service started with keys
    required answers nothing else)."""
    return {"Authorization": f"Bearer {memory._transport.api_key}"}


def nothing_stored(memory: Any, any_api: Any) -> None:
    assert memory.documents.list().total == 0
    assert any_api.get(DOCS, headers=bearer(memory)).json()["documents"] == []
    root = get_runtime().settings.data_dir / "uploads" / "originals"
    assert not root.exists() or not list(root.iterdir())


@pytest.mark.parametrize("kind", list(FILES))
def test_each_format_uploads_through_the_client_and_ends_ready(memory, any_api, kind):
    name, data, ctype, fmt, title = FILES[kind]
    up = memory.documents.upload(data, filename=name, content_type=ctype)
    assert up.id.startswith("doc_") and up.status in ("ingesting", "ready") and not up.deduplicated
    settle()
    doc = memory.documents.get(up.id)
    assert doc.status == "ready" and doc.mime_type == ctype and doc.chunk_count >= 1
    if title is not None:
        assert doc.title == title
    ours = any_api.get(f"{DOCS}/{up.id}", headers=bearer(memory)).json()
    assert ours["format"] == fmt and ours["chunksDone"] == ours["chunksTotal"] >= 1
    chunks = memory.documents.chunks(up.id).chunks
    assert chunks and all(c.document == up.id and c.text for c in chunks)
    assert memory.documents.fetch_raw(up.id) == data  # the original, byte for byte
    text = " ".join(c.text for c in chunks)
    assert "<" not in text and "var x" not in text  # no markup, no script
    if kind in ("docx", "html", "markdown"):  # headings are sections
        assert len({c.section for c in chunks}) >= 2, [c.section for c in chunks]
    memory.documents.delete(up.id)
    assert any_api.get(f"{DOCS}/{up.id}/raw", headers=bearer(memory)).status == 404


def test_a_pdf_uploaded_through_the_client_is_cited_with_its_page(memory, any_api):
    name, data, ctype, *_ = FILES["pdf"]
    up = memory.documents.upload(data, filename=name, content_type=ctype)
    settle()
    assert memory.documents.get(up.id).status == "ready"
    pages = [c["page"] for c in any_api.get(f"{DOCS}/{up.id}/chunks", headers=bearer(memory)).json()["chunks"]]
    assert pages == [1, 3]  # page 2 has no text, and keeps its number
    hits = any_api.post(f"/api/v1/{CONTEXT}/query", {"query": "warehouse working days", "k": 5},
                        headers=bearer(memory)).json()["hits"]
    cited = [h for h in hits if h["kind"] == "chunk" and h["documentId"] == up.id]
    assert cited and cited[0]["page"] == 3 and cited[0]["positionPercent"] is not None
    recalled = memory.recall("When do parcels leave the warehouse?")
    assert any("two working days" in h.text for h in recalled.hits)


def _many_pages() -> bytes:
    return pdf([[f"Page {i}"] for i in range(2001)])


@pytest.mark.parametrize("name,data,ctype,status,code", [
    ("policy.pdf", b"just some words", "application/pdf", 415, "not_what_it_claims"),
    ("handbook.docx", b"plain text", DOCX_TYPE, 415, "not_what_it_claims"),
    ("notes.txt", pdf(POLICY_PDF), "text/plain", 415, "not_what_it_claims"),
    ("locked.pdf", encrypted_pdf(POLICY_PDF), "application/pdf", 422, "encrypted_document"),
    ("scan.pdf", pdf([[], []]), "application/pdf", 422, "no_extractable_text"),
    ("long.pdf", _many_pages(), "application/pdf", 422, "too_many_pages"),
    ("bomb.docx", docx_bomb(), DOCX_TYPE, 422, "archive_limits"),
    ("picture.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 32, "image/png", 415, "unsupported_format"),
], ids=["text-as-pdf", "text-as-docx", "pdf-as-text", "encrypted-pdf", "no-text", "too-many-pages", "zip-bomb",
        "png"])
def test_a_hostile_or_unreadable_file_is_a_4xx_problem_through_the_client_and_stores_nothing(
        memory, any_api, name, data, ctype, status, code):
    from surrealdb.spectron._errors import SpectronAPIError

    with pytest.raises(SpectronAPIError) as caught:
        memory.documents.upload(data, filename=name, content_type=ctype)
    assert caught.value.status_code == status
    problem = caught.value.body
    assert isinstance(problem, dict) and problem["code"] == code and problem["detail"], problem
    nothing_stored(memory, any_api)

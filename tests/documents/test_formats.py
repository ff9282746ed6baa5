"""Documents as users have them: PDF (text per page, page-aware chunks and citations), DOCX and
HTML (headings as sections), detected from the content type and checked against the bytes;
hostile or unreadable files refused (415/422) with nothing stored; the original kept and
served (``GET /documents/{id}/raw``) and removed with the document; large uploads through the
local server's own presigned flow (SDK, CLI). Files are built in the tests (tests/support/documents.py)."""

from __future__ import annotations

import pytest

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import DomainError
from agent_memory.runtime import get_runtime
from agent_memory.services.documents import chunking, formats
from tests.support.documents import DOCX_TYPE, docx, docx_bomb, encrypted_pdf, pdf

CTX = "/api/v1/acme"
DOCS = f"{CTX}/documents"
RC = RequestContext(context_id="acme", principal="local-admin", admin=True)

POLICY_PDF = [["Returns policy", "Items can be returned within 30 days of delivery."], [],
              ["Shipping", "Parcels leave the warehouse within two working days."]]
HANDBOOK_DOCX = [("Title", "Handbook"), ("Heading1", "Travel"), (None, "Book trains, not flights."),
                 ("Heading2", "Expenses"), (None, "Submit receipts within 30 days."), (None, "# not a heading")]
PAGE_HTML = ("<!doctype html><html><head><title>Office guide</title><style>p{color:red}</style>"
             "<script>var secret = 1;</script></head><body><h1>Office</h1><p>The office opens at <b>8am</b>.</p>"
             "<h2>Parking</h2><ul><li>Bikes go in the yard.</li><li>Cars park behind.</li></ul></body></html>")


def settle() -> None:
    get_runtime().ingestion_queue.join(timeout=60)


def refused(call, status: int, code: str) -> None:
    with pytest.raises(DomainError) as caught:
        call()
    assert (caught.value.status, caught.value.code) == (status, code), caught.value.detail


# --- extraction (pure) ------------------------------------------------------------------


def test_a_pdf_is_read_page_by_page_and_its_chunks_keep_their_page():
    got = formats.extract(pdf(POLICY_PDF, title="Policy"), "application/pdf", "policy.pdf")
    assert got.kind == "pdf" and got.title == "Policy" and len(got.pages) == 3 and not got.pages[1].strip()
    text, chunks = chunking.paged(got.pages)
    assert [c.page for c in chunks] == [1, 3]  # the empty page 2 has no chunk, and keeps its number
    for c in chunks:
        assert text[c.offset:c.offset + len(c.text)] == c.text
    assert chunks[0].position_percent == 0 < chunks[1].position_percent <= 100
    assert "two working days" in chunks[1].text and "30 days" in chunks[0].text


def test_docx_and_html_headings_become_sections():
    doc = formats.extract(docx(HANDBOOK_DOCX), DOCX_TYPE, "handbook.docx")
    paths = [c.heading_path for c in chunking.chunk(chunking.normalise(doc.text), doc.format)]
    assert doc.title == "Handbook" and paths == [("Travel",), ("Travel", "Expenses")]
    page = formats.extract(PAGE_HTML.encode(), "text/html; charset=utf-8", None)
    assert page.title == "Office guide" and "secret" not in page.text and "color" not in page.text
    chunks = chunking.chunk(chunking.normalise(page.text), page.format)
    assert [c.heading_path for c in chunks] == [("Office",), ("Office", "Parking")]
    assert chunks[0].text == "The office opens at 8am." and "Bikes go in the yard." in chunks[1].text


def test_the_kind_comes_from_the_type_then_the_suffix_then_the_bytes():
    assert formats.kind_of(None, "a.pdf", b"%PDF-1.4") == "pdf"
    assert formats.kind_of("application/octet-stream", None, pdf(POLICY_PDF)) == "pdf"
    assert formats.kind_of(None, None, docx(HANDBOOK_DOCX)) == "docx"
    assert formats.kind_of(None, None, PAGE_HTML.encode()) == "html"
    assert formats.kind_of("text/plain", "notes.md", b"# x") == "markdown"
    assert formats.kind_of(None, None, b"plain words") == "text"


@pytest.mark.parametrize("data,ctype,status,code", [
    (b"just text", "application/pdf", 415, "not_what_it_claims"),
    (pdf(POLICY_PDF), "text/plain", 415, "not_what_it_claims"),
    (b"plain", DOCX_TYPE, 415, "not_what_it_claims"),
    (b"\x89PNG\r\n\x1a\n....", "image/png", 415, "unsupported_format"),
    (b"a\x00b", "text/markdown", 415, "not_what_it_claims"),
    (b"\xff\xfe\xfa", "text/plain", 415, "not_what_it_claims"),
    (b"%PDF-1.4\nthis is no pdf at all\n%%EOF", "application/pdf", 422, "malformed_document"),
    (pdf([[], []]), "application/pdf", 422, "no_extractable_text"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 64, DOCX_TYPE, 422, "encrypted_document"),
    (b"<html><script>only()</script></html>", "text/html", 422, "no_extractable_text"),
], ids=["text-as-pdf", "pdf-as-text", "text-as-docx", "png", "nul", "not-utf8", "broken-pdf", "scanned-pdf",
        "ole-docx", "empty-html"])
def test_files_that_are_not_what_they_claim_or_cannot_be_read_are_refused(data, ctype, status, code):
    refused(lambda: formats.extract(data, ctype, None), status, code)


def test_an_encrypted_pdf_is_refused():
    refused(lambda: formats.extract(encrypted_pdf(POLICY_PDF), "application/pdf", None), 422, "encrypted_document")


def test_limits_on_pages_parse_time_and_archives():
    data = pdf(POLICY_PDF)
    refused(lambda: formats.extract(data, "application/pdf", None, limits=formats.FormatLimits(pages=2)),
            422, "too_many_pages")
    # a deadline already passed (no clock in the test: -1 s is past whatever the clock reads)
    refused(lambda: formats.extract(data, "application/pdf", None, limits=formats.FormatLimits(parse_s=-1)),
            422, "parse_time_exceeded")
    refused(lambda: formats.extract(docx_bomb(), DOCX_TYPE, None), 422, "archive_limits")
    refused(lambda: formats.extract(docx(HANDBOOK_DOCX), DOCX_TYPE, None, limits=formats.FormatLimits(zip_members=1)),
            422, "archive_limits")
    dtd = (b'<?xml version="1.0"?><!DOCTYPE lol [<!ENTITY a "aaaa">]><w:document xmlns:w="http://schemas.openxmlformats'
           b'.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>&a;</w:t></w:r></w:p></w:body></w:document>')
    refused(lambda: formats.extract(docx([], document_xml=dtd), DOCX_TYPE, None), 422, "malformed_document")


# --- through the API (both stores, in process and over HTTP) -----------------------------


def _form(api, name: str, data: bytes, ctype: str | None, **fields):
    import uuid

    boundary = uuid.uuid4().hex
    parts = []
    for key, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode())
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
    if ctype:
        head += f"Content-Type: {ctype}\r\n"
    parts.append(head.encode() + b"\r\n" + data + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    return api.post(DOCS, raw=body, headers={"content-type": f"multipart/form-data; boundary={boundary}"})


def _originals() -> list[str]:
    root = get_runtime().settings.data_dir / "uploads" / "originals"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def test_a_pdf_upload_ends_ready_with_page_aware_chunks_and_citations_and_its_original_kept(api):
    data = pdf(POLICY_PDF, title="Returns and shipping")
    r = _form(api, "policy.pdf", data, "application/pdf")
    assert r.status == 202, r.text
    settle()
    doc = api.get(f"{DOCS}/{r.json()['id']}").json()
    assert doc["status"] == "ready" and doc["format"] == "pdf" and doc["mimeType"] == "application/pdf"
    assert doc["title"] == "Returns and shipping"
    chunks = api.get(f"{DOCS}/{doc['id']}/chunks").json()["chunks"]
    assert [c["page"] for c in chunks] == [1, 3]
    hits = api.post(f"{CTX}/query", {"query": "warehouse working days", "k": 5}).json()["hits"]
    cited = [h for h in hits if h["kind"] == "chunk" and h["documentId"] == doc["id"]]
    assert cited and cited[0]["page"] == 3 and cited[0]["positionPercent"] is not None
    raw = api.get(f"{DOCS}/{doc['id']}/raw")
    assert raw.status == 200 and raw.body == data and raw.headers["content-type"] == "application/pdf"
    assert _originals() == [doc["id"]]
    assert api.delete(f"{DOCS}/{doc['id']}").status == 204
    assert api.get(f"{DOCS}/{doc['id']}/raw").status == 404 and _originals() == []


@pytest.mark.parametrize("name,data,ctype,fmt,title", [
    ("handbook.docx", docx(HANDBOOK_DOCX), DOCX_TYPE, "docx", "Handbook"),
    ("guide.html", PAGE_HTML.encode(), "text/html", "html", "Office guide"),
    ("guide.html", PAGE_HTML.encode(), None, "html", "Office guide"),  # untyped: the suffix says
    ("handbook.docx", docx(HANDBOOK_DOCX), "application/octet-stream", "docx", "Handbook"),
])
def test_docx_and_html_uploads_end_ready_with_their_headings_as_sections(api, name, data, ctype, fmt, title):
    r = _form(api, name, data, ctype)
    assert r.status == 202, r.text
    settle()
    doc = api.get(f"{DOCS}/{r.json()['id']}").json()
    assert (doc["status"], doc["format"], doc["title"]) == ("ready", fmt, title)
    chunks = api.get(f"{DOCS}/{doc['id']}/chunks").json()["chunks"]
    assert all(c["page"] is None for c in chunks) and any(len(c["headingPath"]) >= 2 for c in chunks)
    assert api.get(f"{DOCS}/{doc['id']}/raw").body == data


@pytest.mark.parametrize("data,ctype,status,code", [
    (b"not a pdf", "application/pdf", 415, "not_what_it_claims"),
    (encrypted_pdf(POLICY_PDF), "application/pdf", 422, "encrypted_document"),
    (pdf([[]]), "application/pdf", 422, "no_extractable_text"),
    (docx_bomb(), DOCX_TYPE, 422, "archive_limits"),
    (b"GIF89a....", "image/gif", 415, "unsupported_format"),
], ids=["fake-pdf", "encrypted", "no-text", "zip-bomb", "gif"])
def test_a_hostile_or_unreadable_file_is_a_clear_4xx_and_stores_nothing(api, data, ctype, status, code):
    r = _form(api, "upload.bin", data, ctype)
    assert r.status == status, r.text
    problem = r.json()
    assert problem["code"] == code and problem["detail"] and r.headers["content-type"] == "application/problem+json"
    assert not get_runtime().store.query(keys.documents_pk(RC), limit=10).records
    assert not get_runtime().store.query(keys.document_hashes_pk(RC), limit=10).records
    assert _originals() == []


def test_a_json_upload_keeps_its_text_as_the_original(api):
    r = api.post(DOCS, {"text": "# Notes\n\nCafé opens at nine.", "title": "Notes"})
    assert r.status == 202
    raw = api.get(f"{DOCS}/{r.json()['id']}/raw")
    assert raw.body == "# Notes\n\nCafé opens at nine.".encode() and raw.headers["content-type"] == "text/markdown"
    assert api.get(f"{DOCS}/doc_01HV0000000000000000000000/raw").status == 404


@pytest.mark.over_http
def test_the_sdk_uploads_a_pdf_and_fetches_it_back_over_http(client):
    from agent_memory.client import AgentMemory

    data = pdf(POLICY_PDF)
    with AgentMemory("acme", str(client.base_url)) as memory:
        up = memory.documents.upload(data, filename="policy.pdf")
        settle()
        assert memory.documents.get(up.id).format == "pdf"
        assert memory.documents.fetch_raw(up.id) == data
        pages = [c.page for c in memory.documents.chunks(up.id)]
        assert pages == [1, 3]


# Over HTTP these run on SQLite (``over_http``: the loopback server in front of moto is the
# slowest fixture pair, and a 4 MB document's ~1900 chunks there outlast the test timeout);
# DynamoDB is covered in process, here and in tests/documents/test_presigned_upload.py.


def _big_markdown() -> bytes:
    body = "\n\n".join(f"## Section {i}\n\n" + f"Policy line {i} says what it says. " * 60 for i in range(1900))
    data = ("# Big policy\n\n" + body).encode()
    assert 3_900_000 < len(data) < 5 * 1024 * 1024
    return data


@pytest.mark.over_http
def test_a_4_mb_document_uploads_locally_through_the_sdk_presigned_flow(client, runtime):
    from agent_memory.client import AgentMemory

    data = _big_markdown()
    too_big = client.post(DOCS, files={"file": ("big.md", data, "text/markdown")})
    assert too_big.status_code == 413 and too_big.headers["content-type"] == "application/problem+json"
    assert (too_big.json()["code"], too_big.json()["uploadRoute"]) == ("use_presigned_upload", f"{DOCS}/uploads")
    with AgentMemory("acme", str(client.base_url)) as memory:
        doc = memory.documents.upload_large(data, filename="big.md")
        assert doc.status in ("uploading", "ingesting", "ready")
        settle()
        done = memory.documents.wait_ready(doc.id, timeout=120)
        assert done.status == "ready" and done.format == "markdown" and done.chunks_done == done.chunks_total > 100
        assert memory.documents.fetch_raw(doc.id) == data


@pytest.mark.over_http
def test_the_cli_uploads_a_4_mb_document_locally(client, tmp_path, capsys):
    from agent_memory.interfaces import cli

    path = tmp_path / "big.md"
    path.write_bytes(_big_markdown())
    code = cli.main(["documents", "upload", str(path), "--context", "acme", "--url", str(client.base_url),
                     "--timeout", "120"])
    out = capsys.readouterr().out
    assert code == 0 and ": ready" in out, out

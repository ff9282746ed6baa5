"""multipart/form-data parsing (agent_memory.http.multipart) and its mapping onto DocumentUpload."""

from __future__ import annotations

import pytest

from agent_memory.http.multipart import document_upload_fields, is_multipart, parse_form
from agent_memory.kernel.errors import InvalidRequest
from agent_memory.models.documents import DocumentUpload

B = "----agent-memory-boundary"
CT = f"multipart/form-data; boundary={B}"


def form(*parts: tuple[str, bytes], close: bool = True) -> bytes:
    body = b""
    for headers, data in parts:
        body += f"--{B}\r\n{headers}\r\n\r\n".encode() + data + b"\r\n"
    return body + (f"--{B}--\r\n".encode() if close else b"")


def field(name: str, value: str) -> tuple[str, bytes]:
    return f'Content-Disposition: form-data; name="{name}"', value.encode()


def file(data: bytes, filename: str = "doc.md", ctype: str = "text/markdown") -> tuple[str, bytes]:
    return f'Content-Disposition: form-data; name="file"; filename="{filename}"\r\nContent-Type: {ctype}', data


def test_parses_fields_and_file_bytes_exactly():
    parts = parse_form(CT, form(field("title", "Caf\u00e9"), file(b"# T\r\n\r\nbody\r\n\r\n")))
    assert parts["title"].text() == "Caf\u00e9"
    assert parts["file"].filename == "doc.md" and parts["file"].content_type == "text/markdown"
    assert parts["file"].data == b"# T\r\n\r\nbody\r\n\r\n"  # byte for byte: only the delimiter's CRLF goes


def test_declared_charset_is_honoured():
    parts = parse_form(CT, form(file("d\u00e9j\u00e0 vu".encode("latin-1"), "a.txt", "text/plain; charset=latin-1")))
    assert parts["file"].text() == "d\u00e9j\u00e0 vu"


@pytest.mark.parametrize("content_type,body", [
    ("multipart/form-data", form(field("a", "b"))),  # no boundary parameter
    (CT, form(field("a", "b"), close=False)),  # no closing boundary
    (CT, b"not multipart at all"),  # no start boundary
    (CT, form(('Content-Disposition: form-data; name="a"', b"1"), ('Content-Disposition: form-data; name="a"', b"2"))),
    (CT, form(("Content-Disposition: attachment", b"x"))),  # not form-data / no name
])
def test_malformed_forms_are_400(content_type, body):
    with pytest.raises(InvalidRequest):
        parse_form(content_type, body)


def test_invalid_utf8_without_a_charset_is_400():
    parts = parse_form(CT, form(file(b"\xff\xfe bad", "a.txt", "text/plain")))
    with pytest.raises(InvalidRequest):
        parts["file"].text()


def test_is_multipart():
    assert is_multipart("Multipart/Form-Data; boundary=x") and not is_multipart("application/json")
    assert not is_multipart(None)


def test_form_maps_onto_the_upload_model():
    parts = parse_form(CT, form(file(b"# Guide\n\ntext", "guide.md", "application/octet-stream"),
                                field("scopes", '["team/a"]'), field("labels", '["hr", "policy"]'),
                                field("observedAt", "2026-01-02T03:04:05Z")))
    upload = DocumentUpload.model_validate(document_upload_fields(parts))
    assert upload.text == "# Guide\n\ntext" and upload.format == "markdown" and upload.filename == "guide.md"
    assert upload.scopes == [["team/a"]] and upload.labels == ["hr", "policy"]
    assert upload.observed_at == "2026-01-02T03:04:05.000Z"
    bare = parse_form(CT, form(field("text", "plain"), field("scopes", "team/b"), field("labels", "hr")))
    upload = DocumentUpload.model_validate(document_upload_fields(bare))
    assert upload.scopes == [["team/b"]] and upload.labels == ["hr"] and upload.format is None


@pytest.mark.parametrize("parts,field_name", [
    ([field("title", "no file")], "file"),
    ([file(b"x"), field("text", "y")], "file"),
    ([file(b"x"), field("colour", "blue")], "colour"),
])
def test_form_field_errors_name_the_field(parts, field_name):
    with pytest.raises(InvalidRequest) as err:
        document_upload_fields(parse_form(CT, form(*parts)))
    assert err.value.extensions["field"] == field_name


@pytest.mark.parametrize("part", [file(b"", "empty.txt", "text/plain"), field("text", "")])
def test_an_empty_document_part_is_a_400_that_says_so(part):
    parts = parse_form(CT, form(part))
    with pytest.raises(InvalidRequest, match="the document is empty") as exc:
        document_upload_fields(parts)
    assert exc.value.extensions["field"] in ("file", "text")


@pytest.mark.parametrize("raw,scopes,labels", [
    ("0", "0", ["0"]),  # parses as a JSON number, but a form field is text: one path / one label
    ("true", "true", ["true"]),
    ('"org/acme"', "org/acme", ["org/acme"]),  # a JSON string is that one path / label
    ('["org/acme"]', ["org/acme"], ["org/acme"]),
])
def test_scopes_and_labels_form_fields_are_json_or_one_bare_value(raw, scopes, labels):
    fields = document_upload_fields(parse_form(CT, form(field("text", "body"), field("scopes", raw),
                                                            field("labels", raw))))
    assert fields["scopes"] == scopes and fields["labels"] == labels

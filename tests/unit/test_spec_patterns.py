r"""The patterns openapi.yaml states for labels, readers, scope paths, titles, a document's
text, Idempotency-Key and cursors are the service's own rules: a string matches exactly when
the service takes it (one truth, checked both ways over an alphabet of the characters the
rules turn on), under Python's regex engine and the ECMA-style one schemathesis validates with
(jsonschema_rs): whitespace is spelled out as the characters ``str.isspace`` names, since
``\s`` differs between the two (schemathesis, seed 7, found a label of U+0085 U+001E)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory.access.scopes import InvalidScope, normalise_path
from agent_memory.kernel.errors import InvalidRequest
from agent_memory.models.documents import DocumentUpload
from agent_memory.models.requests import WriteFactsRequest
from agent_memory.models.threads import SetThreadAclRequest
from agent_memory.services.facts.idempotency import check_key

try:
    import jsonschema_rs
except ImportError:  # pragma: no cover - a dev dependency of schemathesis
    jsonschema_rs = None

SPEC = yaml.safe_load((Path(__file__).resolve().parents[2] / "openapi.yaml").read_text())
SCHEMAS = SPEC["components"]["schemas"]
TRICKY = list("ab./: \t\n\x00\x02\x1c\x1e\x85\xa0\u3000\ufeff*") + ["group:", ".."]
texts = st.lists(st.sampled_from(TRICKY), max_size=8).map("".join)


def _matches(schema: dict, value: str) -> bool:
    python = (len(value) >= schema.get("minLength", 0) and len(value) <= schema.get("maxLength", 10**9)
              and re.search(schema["pattern"], value) is not None)
    if jsonschema_rs is not None:
        assert jsonschema_rs.is_valid(schema, value) == python, (schema["pattern"], repr(value))
    return python


def _service_takes(build) -> bool:
    try:
        build()
        return True
    except (ValueError, InvalidScope, InvalidRequest):  # pydantic's ValidationError is a ValueError
        return False


@settings(max_examples=400, deadline=None)
@given(texts)
def test_scope_path(value):
    def build():
        try:
            normalise_path(value)
        except InvalidScope as exc:
            if "bytes" not in str(exc):  # the byte bound stays the service's (maxLength counts characters)
                raise
    assert _matches(SCHEMAS["ScopePath"], value) == _service_takes(build), repr(value)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_label(value):
    schema = SCHEMAS["WriteFactsRequest"]["properties"]["labels"]["items"]
    assert _matches(schema, value) == _service_takes(lambda: WriteFactsRequest(text="x", labels=[value])), repr(value)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_reader(value):
    schema = SCHEMAS["ReaderList"]["items"]
    assert _matches(schema, value) == _service_takes(lambda: SetThreadAclRequest(aclReaders=[value])), repr(value)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_title_and_text(value):
    props = SCHEMAS["UploadDocumentRequest"]["properties"]
    assert _matches(props["title"], value) == _service_takes(lambda: DocumentUpload(text="x", title=value)), repr(value)
    assert _matches(props["text"], value) == _service_takes(lambda: DocumentUpload(text=value)), repr(value)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_idempotency_key(value):
    schema = SPEC["components"]["parameters"]["IdempotencyKey"]["schema"]
    assert _matches(schema, value) == _service_takes(lambda: check_key(value)), repr(value)


@pytest.mark.parametrize("value, ok", [("", True), ("abc_-09", True), ("a+b", False), ("a=", False)])
def test_cursor_alphabet_is_base64url(value, ok):
    schema = next(p for p in [SPEC["components"]["parameters"]["Cursor"]])["schema"]
    assert (re.search(schema["pattern"], value) is not None) == ok


def test_the_upload_form_states_the_json_uploads_text_and_title_rules():
    # a form's text field and title are validated as the JSON body's (seed 7 found a NUL in the form's text)
    form, body = SCHEMAS["UploadDocumentForm"]["properties"], SCHEMAS["UploadDocumentRequest"]["properties"]
    assert form["text"]["pattern"] == body["text"]["pattern"] and form["title"]["pattern"] == body["title"]["pattern"]

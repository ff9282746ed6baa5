"""The patterns openapi.yaml states for labels, readers, scope paths and cursors are the
service's own rules: a string matches exactly when the service takes it (one truth, checked
both ways over an alphabet of the characters the rules turn on)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory.access.scopes import InvalidScope, normalise_path
from agent_memory.models.requests import WriteFactsRequest
from agent_memory.models.threads import SetThreadAclRequest

SPEC = yaml.safe_load((Path(__file__).resolve().parents[2] / "openapi.yaml").read_text())
SCHEMAS = SPEC["components"]["schemas"]
TRICKY = list("ab./: \t\n\x1c\x85\xa0\u3000*") + ["group:", ".."]
texts = st.lists(st.sampled_from(TRICKY), max_size=8).map("".join)


def _matches(schema: dict, value: str) -> bool:
    return (len(value) >= schema.get("minLength", 0) and len(value) <= schema.get("maxLength", 10**9)
            and re.search(schema["pattern"], value) is not None)


def _service_takes(build) -> bool:
    try:
        build()
        return True
    except (ValueError, InvalidScope):  # pydantic's ValidationError is a ValueError
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


@pytest.mark.parametrize("value, ok", [("", True), ("abc_-09", True), ("a+b", False), ("a=", False)])
def test_cursor_alphabet_is_base64url(value, ok):
    schema = next(p for p in [SPEC["components"]["parameters"]["Cursor"]])["schema"]
    assert (re.search(schema["pattern"], value) is not None) == ok

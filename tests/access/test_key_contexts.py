"""``POST /keys`` with a ``contexts`` list: each entry must be a context id (the path's
``ContextId`` rule); anything else is a 400 that mints nothing. A schemathesis finding: an empty
name, a lone surrogate, control characters and astral-plane text in ``contexts`` answered 500
or were stored as a key's grants."""

from __future__ import annotations

from typing import Any

import pytest

from tests.access.test_access_api import KEYS, PRINCIPALS

ADMIN = {"authorization": f"Bearer {KEYS['admin']}"}


@pytest.fixture
def principals_setting() -> list[dict[str, Any]]:
    return PRINCIPALS


@pytest.mark.parametrize("require_keys_setting", [True])
@pytest.mark.parametrize("contexts", [[""], ["\ud800"], ["\x01\U0001F600", "ab\x00"], ["\U0001F600"], ["a/b"],
                                      ["acme\n"], ["x" * 129], ["-acme"]])
def test_a_context_that_is_not_a_context_id_is_400_and_mints_nothing(any_api, contexts):
    before = any_api.get("/api/v1/acme/keys", headers=ADMIN)
    assert before.status == 200, before.text
    r = any_api.post("/api/v1/acme/keys", {"contexts": contexts}, headers=ADMIN)
    assert r.status == 400, r.text
    assert r.json()["field"] == "contexts"
    assert any_api.get("/api/v1/acme/keys", headers=ADMIN).json() == before.json()


@pytest.mark.parametrize("require_keys_setting", [True])
def test_context_ids_are_accepted(any_api):
    r = any_api.post("/api/v1/acme/keys", {"contexts": ["beta", "x" * 128, "a.b_c-9"]}, headers=ADMIN)
    assert r.status == 201, r.text

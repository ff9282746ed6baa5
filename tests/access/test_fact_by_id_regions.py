"""One fact by id across regions (both record stores, in process): a caller who cannot read
the fact gets 404 for every verb and nothing changes; one who reads but cannot write its
scopes gets 403 and nothing changes; delegation narrows to the intersection."""

from __future__ import annotations

from typing import Any

import pytest

from tests.access.test_access_api import KEYS, PRINCIPALS
from tests.support.callers import As


@pytest.fixture
def principals_setting() -> list[dict[str, Any]]:
    return PRINCIPALS


@pytest.fixture
def as_(api: Any):
    return lambda who, **kw: As(api, KEYS[who], **kw)


def _alice_fact(as_) -> dict:
    alice = as_("alice")
    assert alice.post("/facts", {"text": "I live in London."}).status == 200
    r = alice.get("/attributes?key=location")
    assert r.status == 200, r.text
    (fact,) = r.json()["items"]
    return fact


def _unchanged(as_, fact: dict) -> None:
    r = as_("admin").get(f"/attributes/{fact['id']}")
    assert r.status == 200 and r.json() == fact
    history = as_("admin").get("/entities/person/user/history/location").json()["history"]
    assert [h["id"] for h in history] == [fact["id"]]


def test_a_caller_outside_the_read_region_gets_404_and_changes_nothing(as_):
    fact = _alice_fact(as_)
    bob = as_("bob")
    assert bob.get(f"/attributes/{fact['id']}").status == 404
    r = bob.request("PATCH", f"/attributes/{fact['id']}", {"value": "Rome"})
    assert r.status == 404 and "London" not in r.text
    assert bob.request("DELETE", f"/attributes/{fact['id']}").status == 404
    assert bob.request("DELETE", f"/attributes/{fact['id']}?purge=true").status == 404
    _unchanged(as_, fact)


def test_a_reader_who_cannot_write_the_scopes_gets_403_and_changes_nothing(as_):
    fact = _alice_fact(as_)
    support = as_("support")  # reads org/acme/user/*, writes only org/acme/support
    assert support.get(f"/attributes/{fact['id']}").json()["value"] == "London"
    r = support.request("PATCH", f"/attributes/{fact['id']}", {"value": "Rome"})
    assert r.status == 403, r.text
    assert support.request("DELETE", f"/attributes/{fact['id']}").status == 403
    _unchanged(as_, fact)


def test_the_owner_and_a_delegated_admin_may_edit(as_):
    fact = _alice_fact(as_)
    out = as_("alice").request("PATCH", f"/attributes/{fact['id']}", {"value": "Leeds"})
    assert out.status == 200, out.text
    new = out.json()["fact"]
    assert new["value"] == "Leeds"
    # Admin on behalf of bob sees what bob sees: alice's fact is not there.
    assert as_("admin", on_behalf_of="bob").get(f"/attributes/{new['id']}").status in (403, 404)
    assert as_("alice").request("DELETE", f"/attributes/{new['id']}").status == 200
    assert as_("admin").get(f"/attributes/{new['id']}").status == 404


def test_another_partition_does_not_see_the_fact(as_):
    fact = _alice_fact(as_)
    assert as_("admin", partition="p1").get(f"/attributes/{fact['id']}").status == 404
    assert as_("admin", partition="p1").request("DELETE", f"/attributes/{fact['id']}").status == 404
    _unchanged(as_, fact)

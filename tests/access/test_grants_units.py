"""Grant arithmetic: wildcard coverage, region intersection, write checks, verbs, and keys
stored with their grants."""

from __future__ import annotations

import pytest

from agent_memory.access import grants
from agent_memory.access import scopes as s
from agent_memory.access.api_keys import ApiKeyStore, digest
from agent_memory.kernel.errors import Forbidden


def test_wildcards_cover_one_segment():
    assert s.covers("org/acme/user/*", "org/acme/user/alice/notes")
    assert not s.covers("org/acme/user/*", "org/acme/user")
    assert not s.covers("org/*/user", "org/acme/team")


def test_intersection_never_widens():
    assert s.intersect_regions(["org/acme/user/*"], ["org/acme/user/alice"]) == ("org/acme/user/alice",)
    assert s.intersect_regions(["org/acme"], ["org/other"]) == ()
    assert s.intersect_regions(None, ["a"]) == ("a",)
    assert s.intersect_regions(["org/*/x"], ["org/acme"]) == ("org/acme/x",)


def test_write_scopes():
    assert grants.write_scopes([], ["a/b"], "a/b/c") == [["a/b/c"]]
    assert grants.write_scopes([], ["a/b", "a/c"], None) == [["a/b"], ["a/c"]]
    with pytest.raises(Forbidden) as err:
        grants.write_scopes([["a/b", "z"]], ["a"], None)
    assert err.value.extensions["scope"] == "z"
    with pytest.raises(Forbidden):
        grants.write_scopes([], ["a/*"], None)  # nowhere concrete to write, and no writer named


def test_a_write_naming_no_scope_takes_the_writers_own_place_under_a_trailing_wildcard():
    assert grants.write_scopes([], ["org/acme/*"], None, "agent-7") == [["org/acme/agent-7"]]
    assert grants.write_scopes([], ["org/acme/*"], None, "principal:agent-7") == [["org/acme/agent-7"]]
    assert grants.write_scopes([], ["org/acme/*", "team/x"], None, "a7") == [["org/acme/a7"], ["team/x"]]
    assert grants.write_scopes([], ["org/acme/*"], "org/acme/desk", "a7") == [["org/acme/desk"]]  # default first
    assert grants.write_scopes([["org/acme/y"]], ["org/acme/*"], None, "a7") == [["org/acme/y"]]  # named first
    for region, principal in ((["org/*/team"], "a7"), (["org/acme/*"], "a/b"), (["org/acme/*"], "*"),
                              (["org/acme/*"], ".."), (["org/acme/*", "org/*/x"], "a7")):
        with pytest.raises(Forbidden):  # no single place of the writer's: the write must name scopes
            grants.write_scopes([], region, None, principal)


@pytest.mark.parametrize("method, path, verb", [
    ("GET", "/api/v1/c/state", grants.READ), ("POST", "/api/v1/c/query", grants.READ),
    ("POST", "/api/v1/c/facts", grants.WRITE), ("POST", "/api/v1/c/forget", grants.FORGET),
    ("DELETE", "/api/v1/c/sessions/s", grants.FORGET), ("PUT", "/api/v1/c/threads/t/acl", grants.ADMIN),
    ("GET", "/api/v1/c/audit", grants.ADMIN),
])
def test_required_verb(method, path, verb):
    assert grants.required_verb(method, path) == verb


def test_stored_keys_keep_their_grants(runtime):
    store = ApiKeyStore(runtime.base_store)
    raw, stored = store.create("alice", contexts=["acme"], read_region=["org/acme/user/*"],
                               write_region=["org/acme/user/alice"], verbs=["memory:read", "delegate"])
    found = store.find(digest(raw))
    assert found.contexts == ("acme",) and found.read_region == ("org/acme/user/*",)
    assert grants.verbs_of(found) == {"memory:read", "delegate"}
    assert store.with_principal("alice")[0].write_region == ("org/acme/user/alice",)
    with pytest.raises(ValueError):
        store.create("bob", verbs=["everything"])

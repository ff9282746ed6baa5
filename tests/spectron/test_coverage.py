"""The Spectron client and openapi.yaml cover each other, up to the two named lists
(tests/spectron/lists.py); each expected-missing method is a strict xfail that flips when its
route is added."""

from __future__ import annotations

import pytest

from agent_memory.http.gateway import LocalGateway
from tests.conftest import REPO
from tests.spectron.lists import EXPECTED_MISSING, OURS_ONLY
from tests.spectron.routes import Call, _matches, client_calls, operation_of, operations

SYNC = client_calls()
ASYNC = client_calls(async_client=True)
OPS = operations()
ROUTES = LocalGateway(REPO)


def test_the_recorder_sees_every_public_method_of_both_clients():
    assert set(SYNC) == set(ASYNC)
    assert len(SYNC) >= 55  # surrealdb 3.0.0a4: 15 verbs + 40 namespace methods
    assert SYNC == ASYNC  # both clients send the same request for each method


def test_every_client_method_reaches_an_operation_or_is_expected_missing():
    unlisted = {name: f"{c.method} {c.path}" for name, c in SYNC.items()
                if operation_of(c, OPS) is None and name not in EXPECTED_MISSING}
    assert unlisted == {}, "client methods with no operation in openapi.yaml and not in EXPECTED_MISSING"


def test_expected_missing_names_only_methods_that_still_miss():
    served = {name for name in EXPECTED_MISSING if name in SYNC and operation_of(SYNC[name], OPS) is not None}
    unknown = set(EXPECTED_MISSING) - set(SYNC)
    assert (served, unknown) == (set(), set()), "empty these entries of EXPECTED_MISSING"


def test_every_operation_has_a_client_method_or_is_ours_only():
    reached = {operation_of(c, OPS) for c in SYNC.values()}
    orphans = sorted(op for op in OPS if op not in reached and op not in OURS_ONLY)
    assert orphans == [], "operations the client never calls and OURS_ONLY does not name"


def test_ours_only_names_only_operations_the_client_does_not_call():
    reached = {operation_of(c, OPS) for c in SYNC.values()}
    stale = sorted(op for op in OURS_ONLY if op in reached or op not in OPS)
    assert stale == [], "remove these from OURS_ONLY"


@pytest.mark.parametrize("name", sorted(EXPECTED_MISSING))
@pytest.mark.xfail(strict=True, reason="its route comes with a sibling issue (lists.EXPECTED_MISSING)")
def test_expected_missing_route_is_served(name: str) -> None:
    """Strict xfail: the gateway built from template.yaml routes the client's request to a
    route made for it (not one whose parameter a literal segment of the client's fills, as
    ``GET /documents/keywords`` fills ``/documents/{document_id}``)."""
    call: Call = SYNC[name]
    found = ROUTES.match(call.method, call.path)
    assert found is not None and _matches(found[0].path, call.path), f"{name}: {call.method} {call.path}"

"""Values of one single-valued key written under different scopes are current side by side
(each supersedes only a value of its own scope); every read that returns them says each
one's scope: /state, the entity read (now and asOf), the history chain, the collections,
the fact by id. Both stores, in process."""

from __future__ import annotations

CTX = "acme"
ALICE = [["org/acme/user/alice"]]


def write(api, text: str, at: str, scopes: list | None = None) -> dict:
    body: dict = {"text": text, "observedAt": at}
    if scopes:
        body["scopes"] = scopes
    r = api.post(f"/api/v1/{CTX}/facts", body)
    assert r.status == 200, r.text
    return r.json()


def by_value(rows: list[dict]) -> dict[str, list]:
    return {row["value"]: row["scopes"] for row in rows if row["key"] == "location"}


def test_each_coexisting_value_reads_with_its_scope(api):
    write(api, "I live in London.", "2026-03-10T10:00:00Z")
    write(api, "I moved to Madrid.", "2026-05-20T10:00:00Z")
    write(api, "I moved to Berlin.", "2026-06-01T10:00:00Z", scopes=["org/acme/user/alice"])
    write(api, "I work at Globex.", "2026-06-02T10:00:00Z", scopes=["org/acme/user/alice"])
    state = api.get(f"/api/v1/{CTX}/state").json()
    assert by_value(state["identity"]["attributes"]) == {"Madrid": [], "Berlin": ALICE}
    employer = next(a for a in state["identity"]["attributes"] if a["key"] == "employer")
    assert employer["scopes"] == ALICE
    detail = api.get(f"/api/v1/{CTX}/entities/person/user").json()
    assert by_value(detail["attributes"]) == {"Madrid": [], "Berlin": ALICE}
    then = api.get(f"/api/v1/{CTX}/entities/person/user?asOf=2026-05-25T00:00:00Z").json()
    assert by_value(then["attributes"]) == {"Madrid": []}  # Berlin was not yet stated
    later = api.get(f"/api/v1/{CTX}/entities/person/user?asOf=2026-06-01T12:00:00Z").json()
    assert by_value(later["attributes"]) == {"Madrid": [], "Berlin": ALICE}
    chain = api.get(f"/api/v1/{CTX}/entities/person/user/history/location").json()["history"]
    assert [(h["value"], h["scopes"], h["validUntil"] is None) for h in chain] == [
        ("London", [], False), ("Madrid", [], True), ("Berlin", ALICE, True)]
    items = api.get(f"/api/v1/{CTX}/attributes").json()["items"]
    assert by_value(items) == {"Madrid": [], "Berlin": ALICE}
    berlin = next(a for a in items if a["value"] == "Berlin")
    assert api.get(f"/api/v1/{CTX}/attributes/{berlin['id']}").json()["scopes"] == ALICE

"""History lists a key's versions in the order they were stated, the current value last, with
a value a backdated statement covered marked retracted (docs/decisions.md, "History under
out-of-order writes"); on both record stores, through the API and both SDK clients' reading."""

from __future__ import annotations

import pytest

CTX = "/api/v1/acme"


def said(api, text: str, at: str) -> None:
    r = api.post(f"{CTX}/facts", {"text": text, "observedAt": at})
    assert r.status == 200, r.text


def history(api, key: str = "location") -> list[dict]:
    r = api.get(f"{CTX}/entities/person/user/history/{key}")
    assert r.status == 200, r.text
    return r.json()["history"]


def test_a_backdated_move_retracts_the_value_it_covers_and_reads_last(api):
    said(api, "I live in London.", "2024-05-10T09:00:00Z")
    said(api, "I moved to Berlin last month.", "2024-05-20T09:00:00Z")
    rows = history(api)
    assert [(r["value"], r["retracted"]) for r in rows] == [("London", True), ("Berlin", False)]
    london, berlin = rows
    assert london["validFrom"] == london["validUntil"]  # never held
    assert berlin["validUntil"] is None and berlin["validFrom"] < "2024-05-10"
    # asOf never returns the retracted value
    at = api.get(f"{CTX}/entities/person/user?asOf=2024-05-15T00:00:00Z").json()["attributes"]
    assert [a["value"] for a in at if a["key"] == "location"] == ["Berlin"]


@pytest.mark.parametrize("arrival", [(0, 1, 2), (2, 1, 0), (1, 2, 0)])
def test_values_delivered_out_of_order_read_in_the_order_they_were_said(api, arrival):
    statements = [("I live in Paris.", "2024-01-10T09:00:00Z"), ("I live in Oslo.", "2024-02-10T09:00:00Z"),
                  ("I live in Rome.", "2024-03-10T09:00:00Z")]
    for i in arrival:
        said(api, *statements[i])
    rows = history(api)
    assert [r["value"] for r in rows] == ["Paris", "Oslo", "Rome"]
    assert [r["validUntil"] is None for r in rows] == [False, False, True]
    assert not any(r["retracted"] for r in rows)

"""Point in time covers everything said: ``asOf``/``atInstant`` on /query and /context
exclude turns said after the instant and documents observed after it, not only facts whose
window does not hold it. On both record stores (each with its search index)."""

from __future__ import annotations

import pytest

from agent_memory.runtime import get_runtime

CTX = "/api/v1/acme"
JAN, FEB, MAR, APR = ("2024-01-10T09:00:00Z", "2024-02-10T09:00:00Z", "2024-03-10T09:00:00Z",
                      "2024-04-10T09:00:00Z")


def hits(api, body: dict, path: str = "/query") -> list[dict]:
    r = api.post(f"{CTX}{path}", body)
    assert r.status == 200, r.text
    return r.json()["hits"] if path == "/query" else r.json()


def said(api, text: str, at: str) -> None:
    r = api.post(f"{CTX}/facts", {"text": text, "infer": "none", "observedAt": at})
    assert r.status == 200, r.text


@pytest.mark.parametrize("instant", ["asOf", "atInstant"])
def test_turns_said_after_the_instant_are_not_seen(api, instant):
    said(api, "Project Falcon status: design review scheduled", JAN)
    said(api, "Project Falcon status: launched to all customers", MAR)
    ask = {"query": "Project Falcon status", "include": ["turn"], "mode": "bm25"}
    now = [h["text"] for h in hits(api, ask)]
    assert len(now) == 2
    feb = [h["text"] for h in hits(api, {**ask, instant: FEB})]
    assert feb == ["Project Falcon status: design review scheduled"]
    assert len(hits(api, {**ask, instant: APR})) == 2
    assert hits(api, {**ask, instant: "2023-12-31T00:00:00Z"}) == []
    context = hits(api, {"query": "Project Falcon status", instant: FEB}, "/context")["context"]
    assert "design review" in context and "launched" not in context


def test_documents_observed_after_the_instant_are_not_seen(api):
    r = api.post(f"{CTX}/documents", {"title": "Falcon launch memo", "observedAt": MAR,
                                      "text": "# Falcon\n\nThe Falcon launch reached every customer region."})
    assert r.status in (200, 202), r.text
    get_runtime().ingestion_queue.join(timeout=60)
    ask = {"query": "Falcon launch customer region", "include": ["chunk"], "mode": "bm25"}
    assert hits(api, ask), "the chunk is found now"
    assert hits(api, {**ask, "asOf": FEB}) == []
    assert hits(api, {**ask, "asOf": APR})
    # a window that ends before it was observed does not hold it either
    assert hits(api, {**ask, "validFrom": JAN, "validUntil": FEB}) == []

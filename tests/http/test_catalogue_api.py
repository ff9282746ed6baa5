"""The lists the inspector's pickers page through (contexts, sessions, threads, documents),
on both stores, in process and over HTTP: cursor paging, and filtering by access (read
region, reader lists, bound contexts and partitions) like every read."""

from __future__ import annotations

from typing import Any

CTX = "/api/v1/acme"


def pages(api: Any, path: str, limit: int, headers: dict[str, str] | None = None) -> tuple[list[dict], int]:
    items, cursor, count = [], None, 0
    while True:
        sep = "&" if "?" in path else "?"
        r = api.request("GET", f"{path}{sep}limit={limit}" + (f"&cursor={cursor}" if cursor else ""),
                        headers=headers)
        assert r.status == 200, r.text
        body = r.json()
        count += 1
        # /documents is paged by number too: its cursor sits beside the page number
        info = body["page"] if isinstance(body["page"], dict) else body
        items += body["documents" if "documents" in body else "items"]
        if not info["hasMore"]:
            assert info["nextCursor"] is None
            return items, count
        cursor = info["nextCursor"]


def test_sessions_threads_and_documents_are_listed_and_paged(any_api):
    made = []
    for _ in range(5):
        r = any_api.post(f"{CTX}/sessions")
        assert r.status == 201, r.text
        made.append(r.json()["id"])
    sessions, count = pages(any_api, f"{CTX}/sessions", 2)
    assert [s["id"] for s in sessions] == made and count == 3
    for t in ("t-1", "t-2", "t-3"):
        assert any_api.post(f"{CTX}/threads/{t}/turns", {"text": f"hello {t}"}).status == 201
    threads, _ = pages(any_api, f"{CTX}/threads", 2)
    assert [t["threadId"] for t in threads] == ["t-1", "t-2", "t-3"]
    assert threads[0]["turnCount"] == 1
    r = any_api.post(f"{CTX}/documents", {"text": "# Handbook\n\nShips on Fridays.", "title": "Handbook"})
    assert r.status in (200, 202), r.text
    docs, _ = pages(any_api, f"{CTX}/documents", 10)
    assert [(d["id"], d["title"]) for d in docs] == [(r.json()["id"], "Handbook")]
    assert docs[0]["status"] in ("ingesting", "ready")


def test_lists_stay_inside_their_partition_and_context(any_api):
    any_api.post(f"{CTX}/sessions", headers={"x-memory-partition": "p1"})
    assert pages(any_api, f"{CTX}/sessions", 10)[0] == []
    assert len(pages(any_api, f"{CTX}/sessions", 10, {"x-memory-partition": "p1"})[0]) == 1
    assert pages(any_api, "/api/v1/other/sessions", 10)[0] == []


def test_a_deleted_session_is_not_listed(any_api):
    sid = any_api.post(f"{CTX}/sessions").json()["id"]
    assert any_api.request("DELETE", f"{CTX}/sessions/{sid}").status == 204
    assert pages(any_api, f"{CTX}/sessions", 10)[0] == []


def test_contexts_written_to_are_listed_with_their_partitions(any_api):
    for ctx in ("beta", "alpha", "gamma"):
        assert any_api.post(f"/api/v1/{ctx}/facts", {"text": "hello", "infer": "none"}).status == 200
    any_api.post("/api/v1/alpha/sessions", headers={"x-memory-partition": "p7"})
    found, count = pages(any_api, "/api/v1/contexts", 2)
    assert [c["contextId"] for c in found] == ["alpha", "beta", "gamma"] and count == 2
    assert found[0]["partitions"] == ["default", "p7"]
    assert found[1]["partitions"] == ["default"]


def test_bad_cursors_and_limits_are_400(any_api):
    for path in ("/api/v1/contexts", f"{CTX}/sessions", f"{CTX}/threads", f"{CTX}/documents"):
        assert any_api.get(f"{path}?cursor=nonsense").status == 400
        assert any_api.get(f"{path}?limit=0").status == 400
    other = any_api.post("/api/v1/other/sessions")  # a cursor of another collection or context
    assert other.status == 201
    for _ in range(3):
        any_api.post(f"{CTX}/sessions")
    cursor = any_api.get(f"{CTX}/sessions?limit=1").json()["page"]["nextCursor"]
    assert any_api.get(f"/api/v1/other/sessions?cursor={cursor}").status == 400
    assert any_api.get(f"{CTX}/threads?cursor={cursor}").status == 400

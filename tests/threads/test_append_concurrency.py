"""Fifty concurrent appends to one thread: dense turn_index, no lost or duplicate turn."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from agent_memory.access.request_context import RequestContext
from agent_memory.models.threads import AppendThreadTurnRequest

N = 50


def test_fifty_parallel_appends_get_dense_unique_indexes(runtime):
    ctx = RequestContext(context_id="acme", principal="p", admin=True)
    threads = runtime.threads

    def append(i: int) -> tuple[int, str]:
        turn = threads.append(ctx, "busy", AppendThreadTurnRequest(text=f"m{i}"))
        return turn.turn_index, turn.id

    with ThreadPoolExecutor(max_workers=N) as pool:
        results = list(pool.map(append, range(N)))
    assert sorted(i for i, _ in results) == list(range(1, N + 1))
    assert len({tid for _, tid in results}) == N
    page = threads.list_turns(ctx, "busy", limit=500, page_cursor=None, after_index=None, entity_id=None)
    assert [t.turn.turn_index for t in page.items] == list(range(1, N + 1))
    assert sorted(t.text for t in page.items) == sorted(f"m{i}" for i in range(N))
    assert {t.turn.id for t in page.items} == {tid for _, tid in results}
    assert threads.get_thread(ctx, "busy").turn_count == N
    # every turn reached the search index exactly once
    assert all(runtime.search.get("acme", tid) is not None for _, tid in results)


# Over DynamoDB, moto serialises every call, so fifty contending appends through the
# server can outlast the client's timeout on a loaded machine; the same race over DynamoDB
# is the in-process test above.
@pytest.mark.over_http
def test_fifty_parallel_appends_over_http(sdk):
    client = sdk()
    with ThreadPoolExecutor(max_workers=N) as pool:
        refs = list(pool.map(lambda i: client.append_thread("busy-http", f"m{i}"), range(N)))
    assert sorted(r.turn_index for r in refs) == list(range(1, N + 1))
    turns = list(client.list_thread_turns("busy-http", page_size=7))
    assert [t["turnIndex"] for t in turns] == list(range(1, N + 1))
    assert len({t["turnId"] for t in turns}) == N

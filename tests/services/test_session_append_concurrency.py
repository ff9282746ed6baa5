"""Concurrent appends to one session keep turn seq dense, with no lost or duplicate turn."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from agent_memory.access.request_context import RequestContext
from agent_memory.services.conversation.sessions import NewTurn


def test_twenty_concurrent_appends_are_dense(runtime):
    ctx = RequestContext(context_id="acme", principal="p", admin=True)
    sessions = runtime.sessions
    sid = sessions.create(ctx, [], []).id

    def append(i: int) -> int:
        session = sessions.resolve_for_write(ctx, sid, [], [])
        return sessions.append_turns(ctx, session, [NewTurn("user", f"m{i}")], [], [])[0].seq

    with ThreadPoolExecutor(max_workers=8) as pool:
        seqs = list(pool.map(append, range(20)))
    assert sorted(seqs) == list(range(1, 21))
    turns = sessions.list_turns(ctx, sid, 100, None).items
    assert [t.seq for t in turns] == list(range(1, 21))
    assert sorted(t.content for t in turns) == sorted(f"m{i}" for i in range(20))

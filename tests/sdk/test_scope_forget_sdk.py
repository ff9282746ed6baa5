"""The Python SDK's ``forget_scope``: ``forgotten`` as before, and ``complete``/``continuation``
(added fields) to finish a forget the request deadline cut short."""

from __future__ import annotations

from agent_memory.kernel import deadline
from agent_memory.services.operations import scope_registry as scopes_module


def test_forget_scope_resumes_with_its_continuation_until_complete(memory, monkeypatch):
    triples = [{"entity": {"type": "person", "name": f"p{n}"}, "key": "job_title", "value": "x"} for n in range(9)]
    memory.remember("import", infer="triples", triples=triples, scopes="team/a")
    monkeypatch.setattr(scopes_module, "_BATCH", 3)
    monkeypatch.setattr(deadline, "remaining", lambda: 1.0)  # one batch a call
    first = memory.forget_scope("team/a")
    assert first.complete is False and first.continuation and first.forgotten >= 1
    total, answer = first.forgotten, first
    while not answer.complete:
        answer = memory.forget_scope("team/a", continuation=answer.continuation)
        total += answer.forgotten
    assert answer.continuation is None and total >= 9
    monkeypatch.undo()
    assert memory.forget_scope("team/a").forgotten == 0

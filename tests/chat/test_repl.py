"""The terminal chat loop against the local server over real HTTP."""

from __future__ import annotations

import pytest

from agent_memory.client import AgentMemory
from agent_memory.interfaces.terminal_chat import run_repl


@pytest.fixture
def sdk(server):
    with AgentMemory("acme", base_url=server) as memory:
        yield memory


def test_repl_prints_replies_citations_and_corrections(sdk, model):
    inputs = iter(["I live in London.", "", "I moved to Berlin.", "Where do I live?", "exit"])
    out: list[str] = []
    sid = run_repl(sdk, None, read=lambda prompt: next(inputs), write=out.append)
    text = "\n".join(out)
    assert sid and sid.startswith("sess_")
    assert "[memory corrected] London -> Berlin" in text
    assert any(line.startswith("Agent: ") and "Berlin" in line for line in out)
    assert any(line.strip().startswith("[S1]") for line in out)
    assert out[-1] == f"(session {sid}; resume with --session {sid})"


def test_repl_reports_errors_and_continues(sdk, model):
    inputs = iter(["x" * (40 * 1024), "hello"])

    def read(prompt):
        try:
            return next(inputs)
        except StopIteration:
            raise EOFError from None

    out: list[str] = []
    run_repl(sdk, None, read=read, write=out.append)
    assert out[0].startswith("agent-memory chat: context acme at ")  # the banner, then the error
    assert out[2].startswith("  [error 413]")
    assert any(line.startswith("Agent: ") for line in out)

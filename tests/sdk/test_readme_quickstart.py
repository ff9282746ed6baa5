"""The SDK examples run as printed (the URL pointed at the test server): the README tour's
snippet and the fuller example of docs/sdk.md."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def python_block(path: Path, heading: str, nth: int = 0) -> str:
    section = path.read_text(encoding="utf-8").split(heading, 1)[1].split("\n### ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)[nth]


def run(code: str, env_server: str, name: str) -> dict:
    namespace: dict = {}
    exec(compile(code.replace("http://127.0.0.1:8080", env_server), name, "exec"), namespace)
    return namespace


def test_readme_tour_snippet_runs(env_server, model, capsys):
    code = python_block(ROOT / "README.md", "### From Python")
    assert len(code.strip().splitlines()) <= 15
    run(code, env_server, "README.md")
    out = capsys.readouterr().out
    assert "[S1]" in out or "Berlin" in out


def test_readme_async_streaming_snippet_runs(env_server, model, capsys):
    """The README's async stream: awaited, then iterated: text deltas, then the response."""
    from agent_memory.client import AgentMemory

    with AgentMemory("acme", base_url=env_server) as memory:
        memory.remember("I live in Lisbon.")
    code = python_block(ROOT / "README.md", "### From Python", nth=1)
    assert "async for part in await memory.chat(" in code
    run(code, env_server, "README.md")
    lines = capsys.readouterr().out.splitlines()
    assert "Lisbon" in "".join(lines[:-1])  # the deltas
    assert lines[-1].startswith("[Citation(") and "Lisbon" in lines[-1]


def test_sdk_page_example_runs(env_server, model, capsys):
    code = python_block(ROOT / "docs" / "sdk.md", "## Example")
    assert len(code.strip().splitlines()) <= 20
    namespace = run(code, env_server, "docs/sdk.md")
    asyncio.run(namespace["main"]())
    out = capsys.readouterr().out
    assert "[S1]" in out or "Berlin" in out

"""docs/sdk.md "The official Spectron client": each of its blocks runs as printed against the
local server (the URL pointed at the test server), with the official client, and prints what
the page says it does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "docs" / "sdk.md").read_text(encoding="utf-8").split("## The official Spectron client", 1)[1]
BLOCKS = dict(re.findall(r"\n### ([^\n]+)\n.*?```python\n(.*?)```", SECTION, re.S))


def test_the_page_has_the_flows():
    assert set(BLOCKS) == {"Remember: sessions you name, categories, triples", "Recall, context and time",
                           "Chat, streaming and the trace", "Entities, history, state and forget",
                           "Access: principals, keys and delegation"}


@pytest.mark.parametrize("store_kind", ["sqlite"], indirect=True)
@pytest.mark.parametrize("title", sorted(BLOCKS))
def test_block_runs_as_printed(env_server, model, capsys, title):
    code = BLOCKS[title].replace("http://127.0.0.1:8080", env_server)
    exec(compile(code, f"docs/sdk.md: {title}", "exec"), {})
    out = capsys.readouterr().out
    expected = {
        "Remember: sessions you name, categories, triples": ["['Acme acquired Beta']", "['context']"],
        "Recall, context and time": ["Lisbon", "[]"],
        "Chat, streaming and the trace": ["CTO", "trace what's my role?"],
        "Entities, history, state and forget": ["('Initech', '2021-06-30T00:00:00.000Z')", "('Acme', None)", "True"],
        "Access: principals, keys and delegation": ["memory:read", "409"],
    }[title]
    assert all(e in out for e in expected), out

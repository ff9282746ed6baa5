"""Calls every tool function of spectron-pydantic-ai and spectron-strands-agents directly
(no agent, no model) against a running server, and prints one JSON report.

Run with the integrations' own interpreter (.venv-integrations/bin/python), which has those
packages and not agent_memory: ``python drive_tools.py ENDPOINT CONTEXT API_KEY``. Each tool
is called in a scenario order (write, then read it back, then forget), and the report gives,
per package and tool, ``{"ok": bool, "result": str}`` or ``{"ok": false, "error": str}``;
tests/integrations/test_tools.py decides what each should be."""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
import traceback
from typing import Any

FACT = "My favourite city is Lisbon and I work as a ferry pilot"
QUERY = "what is my favourite city"


def outcome(call: Any) -> dict[str, Any]:
    try:
        result = call()
        if inspect.isawaitable(result):
            result = asyncio.get_event_loop().run_until_complete(result)
        return {"ok": True, "result": str(result)}
    except Exception as exc:  # the report says what failed and how
        last = traceback.extract_tb(exc.__traceback__)[-1]
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "at": f"{last.filename}:{last.lineno}"}


def pydantic_ai(endpoint: str, context: str, api_key: str) -> dict[str, Any]:
    from spectron_pydantic_ai import ALL_TOOLS, SpectronMemory, SpectronToolset

    memory = SpectronMemory.connect(context, endpoint, api_key, max_retries=0)
    toolset = SpectronToolset(memory, tools=ALL_TOOLS)
    tools = {name: t.function for name, t in toolset.tools.items()}
    args = {"remember": {"content": FACT}, "recall": {"query": QUERY}, "context": {"query": ""},
            "reflect": {"query": QUERY}, "forget": {"target": "Lisbon"}}
    order = ["remember", "recall", "context", "reflect", "forget"]
    report = {name: outcome(lambda n=name: tools[n](**args[n])) for name in order if name in tools} | {
        name: {"ok": False, "error": "not called: no arguments known for it"} for name in tools if name not in order}
    outcome(lambda: memory.client.close())
    return report


def strands(endpoint: str, context: str, api_key: str) -> dict[str, Any]:
    from spectron_strands import spectron_tools
    from surrealdb.spectron import Spectron

    # The package's own build_client imports ``surrealdb.Spectron``, which surrealdb 3.0.0a4
    # exports only as ``surrealdb.spectron.Spectron``: hand it a client, as its docs allow.
    client = Spectron(context, endpoint=endpoint, api_key=api_key, max_retries=0)
    tools = {t.tool_name.removeprefix("spectron_"): t for t in spectron_tools(client)}
    args = {"remember": {"text": FACT}, "recall": {"query": QUERY}, "context": {"query": QUERY},
            "reflect": {}, "upload": {"content": "Ferry timetable: departures every hour.", "name": "ferry.txt"},
            "inspect": {"query": "entity:person/user"}, "forget": {"query": "Lisbon"}}
    order = ["remember", "recall", "context", "reflect", "upload", "inspect", "forget"]
    return {name: outcome(lambda n=name: tools[n](**args[n])) for name in order if name in tools} | {
        name: {"ok": False, "error": "not called: no arguments known for it"} for name in tools if name not in order}


def main() -> None:
    endpoint, context, api_key = sys.argv[1:4]
    asyncio.set_event_loop(asyncio.new_event_loop())
    report = {"spectron-pydantic-ai": pydantic_ai(endpoint, context, api_key),
              "spectron-strands-agents": strands(endpoint, context, api_key)}
    print(json.dumps(report))


if __name__ == "__main__":
    main()

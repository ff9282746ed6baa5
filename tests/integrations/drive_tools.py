"""Calls every tool of the six Spectron agent-framework integrations directly (no agent, no
model) against a running server and checks each call's effect there, then prints one JSON
report.

Run with the integrations' own interpreter (.venv-integrations/bin/python), which has those
packages and their frameworks but not agent_memory: ``python drive_tools.py ENDPOINT
CONTEXT API_KEY``. Each package works in its own context (``CONTEXT-<short>``), in a
scenario order (write, read it back, the other verbs, then forget). A tool is ``ok`` when the
call returned without error *and* its effect holds: a write is found on the server (in the
session it names, where it names one), a read returns what was written, a forget leaves it
unfound, an upload is listed. The report gives, per package and tool, ``{"ok": bool,
"result": str}`` or ``{"ok": false, "error": str, "at": file:line}``; an integration that
swallows errors (crewai, hermes, openai-agents return a message instead of raising) fails
on its effect check. tests/integrations/test_tools.py decides what each should be."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx

FACT = "My favourite city is Lisbon and I work as a ferry pilot"
QUERY = "what is my favourite city"
TOKEN = "Lisbon"


class Server:
    """The effect checks: plain HTTP reads of one context."""

    def __init__(self, endpoint: str, context: str, api_key: str):
        self.base = f"{endpoint.rstrip('/')}/api/v1/{context}"
        self.http = httpx.Client(headers={"Authorization": f"Bearer {api_key}"}, timeout=30)

    def _get(self, path: str) -> Any:
        r = self.http.get(self.base + path)
        r.raise_for_status()
        return r.json()

    def turns_with(self, text: str) -> list[str]:
        """Turns containing ``text`` (searched by keyword; projection is asynchronous, so a
        short wait)."""
        for _ in range(30):
            r = self.http.post(self.base + "/query", json={"query": text, "mode": "bm25", "include": ["turn"], "k": 20})
            r.raise_for_status()
            found = [h["text"] for h in r.json()["hits"] if text.lower() in h["text"].lower()]
            if found:
                return found
            time.sleep(0.1)
        return []

    def stored(self, text: str = TOKEN) -> str | None:
        return None if self.turns_with(text) else f"nothing containing {text!r} was stored"

    def gone(self, text: str = TOKEN) -> str | None:
        r = self.http.post(self.base + "/query", json={"query": text, "mode": "bm25", "include": ["turn"], "k": 20})
        r.raise_for_status()
        left = [h["text"] for h in r.json()["hits"] if text.lower() in h["text"].lower()]
        return f"still found after forget: {left[:2]}" if left else None

    def in_session(self, session_id: str, text: str = TOKEN) -> str | None:
        r = self.http.get(f"{self.base}/sessions/{quote(session_id, safe='')}/turns")
        if r.status_code != 200:
            return f"session {session_id!r}: {r.status_code} {r.text[:200]}"
        contents = [t["content"] for t in r.json()["turns"]]
        return None if any(text in c for c in contents) else f"session {session_id!r} lacks it: {contents[:3]}"

    def document_listed(self, title: str) -> str | None:
        for _ in range(30):
            items = self._get("/documents")["documents"]
            if any(title in json.dumps(d) for d in items):
                return None
            time.sleep(0.1)
        return f"no document {title!r} listed"


def says(text: str = TOKEN) -> Callable[[Any], str | None]:
    return lambda result: None if text.lower() in str(result).lower() else f"the answer lacks {text!r}"


def no_error(result: Any) -> str | None:
    """For integrations that return failures as data instead of raising."""
    text = str(result)
    markers = ("'status': 'error'", '"error"', "unavailable", "Error:", "error occurred", "An error")
    return f"the tool reported a failure: {text[:300]}" if any(m in text for m in markers) else None


def run(call: Callable[[], Any], *checks: Callable[[Any], str | None]) -> dict[str, Any]:
    try:
        result = call()
        if inspect.isawaitable(result):
            result = asyncio.get_event_loop().run_until_complete(result)
    except Exception as exc:  # the report says what failed and where
        last = traceback.extract_tb(exc.__traceback__)[-1]
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "at": f"{last.filename}:{last.lineno}"}
    for check in checks:
        try:
            problem = check(result)
        except Exception as exc:
            problem = f"checking it: {type(exc).__name__}: {exc}"
        if problem:
            return {"ok": False, "error": problem, "result": str(result)[:500]}
    return {"ok": True, "result": str(result)[:500]}


class LogTail(logging.Handler):
    """The last warning the integrations' loggers wrote (crewai and hermes log what they swallow)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.name}: {record.getMessage()}")


LOGS = LogTail()
logging.getLogger().addHandler(LOGS)


def swallowed(before: int) -> Callable[[Any], str | None]:
    """The integration logged a failure it then hid from its caller."""
    return lambda _: ("logged a failure: " + LOGS.records[-1][:300]) if len(LOGS.records) > before else None


# --- the six packages --------------------------------------------------------------------------


def pydantic_ai(endpoint: str, context: str, api_key: str) -> dict[str, Any]:
    from spectron_pydantic_ai import ALL_TOOLS, SpectronMemory, SpectronToolset

    srv = Server(endpoint, context, api_key)
    memory = SpectronMemory.connect(context, endpoint, api_key, max_retries=0)
    tools = {name: t.function for name, t in SpectronToolset(memory, tools=ALL_TOOLS).tools.items()}
    scoped = memory.scoped(session_id="pyd-session-1")
    scoped_tools = {name: t.function for name, t in SpectronToolset(scoped, tools=ALL_TOOLS).tools.items()}
    report = {
        "remember": run(lambda: tools["remember"](content=FACT), lambda _: srv.stored()),
        "recall": run(lambda: tools["recall"](query=QUERY), says()),
        "context": run(lambda: tools["context"](query=QUERY), says()),
        "reflect": run(lambda: tools["reflect"](query=QUERY)),
        "remember (scoped session)": run(lambda: scoped_tools["remember"](content=FACT),
                                         lambda _: srv.in_session("pyd-session-1")),
        "forget": run(lambda: tools["forget"](target=TOKEN), lambda _: srv.gone()),
    }
    run(lambda: memory.client.close())
    return report


def strands(endpoint: str, context: str, api_key: str) -> dict[str, Any]:
    from spectron_strands import spectron_tools
    from surrealdb.spectron import Spectron

    srv = Server(endpoint, context, api_key)
    # The package's own build_client imports ``surrealdb.Spectron``, which surrealdb 3.0.0a4
    # exports only as ``surrealdb.spectron.Spectron`` (docs/integrations.md): hand it a client.
    client = Spectron(context, endpoint=endpoint, api_key=api_key, max_retries=0)
    tools = {t.tool_name.removeprefix("spectron_"): t for t in spectron_tools(client)}
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("Ferry timetable: departures every hour.")
    return {
        "remember": run(lambda: tools["remember"](text=FACT), lambda _: srv.stored()),
        "recall": run(lambda: tools["recall"](query=QUERY), says()),
        "context": run(lambda: tools["context"](query=QUERY), says()),
        "reflect": run(lambda: tools["reflect"]()),
        "upload": run(lambda: tools["upload"](content="Ferry timetable: departures every hour.", name="ferry.txt"),
                      lambda _: srv.document_listed("ferry")),
        "inspect": run(lambda: tools["inspect"](query="entity:person/user")),
        "forget": run(lambda: tools["forget"](query=TOKEN), lambda _: srv.gone()),
    }


def crewai(endpoint: str, context: str, api_key: str) -> dict[str, Any]:
    from spectron_crewai import SpectronConfig, get_sessionized_spectron_tools, get_spectron_tools

    srv = Server(endpoint, context, api_key)
    config = SpectronConfig(endpoint=endpoint, context=context, api_key=api_key, max_retries=0)
    tools = {t.name.removeprefix("spectron_"): t for t in get_spectron_tools(config=config)}
    user = {t.name.removeprefix("spectron_"): t for t in get_sessionized_spectron_tools("user-123", config=config)}
    with tempfile.NamedTemporaryFile("w", suffix=".md", prefix="crew-handbook-", delete=False) as f:
        f.write("# Crew handbook\n\nThe ferry leaves from pier 4 every hour.")
    report = {}
    for name, call, checks in [
        ("remember", lambda: tools["remember"].run(text=FACT), [lambda _: srv.stored()]),
        ("recall", lambda: tools["recall"].run(query=QUERY), [says()]),
        ("context", lambda: tools["context"].run(query=QUERY), [says()]),
        ("reflect", lambda: tools["reflect"].run(query=QUERY), [no_error]),
        ("upload", lambda: tools["upload"].run(path=f.name, title="Crew handbook"),
         [no_error, lambda _: srv.document_listed("Crew handbook")]),
        ("remember (sessionized)", lambda: user["remember"].run(text="I sail on the Tagus every Sunday"),
         [no_error, lambda _: srv.stored("Tagus")]),
        ("recall (sessionized)", lambda: user["recall"].run(query="where do I sail"), [says("Tagus")]),
        ("forget", lambda: tools["forget"].run(query=TOKEN), [no_error, lambda _: srv.gone()]),
    ]:
        before = len(LOGS.records)
        report[name] = run(call, swallowed(before), *checks)
    os.unlink(f.name)
    return report


def google_adk(endpoint: str, context: str, api_key: str) -> dict[str, Any]:
    from spectron_google_adk import SpectronToolset
    from surrealdb.spectron import AsyncSpectron

    srv = Server(endpoint, context, api_key)
    loop = asyncio.get_event_loop()
    client = AsyncSpectron(context, endpoint=endpoint, api_key=api_key, max_retries=0)
    toolset = SpectronToolset(client=client, session_id="adk-session-1")
    tools = {t.name: t.func for t in loop.run_until_complete(toolset.get_tools())}
    # remember fails in the package (below); the reads need something to read, written as the
    # client's README does
    run(lambda: client.remember(FACT, session_id="adk-session-1"))
    report = {
        "remember": run(lambda: tools["remember"](text=FACT), no_error, lambda _: srv.in_session("adk-session-1")),
        "recall": run(lambda: tools["recall"](query=QUERY), no_error, says()),
        "query_context": run(lambda: tools["query_context"](query=QUERY), no_error, says()),
        "reflect": run(lambda: tools["reflect"](query=QUERY), no_error),
        "chat": run(lambda: tools["chat"](message="Where is my favourite city?"), no_error,
                    lambda _: srv.in_session("adk-session-1", "Where is my favourite city?")),
        "consolidate": run(lambda: tools["consolidate"](), no_error),
        "elaborate": run(lambda: tools["elaborate"](entity_ref="entity:person/user"), no_error),
        "inspect": run(lambda: tools["inspect"](ref="entity:person/user"), no_error),
        "state": run(lambda: tools["state"](), no_error),
        "forget": run(lambda: tools["forget"](query=TOKEN), no_error, lambda _: srv.gone()),
    }
    loop.run_until_complete(client.close())
    return report


def hermes(endpoint: str, context: str, api_key: str) -> dict[str, Any]:
    from spectron_hermes.provider import SpectronMemoryProvider

    srv = Server(endpoint, context, api_key)
    home = tempfile.mkdtemp(prefix="hermes-home-")
    os.environ.update({"SPECTRON_ENDPOINT": endpoint, "SPECTRON_CONTEXT": context, "SPECTRON_API_KEY": api_key,
                       "SPECTRON_MAX_RETRIES": "0", "SPECTRON_CONSOLIDATE_ON_END": "false"})
    provider = SpectronMemoryProvider()
    provider.initialize("hermes-session-1", hermes_home=home)
    with tempfile.NamedTemporaryFile("w", suffix=".md", prefix="hermes-notes-", delete=False) as f:
        f.write("# Hermes notes\n\nThe ferry pilot's shift starts at six.")

    def tool(name: str, **args: Any) -> Callable[[], Any]:
        return lambda: json.loads(provider.handle_tool_call(name, args))

    def sync_turn() -> Any:
        provider.sync_turn("I keep my kayak at the Belem marina", "Noted, your kayak is at Belem.")
        provider._write_q.join()  # the write runs on the provider's worker thread
        return "queued"

    report = {}
    for name, call, checks in [
        ("spectron_remember", tool("spectron_remember", text=FACT), [no_error, lambda _: srv.stored()]),
        ("spectron_recall", tool("spectron_recall", query=QUERY), [no_error, says()]),
        ("spectron_context", tool("spectron_context", query=QUERY), [no_error, says()]),
        ("spectron_reflect", tool("spectron_reflect", query=QUERY), [no_error]),
        ("spectron_upload", tool("spectron_upload", path=f.name, title="Hermes notes"),
         [no_error, lambda _: srv.document_listed("Hermes notes")]),
        ("sync_turn", sync_turn, [lambda _: srv.in_session("hermes-session-1", "kayak")]),
        ("prefetch", lambda: provider.prefetch("where is my kayak"), [says("kayak")]),
        ("spectron_forget", tool("spectron_forget", query=TOKEN), [no_error, lambda _: srv.gone()]),
    ]:
        before = len(LOGS.records)
        report[name] = run(call, swallowed(before), *checks)
    provider.shutdown()
    os.unlink(f.name)
    return report


def openai_agents(endpoint: str, context: str, api_key: str) -> dict[str, Any]:
    from agents.tool_context import ToolContext
    from spectron_openai_agents_sdk import (
        MemoryScope,
        SpectronClient,
        SpectronMemoryHooks,
        get_spectron_tools,
    )
    from surrealdb.spectron import AsyncSpectron

    srv = Server(endpoint, context, api_key)
    loop = asyncio.get_event_loop()
    # SpectronClient.from_settings imports ``surrealdb.AsyncSpectron``, which 3.0.0a4 exports
    # only from ``surrealdb.spectron`` (docs/integrations.md): wrap a client, as its docs allow.
    client = SpectronClient.from_sdk(AsyncSpectron(context, endpoint=endpoint, api_key=api_key, max_retries=0))
    tools = {t.name: t for t in get_spectron_tools(client, session_id="user-123")}

    def invoke(name: str, **args: Any) -> Callable[[], Any]:
        payload = json.dumps(args)
        ctx = ToolContext(context=None, tool_name=name, tool_call_id=f"call-{name}", tool_arguments=payload)
        return lambda: tools[name].on_invoke_tool(ctx, payload)

    class _Agent:
        name = "assistant"

    hooks = SpectronMemoryHooks(client, MemoryScope(session_id="user-123"))
    report = {
        "remember": run(invoke("remember", content=FACT), no_error, lambda _: srv.in_session("user-123")),
        "remember (episodic)": run(invoke("remember", content="Yesterday I docked at Cacilhas",
                                          memory_category="episodic"), no_error,
                                   lambda _: srv.stored("Cacilhas")),
        "recall": run(invoke("recall", query=QUERY), no_error, says()),
        "context": run(invoke("context", query=QUERY), no_error, says()),
        "reflect": run(invoke("reflect", query=QUERY), no_error),
        "hooks.on_agent_end": run(lambda: hooks.on_agent_end(None, _Agent(), "The ferry to Barreiro runs at noon"),
                                  lambda _: srv.stored("Barreiro")),
        "forget": run(invoke("forget", query=TOKEN), no_error, lambda _: srv.gone()),
    }
    loop.run_until_complete(client.close())
    return report


PACKAGES = {
    "spectron-pydantic-ai": ("pyd", pydantic_ai),
    "spectron-strands-agents": ("strands", strands),
    "spectron-crew-ai": ("crew", crewai),
    "spectron-google-adk": ("adk", google_adk),
    "spectron-hermes": ("hermes", hermes),
    "spectron-openai-agents-sdk": ("oai", openai_agents),
}


def main() -> None:
    endpoint, context, api_key = sys.argv[1:4]
    only = set(sys.argv[4].split(",")) if len(sys.argv) > 4 else None
    asyncio.set_event_loop(asyncio.new_event_loop())
    report: dict[str, Any] = {}
    for package, (short, drive) in PACKAGES.items():
        if only and package not in only:
            continue
        try:
            report[package] = drive(endpoint, f"{context}-{short}", api_key)
        except Exception as exc:  # set-up failed: the package cannot be driven at all
            last = traceback.extract_tb(exc.__traceback__)[-1]
            report[package] = {"(set-up)": {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                                            "at": f"{last.filename}:{last.lineno}"}}
    print(json.dumps(report))


if __name__ == "__main__":
    main()

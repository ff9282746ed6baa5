"""``agent-memory chat``: a terminal chat loop against the local service or a deployed URL.

Prints each reply, its citations, and one ``[memory corrected] old -> new`` line per
correction the turn made."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

EXIT_WORDS = {"exit", "quit", ":q"}


def render_turn(body: dict[str, Any]) -> list[str]:
    lines = [f"Agent: {body['reply']}"]
    for c in body.get("citations", []):
        where = f" ({c['documentTitle']}, {c['positionPercent']}%)" if c.get("documentTitle") else ""
        role = f" {c['role']}" if c.get("role") else ""
        lines.append(f"  {c['marker']} {c['kind']}{role}{where}: {c['snippet']}")
    for c in (body.get("memoryUpdates") or {}).get("corrections", []):
        new = c["newValue"] or "(no longer true)"
        lines.append(f"  [memory corrected] {c['oldValue']} -> {new}")
    return lines


def run_repl(client: httpx.Client, context: str, session_id: str | None,
             read: Callable[[str], str] = input, write: Callable[[str], None] = print) -> str | None:
    """Loop until EOF or an exit word; returns the session id (to resume with --session)."""
    while True:
        try:
            message = read("You: ").strip()
        except EOFError:
            break
        if not message:
            continue
        if message.lower() in EXIT_WORDS:
            break
        payload: dict[str, Any] = {"message": message}
        if session_id:
            payload["sessionId"] = session_id
        resp = client.post(f"/api/v1/{context}/chat", json=payload)
        if resp.status_code != 200:
            try:
                problem = resp.json()
                write(f"  [error {resp.status_code}] {problem.get('title')}: {problem.get('detail')}")
            except ValueError:
                write(f"  [error {resp.status_code}] {resp.text[:200]}")
            continue
        body = resp.json()
        session_id = body["sessionId"]
        for line in render_turn(body):
            write(line)
    if session_id:
        write(f"(session {session_id}; resume with --session {session_id})")
    return session_id

"""``agent-memory chat``: a terminal chat loop over the SDK, against the local service or a
deployed URL.

Prints each reply, its citations, and one ``[memory corrected] old -> new`` line per
correction the turn made."""

from __future__ import annotations

from collections.abc import Callable

from agent_memory.client import AgentMemory, ApiError
from agent_memory.models.wire import ChatResponse

EXIT_WORDS = {"exit", "quit", ":q"}


def render_turn(result: ChatResponse) -> list[str]:
    lines = [f"Agent: {result.reply}"]
    for c in result.citations:
        where = f" ({c.document_title}, {c.position_percent}%)" if c.document_title else ""
        role = f" {c.role}" if c.role else ""
        lines.append(f"  {c.marker} {c.kind}{role}{where}: {c.snippet}")
    for c in result.memory_updates.corrections:
        lines.append(f"  [memory corrected] {c.previous.value} -> {c.current.value or '(no longer true)'}")
    return lines


def run_repl(memory: AgentMemory, session_id: str | None, read: Callable[[str], str] | None = None,
             write: Callable[[str], None] | None = None) -> str | None:
    """Loop until EOF (Ctrl-D), Ctrl-C or an exit word; returns the session id (to resume
    with --session), printed last. Ctrl-D and Ctrl-C end the prompt's line first. An error
    response is printed and the loop goes on; a service that cannot be reached ends it
    (``AgentMemoryError``)."""
    read = read or input  # looked up per call, so a replaced input() is honoured
    write = write or print
    while True:
        try:
            message = read("You: ").strip()
        except (EOFError, KeyboardInterrupt):
            write("")  # the prompt's line ends before the session line
            break
        if not message:
            continue
        if message.lower() in EXIT_WORDS:
            break
        try:
            result = memory.chat(message, session_id=session_id)
        except ApiError as exc:
            write(f"  [error {exc.status}] {exc.title}: {exc.detail}")
            continue
        except KeyboardInterrupt:  # while waiting on a reply: the turn may or may not be stored
            write("")
            break
        session_id = result.session_id
        for line in render_turn(result):
            write(line)
    if session_id:
        write(f"(session {session_id}; resume with --session {session_id})")
    return session_id


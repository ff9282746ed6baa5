"""``agent-memory chat``: a terminal chat loop over the SDK, against the local service or a
deployed URL.

Starts with a banner (context, URL, session, how to quit), then prints each reply, its
citations, and one ``[memory corrected] old -> new`` line per correction the turn made. A line
starting with ``/`` is a command of the loop (``/help``, ``/state``, ``/session``, ``/quit``) and is
never sent or stored; ``//`` sends a message that starts with ``/``."""

from __future__ import annotations

from collections.abc import Callable

from agent_memory.client import AgentMemory, ApiError
from agent_memory.interfaces.memory_text import state_lines
from agent_memory.models.wire import ChatResponse

EXIT_WORDS = {"exit", "quit", ":q"}
QUIT_COMMANDS = {"/quit", "/exit", "/q"}
COMMANDS = (("/help", "this list"), ("/state", "what memory holds now, by category"),
            ("/session", "this session's id (resume it with --session)"), ("/quit", "leave (also Ctrl-D)"))


def banner(memory: AgentMemory, session_id: str | None) -> list[str]:
    where = f"context {memory.context_id} at {memory.base_url}"
    if memory.partition:
        where += f", partition {memory.partition}"
    session = f"session {session_id}" if session_id else "a new session"
    return [f"agent-memory chat: {where}, {session}.",
            "Type a message; /help lists commands; /quit or Ctrl-D leaves."]


def _command(memory: AgentMemory, line: str, session_id: str | None, write: Callable[[str], None]) -> None:
    name = line.split()[0].lower()
    if name in ("/help", "/?"):
        for command, what in COMMANDS:
            write(f"  {command:<9} {what}")
        write("  //text    send a message that starts with /")
    elif name == "/state":
        for row in state_lines(memory.state()):
            write(row)
    elif name == "/session":
        write(f"  session {session_id}" if session_id else "  no session yet: the first message starts one")
    else:
        write(f"  unknown command {name}: /help lists them (// sends a message that starts with /)")


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
    """Loop until EOF (Ctrl-D), Ctrl-C, ``/quit`` or an exit word; returns the session id (to resume
    with --session), printed last. Ctrl-D and Ctrl-C end the prompt's line first. An error
    response is printed and the loop goes on; a service that cannot be reached ends it
    (``AgentMemoryError``)."""
    read = read or input  # looked up per call, so a replaced input() is honoured
    write = write or print
    for line in banner(memory, session_id):
        write(line)
    while True:
        try:
            message = read("You: ").strip()
        except (EOFError, KeyboardInterrupt):
            write("")  # the prompt's line ends before the session line
            break
        if not message:
            continue
        if message.lower() in EXIT_WORDS or message.split()[0].lower() in QUIT_COMMANDS:
            break
        if message.startswith("//"):
            message = message[1:]
        elif message.startswith("/"):  # the loop's own command: never a turn
            try:
                _command(memory, message, session_id, write)
            except ApiError as exc:
                write(f"  [error {exc.status}] {exc.title}: {exc.detail}")
            continue
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


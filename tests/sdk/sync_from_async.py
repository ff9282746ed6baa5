"""The sync client, generated from the async one, so the two cannot drift.

``client/aio.py`` is the source of the SDK's operations; ``client/sync.py`` is made from it,
and the sync ``ChatStream`` from ``AsyncChatStream`` in ``client/streaming.py``, the way
unasync does it: ``async``/``await`` dropped, ``AsyncX`` names become ``X``, the async
dunders and httpx methods their sync twins, a loop that only re-yields becomes ``yield
from``, and continuation lines move with the brackets they follow. The sync module has its
own docstring. What no rule says (imports, the thread pool that downloads turns where the
async client gathers coroutines) is data: ``CLIENT_REPLACEMENTS`` and ``STREAM_REPLACEMENTS``
pair a passage of the async source with the sync passage it becomes, and each passage must
occur exactly once, so a change to it stops the generator instead of slipping through.

``python tests/sdk/sync_from_async.py --write`` rewrites the generated code (``make generate-sdk``);
tests/sdk/test_sync_generated.py fails while the committed code differs.
"""

from __future__ import annotations

import io
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "shared" / "agent_memory" / "client"
TOOL = "tests/sdk/sync_from_async.py"

DROPPED = {"async", "await"}
# Names that are not ``Async`` + the sync name (those follow ASYNC_NAME).
RENAMED = {
    "__aenter__": "__enter__", "__aexit__": "__exit__", "__aiter__": "__iter__", "__anext__": "__next__",
    "aiter_lines": "iter_lines", "aiter_bytes": "iter_bytes", "aclose": "close", "asyncio": "time",
}
ASYNC_NAME = re.compile(r"^Async([A-Z]\w*)$")
# A loop that only re-yields is ``yield from`` in a sync generator (an async one cannot).
REYIELD = re.compile(r"^( *)for (\w+) in (.+):\n\1    yield \2\n", re.M)

SYNC_MODULE_DOC = '''"""``AgentMemory``: the synchronous client of the whole API.

    with AgentMemory("acme-prod", api_key=...) as memory:
        session = memory.sessions.create(scopes=["org/acme/user/alice"])
        result = memory.chat("What do you know about me?", session_id=session.id)
        print(result.reply, result.citations, result.memory_updates.corrections)
        session.close()

``AsyncAgentMemory`` (``agent_memory.client.aio``) has the same methods as coroutines.
Results are the service's own pydantic models (``agent_memory.models.wire``); errors are
``ApiError`` subclasses (``agent_memory.client.errors``).
"""'''

# (the async passage, the sync passage it becomes), per generated target.
CLIENT_REPLACEMENTS: list[tuple[str, str]] = [
    ("import asyncio\n", ""),
    ("from collections.abc import AsyncIterator, Awaitable, Callable, Iterable\n",
     "from collections.abc import Callable, Iterable, Iterator\nfrom concurrent.futures import ThreadPoolExecutor\n"),
    ("import AsyncTransport, Call\n", "import Call, Transport\n"),
    ("sleep: Callable[[float], Awaitable[None]] | None", "sleep: Callable[[float], None] | None"),
    ("With ``stream=True``, an ``AsyncChatStream``", "With ``stream=True``, a ``ChatStream``"),
    # The sync client downloads a batch of turns on threads where the async one gathers coroutines.
    ("""        for lo in range(0, len(items), step):
            batch = items[lo:lo + step]
            texts = await asyncio.gather(*(self._item_text(thread_id, item) for item in batch))
            for item, text in zip(batch, texts, strict=True):
                if text is None:  # gone or no longer readable since the context call
                    continue
                budget.add(text)
                out.append(common.memory_item(item, text))
            budget.check(lo + len(batch))
""", """        with ThreadPoolExecutor(max_workers=step, thread_name_prefix="memory-download") as pool:
            for lo in range(0, len(items), step):
                batch = items[lo:lo + step]
                texts = list(pool.map(lambda item: self._item_text(thread_id, item), batch))
                for item, text in zip(batch, texts, strict=True):
                    if text is None:  # gone or no longer readable since the context call
                        continue
                    budget.add(text)
                    out.append(common.memory_item(item, text))
                budget.check(lo + len(batch))
"""),
]

STREAM_REPLACEMENTS: list[tuple[str, str]] = [
    ('"""Async iterator of ``str`` deltas, then the ``ChatResponse``."""',
     '"""Iterator of ``str`` deltas, then the ``ChatResponse``. Use it in a ``with`` block, or\n'
     '    iterate to the end, so the connection is released."""'),
]

BEGIN = "# --- generated from AsyncChatStream above by tests/sdk/sync_from_async.py --write: do not edit ---\n"
END = "# --- end of generated code ---\n"


def _replace(source: str, replacements: list[tuple[str, str]], where: str) -> str:
    for old, new in replacements:
        count = source.count(old)
        if count != 1:
            raise SystemExit(f"{where}: {count} occurrences of a passage {TOOL} replaces (want 1); "
                             f"update its REPLACEMENTS:\n{old}")
        source = source.replace(old, new)
    return source


@dataclass
class _Line:
    text: str
    edits: list[tuple[int, int, str]]  # (start col, end col, replacement), left to right
    shift: int = 0  # columns the whole line moves to keep its alignment

    def new_col(self, col: int) -> int:
        moved = sum(len(new) - (end - start) for start, end, new in self.edits if end <= col)
        return col + self.shift + moved

    def render(self) -> str:
        out, at = [], 0
        for start, end, new in self.edits:
            out.append(self.text[at:start] + new)
            at = end
        out.append(self.text[at:])
        text = "".join(out)
        if self.shift and text.strip():
            indent = len(text) - len(text.lstrip(" "))
            text = " " * max(0, indent + self.shift) + text[indent:]
        return text


def unasync(source: str) -> str:
    """``source`` with async/await dropped and async names made sync, brackets kept aligned."""
    lines = [_Line(text, []) for text in source.splitlines(keepends=True)]
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for i, tok in enumerate(tokens):
        if tok.type != tokenize.NAME:
            continue
        row, col = tok.start
        line = lines[row - 1]
        if tok.string in DROPPED:
            following = tokens[i + 1]
            end = following.start[1] if following.start[0] == row else tok.end[1]
            line.edits.append((col, end, ""))
        elif tok.string in RENAMED:
            line.edits.append((col, tok.end[1], RENAMED[tok.string]))
        elif match := ASYNC_NAME.match(tok.string):
            line.edits.append((col, tok.end[1], match[1]))
    # A continuation line at or right of its open bracket moves with that bracket.
    brackets: list[tuple[int, int]] = []  # (row, col) of the open brackets
    first_on_row: dict[int, tokenize.TokenInfo] = {}
    inside_string: set[int] = set()
    for tok in tokens:
        if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
            inside_string.update(range(tok.start[0] + 1, tok.end[0] + 1))
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            row = tok.start[0]
            if row not in first_on_row and row not in inside_string:
                first_on_row[row] = tok
                if brackets and brackets[-1][0] != row:
                    open_row, open_col = brackets[-1]
                    if tok.start[1] >= open_col:
                        opener = lines[open_row - 1]
                        lines[row - 1].shift = opener.new_col(open_col) - open_col
        if tok.type == tokenize.OP and tok.string in "([{":
            brackets.append(tok.start)
        elif tok.type == tokenize.OP and tok.string in ")]}":
            brackets.pop()
    return REYIELD.sub(r"\1yield from \3\n", "".join(line.render() for line in lines))


def _header(source: str) -> str:
    return (f"# Generated from client/{source} by {TOOL}: do not edit. Change client/{source}, then run\n"
            f"# `python {TOOL} --write` (tests/sdk/test_sync_generated.py fails while this file differs).\n")


def sync_client() -> str:
    """client/sync.py as generated from client/aio.py."""
    source = (CLIENT / "aio.py").read_text(encoding="utf-8")
    source = re.sub(r'\A""".*?"""', lambda _: SYNC_MODULE_DOC, source, count=1, flags=re.S)  # its own docstring
    return _header("aio.py") + unasync(_replace(source, CLIENT_REPLACEMENTS, "client/aio.py"))


def streaming() -> str:
    """client/streaming.py with ``ChatStream`` generated from ``AsyncChatStream`` above it."""
    text = (CLIENT / "streaming.py").read_text(encoding="utf-8")
    start = text.index("class AsyncChatStream")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"client/streaming.py lost the markers of its generated part:\n{BEGIN}{END}")
    begin, end = text.index(BEGIN), text.index(END) + len(END)
    async_class = text[start:begin].rstrip("\n") + "\n"
    generated = unasync(_replace(async_class, STREAM_REPLACEMENTS, "AsyncChatStream"))
    return text[:begin] + BEGIN + generated + END + text[end:]


TARGETS = {CLIENT / "sync.py": sync_client, CLIENT / "streaming.py": streaming}


def stale() -> list[Path]:
    return [path for path, make in TARGETS.items() if path.read_text(encoding="utf-8") != make()]


if __name__ == "__main__":
    if "--write" in sys.argv:
        for path, make in TARGETS.items():
            path.write_text(make(), encoding="utf-8")
            print(f"{path.relative_to(REPO)} written")
    else:
        out = stale()
        for path in out:
            print(f"{path.relative_to(REPO)} differs from what {TOOL} generates")
        sys.exit(1 if out else 0)

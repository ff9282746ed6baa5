"""Progress of long commands (reindex, redrive, document upload, bench locomo): a rich
progress bar on a terminal, plain lines when the output is not one (a log, a pipe, CI).

Output goes to stderr, so a command's stdout stays its result. Without ``rich`` installed
(it comes with the ``cli`` extra) the plain lines are used everywhere.

    with ProgressBar("reindex acme", unit="records") as bar:
        for record in records:
            ...
            bar.advance()
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class ProgressBar:
    """One task's progress. ``total`` may be unknown (``None``) and set later by ``update``.

    ``terminal`` forces the mode (``None``: a bar when ``stream`` is a TTY). In plain mode a
    line is printed at most every ``interval`` seconds, and one when the task ends."""

    def __init__(self, description: str, total: int | None = None, *, unit: str = "items",
                 stream: TextIO | None = None, terminal: bool | None = None, interval: float = 2.0):
        self.description = description
        self.total = total
        self.unit = unit
        self.completed = 0
        self.stream = stream if stream is not None else sys.stderr
        if terminal is None:
            isatty = getattr(self.stream, "isatty", None)
            terminal = bool(isatty and isatty())
        self.interval = interval
        self._rich: Any = None
        self._task: Any = None
        self._last_line = float("-inf")
        self._closed = False
        if terminal:
            self._rich = _rich_progress(self.stream)
        if self._rich is not None:
            self._rich.start()
            self._task = self._rich.add_task(description, total=total, unit=unit)

    @property
    def is_terminal(self) -> bool:
        return self._rich is not None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(failed=exc[0] is not None)

    def advance(self, n: int = 1) -> None:
        self.update(completed=self.completed + n)

    def update(self, *, completed: int | None = None, total: int | None = None,
               description: str | None = None) -> None:
        if completed is not None:
            self.completed = completed
        if total is not None:
            self.total = total
        if description is not None:
            self.description = description
        if self._rich is not None:
            self._rich.update(self._task, completed=self.completed, total=self.total, description=self.description)
            return
        now = time.monotonic()
        if now - self._last_line >= self.interval:
            self._last_line = now
            self._line(self._status())

    def note(self, text: str) -> None:
        """A line of its own (above the bar on a terminal)."""
        if self._rich is not None:
            self._rich.console.print(text, markup=False, highlight=False)
        else:
            self._line(text)

    def close(self, *, failed: bool = False) -> None:
        if self._closed:
            return
        self._closed = True
        if self._rich is not None:
            self._rich.stop()
        else:
            self._line(self._status() + (" (stopped)" if failed else " done"))

    def _status(self) -> str:
        if self.total:
            percent = 100 * self.completed // self.total
            return f"{self.description}: {self.completed}/{self.total} {self.unit} ({percent}%)"
        return f"{self.description}: {self.completed} {self.unit}"

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


class Phases:
    """Progress of work in named phases, one bar each: ``phases(name, n)`` advances the bar
    of ``name``, ending the previous phase's bar when the name changes. A callable, so a
    service can take it as a plain ``Callable[[str, int], None]``."""

    def __init__(self, *, unit: str = "items", stream: TextIO | None = None, terminal: bool | None = None,
                 interval: float = 2.0):
        self._options = {"unit": unit, "stream": stream, "terminal": terminal, "interval": interval}
        self._bar: ProgressBar | None = None

    def __call__(self, name: str, n: int = 1) -> None:
        if self._bar is None or self._bar.description != name:
            self.close()
            self._bar = ProgressBar(name, **self._options)
        self._bar.advance(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Phases:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _rich_progress(stream: TextIO) -> Any:
    try:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )
    except ImportError:
        return None
    console = Console(file=stream, force_terminal=True)
    return Progress(TextColumn("{task.description}"), BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("{task.fields[unit]}"), TaskProgressColumn(),
                    TimeElapsedColumn(), console=console, transient=False)

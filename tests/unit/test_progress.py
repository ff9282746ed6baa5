"""The progress helper: a rich bar on a terminal, plain lines otherwise (and without rich)."""

from __future__ import annotations

import io

import pytest

from agent_memory.interfaces import progress as progress_mod
from agent_memory.interfaces.progress import Phases, ProgressBar


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_when_not_a_terminal():
    out = io.StringIO()
    with ProgressBar("reindex acme", unit="records", stream=out, interval=0) as bar:
        assert not bar.is_terminal
        bar.advance(500)
        bar.update(completed=800, total=1000)
        bar.note("a note")
    assert out.getvalue().splitlines() == [
        "reindex acme: 500 records", "reindex acme: 800/1000 records (80%)", "a note",
        "reindex acme: 800/1000 records (80%) done"]


def test_plain_lines_are_throttled_but_the_last_is_always_printed():
    out = io.StringIO()
    with ProgressBar("upload", total=3, unit="chunks", stream=out, interval=3600) as bar:
        for _ in range(3):
            bar.advance()
    assert out.getvalue().splitlines() == ["upload: 1/3 chunks (33%)", "upload: 3/3 chunks (100%) done"]


def test_a_failure_says_stopped():
    out = io.StringIO()
    with pytest.raises(RuntimeError), ProgressBar("x", total=2, stream=out, interval=0) as bar:
        bar.advance()
        raise RuntimeError("boom")
    assert out.getvalue().splitlines()[-1] == "x: 1/2 items (50%) (stopped)"


@pytest.mark.parametrize("stream, terminal", [(FakeTty(), None), (io.StringIO(), True)])
def test_a_bar_on_a_terminal(stream, terminal):
    pytest.importorskip("rich")
    with ProgressBar("ingest notes.md", total=4, unit="chunks", stream=stream, terminal=terminal) as bar:
        assert bar.is_terminal
        bar.advance(4)
        bar.note("a note")
    text = stream.getvalue()
    assert "ingest notes.md" in text and "4/4" in text and "chunks" in text and "a note" in text
    assert "━" in text  # the bar itself
    assert "\x1b[" in text  # drawn with terminal control sequences, not plain lines
    assert "done" not in text


def test_without_rich_a_terminal_gets_plain_lines(monkeypatch):
    monkeypatch.setattr(progress_mod, "_rich_progress", lambda stream: None)
    out = FakeTty()
    with ProgressBar("locomo", total=2, stream=out, interval=0) as bar:
        assert not bar.is_terminal
        bar.advance()
    assert out.getvalue().splitlines()[-1] == "locomo: 1/2 items (50%) done"


def test_phases_end_one_bar_and_start_the_next():
    out = io.StringIO()
    with Phases(unit="records", stream=out, interval=0) as phases:
        phases("dead letters", 1)
        phases("dead letters", 1)
        phases("reindex acme", 500)
    assert out.getvalue().splitlines() == [
        "dead letters: 1 records", "dead letters: 2 records", "dead letters: 2 records done",
        "reindex acme: 500 records", "reindex acme: 500 records done"]

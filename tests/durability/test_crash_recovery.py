"""Crashes of the local service: a process killed between a record's commit and its
search-index write, and ``kill -9`` under a stream of writes.

Each test runs ``agent-memory serve`` as a subprocess on loopback with its own data
directory, kills it, starts it again on the same directory and checks what a client was
told against what is there."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fused_search import fused_search

from agent_memory import faults
from agent_memory.adapters.embedded.index import EmbeddedSearchIndex
from agent_memory.adapters.embedders import HashingEmbedder
from agent_memory.adapters.sqlite_store import SQLiteRecordStore
from agent_memory.ports import SearchFilter
from agent_memory.services.operations.projector import ProjectingRecordStore, Projector
from tests.conftest import REPO

CTX = "/api/v1/crashes"
pytestmark = pytest.mark.timeout(240)


class Service:
    def __init__(self, data_dir: Path, env: dict[str, str] | None = None):
        self.data_dir = data_dir
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_MEMORY_"))}
        self.env.update({"AGENT_MEMORY_CURSOR_SECRET": "crash-test", "LOG_LEVEL": "INFO", **(env or {})})
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def start(self) -> Service:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agent_memory.interfaces.cli", "serve", "--port", "0", "--data-dir", str(self.data_dir)],
            cwd=REPO, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        started = time.monotonic()
        for line in self.proc.stderr:  # the startup log line names the port
            found = re.search(r"listening on (http://[\d.]+:\d+)", line)
            if found:
                self.url = found.group(1)
                break
            if time.monotonic() - started > 60:
                break
        if not self.url:
            self.proc.kill()
            raise RuntimeError("the service did not start")
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()  # keep the pipe drained
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
        if self.proc:
            self.proc.wait(30)

    def stop(self) -> None:
        self.kill(signal.SIGTERM)


@contextmanager
def running(data_dir: Path, env: dict[str, str] | None = None) -> Iterator[Service]:
    service = Service(data_dir, env).start()
    try:
        yield service
    finally:
        service.kill()


def test_outbox_replays_a_committed_write_whose_index_write_never_ran(tmp_path):
    """In-process: the projector 'crashes' (never applies); a fresh projecting store on the
    same files finds the outbox entry and indexes the record."""
    records = SQLiteRecordStore(tmp_path / "records.db")
    index = EmbeddedSearchIndex(tmp_path / "search.db", HashingEmbedder(64))

    class Crashed(Projector):
        def submit(self, change, on_applied=None, on_failed=None):
            pass  # the process died before the index write

    from agent_memory.ports import Record

    turn = {"kind": "turn", "id": "turn_1", "contextId": "crashes", "role": "user", "content": "the otter moved to Oslo",
            "session": "sess_1", "seq": 1, "createdAt": "2026-01-05T09:00:00Z"}
    ProjectingRecordStore(records, Crashed(index)).put(Record(pk="c#crashes#default#turns", sk="turn_1", data=turn))
    assert fused_search(index, "otter", SearchFilter(context_id="crashes"), k=5) == []
    assert len(records.outbox_entries()) == 1

    ProjectingRecordStore(records, Projector(index))  # the restart
    assert [h.unit.id for h in fused_search(index, "otter", SearchFilter(context_id="crashes"), k=5)] == ["turn_1"]
    assert records.outbox_entries() == []


def test_a_crash_between_commit_and_index_write_leaves_the_record_searchable_after_restart(tmp_path):
    data = tmp_path / "data"
    with running(data, {faults.ENV: "projection-after-commit"}) as crashing:
        with pytest.raises(httpx.HTTPError):
            httpx.post(f"{crashing.url}{CTX}/facts", json={"text": "The otter moved to Oslo.", "infer": "none"},
                       timeout=30)
        assert crashing.proc.wait(30) == faults.EXIT_CODE
    with running(data) as service:
        hits = httpx.post(f"{service.url}{CTX}/query", json={"query": "otter Oslo"}, timeout=30).json()["hits"]
        assert any("otter" in h["text"] for h in hits)
        # and the outbox path keeps working for writes after the restart
        assert httpx.post(f"{service.url}{CTX}/facts", json={"text": "The heron stayed in Bergen.",
                                                             "infer": "none"}, timeout=30).status_code == 200
        hits = httpx.post(f"{service.url}{CTX}/query", json={"query": "heron Bergen"}, timeout=30).json()["hits"]
        assert any("heron" in h["text"] for h in hits)


def _write_until_killed(url: str, label: str, path: str, stop: threading.Event,
                        acknowledged: dict[str, int]) -> None:
    with httpx.Client(base_url=url, timeout=10) as client:
        n = 0
        while not stop.is_set():
            text = f"{label} turn {n}"
            n += 1
            try:
                r = client.post(path, json={"text": text})
            except httpx.HTTPError:
                return  # the kill
            if r.status_code in (200, 201):
                acknowledged[text] = r.json()["turnIndex"]  # one key per writer: no lock needed


def test_kill_9_loses_no_acknowledged_write(tmp_path):
    """Writers append thread turns for a while; the server gets SIGKILL mid-stream, twice;
    after each restart every acknowledged turn is there, once, at the index it was given."""
    data = tmp_path / "data"
    acknowledged: dict[str, int] = {}  # text -> turnIndex the server answered
    for round_ in range(2):
        with running(data) as service:
            stop = threading.Event()
            writers = [threading.Thread(target=_write_until_killed, args=(service.url, f"round {round_} writer {w}",
                                                                          f"{CTX}/threads/log-{w}/turns", stop,
                                                                          acknowledged)) for w in range(4)]
            for t in writers:
                t.start()
            # kill mid-stream once this round has some acknowledged writes (a bounded wait:
            # a fresh process's first requests are slow on a loaded machine)
            wanted, give_up = len(acknowledged) + 15, time.monotonic() + 90
            while len(acknowledged) < wanted and time.monotonic() < give_up:
                time.sleep(0.05)
            service.kill(signal.SIGKILL)
            stop.set()
            for t in writers:
                t.join(30)
    assert len(acknowledged) >= 30
    with running(data) as service, httpx.Client(base_url=service.url, timeout=30) as client:
        stored: dict[str, int] = {}
        for w in range(4):
            page = client.get(f"{CTX}/threads/log-{w}/turns", params={"limit": 500}).json()
            stored.update({t["text"]: t["turnIndex"] for t in page["items"]})
            indexes = [t["turnIndex"] for t in page["items"]]
            assert indexes == list(range(1, len(indexes) + 1))  # dense from 1, no duplicates
    lost = {text for text in acknowledged if text not in stored}
    assert lost == set()
    assert {text: stored[text] for text in acknowledged} == acknowledged

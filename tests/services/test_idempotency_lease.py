"""Idempotency leases: a request killed mid-flight frees its key once its lease has passed,
and forget finds stored replies through their index rows, not a scan of the replies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agent_memory.access.request_context import RequestContext
from agent_memory.adapters.sqlite_store import SQLiteRecordStore
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import Conflict
from agent_memory.services.facts.idempotency import IdempotencyService, caller_tag

CTX = RequestContext(context_id="ctx", principal="p")
LEASE_S = 2.0

CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from agent_memory.access.request_context import RequestContext
    from agent_memory.adapters.sqlite_store import SQLiteRecordStore
    from agent_memory.services.facts.idempotency import IdempotencyService

    db, started, lease = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3])
    service = IdempotencyService(SQLiteRecordStore(db), ttl_s=3600, lease_s=lease)

    def write():
        started.write_text("running")
        time.sleep(3600)  # the write hangs until the process is killed
        return {"ran": "child"}, 200, []

    service.run(RequestContext(context_id="ctx", principal="p"), "facts", "k-kill", {"text": "x"}, write)
""")


def test_a_killed_request_frees_its_key_within_its_lease(tmp_path: Path):
    db, started = tmp_path / "records.db", tmp_path / "started"
    SQLiteRecordStore(db).close()  # the schema, before two processes open it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(started), str(LEASE_S)], env=env)
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert child.poll() is None, "the child request ended before its write started"
            assert time.monotonic() < deadline, "the child request never started"
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)  # as Lambda ends a function at its timeout: no cleanup
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    killed_at = time.time()
    store = SQLiteRecordStore(db)
    service = IdempotencyService(store, ttl_s=3600, lease_s=LEASE_S)
    sk = f"facts#{caller_tag(CTX)}#k-kill"
    claim = store.get(keys.idempotency_pk(CTX, sk), sk)
    assert claim is not None and claim.data["state"] == "running"
    assert claim.expires_at <= killed_at + LEASE_S + 1  # the claim lasts no longer than its lease

    ran = []

    def retry():
        ran.append(1)
        return {"ran": "retry"}, 200, []

    if time.time() < claim.expires_at:  # inside the lease the key is still held, and says until when
        with pytest.raises(Conflict) as held:
            service.run(CTX, "facts", "k-kill", {"text": "x"}, retry)
        assert held.value.code == "idempotency_in_progress"
        assert 1 <= int(held.value.headers["Retry-After"]) <= LEASE_S + 1
        assert ran == []
    time.sleep(max(0.0, claim.expires_at - time.time()) + 0.05)
    outcome = service.run(CTX, "facts", "k-kill", {"text": "x"}, retry)
    assert outcome.body == {"ran": "retry"} and not outcome.replayed and ran == [1]
    again = service.run(CTX, "facts", "k-kill", {"text": "x"}, retry)
    assert again.replayed and again.body == {"ran": "retry"} and ran == [1]
    assert store.get(keys.idempotency_pk(CTX, sk), sk).expires_at > time.time() + 3000  # the reply keeps the TTL


def test_a_claim_within_its_lease_is_not_taken_over(tmp_path: Path):
    now = [1000.0]
    store = SQLiteRecordStore(tmp_path / "records.db")
    service = IdempotencyService(store, ttl_s=3600, lease_s=30, clock=lambda: now[0])

    def nested():
        now[0] += 29  # a retry at 29 s, inside the 30 s lease
        with pytest.raises(Conflict):
            service.run(CTX, "op", "k", {}, lambda: pytest.fail("ran twice"))
        return {"ok": 1}, 200, []

    assert service.run(CTX, "op", "k", {}, nested).body == {"ok": 1}


class CountingStore:
    def __init__(self, inner):
        self.inner, self.queried = inner, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def query(self, pk, **kwargs):
        self.queried.append(pk)
        return self.inner.query(pk, **kwargs)


def test_forget_finds_replies_through_the_index(tmp_path: Path):
    inner = SQLiteRecordStore(tmp_path / "records.db")
    store = CountingStore(inner)
    service = IdempotencyService(store, ttl_s=3600)
    for i in range(30):  # replies that mention other records
        service.run(CTX, "facts", f"other-{i}", {"i": i}, lambda i=i: ({"id": f"turn_{i}"}, 200, [f"turn_{i}"]))
    service.run(CTX, "facts", "a", {"x": 1}, lambda: ({"id": "turn_x"}, 200, ["turn_x", "attr_1"]))
    service.run(CTX, "facts", "b", {"x": 2}, lambda: ({"id": "attr_1"}, 200, ["attr_1"]))
    assert service.forget_refs(CTX, {"attr_1", "turn_missing"}) == 2
    assert store.queried == []  # no query of the replies, let alone all of them
    for key in ("a", "b"):
        sk = f"facts#{caller_tag(CTX)}#{key}"
        assert inner.get(keys.idempotency_pk(CTX, sk), sk) is None
    assert inner.get(keys.idempotency_ref_pk(CTX, "attr_1"), "ref") is None
    kept = f"facts#{caller_tag(CTX)}#other-3"
    assert inner.get(keys.idempotency_pk(CTX, kept), kept) is not None
    replay = service.run(CTX, "facts", "other-3", {"i": 3}, lambda: pytest.fail("ran twice"))
    assert replay.replayed


def test_records_spread_over_the_shards(tmp_path: Path):
    service = IdempotencyService(SQLiteRecordStore(tmp_path / "records.db"), ttl_s=3600)
    for i in range(200):
        service.run(CTX, "facts", f"k{i}", {}, lambda: ({}, 200, []))
    used = {pk for pk in keys.idempotency_pks(CTX) if service.store.query(pk, limit=1).records}
    assert len(used) == keys.IDEMPOTENCY_SHARDS


def test_the_http_lease_follows_the_lambda_invocation(monkeypatch):
    from agent_memory.http import api

    class Limits:
        request_deadline_s, deadline_margin_s, idempotency_lease_margin_s = 29.0, 0.5, 5.0

    class Runtime:
        class settings:  # noqa: N801
            limits = Limits

    monkeypatch.setattr(api, "get_runtime", lambda: Runtime)

    class LambdaContext:
        def get_remaining_time_in_millis(self):
            return 12_000

    assert api.idempotency_lease_s(LambdaContext()) == pytest.approx(17.0)
    assert api.idempotency_lease_s(None) == pytest.approx(29.0 + 0.5 + 5.0)

"""The idempotency claim is finalised in the same error handling as the write: a reply that
cannot be stored never leaves the key "running" (which would answer 409 for a whole day)."""

from __future__ import annotations

import pytest

from agent_memory.access.request_context import RequestContext
from agent_memory.adapters.sqlite_store import SQLiteRecordStore
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import Conflict
from agent_memory.services.facts.idempotency import MAX_STORED_REPLY_BYTES, IdempotencyService, caller_tag

CTX = RequestContext(context_id="ctx", principal="p")


@pytest.fixture()
def store(tmp_path):
    return SQLiteRecordStore(tmp_path / "records.db")


class FailingFinalPut:
    """A store whose put of the finished record fails (a throttle, an item over 400 KB)."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def put(self, record, condition=None):
        if record.data.get("state") == "done":
            raise RuntimeError("ValidationException: Item size has exceeded the maximum allowed size")
        return self.inner.put(record, condition)


def test_a_failed_finalisation_releases_the_key(store):
    service = IdempotencyService(FailingFinalPut(store), ttl_s=3600)
    with pytest.raises(RuntimeError):
        service.run(CTX, "op", "k1", {"a": 1}, lambda: ({"ok": True}, 201, []))
    assert store.get(keys.idempotency_pk(CTX, f"op#{caller_tag(CTX)}#k1"), f"op#{caller_tag(CTX)}#k1") is None
    retried = IdempotencyService(store, ttl_s=3600).run(CTX, "op", "k1", {"a": 1}, lambda: ({"ok": 2}, 201, []))
    assert retried.body == {"ok": 2} and not retried.replayed


def test_a_reply_too_large_to_store_is_finished_without_its_body(store):
    service = IdempotencyService(store, ttl_s=3600)
    big = {"text": "x" * (MAX_STORED_REPLY_BYTES + 1), "id": "turn_1"}
    calls = []

    def run():
        calls.append(1)
        return big, 201, ["turn_1"]

    first = service.run(CTX, "op", "k2", {"a": 1}, run)
    assert first.body == big
    record = store.get(keys.idempotency_pk(CTX, f"op#{caller_tag(CTX)}#k2"), f"op#{caller_tag(CTX)}#k2")
    assert record.data["state"] == "done" and record.data["body_omitted"] and "body" not in record.data
    assert record.data["refs"] == ["turn_1"]
    with pytest.raises(Conflict) as err:
        service.run(CTX, "op", "k2", {"a": 1}, run)
    assert err.value.code == "idempotency_reply_not_stored"
    assert len(calls) == 1


def test_a_small_reply_replays(store):
    service = IdempotencyService(store, ttl_s=3600)
    service.run(CTX, "op", "k3", {"a": 1}, lambda: ({"ok": True}, 201, []))
    replay = service.run(CTX, "op", "k3", {"a": 1}, lambda: pytest.fail("ran twice"))
    assert replay.replayed and replay.body == {"ok": True}

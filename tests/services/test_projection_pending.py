"""A projection that fails after the commit never fails the write: the change stays
pending (the SQLite outbox; an in-process queue over a store without one) and is replayed
by the next write, or by the next start, once the index answers."""

from __future__ import annotations

import pytest
from fused_search import fused_search

from agent_memory.adapters.embedded.index import EmbeddedSearchIndex
from agent_memory.adapters.embedders import HashingEmbedder
from agent_memory.adapters.sqlite_store import SQLiteRecordStore
from agent_memory.ports import Put, Record, SearchFilter, SearchUnavailable
from agent_memory.services.operations.projector import ProjectingRecordStore, Projector


class DownIndex:
    def __init__(self, inner):
        self.inner = inner
        self.down = True

    def __getattr__(self, name):
        value = getattr(self.inner, name)
        if name in ("upsert", "delete", "write") and self.down:
            def fail(*args, **kwargs):
                raise SearchUnavailable("refused")
            return fail
        return value


class NoOutbox:
    """A record store without a projection outbox (as the DynamoDB store is)."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        if name in ("apply_with_outbox", "outbox_entries", "clear_outbox"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def turn(n: int, text: str) -> Record:
    return Record(pk="c#ctx#default#turns", sk=f"turn_{n}", data={
        "kind": "turn", "id": f"turn_{n}", "contextId": "ctx", "role": "user", "content": text,
        "session": "sess_1", "seq": n, "createdAt": "2026-01-05T09:00:00Z"})


def found(index, query: str) -> set[str]:
    return {h.unit.id for h in fused_search(index, query, SearchFilter(context_id="ctx"), k=5)}


@pytest.mark.parametrize("background", [False, True])
@pytest.mark.parametrize("outbox", [True, False])
def test_a_failed_projection_stays_pending_and_the_next_write_replays_it(tmp_path, outbox, background):
    records = SQLiteRecordStore(tmp_path / "records.db")
    inner = EmbeddedSearchIndex(tmp_path / "search.db", HashingEmbedder(64))
    index = DownIndex(inner)
    projector = Projector(index, background=background)
    store = ProjectingRecordStore(records if outbox else NoOutbox(records), projector)
    store.put(turn(1, "the otter moved to Oslo"))  # commits; its projection fails
    projector.drain()
    assert records.get("c#ctx#default#turns", "turn_1") is not None
    assert store.pending_projections == 1 and found(inner, "otter") == set()
    index.down = False
    store.put(turn(2, "the heron stayed in Bergen"))
    projector.drain()
    store.put(turn(3, "nothing else"))  # a background failure is noticed after the fact
    projector.drain()
    assert {"turn_1", "turn_2", "turn_3"} <= found(inner, "otter")
    assert store.pending_projections == 0


def test_the_outbox_replays_at_start_once_the_index_answers(tmp_path):
    records = SQLiteRecordStore(tmp_path / "records.db")
    inner = EmbeddedSearchIndex(tmp_path / "search.db", HashingEmbedder(64))
    index = DownIndex(inner)
    ProjectingRecordStore(records, Projector(index)).put(turn(1, "the otter moved to Oslo"))
    ProjectingRecordStore(records, Projector(index))  # a start while still down does not fail
    assert len(records.outbox_entries()) == 1
    index.down = False
    ProjectingRecordStore(records, Projector(index))
    assert records.outbox_entries() == [] and "turn_1" in found(inner, "otter")


def test_pending_projections_without_an_outbox_are_bounded(tmp_path, monkeypatch, caplog):
    from agent_memory.services.operations import projector

    monkeypatch.setattr(projector, "MAX_HELD_PROJECTIONS", 3)
    records = SQLiteRecordStore(tmp_path / "records.db")
    index = DownIndex(EmbeddedSearchIndex(tmp_path / "search.db", HashingEmbedder(64)))
    store = ProjectingRecordStore(NoOutbox(records), Projector(index))
    for n in range(5):
        store.put(turn(n, f"turn number {n} about gardening"))
    assert store.pending_projections == 3 and store.dropped_projections == 2
    assert "agent-memory reindex" in caplog.text
    index.down = False
    store.put(turn(5, "the index answers again"))  # held too, before it projects: one more dropped
    assert store.pending_projections == 0 and store.dropped_projections == 3
    # the newest entries caught up; the dropped ones wait for a reindex
    hits = found(index.inner, "turn gardening index answers")
    assert {"turn_3", "turn_4", "turn_5"} <= hits and not hits & {"turn_0", "turn_1", "turn_2"}


def dynamodb_records():
    import boto3

    from agent_memory.adapters.dynamodb_store import DynamoDBRecordStore
    from agent_memory.adapters.dynamodb_table import create_table_from_template

    create_table_from_template(boto3.client("dynamodb", region_name="us-east-1"), "agent-memory-outbox")
    return DynamoDBRecordStore("agent-memory-outbox", region="us-east-1")


def test_the_dynamodb_store_keeps_pending_projections_in_its_own_outbox(tmp_path):
    """Local DynamoDB has no stream: the entry commits with the write, in the same
    transaction, and survives the process (a new start replays it)."""
    from moto import mock_aws

    with mock_aws():
        records = dynamodb_records()
        index = DownIndex(EmbeddedSearchIndex(tmp_path / "search.db", HashingEmbedder(64)))
        store = ProjectingRecordStore(records, Projector(index))
        store.put(turn(1, "the otter moved to Oslo"))
        store.transact([Put(turn(2, "the heron in Bergen"))])
        assert [e for _, e in records.outbox_entries()] and len(records.outbox_entries()) == 2
        assert store.pending_projections == 2
        # the outbox rows are no context's records: a reindex's scan of contexts never sees them
        assert all(r.pk != "projection-outbox" for r in records.scan("c#"))
        ProjectingRecordStore(records, Projector(index))  # a start while still down keeps them
        assert len(records.outbox_entries()) == 2
        index.down = False
        ProjectingRecordStore(records, Projector(index))  # a start once the index answers
        assert records.outbox_entries() == [] and {"turn_1", "turn_2"} <= found(index.inner, "otter heron")


def test_a_failed_conditional_write_leaves_no_outbox_entry(tmp_path):
    from moto import mock_aws

    from agent_memory.ports import Condition, ConditionFailed

    with mock_aws():
        records = dynamodb_records()
        index = DownIndex(EmbeddedSearchIndex(tmp_path / "search.db", HashingEmbedder(64)))
        store = ProjectingRecordStore(records, Projector(index))
        store.put(turn(1, "the otter moved to Oslo"))
        with pytest.raises(ConditionFailed) as failed:
            store.put(turn(1, "the otter moved again"), Condition.absent())
        assert failed.value.index is None  # as a single put reports it
        assert len(records.outbox_entries()) == 1


@pytest.mark.parametrize("outbox", [True, False])
def test_pending_projections_catch_up_on_a_timer_without_another_write(tmp_path, outbox):
    import time

    records = SQLiteRecordStore(tmp_path / "records.db")
    index = DownIndex(EmbeddedSearchIndex(tmp_path / "search.db", HashingEmbedder(64)))
    store = ProjectingRecordStore(records if outbox else NoOutbox(records), Projector(index), retry_interval_s=0.05)
    try:
        store.put(turn(1, "the otter moved to Oslo"))
        time.sleep(0.2)  # a few retries while the index is still down
        assert store.pending_projections == 1
        index.down = False
        deadline = time.monotonic() + 10
        while store.pending_projections and time.monotonic() < deadline:
            time.sleep(0.02)
        assert store.pending_projections == 0 and found(index.inner, "otter") == {"turn_1"}
    finally:
        store.stop_retries()
    assert store._timer is None

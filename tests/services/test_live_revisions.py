"""StoreRevisions: a hit is live only when its record exists, still projects to the unit and
has exactly the hit's revision (one batched read for all hits)."""

from __future__ import annotations

from agent_memory.adapters.sqlite_store import SQLiteRecordStore
from agent_memory.ports import Record, SearchUnit
from agent_memory.services.operations.projection import change_for
from agent_memory.services.retrieval.live_revisions import StoreRevisions

PK = "c#acme#default#thread-turns#t1"


def turn(i: int, version: int, **extra) -> Record:
    data = {"kind": "thread_turn", "id": f"turn-{i}", "contextId": "acme", "threadId": "t1", "text": f"text {i}",
            "turnIndex": i, "createdAt": "2026-01-01T00:00:00Z", **extra}
    return Record(pk=PK, sk=f"{i:012d}", data=data, version=version)


class CountingStore(SQLiteRecordStore):
    def __init__(self, path):
        super().__init__(path)
        self.batch_reads = 0

    def batch_get(self, keys):
        self.batch_reads += 1
        return super().batch_get(keys)


def test_only_the_current_revision_of_a_live_record_is_live(tmp_path):
    store = CountingStore(tmp_path / "s.db")
    for record in (turn(1, 3), turn(2, 1)):
        store.put(record)
    store.put(Record(pk=PK, sk=f"{4:012d}", data={**turn(4, 1).data, "deleted": True}, version=2))
    store.put(Record(pk=PK, sk=f"{5:012d}", data=turn(5, 1).data, version=1, expires_at=1))

    def unit(record: Record, revision: int) -> SearchUnit:
        u = change_for(Record(record.pk, record.sk, {**record.data, "deleted": False}, revision), None).upserts[0]
        return u

    current = unit(turn(1, 3), 3)
    superseded = unit(turn(1, 3), 2)
    gone = unit(turn(9, 1), 1)  # no such record
    deleted = unit(turn(4, 2), 2)  # the record says deleted
    expired = unit(turn(5, 1), 1)  # past its TTL
    legacy = SearchUnit(id="old", context_id="acme", kind="turn", text="indexed before record keys")
    verdicts = StoreRevisions(store).live([current, superseded, gone, deleted, expired, legacy])
    assert verdicts == [True, False, False, False, False, True]
    assert store.batch_reads == 1

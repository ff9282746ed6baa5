"""remove_records: conditioned soft/hard deletes that re-read and retry when a record
changed under them (both stores)."""

from __future__ import annotations

from agent_memory.ports import Record
from agent_memory.services.facts.forget import remove_records

PK = "c#acme#default#test-records"


def _put(runtime, sk: str, version: int, **data) -> Record:
    record = Record(pk=PK, sk=sk, data={"kind": "note", "id": sk, **data}, version=version)
    runtime.store.put(record)
    return record


def test_a_stale_read_is_retried_and_the_latest_version_is_tombstoned(runtime):
    stale = _put(runtime, "n1", 1, text="old")
    _put(runtime, "n1", 2, text="new")  # changed after forget read it
    fresh = _put(runtime, "n2", 1, text="other")
    assert remove_records(runtime.store, [stale, fresh], purge=False) == {"n1", "n2"}
    n1 = runtime.store.get(PK, "n1")
    assert n1.version == 3 and n1.data["deleted"] is True and n1.data["text"] == "new"
    assert runtime.store.get(PK, "n2").data["deleted"] is True
    # soft-deleting again is a no-op
    assert remove_records(runtime.store, [n1], purge=False) == {"n1"}
    assert runtime.store.get(PK, "n1").version == 3


def test_purge_deletes_and_tolerates_rows_already_gone(runtime):
    stale = _put(runtime, "n1", 1)
    _put(runtime, "n1", 5)
    gone = Record(pk=PK, sk="n9", data={"kind": "note", "id": "n9"}, version=1)
    assert remove_records(runtime.store, [stale, gone], purge=True) == {"n1", "n9"}
    assert runtime.store.get(PK, "n1") is None


def test_many_records_go_in_several_transactions(runtime):
    records = [_put(runtime, f"n{i:03d}", 1) for i in range(60)]
    assert len(remove_records(runtime.store, records, purge=False)) == 60
    assert all(r.data["deleted"] for r in runtime.store.query(PK, limit=100).records)

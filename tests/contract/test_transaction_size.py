"""Transactions within DynamoDB's size limit: 4 MB as well as 100 items.

Item sizes are counted as DynamoDB counts them (attribute names plus values,
``kernel.stored_item``); both stores refuse a transaction one byte over 4 MB and commit one
at exactly 4 MB, and ``transaction_batches`` cuts independent writes that would pass either
limit into transactions that commit. Every test runs against SQLite and DynamoDB (moto).
"""

from __future__ import annotations

import pytest

from agent_memory.kernel import stored_item
from agent_memory.kernel.stored_item import (
    MAX_ITEM_BYTES,
    TRANSACT_BATCH_BYTES,
    record_bytes,
    transaction_batches,
)
from agent_memory.ports import MAX_TRANSACT_BYTES, MAX_TRANSACT_OPS, Condition, Delete, Put, Record

PK = "c#acme#default#big"


def sized_record(sk: str, size: int, **extra) -> Record:
    """A record whose item is exactly ``size`` bytes as DynamoDB counts it."""
    record = Record(PK, sk, {"kind": "blob", "pad": "", **extra})
    pad = size - record_bytes(record)
    assert pad >= 0
    record.data["pad"] = "x" * pad
    assert record_bytes(record) == size
    return record


def records_totalling(total: int, count: int, prefix: str = "r") -> list[Record]:
    each = total // count
    sizes = [each] * (count - 1) + [total - each * (count - 1)]
    assert max(sizes) <= MAX_ITEM_BYTES
    return [sized_record(f"{prefix}{i:03d}", size) for i, size in enumerate(sizes)]


def test_a_transaction_of_exactly_4_mb_commits(store):
    records = records_totalling(MAX_TRANSACT_BYTES, 11)
    store.transact([Put(r) for r in records])
    assert len(store.query(PK, limit=50).records) == 11


def test_a_transaction_one_byte_over_4_mb_is_refused_and_writes_nothing(store):
    records = records_totalling(MAX_TRANSACT_BYTES + 1, 11)
    with pytest.raises(ValueError, match="4194304 bytes"):
        store.transact([Put(r) for r in records])
    assert store.query(PK).records == []


def test_deletes_and_checks_count_their_keys():
    assert stored_item.op_bytes(Delete(PK, "abc")) == len("pk") + len(PK) + len("sk") + 3


def test_an_item_of_exactly_400_kb_is_stored_and_one_byte_more_refused(store):
    # moto refuses items over 405,000 bytes (its own margin under DynamoDB's 409,600), so the
    # store's edge is shown on SQLite and moto's just under it.
    edge = MAX_ITEM_BYTES if type(store).__name__.startswith("SQLite") else 405_000
    store.put(sized_record("edge", edge))
    with pytest.raises(ValueError, match="409600"):
        store.put(sized_record("over", MAX_ITEM_BYTES + 1))
    assert [r.sk for r in store.query(PK).records] == ["edge"]


def test_the_size_counts_every_stored_attribute():
    """kind, the scope filter's copies, the gsi1 key and the TTL attribute count too."""
    plain = Record(PK, "a", {"text": "hello"})
    full = Record(PK, "a", {"text": "hello", "kind": "fact", "scopes": [["users/alice"]]},
                  gsi1pk="g", gsi1sk="h", expires_at=5)
    attrs = stored_item.stored_attributes(full, stored_item.encode_data(full.data))
    assert set(attrs) == {"pk", "sk", "version", "data", "kind", "ss", "sa", "st", "gsi1pk", "gsi1sk", "expires_at"}
    assert record_bytes(full) > record_bytes(plain) + len("kind") + len("fact") + len("gsi1pk") + len("expires_at")


def test_item_size_agrees_with_moto(moto_dynamodb, table_name):
    """moto sizes stored items as DynamoDB documents it (names plus values): ours equals it but
    for counting every number at its 21-byte maximum."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.dynamo_type import DynamoType

    from agent_memory.adapters.dynamodb_store import DynamoDBRecordStore

    store = DynamoDBRecordStore(table_name, client=moto_dynamodb)
    record = Record(PK, "sized", {"kind": "fact", "text": "Grüße 日本 👋", "scopes": [["users/alice", "teams/x"],
                                                                                    ["orgs/acme/eng"]]},
                    version=12, gsi1pk="c#acme#default#current", gsi1sk="a#b", expires_at=1_900_000_000)
    store.put(record)
    table = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].tables[table_name]
    moto_size = table.get_item(DynamoType({"S": PK}), DynamoType({"S": "sized"})).size()
    # moto's own size of each number (its rule changed between releases: digits, then AWS's
    # byte per two significant digits plus one), against our 21-byte maximum
    number_slack = sum(21 - DynamoType({"N": str(n)}).size() for n in (12, 1_900_000_000))
    assert record_bytes(record) == moto_size + number_slack, (record_bytes(record), moto_size)


def test_batches_split_by_size_as_well_as_count():
    small = [Put(Record(PK, f"s{i:03d}", {})) for i in range(250)]
    assert [len(b) for b in transaction_batches(small)] == [100, 100, 50]
    big = [Put(r) for r in records_totalling(6 * 1024 * 1024, 20)]
    batches = transaction_batches(big)
    assert len(batches) == 2
    assert [op for b in batches for op in b] == big  # order kept, nothing lost or repeated
    for batch in batches:
        assert len(batch) <= MAX_TRANSACT_OPS
        assert sum(stored_item.op_bytes(op) for op in batch) <= TRANSACT_BATCH_BYTES


def test_writes_over_4_mb_are_split_and_commit(store):
    """A set of writes that one transaction could not hold (6 MiB) commits in batches."""
    records = records_totalling(6 * 1024 * 1024, 20)
    ops = [Put(r, Condition.absent()) for r in records]
    with pytest.raises(ValueError):
        store.transact(ops)
    for batch in transaction_batches(ops):
        store.transact(batch)
    assert [r.sk for r in store.query(PK, limit=50).records] == [r.sk for r in records]


def test_forget_removes_records_over_4_mb_in_transactions_that_fit(store):
    """Forget's tombstones keep most of their records: 20 records of 300 KB (one batch of 25
    by count, 6 MB by size) are removed in transactions within 4 MB, and every one commits."""
    from agent_memory.services.facts.forget import remove_records

    records = [sized_record(f"f{i:02d}", 300 * 1024, id=f"f{i:02d}") for i in range(20)]
    for r in records:
        store.put(r)
    sizes: list[int] = []
    transact = store.transact

    def spy(ops):
        sizes.append(sum(stored_item.op_bytes(op) for op in ops))
        transact(ops)

    store.transact = spy
    removed = remove_records(store, [store.get(r.pk, r.sk) for r in records], purge=False)
    assert removed == {r.sk for r in records}
    assert len(sizes) >= 2 and max(sizes) <= MAX_TRANSACT_BYTES
    assert all(store.get(r.pk, r.sk).data["deleted"] for r in records)

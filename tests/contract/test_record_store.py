"""RecordStore contract: every test runs against SQLite and DynamoDB (moto) alike.

The last section holds adapter-specific checks (table shape, lazy boto3, conflict retry,
SQLite across connections).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from agent_memory.ports import Check, Condition, ConditionFailed, Delete, Page, Put, Record, RecordStore

PK = "ctx#acme#items"
GSI_PK = "ctx#acme#items-by-date"

# Byte order puts digits < upper case < "_" < lower case < "~" < non-ASCII, and compares
# "item#10" < "item#9" character by character; a locale or case-folding collation would not.
KEYS = ["a", "Z", "item#10", "item#9", "item#1", "item", "itemz", "é", "e", "~", "B", "0", "_x", "日本"]
BYTE_ORDER = sorted(KEYS, key=lambda key: key.encode("utf-8"))


def put_all(store: RecordStore, sort_keys, pk: str = PK) -> None:
    store.transact([Put(Record(pk, sk, {"sk": sk})) for sk in sort_keys])


def sort_keys(page: Page) -> list[str]:
    return [record.sk for record in page.records]


def drain(store: RecordStore, pk: str, **kwargs) -> list[Page]:
    """Every page of a query, following ``last_key`` until it is ``None``."""
    pages = [store.query(pk, **kwargs)]
    while pages[-1].last_key is not None:
        assert len(pages) < 100, "paging does not terminate"
        pages.append(store.query(pk, after=pages[-1].last_key, **kwargs))
    return pages


def test_both_stores_satisfy_the_protocol(store):
    assert isinstance(store, RecordStore)


# -- put / get -------------------------------------------------------------------


def test_put_get_roundtrip_keeps_unicode_nested_data_and_every_attribute(store):
    record = Record(
        pk="ctx#acmé#turns#sess_01",
        sk="turn#0000000001 👋",
        data={
            "text": "Grüße, 日本語, emoji 👋, quote \" and \\ backslash",
            "nested": {"list": [1, 2.5, 0.1, None, True, {"k": ["v"]}], "empty": {}, "none": None},
            "big": 2**53 + 1,
            "neg": -3.25e-7,
        },
        version=7,
        gsi1pk=GSI_PK,
        gsi1sk="2024-05-01T10:00:00Z#turn_01",
        expires_at=1_900_000_000,
    )
    store.put(record)
    assert store.get(record.pk, record.sk) == record


def test_get_missing_returns_none(store):
    assert store.get(PK, "missing") is None


def test_optional_attributes_roundtrip_as_none(store):
    record = Record(PK, "plain", {"a": 1})
    store.put(record)
    got = store.get(PK, "plain")
    assert got == record
    assert (got.gsi1pk, got.gsi1sk, got.expires_at, got.version) == (None, None, None, 1)


def test_expires_at_roundtrip(store):
    store.put(Record(PK, "idem#k1", {"reply": {"status": 201}}, expires_at=1_700_000_123))
    assert store.get(PK, "idem#k1").expires_at == 1_700_000_123


def test_put_without_condition_overwrites_everything(store):
    store.put(Record(PK, "k", {"old": True, "gone": 1}, version=1, gsi1pk=GSI_PK, gsi1sk="x", expires_at=5))
    store.put(Record(PK, "k", {"new": True}, version=2))
    assert store.get(PK, "k") == Record(PK, "k", {"new": True}, version=2)
    assert store.query(GSI_PK, index="gsi1").records == []


# -- conditions -------------------------------------------------------------------


def test_create_only_fails_when_the_item_exists(store):
    store.put(Record(PK, "k", {"n": 1}), Condition.absent())
    with pytest.raises(ConditionFailed) as failed:
        store.put(Record(PK, "k", {"n": 2}), Condition.absent())
    assert failed.value.index is None
    assert store.get(PK, "k").data == {"n": 1}


def test_exists_condition(store):
    with pytest.raises(ConditionFailed):
        store.put(Record(PK, "k", {"n": 1}), Condition.exists())
    assert store.get(PK, "k") is None
    store.put(Record(PK, "k", {"n": 1}))
    store.put(Record(PK, "k", {"n": 2}), Condition.exists())
    assert store.get(PK, "k").data == {"n": 2}


def test_version_condition_succeeds_on_match_and_fails_otherwise(store):
    store.put(Record(PK, "k", {"n": 1}, version=1))
    store.put(Record(PK, "k", {"n": 2}, version=2), Condition.version_is(1))
    with pytest.raises(ConditionFailed):
        store.put(Record(PK, "k", {"n": 3}, version=2), Condition.version_is(1))
    assert store.get(PK, "k") == Record(PK, "k", {"n": 2}, version=2)


def test_version_condition_fails_on_a_missing_item(store):
    with pytest.raises(ConditionFailed):
        store.put(Record(PK, "k", {}, version=2), Condition.version_is(1))
    assert store.get(PK, "k") is None


def test_delete_with_conditions(store):
    store.put(Record(PK, "k", {}, version=3))
    with pytest.raises(ConditionFailed) as failed:
        store.delete(PK, "k", Condition.version_is(2))
    assert failed.value.index is None
    assert store.get(PK, "k") is not None
    store.delete(PK, "k", Condition.version_is(3))
    assert store.get(PK, "k") is None
    with pytest.raises(ConditionFailed):
        store.delete(PK, "k", Condition.exists())


def test_delete_of_a_missing_item_without_condition_is_a_no_op(store):
    store.delete(PK, "never-there")
    assert store.get(PK, "never-there") is None


# -- query: order, ranges, direction -----------------------------------------------


def test_query_orders_by_utf8_bytes_not_by_locale(store):
    put_all(store, KEYS)
    assert BYTE_ORDER != sorted(KEYS, key=str.casefold)  # the fixture really discriminates
    assert sort_keys(store.query(PK)) == BYTE_ORDER
    assert BYTE_ORDER.index("Z") < BYTE_ORDER.index("a")
    assert BYTE_ORDER.index("item#10") < BYTE_ORDER.index("item#9")


def test_query_reads_one_partition_only(store):
    put_all(store, ["a", "b"], pk=PK)
    put_all(store, ["c"], pk=PK + "x")
    put_all(store, ["d"], pk="ctx#acme#item")
    assert sort_keys(store.query(PK)) == ["a", "b"]


def test_query_of_an_empty_partition(store):
    assert store.query(PK) == Page(records=[], last_key=None)


def test_prefix(store):
    put_all(store, KEYS)
    assert sort_keys(store.query(PK, prefix="item#")) == ["item#1", "item#10", "item#9"]
    assert sort_keys(store.query(PK, prefix="item")) == ["item", "item#1", "item#10", "item#9", "itemz"]
    assert sort_keys(store.query(PK, prefix="item#", forward=False)) == ["item#9", "item#10", "item#1"]


def test_prefix_treats_sql_wildcards_literally(store):
    put_all(store, ["a%_1", "a%x", "ab_1", "abc", "a_%", "a"])
    assert sort_keys(store.query(PK, prefix="a%")) == ["a%_1", "a%x"]
    assert sort_keys(store.query(PK, prefix="a_")) == ["a_%"]


def test_prefix_ending_in_a_non_ascii_character(store):
    put_all(store, ["ké", "kéa", "kê", "kf"])
    assert sort_keys(store.query(PK, prefix="ké")) == ["ké", "kéa"]


def test_between_is_inclusive(store):
    put_all(store, KEYS)
    got = sort_keys(store.query(PK, between=("item#1", "item#9")))
    assert got == ["item#1", "item#10", "item#9"]
    assert sort_keys(store.query(PK, between=("B", "a"))) == ["B", "Z", "_x", "a"]
    assert sort_keys(store.query(PK, between=("item#1", "item#9"), forward=False)) == got[::-1]


def test_reverse_order(store):
    put_all(store, KEYS)
    assert sort_keys(store.query(PK, forward=False)) == BYTE_ORDER[::-1]


# -- query: paging ------------------------------------------------------------------


@pytest.mark.parametrize("forward", [True, False], ids=["forward", "reverse"])
def test_paging_across_pages_skips_and_repeats_nothing(store, forward):
    expected = [f"item#{i:03d}" for i in range(25)]
    put_all(store, expected)
    pages = drain(store, PK, limit=7, forward=forward)
    assert [len(page.records) for page in pages] == [7, 7, 7, 4]
    assert [sk for page in pages for sk in sort_keys(page)] == (expected if forward else expected[::-1])


def test_paging_with_prefix_and_between(store):
    put_all(store, [f"a#{i:02d}" for i in range(10)] + [f"b#{i:02d}" for i in range(10)])
    by_prefix = drain(store, PK, prefix="b#", limit=3)
    assert [sk for page in by_prefix for sk in sort_keys(page)] == [f"b#{i:02d}" for i in range(10)]
    in_range = drain(store, PK, between=("a#05", "b#04"), limit=4, forward=False)
    expected = [f"a#{i:02d}" for i in range(5, 10)] + [f"b#{i:02d}" for i in range(5)]
    assert [sk for page in in_range for sk in sort_keys(page)] == expected[::-1]


def test_last_key_is_plain_strings_of_the_base_key(store):
    put_all(store, ["a", "b", "c"])
    page = store.query(PK, limit=2)
    assert page.last_key == {"pk": PK, "sk": "b"}


def test_page_ending_exactly_at_the_end(store):
    put_all(store, ["a", "b", "c", "d", "e", "f"])
    first = store.query(PK, limit=3)
    assert sort_keys(first) == ["a", "b", "c"] and first.last_key is not None
    second = store.query(PK, limit=3, after=first.last_key)
    assert sort_keys(second) == ["d", "e", "f"]
    # DynamoDB may hand out a key to an empty page here; SQLite knows nothing follows.
    if second.last_key is not None:
        assert store.query(PK, limit=3, after=second.last_key) == Page(records=[], last_key=None)
    whole = store.query(PK, limit=6)
    assert len(whole.records) == 6
    if whole.last_key is not None:
        assert store.query(PK, after=whole.last_key).records == []


def test_items_written_between_pages_after_the_cursor_are_seen(store):
    put_all(store, ["a", "b", "c"])
    first = store.query(PK, limit=2)
    put_all(store, ["bb", "d"])
    rest = drain(store, PK, after=first.last_key)
    assert [sk for page in rest for sk in sort_keys(page)] == ["bb", "c", "d"]


# -- gsi1 ---------------------------------------------------------------------------


def put_dated(store: RecordStore) -> None:
    store.transact(
        [
            Put(Record(PK, "item#3", {}, gsi1pk=GSI_PK, gsi1sk="2024-01-03")),
            Put(Record(PK, "item#1", {}, gsi1pk=GSI_PK, gsi1sk="2024-01-01")),
            Put(Record("ctx#acme#other", "x", {}, gsi1pk=GSI_PK, gsi1sk="2024-01-02")),
            Put(Record(PK, "no-gsi", {})),
            Put(Record(PK, "half-gsi", {}, gsi1pk=GSI_PK)),
            Put(Record(PK, "other-gsi", {}, gsi1pk=GSI_PK + "2", gsi1sk="2024-01-01")),
        ]
    )


def test_gsi1_query_orders_by_gsi1sk_and_skips_items_without_both_attributes(store):
    put_dated(store)
    page = store.query(GSI_PK, index="gsi1")
    assert [r.gsi1sk for r in page.records] == ["2024-01-01", "2024-01-02", "2024-01-03"]
    assert [(r.pk, r.sk) for r in page.records][1] == ("ctx#acme#other", "x")
    assert page.last_key is None
    assert [r.gsi1sk for r in store.query(GSI_PK, index="gsi1", forward=False).records] == [
        "2024-01-03",
        "2024-01-02",
        "2024-01-01",
    ]


def test_gsi1_prefix_and_between(store):
    put_dated(store)
    assert [r.sk for r in store.query(GSI_PK, index="gsi1", prefix="2024-01-0").records] == ["item#1", "x", "item#3"]
    between = store.query(GSI_PK, index="gsi1", between=("2024-01-02", "2024-01-03"))
    assert [r.sk for r in between.records] == ["x", "item#3"]


def test_gsi1_last_key_names_index_and_base_key(store):
    put_dated(store)
    page = store.query(GSI_PK, index="gsi1", limit=1)
    assert page.last_key == {"gsi1pk": GSI_PK, "gsi1sk": "2024-01-01", "pk": PK, "sk": "item#1"}


@pytest.mark.parametrize("forward", [True, False], ids=["forward", "reverse"])
def test_gsi1_paging_through_equal_sort_values(store, forward):
    """gsi1 sort values repeat (same timestamp); paging must still return each item once."""
    items = [(f"ctx#acme#p{p}", f"k{i}", f"2024-01-0{i % 3}") for p in range(2) for i in range(8)]
    store.transact([Put(Record(pk, sk, {}, gsi1pk=GSI_PK, gsi1sk=gsk)) for pk, sk, gsk in items])
    pages = drain(store, GSI_PK, index="gsi1", limit=3, forward=forward)
    got = [(r.pk, r.sk, r.gsi1sk) for page in pages for r in page.records]
    assert sorted(got) == sorted(items)
    assert len(got) == len(set(got))
    dates = [gsk for _, _, gsk in got]
    assert dates == sorted(dates, reverse=not forward)
    assert all(len(page.records) == 3 for page in pages[:-1])


# -- transactions -------------------------------------------------------------------


def test_transact_is_all_or_nothing_and_names_the_failing_operation(store):
    store.put(Record(PK, "b", {"keep": True}))
    store.put(Record(PK, "c", {}, version=1))
    ops = [
        Put(Record(PK, "a", {"new": True}), Condition.absent()),
        Delete(PK, "b"),
        Check(PK, "c", Condition.version_is(2)),
        Put(Record(PK, "d", {})),
    ]
    with pytest.raises(ConditionFailed) as failed:
        store.transact(ops)
    assert failed.value.index == 2
    assert store.get(PK, "a") is None
    assert store.get(PK, "b").data == {"keep": True}
    assert store.get(PK, "d") is None


def test_transact_reports_the_first_failing_operation(store):
    store.put(Record(PK, "a", {}))
    with pytest.raises(ConditionFailed) as failed:
        store.transact([Put(Record(PK, "x", {})), Check(PK, "a", Condition.absent()), Delete(PK, "y", Condition.exists())])
    assert failed.value.index == 1


def test_transact_put_delete_and_check_commit_together(store):
    """The supersede pattern: close the old value, insert the new one, guard the entity."""
    store.transact(
        [
            Put(Record(PK, "entity", {"name": "alice"}), Condition.absent()),
            Put(Record(PK, "attr#old", {"v": "Paris"})),
        ]
    )
    store.transact(
        [
            Check(PK, "entity", Condition.exists()),
            Delete(PK, "attr#old", Condition.exists()),
            Put(Record(PK, "attr#new", {"v": "Berlin"}, version=1), Condition.absent()),
        ]
    )
    assert sort_keys(store.query(PK)) == ["attr#new", "entity"]


def test_transact_with_nothing_to_do(store):
    store.transact([])
    assert store.query(PK).records == []


def test_transact_rejects_two_operations_on_one_item(store):
    with pytest.raises(ValueError):
        store.transact([Put(Record(PK, "a", {})), Delete(PK, "a")])
    assert store.get(PK, "a") is None


def test_transact_rejects_more_than_100_operations(store):
    with pytest.raises(ValueError):
        store.transact([Put(Record(PK, f"k{i:03d}", {})) for i in range(101)])
    store.transact([Put(Record(PK, f"k{i:03d}", {})) for i in range(100)])
    assert len(store.query(PK, limit=200).records) == 100


# -- batch_get ----------------------------------------------------------------------


def test_batch_get_keeps_input_order_and_omits_missing_keys(store):
    put_all(store, ["a", "b", "c"])
    keys = [(PK, "c"), (PK, "missing"), (PK, "a"), ("ctx#acme#nowhere", "a"), (PK, "b"), (PK, "a")]
    assert [r.sk for r in store.batch_get(keys)] == ["c", "a", "b"]


def test_batch_get_of_more_than_one_request_worth(store):
    sks = [f"k{i:03d}" for i in range(130)]
    for start in range(0, 130, 100):
        put_all(store, sks[start : start + 100])
    wanted = sks[::-1] + ["missing"]
    assert [r.sk for r in store.batch_get([(PK, sk) for sk in wanted])] == sks[::-1]


def test_batch_get_of_nothing(store):
    assert store.batch_get([]) == []


# -- input rules (DynamoDB's limits, enforced by both) --------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.put(Record("", "a", {})),
        lambda s: s.put(Record(PK, "", {})),
        lambda s: s.put(Record(PK, "a", {}, gsi1pk="", gsi1sk="x")),
        lambda s: s.put(Record(PK, "a", {"nan": float("nan")})),
        lambda s: s.put(Record(PK, "a", {"text": "x" * 410_000})),
        lambda s: s.put(Record(PK, "s" * 1025, {})),
        lambda s: s.get(PK, ""),
        lambda s: s.query(PK, prefix="a", between=("a", "b")),
        lambda s: s.query(PK, prefix=""),
        lambda s: s.query(PK, between=("b", "a")),
        lambda s: s.query(PK, limit=0),
        lambda s: s.query(PK, after={"pk": PK + "x", "sk": "a"}),
        lambda s: s.query(PK, after={"pk": PK, "sk": "b#1"}, prefix="a#"),
        lambda s: s.query(GSI_PK, index="gsi1", after={"pk": GSI_PK, "sk": "a"}),
    ],
    ids=[
        "empty-pk", "empty-sk", "empty-gsi1pk", "nan", "item-over-400kb", "sk-over-1024-bytes", "get-empty-sk",
        "prefix-and-between", "empty-prefix", "reversed-between", "zero-limit", "after-other-partition",
        "after-outside-prefix", "base-key-on-gsi1",
    ],
)
def test_inputs_dynamodb_would_reject_are_rejected_by_both(store, call):
    with pytest.raises(ValueError):
        call(store)
    assert store.query(PK).records == []


# -- concurrency --------------------------------------------------------------------


def increment_with_retries(store: RecordStore, writer: int, start: threading.Barrier) -> None:
    """Read the counter, write version + 1 under a version condition and a per-writer
    log entry in the same transaction; on ConditionFailed re-read and try again."""
    start.wait()
    attempts = 0
    while True:
        attempts += 1
        current = store.get(PK, "counter")
        data = {"n": current.data["n"] + 1, "writers": [*current.data["writers"], writer]}
        try:
            store.transact(
                [
                    Put(Record(PK, "counter", data, version=current.version + 1), Condition.version_is(current.version)),
                    Put(Record(PK, f"log#{writer:02d}", {"saw": current.version}), Condition.absent()),
                ]
            )
            return
        except ConditionFailed:
            assert attempts < 500, "no progress"


def test_concurrent_versioned_updates_lose_nothing(store):
    store.put(Record(PK, "counter", {"n": 0, "writers": []}, version=1))
    start = threading.Barrier(20)
    with ThreadPoolExecutor(max_workers=20) as pool:
        list(pool.map(lambda w: increment_with_retries(store, w, start), range(20)))
    counter = store.get(PK, "counter")
    assert counter.version == 21
    assert counter.data["n"] == 20
    assert sorted(counter.data["writers"]) == list(range(20))
    assert len(store.query(PK, prefix="log#").records) == 20


# -- adapter specifics --------------------------------------------------------------


def test_importing_the_dynamodb_adapter_does_not_import_boto3():
    code = "import agent_memory.adapters.dynamodb_store, sys; print('boto3' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_table_is_built_from_the_template(moto_dynamodb, table_name):
    from agent_memory.adapters.dynamodb_table import create_table_from_template, table_properties

    client = moto_dynamodb
    table = client.describe_table(TableName=table_name)["Table"]
    properties = table_properties()
    assert table["KeySchema"] == properties["KeySchema"]
    assert [(i["IndexName"], i["KeySchema"]) for i in table["GlobalSecondaryIndexes"]] == [
        ("gsi1", [{"AttributeName": "gsi1pk", "KeyType": "HASH"}, {"AttributeName": "gsi1sk", "KeyType": "RANGE"}])
    ]
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert table["StreamSpecification"] == {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert table["SSEDescription"]["Status"] == "ENABLED"
    ttl = client.describe_time_to_live(TableName=table_name)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires_at"}
    backups = client.describe_continuous_backups(TableName=table_name)["ContinuousBackupsDescription"]
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
    assert create_table_from_template(client, table_name) is False


def test_dynamodb_item_layout(moto_dynamodb, table_name):
    from agent_memory.adapters.dynamodb_store import DynamoDBRecordStore

    store = DynamoDBRecordStore(table_name, client=moto_dynamodb)
    store.put(Record(PK, "a", {"x": 0.1}, version=4, gsi1pk=GSI_PK, gsi1sk="g", expires_at=99))
    item = moto_dynamodb.get_item(TableName=table_name, Key={"pk": {"S": PK}, "sk": {"S": "a"}})["Item"]
    assert item == {
        "pk": {"S": PK},
        "sk": {"S": "a"},
        "gsi1pk": {"S": GSI_PK},
        "gsi1sk": {"S": "g"},
        "version": {"N": "4"},
        "expires_at": {"N": "99"},
        "data": {"S": '{"x":0.1}'},
    }


class ConflictingClient:
    """Stands in for the boto3 client: TransactWriteItems is cancelled by
    ``TransactionConflict`` ``conflicts`` times, then succeeds."""

    def __init__(self, conflicts: int, reasons=("None", "TransactionConflict")):
        self.conflicts = conflicts
        self.reasons = reasons
        self.calls = 0

    def transact_write_items(self, **kwargs):
        from botocore.exceptions import ClientError

        self.calls += 1
        if self.calls <= self.conflicts:
            raise ClientError(
                {
                    "Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                    "CancellationReasons": [{"Code": code} for code in self.reasons],
                },
                "TransactWriteItems",
            )
        return {}


def conflict_ops():
    return [Put(Record(PK, "a", {})), Check(PK, "b", Condition.exists())]


def test_transaction_conflicts_are_retried():
    from agent_memory.adapters.dynamodb_store import DynamoDBRecordStore

    client = ConflictingClient(conflicts=2)
    DynamoDBRecordStore("t", client=client).transact(conflict_ops())
    assert client.calls == 3


def test_persistent_transaction_conflict_surfaces_as_condition_failed():
    from agent_memory.adapters.dynamodb_store import DynamoDBRecordStore

    client = ConflictingClient(conflicts=1000)
    with pytest.raises(ConditionFailed) as failed:
        DynamoDBRecordStore("t", client=client).transact(conflict_ops())
    assert failed.value.index is None
    assert 1 < client.calls < 10


def test_a_failed_condition_is_not_retried_even_beside_a_conflict():
    from agent_memory.adapters.dynamodb_store import DynamoDBRecordStore

    client = ConflictingClient(conflicts=1000, reasons=("TransactionConflict", "ConditionalCheckFailed"))
    with pytest.raises(ConditionFailed) as failed:
        DynamoDBRecordStore("t", client=client).transact(conflict_ops())
    assert failed.value.index == 1
    assert client.calls == 1


def test_other_cancellations_propagate():
    from botocore.exceptions import ClientError

    from agent_memory.adapters.dynamodb_store import DynamoDBRecordStore

    client = ConflictingClient(conflicts=1, reasons=("None", "ThrottlingError"))
    with pytest.raises(ClientError):
        DynamoDBRecordStore("t", client=client).transact(conflict_ops())


def test_sqlite_stores_sharing_a_file_serialise_conditional_writes(tmp_path):
    """Two connections (as two processes would have) still lose no update."""
    from agent_memory.adapters.sqlite_store import SQLiteRecordStore

    stores = [SQLiteRecordStore(tmp_path / "shared.db") for _ in range(2)]
    stores[0].put(Record(PK, "counter", {"n": 0, "writers": []}, version=1))
    start = threading.Barrier(10)
    with ThreadPoolExecutor(max_workers=10) as pool:
        list(pool.map(lambda w: increment_with_retries(stores[w % 2], w, start), range(10)))
    assert stores[1].get(PK, "counter").version == 11
    for store in stores:
        store.close()


def test_sqlite_data_survives_reopening(tmp_path):
    from agent_memory.adapters.sqlite_store import SQLiteRecordStore

    path = tmp_path / "nested" / "dir" / "records.db"
    first = SQLiteRecordStore(path)
    first.put(Record(PK, "a", {"kept": True}))
    first.close()
    second = SQLiteRecordStore(path)
    assert second.get(PK, "a").data == {"kept": True}
    second.close()


class ShortPagesClient:
    """Stands in for the boto3 client: answers every Query with at most two items, as
    DynamoDB does when a response reaches 1 MB before ``Limit``."""

    def __init__(self, sort_keys):
        self.items = [{"pk": {"S": PK}, "sk": {"S": sk}, "version": {"N": "1"}, "data": {"S": "{}"}} for sk in sort_keys]
        self.limits = []

    def query(self, **kwargs):
        self.limits.append(kwargs["Limit"])
        start = kwargs.get("ExclusiveStartKey")
        offset = next(i + 1 for i, item in enumerate(self.items) if item["sk"] == start["sk"]) if start else 0
        batch = self.items[offset : offset + min(2, kwargs["Limit"])]
        more = offset + len(batch) < len(self.items)
        return {"Items": batch, **({"LastEvaluatedKey": {"pk": batch[-1]["pk"], "sk": batch[-1]["sk"]}} if more else {})}


def test_dynamodb_tops_up_short_responses_to_a_full_page():
    from agent_memory.adapters.dynamodb_store import DynamoDBRecordStore

    client = ShortPagesClient(["a", "b", "c", "d", "e", "f", "g"])
    store = DynamoDBRecordStore("t", client=client)
    page = store.query(PK, limit=5)
    assert sort_keys(page) == ["a", "b", "c", "d", "e"]
    assert page.last_key == {"pk": PK, "sk": "e"}
    assert client.limits == [5, 3, 1]
    rest = store.query(PK, limit=5, after=page.last_key)
    assert sort_keys(rest) == ["f", "g"] and rest.last_key is None


def test_record_from_a_stream_image():
    from agent_memory.adapters.dynamodb_store import record_from_image

    image = {"pk": {"S": PK}, "sk": {"S": "a"}, "version": {"N": "2"}, "data": {"S": '{"n":1.5}'},
             "gsi1pk": {"S": GSI_PK}, "gsi1sk": {"S": "g"}, "expires_at": {"N": "10"}}
    assert record_from_image(image) == Record(PK, "a", {"n": 1.5}, version=2, gsi1pk=GSI_PK, gsi1sk="g", expires_at=10)


def test_ensure_table_creates_the_configured_table_once(aws_env):
    import boto3
    from moto import mock_aws

    from agent_memory.adapters.dynamodb_table import ensure_table

    with mock_aws():
        assert ensure_table("from-settings", region="us-east-1") is True
        assert ensure_table("from-settings", region="us-east-1") is False
        tables = boto3.client("dynamodb", region_name="us-east-1").list_tables()["TableNames"]
        assert tables == ["from-settings"]


def test_scan_returns_every_record_under_a_pk_prefix(store):
    from agent_memory.ports import Record

    for pk in ("c#a#p#x", "c#a#p#y", "c#ab#p#x", "c#b#p#x"):
        for i in range(3):
            store.put(Record(pk=pk, sk=f"{i}", data={"n": i}))
    got = sorted((r.pk, r.sk) for r in store.scan("c#a#"))
    assert got == [(pk, str(i)) for pk in ("c#a#p#x", "c#a#p#y") for i in range(3)]
    assert list(store.scan("c#zzz#")) == []

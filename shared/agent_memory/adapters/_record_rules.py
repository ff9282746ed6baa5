"""Input rules and encoding that both RecordStore adapters share.

DynamoDB rejects some inputs outright (empty or oversized key strings, items over
400 KB, two operations on one item in a transaction, more than 100 of them or more than
4 MB (item sizes as ``kernel.stored_item`` counts them, as DynamoDB does), a
``BETWEEN`` whose bounds are reversed, a start key outside the query's range). SQLite
would accept them, so code that works locally would fail on AWS. Both adapters
therefore run these checks before touching storage and raise ``ValueError``; DynamoDB
never sees a request it would reject for these reasons.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from agent_memory.kernel import stored_item
from agent_memory.kernel.stored_item import MAX_ITEM_BYTES, encode_data
from agent_memory.ports import MAX_TRANSACT_BYTES, MAX_TRANSACT_OPS, Check, Delete, Put, Record, WriteOp

__all__ = ["MAX_ITEM_BYTES", "encode_data"]

_MAX_PARTITION_KEY_BYTES = 2048
_MAX_SORT_KEY_BYTES = 1024

BASE_KEY = ("pk", "sk")
GSI1_KEY = ("gsi1pk", "gsi1sk", "pk", "sk")


def key_attrs(index: Literal["gsi1"] | None) -> tuple[str, ...]:
    """The attributes of a ``Page.last_key`` for a query on ``index``.

    The first two are the queried partition and sort attributes; a gsi1 key also names
    the base-table key because gsi1 sort values need not be unique.
    """
    return GSI1_KEY if index == "gsi1" else BASE_KEY


def decode_data(text: str) -> dict[str, Any]:
    return json.loads(text)


def check_key(pk: str, sk: str) -> None:
    _check_key_part("pk", pk, _MAX_PARTITION_KEY_BYTES)
    _check_key_part("sk", sk, _MAX_SORT_KEY_BYTES)


def check_record(record: Record, data_json: str) -> dict[str, stored_item.Value]:
    """Reject records DynamoDB would reject, using the same limits for both stores; returns
    the item's attributes (``kernel.stored_item.stored_attributes``)."""
    check_key(record.pk, record.sk)
    if record.gsi1pk is not None:
        _check_key_part("gsi1pk", record.gsi1pk, _MAX_PARTITION_KEY_BYTES)
    if record.gsi1sk is not None:
        _check_key_part("gsi1sk", record.gsi1sk, _MAX_SORT_KEY_BYTES)
    attrs = stored_item.stored_attributes(record, data_json)
    size = stored_item.attributes_bytes(attrs)
    if size > MAX_ITEM_BYTES:
        raise ValueError(f"record {record.pk}/{record.sk} is {size} bytes; the limit is {MAX_ITEM_BYTES}")
    return attrs


def op_key(op: WriteOp) -> tuple[str, str]:
    if isinstance(op, Put):
        return op.record.pk, op.record.sk
    if isinstance(op, Delete | Check):
        return op.pk, op.sk
    raise TypeError(f"not a write operation: {op!r}")


def check_transaction_bytes(sizes: Sequence[int]) -> None:
    """A transaction writes at most ``MAX_TRANSACT_BYTES`` (``sizes``: each operation's, as
    ``kernel.stored_item.op_bytes`` counts them)."""
    total = sum(sizes)
    if total > MAX_TRANSACT_BYTES:
        raise ValueError(f"a transaction holds at most {MAX_TRANSACT_BYTES} bytes, got {total}; "
                         "split it (kernel.stored_item.transaction_batches)")


def check_ops(ops: Sequence[WriteOp]) -> None:
    """A transaction holds at most 100 operations, each on a different item."""
    if len(ops) > MAX_TRANSACT_OPS:
        raise ValueError(f"a transaction holds at most {MAX_TRANSACT_OPS} operations, got {len(ops)}")
    seen: set[tuple[str, str]] = set()
    for op in ops:
        key = op_key(op)
        check_key(*key)
        if key in seen:
            raise ValueError(f"a transaction may touch {key} only once")
        seen.add(key)


def check_query(
    pk: str,
    *,
    prefix: str | None,
    between: tuple[str, str] | None,
    after: dict[str, str] | None,
    limit: int,
    index: Literal["gsi1"] | None,
) -> None:
    if index not in (None, "gsi1"):
        raise ValueError(f"unknown index {index!r}")
    if not pk:
        raise ValueError("pk must be a non-empty string")
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if prefix is not None and between is not None:
        raise ValueError("pass prefix or between, not both")
    if prefix == "":
        raise ValueError("prefix must be non-empty; pass None for the whole partition")
    if between is not None and not (between[0] and between[0] <= between[1]):
        raise ValueError("between needs non-empty bounds with low <= high")
    if after is not None:
        _check_after(pk, after, prefix, between, key_attrs(index))


def _check_after(
    pk: str, after: dict[str, str], prefix: str | None, between: tuple[str, str] | None, attrs: tuple[str, ...]
) -> None:
    """``after`` must be a last key of this very query (partition, index and range)."""
    if set(after) != set(attrs) or not all(isinstance(v, str) for v in after.values()):
        raise ValueError(f"after must map exactly {attrs} to strings")
    if after[attrs[0]] != pk:
        raise ValueError("after belongs to another partition")
    sort_value = after[attrs[1]]
    outside_prefix = prefix is not None and not sort_value.startswith(prefix)
    outside_range = between is not None and not between[0] <= sort_value <= between[1]
    if outside_prefix or outside_range:
        raise ValueError("after lies outside the queried range")


def _check_key_part(name: str, value: str, max_bytes: int) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string")
    if len(value.encode("utf-8")) > max_bytes:
        raise ValueError(f"{name} is longer than {max_bytes} bytes")

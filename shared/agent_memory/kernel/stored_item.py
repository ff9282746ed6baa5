"""What a ``RecordStore`` stores for a ``Record``, and its size as DynamoDB counts it.

One definition of the stored item's top-level attributes (``stored_attributes``), which the
DynamoDB adapter turns into attribute values and both stores size with: DynamoDB's item size
is the UTF-8 length of every attribute *name* plus the size of its *value* (a string its UTF-8
bytes, a number at most 21 bytes (counted at 21, the safe side), a boolean 1 byte, a string
set the sum of its strings). Both stores enforce DynamoDB's limits on those sizes (400 KB an
item, 4 MB a transaction), so code sized for one fits the other.

``transaction_batches`` splits independent writes (parts of a document, the tombstones of a
forget) into transactions that hold at most ``MAX_TRANSACT_OPS`` operations *and*
``TRANSACT_BATCH_BYTES``: 4 MB less one largest item, room a store wrapper may use for a row of
its own (the projection outbox adds one to a transaction).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from agent_memory.kernel.scope_paths import ancestors as path_ancestors
from agent_memory.ports import MAX_TRANSACT_BYTES, MAX_TRANSACT_OPS, Check, Delete, Put, Record, WriteOp

MAX_ITEM_BYTES = 400 * 1024
# What one batch of ``transaction_batches`` fills: room stays for one more item of any size.
TRANSACT_BATCH_BYTES = MAX_TRANSACT_BYTES - MAX_ITEM_BYTES
NUMBER_BYTES = 21
BOOL_BYTES = 1

Value = str | int | bool | list[str]
T = TypeVar("T")


def encode_data(data: dict[str, Any]) -> str:
    """Compact JSON, non-ASCII kept as is (smaller items); NaN/Infinity rejected as not JSON."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _clauses(data: dict[str, Any]) -> list[list[str]]:
    raw = data.get("scopes")
    if not isinstance(raw, list):
        return []
    out: list[list[str]] = []
    for clause in raw:
        if isinstance(clause, str):
            out.append([clause])
        elif isinstance(clause, list) and all(isinstance(p, str) for p in clause):
            out.append(list(clause))
    return [c for c in out if c]


def scope_attributes(data: dict[str, Any]) -> dict[str, Value]:
    """The read-region filter's top-level attributes of an item whose data is ``data``
    (``adapters/_scope_filter.py`` says what each one means)."""
    clauses = _clauses(data)
    if not clauses:
        return {}
    attrs: dict[str, Value] = {"ss": True}
    singles = [c[0] for c in clauses if len(set(c)) == 1]
    if len(singles) < len(clauses):
        attrs["sm"] = True
    ancestors = sorted({a for p in singles for a in path_ancestors(p)})
    tokens = sorted({t for p in singles for i, seg in enumerate(p.split("/")) for t in (f"{i}:{seg}", f"{i}:*")})
    if ancestors:
        attrs["sa"] = ancestors
        attrs["st"] = tokens
    return attrs


def stored_attributes(record: Record, data_json: str) -> dict[str, Value]:
    """The item's attributes: key, version, the data as one JSON string, a top-level copy of
    the record kind (the projector's stream filter), the scope filter's attributes, the gsi1
    key and the TTL attribute, each only when the record has it."""
    attrs: dict[str, Value] = {"pk": record.pk, "sk": record.sk, "version": record.version, "data": data_json}
    if isinstance(record.data.get("kind"), str):
        attrs["kind"] = record.data["kind"]
    attrs.update(scope_attributes(record.data))
    if record.gsi1pk is not None:
        attrs["gsi1pk"] = record.gsi1pk
    if record.gsi1sk is not None:
        attrs["gsi1sk"] = record.gsi1sk
    if record.expires_at is not None:
        attrs["expires_at"] = record.expires_at
    return attrs


def value_bytes(value: Value) -> int:
    if isinstance(value, bool):
        return BOOL_BYTES
    if isinstance(value, int):
        return NUMBER_BYTES
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    return sum(len(s.encode("utf-8")) for s in value)


def attributes_bytes(attrs: dict[str, Value]) -> int:
    """DynamoDB's size of an item with these attributes: names plus values."""
    return sum(len(name.encode("utf-8")) + value_bytes(value) for name, value in attrs.items())


def key_bytes(pk: str, sk: str) -> int:
    return attributes_bytes({"pk": pk, "sk": sk})


def record_bytes(record: Record) -> int:
    return attributes_bytes(stored_attributes(record, encode_data(record.data)))


def op_bytes(op: WriteOp) -> int:
    """What ``op`` adds to a transaction's size: the item a put writes; the key of a delete
    or condition check."""
    if isinstance(op, Put):
        return record_bytes(op.record)
    if isinstance(op, Delete | Check):
        return key_bytes(op.pk, op.sk)
    raise TypeError(f"not a write operation: {op!r}")


def batches(items: Iterable[T], size: Callable[[T], int], *, max_count: int = MAX_TRANSACT_OPS,
            max_bytes: int = TRANSACT_BATCH_BYTES) -> list[list[T]]:
    """``items`` in order, cut into runs of at most ``max_count`` items whose ``size`` adds up
    to at most ``max_bytes`` (an item over ``max_bytes`` alone forms a run of its own)."""
    out: list[list[T]] = []
    run: list[T] = []
    total = 0
    for item in items:
        n = size(item)
        if run and (len(run) >= max_count or total + n > max_bytes):
            out.append(run)
            run, total = [], 0
        run.append(item)
        total += n
    if run:
        out.append(run)
    return out


def transaction_batches(ops: Sequence[WriteOp], *, max_ops: int = MAX_TRANSACT_OPS,
                        max_bytes: int = TRANSACT_BATCH_BYTES) -> list[list[WriteOp]]:
    """Independent ``ops`` as transactions within DynamoDB's limits (see the module docstring)."""
    return batches(ops, op_bytes, max_count=max_ops, max_bytes=max_bytes)


def fits_one_transaction(ops: Sequence[WriteOp]) -> bool:
    """Whether ``ops`` may be one transaction of a store wrapped by the projection: at most
    ``MAX_TRANSACT_OPS`` operations and ``TRANSACT_BATCH_BYTES``."""
    return len(ops) <= MAX_TRANSACT_OPS and sum(op_bytes(op) for op in ops) <= TRANSACT_BATCH_BYTES

"""SQLite RecordStore: the embedded, single-machine twin of the DynamoDB adapter.

Same ``Record`` layout and semantics as ``dynamodb_store`` (whose docstring gives the key
design), in one table of one file:

- Text columns use SQLite's default ``BINARY`` collation, which compares UTF-8 bytes,
  the order DynamoDB gives sort keys.
- ``gsi1`` is an index on ``(gsi1pk, gsi1sk, pk, sk)``; gsi1 queries skip rows missing
  either gsi1 attribute (as a sparse DynamoDB GSI does) and order ties on ``gsi1sk`` by
  the base key, so paging is exact even when gsi1 sort values repeat.
- One connection, guarded by a lock, serves every thread of the process; every write
  runs in ``BEGIN IMMEDIATE`` so a condition is evaluated and acted on under the write
  lock, also against other processes using the same file (they wait up to the busy
  timeout). WAL lets those processes read while one writes.
- Expired rows (``expires_at`` in the past) stay until overwritten or deleted; readers
  check ``expires_at`` as they must with DynamoDB's lazy TTL.
- ``projection_outbox`` holds, for writes that change the search index, an entry committed
  in the same transaction as the records (``apply_with_outbox``); the projecting store
  clears it once the index has the change, and replays what is left at startup.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from agent_memory.adapters import _record_rules as rules
from agent_memory.adapters import _scope_filter
from agent_memory.kernel import stored_item
from agent_memory.ports import Condition, ConditionFailed, Delete, Page, Put, Record, WriteOp

_BUSY_TIMEOUT_S = 30.0
_IN_CHUNK = 500  # sort keys per ``IN (...)`` of a batch read (SQLite allows 32,766 parameters)
_COLUMNS = "pk, sk, gsi1pk, gsi1sk, version, expires_at, data"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    gsi1pk TEXT,
    gsi1sk TEXT,
    version INTEGER NOT NULL,
    expires_at INTEGER,
    data TEXT NOT NULL,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_gsi1 ON records (gsi1pk, gsi1sk, pk, sk);
CREATE TABLE IF NOT EXISTS projection_outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    entry TEXT NOT NULL
);
"""


class SQLiteRecordStore:
    """``RecordStore`` in one SQLite file; safe to share between threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # timeout is SQLite's busy timeout: how long a write waits for another process's
        # lock. Autocommit (isolation_level=None): transactions are opened explicitly below.
        self._conn = sqlite3.connect(
            self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        # The read-region filter runs inside the query (adapters/_scope_filter.py).
        self._conn.create_function("scope_visible", 2, _scope_filter.sqlite_visible, deterministic=True)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- reads ---------------------------------------------------------------

    def generation(self) -> tuple[int, int]:
        """A token that changes whenever a record of this file may have changed: this
        connection's writes (``total_changes``) or a commit by any other connection or
        process (``PRAGMA data_version``). A reader's decoded copies are current while it
        holds (``services.retrieval`` keeps tier-1 reads that way)."""
        with self._lock:
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0]), self._conn.total_changes

    def get(self, pk: str, sk: str) -> Record | None:
        rules.check_key(pk, sk)
        with self._lock:
            return _fetch(self._conn, pk, sk)

    def batch_get(self, keys: Sequence[tuple[str, str]]) -> list[Record]:
        """Records for ``keys`` in input order; missing keys and repeats are left out."""
        unique = list(dict.fromkeys(keys))
        by_pk: dict[str, list[str]] = {}
        for pk, sk in unique:
            rules.check_key(pk, sk)
            by_pk.setdefault(pk, []).append(sk)
        rows: dict[tuple[str, str], tuple] = {}
        with self._lock:  # one primary-key lookup per partition (and chunk), not one per key
            for pk, sks in by_pk.items():
                for i in range(0, len(sks), _IN_CHUNK):
                    chunk = sks[i:i + _IN_CHUNK]
                    sql = f"SELECT {_COLUMNS} FROM records WHERE pk = ? AND sk IN ({','.join('?' * len(chunk))})"
                    for row in self._conn.execute(sql, (pk, *chunk)):
                        rows[(row[0], row[1])] = row
        return [_to_record(rows[key]) for key in unique if key in rows]

    def query(
        self,
        pk: str,
        *,
        prefix: str | None = None,
        between: tuple[str, str] | None = None,
        after: dict[str, str] | None = None,
        limit: int = 100,
        forward: bool = True,
        index: Literal["gsi1"] | None = None,
        read_region: Sequence[str] | None = None,
    ) -> Page:
        """One page of up to ``limit`` records; reads one row more to know whether any follow,
        so ``last_key`` is ``None`` whenever this page is the last. ``read_region``: only
        records that region may read, filtered in the SQL itself (a full page when enough
        visible records follow, however many invisible ones lie between them)."""
        rules.check_query(pk, prefix=prefix, between=between, after=after, limit=limit, index=index)
        key_attrs = rules.key_attrs(index)
        sql, params = _query_sql(pk, prefix, between, after, forward, key_attrs, read_region)
        with self._lock:
            rows = self._conn.execute(sql, [*params, limit + 1]).fetchall()
        records = [_to_record(row) for row in rows[:limit]]
        last_key = {attr: getattr(records[-1], attr) for attr in key_attrs} if len(rows) > limit else None
        return Page(records=records, last_key=last_key)

    def scan(self, pk_prefix: str) -> Iterator[Record]:
        """Records whose pk starts with ``pk_prefix``, in key order, read in batches."""
        if not pk_prefix:
            raise ValueError("scan needs a non-empty pk prefix")
        upper = pk_prefix[:-1] + chr(ord(pk_prefix[-1]) + 1)
        last = (pk_prefix, "")
        while True:
            with self._lock:
                rows = self._conn.execute(
                    f"SELECT {_COLUMNS} FROM records WHERE (pk, sk) > (?, ?) AND pk < ? ORDER BY pk, sk LIMIT 500",
                    (*last, upper)).fetchall()
            if not rows:
                return
            for row in rows:
                yield _to_record(row)
            last = (rows[-1][0], rows[-1][1])

    def scan_page(self, pk_prefix: str, *, after: dict[str, str] | None = None, limit: int = 500) -> Page:
        """Up to ``limit`` records whose pk starts with ``pk_prefix``, in key order, after ``after``."""
        if not pk_prefix:
            raise ValueError("scan needs a non-empty pk prefix")
        upper = pk_prefix[:-1] + chr(ord(pk_prefix[-1]) + 1)
        last = (after["pk"], after["sk"]) if after else (pk_prefix, "")
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM records WHERE (pk, sk) > (?, ?) AND pk < ? ORDER BY pk, sk LIMIT ?",
                (*last, upper, max(1, limit) + 1)).fetchall()
        records = [_to_record(row) for row in rows[:max(1, limit)]]
        more = len(rows) > max(1, limit)
        return Page(records=records, last_key={"pk": records[-1].pk, "sk": records[-1].sk} if more else None)

    # -- writes --------------------------------------------------------------

    def put(self, record: Record, condition: Condition | None = None) -> None:
        self._apply([Put(record, condition)], single=True)

    def delete(self, pk: str, sk: str, condition: Condition | None = None) -> None:
        self._apply([Delete(pk, sk, condition)], single=True)

    def transact(self, ops: Sequence[WriteOp]) -> None:
        self._apply(ops, single=False)

    # -- projection outbox -------------------------------------------------------

    def apply_with_outbox(self, ops: Sequence[WriteOp], entry: str, *, single: bool) -> int | None:
        """Apply ``ops`` (as ``put``/``delete`` when ``single``, else as ``transact``) and add
        ``entry`` to the outbox in the same transaction; returns the entry's id."""
        return self._apply(ops, single=single, outbox_entry=entry)

    def outbox_entries(self, limit: int = 200) -> list[tuple[int, str]]:
        with self._lock:
            return self._conn.execute("SELECT id, entry FROM projection_outbox ORDER BY id LIMIT ?",
                                      (limit,)).fetchall()

    def clear_outbox(self, ids: Sequence[int]) -> None:
        if not ids:
            return
        with self._write_transaction() as conn:
            conn.executemany("DELETE FROM projection_outbox WHERE id = ?", [(i,) for i in ids])

    def _apply(self, ops: Sequence[WriteOp], *, single: bool, outbox_entry: str | None = None) -> int | None:
        """Check and apply ``ops`` in order inside one write transaction; the first failed
        condition rolls everything back. Keys are distinct, so checking each op just
        before applying it equals checking all first."""
        rules.check_ops(ops)
        if not ops:
            return None
        encoded = [_encode(op.record) if isinstance(op, Put) else None for op in ops]
        if not single:
            rules.check_transaction_bytes([e[1] if e else stored_item.key_bytes(*rules.op_key(op))
                                           for op, e in zip(ops, encoded, strict=True)])
        payloads = [e[0] if e else None for e in encoded]
        with self._write_transaction() as conn:
            for i, (op, payload) in enumerate(zip(ops, payloads, strict=True)):
                pk, sk = rules.op_key(op)
                if op.condition is not None and not _holds(conn, pk, sk, op.condition):
                    raise ConditionFailed(index=None if single else i)
                if isinstance(op, Put) and payload is not None:
                    _upsert(conn, op.record, payload)
                elif isinstance(op, Delete):
                    conn.execute("DELETE FROM records WHERE pk = ? AND sk = ?", (pk, sk))
            if outbox_entry is None:
                return None
            return conn.execute("INSERT INTO projection_outbox (entry) VALUES (?)", (outbox_entry,)).lastrowid

    @contextmanager
    def _write_transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")


# -- helpers -------------------------------------------------------------------


def _fetch(conn: sqlite3.Connection, pk: str, sk: str) -> Record | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM records WHERE pk = ? AND sk = ?", (pk, sk)).fetchone()
    return _to_record(row) if row else None


def _encode(record: Record) -> tuple[str, int]:
    """The record's data JSON and its item's size as DynamoDB counts it."""
    data = rules.encode_data(record.data)
    return data, stored_item.attributes_bytes(rules.check_record(record, data))


def _holds(conn: sqlite3.Connection, pk: str, sk: str, condition: Condition) -> bool:
    row = conn.execute("SELECT version FROM records WHERE pk = ? AND sk = ?", (pk, sk)).fetchone()
    if condition.kind == "absent":
        return row is None
    if condition.kind == "exists":
        return row is not None
    return row is not None and row[0] == condition.expected_version


def _upsert(conn: sqlite3.Connection, record: Record, data: str) -> None:
    conn.execute(
        f"INSERT OR REPLACE INTO records ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (record.pk, record.sk, record.gsi1pk, record.gsi1sk, record.version, record.expires_at, data),
    )


def _to_record(row: tuple) -> Record:
    pk, sk, gsi1pk, gsi1sk, version, expires_at, data = row
    return Record(
        pk=pk,
        sk=sk,
        data=rules.decode_data(data),
        version=version,
        gsi1pk=gsi1pk,
        gsi1sk=gsi1sk,
        expires_at=expires_at,
    )


def _query_sql(
    pk: str,
    prefix: str | None,
    between: tuple[str, str] | None,
    after: dict[str, str] | None,
    forward: bool,
    key_attrs: tuple[str, ...],
    read_region: Sequence[str] | None = None,
) -> tuple[str, list[str]]:
    """SELECT for one page (the caller appends the LIMIT parameter).

    Rows are ordered by every key attribute after the partition one: ``sk`` for the base
    table, ``gsi1sk, pk, sk`` for gsi1. ``after`` resumes strictly past that tuple.
    """
    partition, sort = key_attrs[0], key_attrs[1]
    order = key_attrs[1:]
    where, params = [f"{partition} = ?", f"{sort} IS NOT NULL"], [pk]
    if prefix is not None:
        where.append(f"{sort} >= ?")
        params.append(prefix)
        upper = _prefix_upper_bound(prefix)
        if upper is not None:
            where.append(f"{sort} < ?")
            params.append(upper)
    elif between is not None:
        where.append(f"{sort} BETWEEN ? AND ?")
        params.extend(between)
    if after is not None:
        where.append(f"({', '.join(order)}) {'>' if forward else '<'} ({', '.join('?' * len(order))})")
        params.extend(after[attr] for attr in order)
    if read_region is not None:
        where.append("scope_visible(json_extract(data, '$.scopes'), ?)")
        params.append(_scope_filter.region_json(read_region))
    direction = "ASC" if forward else "DESC"
    sql = (
        f"SELECT {_COLUMNS} FROM records WHERE {' AND '.join(where)} "
        f"ORDER BY {', '.join(f'{attr} {direction}' for attr in order)} LIMIT ?"
    )
    return sql, params


def _prefix_upper_bound(prefix: str) -> str | None:
    """The least string above every string starting with ``prefix`` (code point order,
    which is UTF-8 byte order), so a prefix query is an index range scan, not a LIKE.
    ``None`` when no string is above them all (the prefix is all U+10FFFF)."""
    chars = list(prefix)
    while chars:
        code = ord(chars.pop())
        if code < 0x10FFFF:
            code += 1
            if 0xD800 <= code <= 0xDFFF:  # surrogates cannot be stored as UTF-8
                code = 0xE000
            return "".join(chars) + chr(code)
    return None

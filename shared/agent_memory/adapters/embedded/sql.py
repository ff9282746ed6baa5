"""The embedded index's SQLite file: its schema (units, an external-content FTS5 table kept in
sync by triggers, vector blobs), the revision-guarded upsert, the stored forms of a unit's
filter columns, and the transaction and ``IN (...)`` helpers every statement shares."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from agent_memory.adapters.embedded.fts import TOKENIZE, context_token
from agent_memory.adapters.search_units import unit_to_dict
from agent_memory.kernel import timeutil
from agent_memory.kernel.cjk import cjk_bigrams
from agent_memory.ports import SearchUnit

SQL_IN_CHUNK = 500


def scopes_key(scopes: Sequence[Sequence[str]]) -> str:
    """Canonical JSON of a DNF (clauses sorted, paths sorted, duplicates removed)."""
    clauses = sorted({tuple(sorted(set(c))) for c in scopes})
    return json.dumps([list(c) for c in clauses], separators=(",", ":"))


def epoch(value: str | None) -> float | None:
    return None if value is None else timeutil.parse(value).timestamp()


SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS units (
    pk INTEGER PRIMARY KEY,
    context_id TEXT NOT NULL,
    id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    kind TEXT NOT NULL,
    partition TEXT NOT NULL,
    role TEXT,
    session_id TEXT,
    thread_id TEXT,
    valid_from REAL,
    valid_until REAL,
    scopes_key TEXT NOT NULL,
    acl_key TEXT,
    labels_key TEXT NOT NULL,
    payload TEXT NOT NULL,
    text TEXT NOT NULL,
    ctx_token TEXT NOT NULL,
    UNIQUE (context_id, id)
);
CREATE VIRTUAL TABLE IF NOT EXISTS units_fts USING fts5(
    text, ctx_token, content='units', content_rowid='pk', tokenize='{tokenize}'
);
CREATE TRIGGER IF NOT EXISTS units_ai AFTER INSERT ON units BEGIN
    INSERT INTO units_fts(rowid, text, ctx_token) VALUES (new.pk, new.text, new.ctx_token);
END;
CREATE TRIGGER IF NOT EXISTS units_ad AFTER DELETE ON units BEGIN
    INSERT INTO units_fts(units_fts, rowid, text, ctx_token) VALUES ('delete', old.pk, old.text, old.ctx_token);
    DELETE FROM vectors WHERE pk = old.pk;
END;
CREATE TRIGGER IF NOT EXISTS units_au AFTER UPDATE OF text ON units BEGIN
    INSERT INTO units_fts(units_fts, rowid, text, ctx_token) VALUES ('delete', old.pk, old.text, old.ctx_token);
    INSERT INTO units_fts(rowid, text, ctx_token) VALUES (new.pk, new.text, new.ctx_token);
END;
CREATE TABLE IF NOT EXISTS vectors (pk INTEGER PRIMARY KEY, embedding BLOB NOT NULL);
""".replace("{tokenize}", TOKENIZE)

# Connection-local helpers for the BM25 budget: a scratch FTS5 table with the same tokenizer
# turns query words into index terms (porter stems), and a vocabulary view gives their
# document frequencies.
TEMP_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_tokens USING fts5(text, tokenize='{tokenize}');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_token_instances USING fts5vocab(temp, query_tokens, 'instance');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.units_vocab USING fts5vocab(main, units_fts, 'row');
""".replace("{tokenize}", TOKENIZE)

UPSERT = """
INSERT INTO units (context_id, id, revision, kind, partition, role, session_id, thread_id,
                   valid_from, valid_until, scopes_key, acl_key, labels_key, payload, text, ctx_token)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (context_id, id) DO UPDATE SET
    revision = excluded.revision, kind = excluded.kind, partition = excluded.partition,
    role = excluded.role, session_id = excluded.session_id, thread_id = excluded.thread_id,
    valid_from = excluded.valid_from, valid_until = excluded.valid_until,
    scopes_key = excluded.scopes_key, acl_key = excluded.acl_key, labels_key = excluded.labels_key,
    payload = excluded.payload, text = excluded.text
WHERE excluded.revision >= units.revision
RETURNING pk
"""

TEXT_PARAM = 14  # the FTS5 text in ``unit_params``'s parameters
SCHEMA_VERSION = "2"  # 2: CJK runs indexed as character bigrams (kernel.cjk); rebuild with reindex

ROW_COLUMNS = ("pk, id, kind, partition, role, session_id, thread_id, valid_from, valid_until, "
                "scopes_key, acl_key, labels_key")

@dataclasses.dataclass
class Row:
    """The filterable columns of one unit, as stored in SQLite and mirrored in memory."""

    pk: int
    id: str
    kind: str
    partition: str
    role: str | None
    session_id: str | None
    thread_id: str | None
    valid_from: float | None
    valid_until: float | None
    scopes_key: str
    acl_key: str | None
    labels_key: str
    features: tuple[int, Any, str | None] | None = None  # (seq, key, occurred_at): ``unit_features``



# The same features cut out of stored payloads by SQLite when a view loads: one JSON array
# per row (JSON values, so ``json.loads`` gives them the types the decoded unit would have).
FEATURE_COLUMNS = "pk, json_extract(payload, '$.metadata.seq', '$.metadata.key', '$.occurred_at')"


def unit_params(u: SearchUnit) -> tuple[Any, ...]:
    """``UPSERT``'s parameters for ``u`` (validates its timestamps before anything is written)."""
    acl = None if u.acl_readers is None else json.dumps(sorted(set(u.acl_readers)))
    return (
        u.context_id, u.id, int(u.revision), u.kind, u.partition, u.role, u.session_id,
        u.thread_id, epoch(u.valid_from), epoch(u.valid_until),
        scopes_key(u.scopes), acl, json.dumps(sorted(set(u.labels))),
        json.dumps(unit_to_dict(u), ensure_ascii=False, separators=(",", ":")),
        cjk_bigrams(u.text),  # the FTS5 column: CJK runs as bigrams (the payload keeps the text)
        context_token(u.context_id),
    )


def row_from_params(pk: int, p: tuple[Any, ...]) -> Row:
    """The in-memory row of an applied ``UPSERT`` (parameter order as in ``unit_params``)."""
    return Row(pk=pk, id=p[1], kind=p[3], partition=p[4], role=p[5], session_id=p[6], thread_id=p[7],
                valid_from=p[8], valid_until=p[9], scopes_key=p[10], acl_key=p[11], labels_key=p[12])


class Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` / ``ROLLBACK`` on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")


def chunks(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def qmarks(items: Sequence[Any]) -> str:
    return ",".join("?" * len(items))

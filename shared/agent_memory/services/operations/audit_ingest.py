"""The audit log's cost rows, from the lines the API functions logged to the table.

Each successful API request hands its cost row (``AuditLog.usage``) to the audit sink; a
deployed function's sink prints it as one JSON line, ``{"auditRecord": {pk, sk, expiresAt,
data}}`` (``adapters/audit_sinks.LogAuditSink``). CloudWatch Logs delivers those lines to
``AuditFunction`` in batches (a subscription filter on the functions' log group), which
writes them here, in transactions of up to 25 rows. Only cost rows travel this way, and
only into an audit partition (``c#<context>#<partition>#audit``): a line that is not one is
skipped and counted. A batch delivered twice writes the same rows again (unconditioned puts
of the same keys and data), so redelivery duplicates nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agent_memory.ports import Put, Record, RecordStore

LOG_KEY = "auditRecord"
BATCH = 25
_AUDIT_PK = re.compile(r"^c#[^#]+#[^#]+#audit$")
_AUDIT_SK = re.compile(r"^[0-9T:.\-Z]+#audit_[0-9a-z]{26}$")


@dataclass(frozen=True)
class Ingested:
    written: int
    skipped: int


def cost_row(line: str) -> Record | None:
    """The cost row a log line carries, or None when it carries none (or a malformed one)."""
    start = line.find("{")
    if start < 0 or LOG_KEY not in line:
        return None
    try:
        body = json.loads(line[start:])
    except ValueError:
        return None
    row: Any = body.get(LOG_KEY) if isinstance(body, dict) else None
    if not isinstance(row, dict):
        return None
    pk, sk, data, expires = row.get("pk"), row.get("sk"), row.get("data"), row.get("expiresAt")
    if not (isinstance(pk, str) and _AUDIT_PK.match(pk) and isinstance(sk, str) and _AUDIT_SK.match(sk)):
        return None
    if not isinstance(data, dict) or data.get("kind") != "audit" or data.get("reason") != "usage":
        return None
    if expires is not None and not isinstance(expires, int):
        return None
    return Record(pk=pk, sk=sk, data=data, expires_at=expires)


def ingest(store: RecordStore, lines: Iterable[str]) -> Ingested:
    rows: dict[tuple[str, str], Record] = {}
    skipped = 0
    for line in lines:
        row = cost_row(line)
        if row is None:
            skipped += 1
        else:
            rows[(row.pk, row.sk)] = row  # one transaction holds a key once
    ordered = list(rows.values())
    for start in range(0, len(ordered), BATCH):
        store.transact([Put(r) for r in ordered[start:start + BATCH]])
    return Ingested(written=len(ordered), skipped=skipped)

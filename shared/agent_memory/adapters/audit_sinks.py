"""Where cost rows of the audit log go, off the request path (docs/decisions.md, "Audit costs").

- ``LogAuditSink`` (deployed): one JSON line on stdout per row, ``{"auditRecord": {...}}``.
  Lambda ships stdout to CloudWatch Logs after the fact; a subscription filter on the
  functions' log group hands the lines, in batches, to ``AuditFunction``, which writes
  them to the table (``services/operations/audit_ingest``). The request makes no call for it.
- ``BackgroundAuditSink`` (the local server): a queue that a daemon thread drains into the
  record store in transactions of up to 25 rows; ``flush`` waits for it (GET /audit calls it,
  so a local reader sees its own rows at once).
- ``NullAuditSink``: cost rows are not kept (``audit_usage: off``).
"""

from __future__ import annotations

import json
import logging
import queue
import sys
import threading
from typing import Any

from agent_memory.ports import Put, Record, RecordStore

log = logging.getLogger("agent_memory.audit")

#: The key a log line of an audit row carries (the subscription filter matches on it).
LOG_KEY = "auditRecord"
BATCH = 25


def record_wire(record: Record) -> dict[str, Any]:
    return {"pk": record.pk, "sk": record.sk, "expiresAt": record.expires_at, "data": record.data}


class NullAuditSink:
    def emit(self, record: Record) -> None:
        pass

    def flush(self) -> None:
        pass


class LogAuditSink:
    def __init__(self, stream: Any = None):
        self._stream = stream

    def emit(self, record: Record) -> None:
        out = self._stream or sys.stdout
        out.write(json.dumps({LOG_KEY: record_wire(record)}, separators=(",", ":"), default=str) + "\n")

    def flush(self) -> None:
        pass  # rows reach the table through the log subscription, seconds later


class BackgroundAuditSink:
    def __init__(self, store: RecordStore):
        self.store = store
        self._queue: queue.Queue[Record | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def emit(self, record: Record) -> None:
        self._start()
        self._queue.put(record)

    def flush(self) -> None:
        if self._thread is not None:
            self._queue.join()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="audit-sink", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                rows = [r for r in batch if r is not None]
                if rows:
                    self.store.transact([Put(r) for r in rows])
            except Exception:  # a lost cost row must not stop the ones after it
                log.warning("could not write %d audit cost rows", len(batch), exc_info=True)
            finally:
                for _ in batch:
                    self._queue.task_done()

"""What one request costs: model calls and tokens, and the store rows it read and wrote.

The HTTP layer opens a ``Usage`` for each request (``begin``); the metered language model
(``observability.MeteredLanguageModel``) and the metered record store (``MeteredStore``) add
to the request's own, found through a ``ContextVar`` (threads a request starts copy its
context, so their calls count too). At the end of the request the audit log turns it into a
cost row (``services/conversation/reader_access.AuditLog.usage``), off the request path.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Usage:
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rows_read: int = 0
    rows_written: int = 0
    models: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, *, model: str | None = None, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + int(value or 0))
            if model and model not in self.models:
                self.models.append(model)

    @property
    def rows_touched(self) -> int:
        return self.rows_read + self.rows_written


_current: contextvars.ContextVar[Usage | None] = contextvars.ContextVar("agent_memory_usage", default=None)


def begin() -> contextvars.Token[Usage | None]:
    return _current.set(Usage())


def end(token: contextvars.Token[Usage | None]) -> None:
    _current.reset(token)


def current() -> Usage | None:
    return _current.get()


def add(**counts: Any) -> None:
    """Add to the current request's usage (nothing outside a request)."""
    usage = _current.get()
    if usage is not None:
        usage.add(**counts)


class MeteredStore:
    """A record store that counts, for the current request, the rows each call returned or
    wrote; everything else passes through (like ``tracing.Traced``)."""

    def __init__(self, inner: Any):
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get(self, pk: str, sk: str) -> Any:
        record = self.inner.get(pk, sk)
        add(rows_read=1 if record is not None else 0)
        return record

    def batch_get(self, keys: Any) -> Any:
        records = self.inner.batch_get(keys)
        add(rows_read=len(records))
        return records

    def query(self, pk: str, **kwargs: Any) -> Any:
        page = self.inner.query(pk, **kwargs)
        scanned = getattr(page, "scanned", None)  # what a filtered query evaluated (and was billed)
        add(rows_read=scanned if scanned is not None else len(page.records))
        return page

    def put(self, record: Any, condition: Any = None) -> None:
        self.inner.put(record, condition)
        add(rows_written=1)

    def delete(self, pk: str, sk: str, condition: Any = None) -> None:
        self.inner.delete(pk, sk, condition)
        add(rows_written=1)

    def transact(self, ops: Any) -> None:
        self.inner.transact(ops)
        add(rows_written=len(ops))

    def scan(self, pk_prefix: str) -> Iterator[Any]:
        return self.inner.scan(pk_prefix)

    def scan_page(self, pk_prefix: str, **kwargs: Any) -> Any:
        page = self.inner.scan_page(pk_prefix, **kwargs)
        scanned = getattr(page, "scanned", None)
        add(rows_read=scanned if scanned is not None else len(page.records))
        return page

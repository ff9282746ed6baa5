"""The conversation containers' typed stored records: a session, a thread and a thread turn's
stored part. Apart from ``models.records`` (whose ``StoredItem`` they share), so the functions
that only project and rank units do not build them at import (docs/decisions.md, "Cold import:
what waits for its use, and what does not")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from agent_memory.models.records import StoredItem, _optional


@dataclass(frozen=True, kw_only=True)
class Session(StoredItem):
    KIND: ClassVar[str] = "session"
    id: str
    context_id: str
    partition: str = "default"
    scopes: list[list[str]]
    labels: list[str] = field(default_factory=list)
    created_at: str
    created_by: str | None = None
    closed_at: str | None = None
    turn_count: int = 0
    last_turn_at: str | None = _optional()
    deleted: bool = _optional(False)
    metadata: dict[str, Any] | None = _optional()

@dataclass(frozen=True, kw_only=True)
class Thread(StoredItem):
    KIND: ClassVar[str] = "thread"
    id: str
    context_id: str
    partition: str
    turn_count: int
    acl_readers: list[str] | None = None
    acl_version: int = 0
    created_at: str
    updated_at: str
    created_by: str | None = None
    # The scopes of the write that made the thread (DNF; ``None``: unscoped, as every thread
    # made before threads carried scopes): its turns' scopes when they name none.
    scopes: list[list[str]] | None = _optional()

@dataclass(frozen=True, kw_only=True)
class ThreadTurnPart(StoredItem):
    """A piece of a thread turn's text beyond its ``text_head`` (part ``n`` of ``text_parts``)."""

    KIND: ClassVar[str] = "thread_turn_part"
    turn_id: str
    text: str

"""Typed stored records: the ones search projects (turn, thread turn, chunk) and the paging
types. Sessions and threads themselves are in ``models.conversation_records``, a document's own
rows in ``models.document_records``: apart, so the functions that only project and rank units
(recall, state) do not build them at import.

The ``RecordStore`` port stores an item as a dict (``Record.data``); services convert at
their boundary with ``X.from_item(record.data)`` and ``x.to_item()`` and otherwise use
attributes, so a misspelt field fails loudly (``AttributeError``, a type checker) instead of
reading ``None``. Records are frozen: a change is ``dataclasses.replace(x, field=...)``.

Item keys are the camelCase of the attribute names (``created_at`` <-> ``createdAt``); the
``kind`` key is the class's ``KIND``. Keys an item has and its class does not name are kept
in ``extra`` and written back unchanged, so an older or newer row survives a round trip.
Fields marked ``_optional`` are left out of the item while they are ``None`` (or ``False``),
as the rows were written before these types existed.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Self, TypeVar

T = TypeVar("T")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _optional(default: Any = None) -> Any:
    """A field written to the item only when it is set (not ``None``/``False``)."""
    return field(default=default, metadata={"optional": True})


@dataclass(frozen=True, kw_only=True)
class StoredItem:
    """Base of the typed records: ``from_item`` / ``to_item`` for the store's dict shape."""

    KIND: ClassVar[str] = ""
    # Item keys this class does not name (written back as they were read).
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def _fields(cls) -> list[dataclasses.Field]:
        return [f for f in dataclasses.fields(cls) if f.name != "extra"]

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> Self:
        """The record an item holds; a required key the item lacks raises ``KeyError``."""
        values: dict[str, Any] = {}
        known = {"kind"}
        for f in cls._fields():
            key = _camel(f.name)
            known.add(key)
            if key in item:
                values[f.name] = item[key]
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise KeyError(f"{cls.__name__} item has no {key!r}")
        return cls(**values, extra={k: v for k, v in item.items() if k not in known})

    def to_item(self) -> dict[str, Any]:
        item: dict[str, Any] = {"kind": self.KIND}
        for f in self._fields():
            value = getattr(self, f.name)
            if f.metadata.get("optional") and (value is None or value is False):
                continue
            item[_camel(f.name)] = value
        item.update(self.extra)
        return item


@dataclass(frozen=True, kw_only=True)
class Turn(StoredItem):
    """A raw turn of a session (``seq`` is dense per session)."""

    KIND: ClassVar[str] = "turn"
    id: str
    context_id: str
    session: str
    role: str
    content: str
    seq: int
    created_at: str
    observed_at: str | None = None
    infer: str = "full"
    scopes: list[list[str]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    created_by: str | None = None
    partition: str = "default"
    speaker: dict[str, str] | None = _optional()
    deleted: bool = _optional(False)
    # A chat reply that cited no memory (a refusal, an answer from nowhere): kept in the
    # transcript, never projected as evidence. See docs/decisions.md,
    # "Refusals, questions and echoes are never evidence; questions about someone (issue 61)".
    unsupported: bool = _optional(False)


@dataclass(frozen=True, kw_only=True)
class ThreadTurn(StoredItem):
    """A thread turn. Its text is ``text``, or for a turn larger than one item ``text_head``
    plus ``text_parts`` part rows. ``thread_acl`` is the thread's list as stamped on the row
    (for search units of inheriting turns)."""

    KIND: ClassVar[str] = "thread_turn"
    id: str
    context_id: str
    partition: str = "default"
    thread_id: str
    turn_index: int
    entity_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    acl_readers: list[str] | None = None
    thread_acl: list[str] | None = None
    thread_acl_version: int = 0
    # An append always writes these two; the search-unit builder also reads bare rows.
    created_at: str | None = None
    created_by: str | None = None
    text_bytes: int = 0
    text: str | None = _optional()
    text_head: str | None = _optional()
    text_parts: int | None = _optional()
    # The scopes of the append that wrote it (DNF; ``None``: the thread's).
    scopes: list[list[str]] | None = _optional()


@dataclass(frozen=True, kw_only=True)
class Chunk(StoredItem):
    """A committed document chunk (its text and place in the document)."""

    KIND: ClassVar[str] = "chunk"
    id: str
    context_id: str
    partition: str = "default"
    document_id: str
    document_title: str | None = None
    text: str
    ordinal: int | None = None
    offset: int | None = None
    position_percent: float | None = None
    heading_path: list[str] = field(default_factory=list)
    page: int | None = _optional()  # a paged document's (PDF) 1-based page
    scopes: list[list[str]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    entity_ids: list[str] | None = _optional()  # the entities the chunk mentions (services/documents/links.py)
    observed_at: str | None = None
    created_at: str | None = None
    created_by: str | None = None
    deleted: bool = _optional(False)


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a cursor-paged list: its items and the cursor of the next page (``None``
    on the last page)."""

    items: list[T]
    next_cursor: str | None = None

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None


@dataclass(frozen=True)
class NumberedPage(Page[T]):
    """A page of a list paged by number as well as by cursor: its 1-based number, size and the
    total of matching rows (``services.paging.numbered``)."""

    page: int = 1
    page_size: int = 0
    total: int = 0

"""Stored memory records: entities and the facts about them.

Plain dataclasses, because reconciliation builds and edits them in memory and the record
store only needs a JSON-safe ``data`` dict: ``to_dict()`` writes camelCase keys (the same
case as the wire and the other stored records), ``from_dict()`` reads camelCase or
snake_case and ignores keys it does not know, so older rows keep loading after a field is
added. Timestamps are RFC 3339 UTC strings (``agent_memory.kernel.timeutil.iso``), whose string
order is time order; ``None`` is an open bound.

Every record carries the envelope of docs/decisions.md, "Data": ``context_id``, ``scopes`` (DNF),
``labels``, ``created_by``, ``created_at``. Facts also carry their provenance
(``source``) and, for attributes and relations, a validity window plus supersession links
(``supersedes`` points at the row this one replaced, ``superseded_by`` at its successor).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Self

from pydantic.alias_generators import to_camel, to_snake

SourceKind = Literal["turn", "upsert", "document", "observation", "reflection", "elaboration"]

AUTHORITATIVE_SOURCES = frozenset({"upsert", "document"})

# Stored keys are few and repeat on every read: convert each once (pydantic's converters are
# regular expressions, and a tier-1 read decodes dozens of records per query).
_snake = functools.lru_cache(maxsize=4096)(to_snake)
_camel = functools.lru_cache(maxsize=4096)(to_camel)


class _Record:
    """``to_dict``/``from_dict`` for the dataclasses below (nested ``Source`` included)."""

    _nested: ClassVar[dict[str, type]] = {}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if isinstance(value, _Record):
                value = value.to_dict()
            elif isinstance(value, list):
                value = [list(v) if isinstance(v, list) else v for v in value]
            out[_camel(f.name)] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        names = _field_names(cls)
        kwargs: dict[str, Any] = {}
        for raw_key, value in (data or {}).items():
            name = _snake(raw_key)
            if name not in names:
                continue
            nested = cls._nested.get(name)
            if nested is not None and isinstance(value, dict):
                value = nested.from_dict(value)  # type: ignore[attr-defined]
            kwargs[name] = value
        return cls(**kwargs)


@functools.cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]


@dataclass(kw_only=True)
class Source(_Record):
    """Where a fact came from: a conversational ``turn`` (ref = turn id), an explicit
    ``upsert`` (triples, API writes) or a ``document`` (ref = document or chunk id).
    Upserts and documents are authoritative: a conversational turn never overwrites them."""

    kind: SourceKind = "turn"
    ref: str | None = None
    session_id: str | None = None

    @property
    def authoritative(self) -> bool:
        return self.kind in AUTHORITATIVE_SOURCES


def _scopes() -> list[list[str]]:
    return []


@dataclass(kw_only=True)
class Entity(_Record):
    """A graph node. ``id`` is the natural key ``entity:<type>/<name>`` (``ids.entity_id``);
    ``name`` is the display name, which may change without changing the id."""

    id: str
    context_id: str = ""
    name: str = ""
    entity_type: str = "other"
    category: str = "knowledge"
    importance: float = 0.8
    scopes: list[list[str]] = field(default_factory=_scopes)
    labels: list[str] = field(default_factory=list)
    created_at: str = ""
    updated_at: str = ""
    created_by: str | None = None
    deleted: bool = False


@dataclass(kw_only=True)
class _Fact(_Record):
    """Fields shared by attributes and relations: validity, supersession, provenance."""

    _nested: ClassVar[dict[str, type]] = {"source": Source}

    id: str
    context_id: str = ""
    category: str = "knowledge"
    importance: float = 0.8
    confidence: float = 1.0
    valid_from: str | None = None
    valid_until: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    source: Source = field(default_factory=Source)
    scopes: list[list[str]] = field(default_factory=_scopes)
    labels: list[str] = field(default_factory=list)
    created_at: str = ""
    created_by: str | None = None
    last_seen_at: str | None = None
    reinforced: int = 0
    # Event times after ``valid_from`` at which this value was stated again (sorted,
    # bounded): a value that arrives late and falls inside the window is placed after the
    # last statement before it, so history does not depend on arrival order.
    stated_at: list[str] = field(default_factory=list)
    deleted: bool = False
    # When the statement that made this row was said (its observed_at): history lists a key's
    # versions in this order, current last. Rows written before it was kept lack it (their
    # created_at stands in).
    said_at: str | None = None

    @property
    def is_current(self) -> bool:
        """Not deleted, not superseded, not closed."""
        return not self.deleted and self.superseded_by is None and self.valid_until is None

    @property
    def retracted(self) -> bool:
        """Superseded by a later statement whose start covers its whole window: it never held
        (an empty window), so ``asOf`` never returns it."""
        return not self.deleted and self.valid_from is not None and self.valid_from == self.valid_until

    def valid_at(self, instant: str) -> bool:
        """``validFrom <= t < validUntil`` on RFC 3339 strings (docs/decisions.md, "Time")."""
        if self.deleted:
            return False
        starts = self.valid_from is None or self.valid_from <= instant
        return starts and (self.valid_until is None or instant < self.valid_until)


@dataclass(kw_only=True)
class Attribute(_Fact):
    """``entity_id``'s ``key`` is ``value`` (a string, whatever the key)."""

    entity_id: str = ""
    key: str = ""
    value: str = ""


@dataclass(kw_only=True)
class Relation(_Fact):
    """``object`` is ``subject``'s ``label`` (entity ids; ``user -sister-> emma``)."""

    subject: str = ""
    label: str = ""
    object: str = ""


@dataclass(kw_only=True)
class Action(_Record):
    """Something an entity did. ``object`` is the acted-on thing as extraction named it."""

    _nested: ClassVar[dict[str, type]] = {"source": Source}

    id: str
    context_id: str = ""
    actor: str = ""
    verb: str = ""
    object: str | None = None
    occurred_at: str | None = None
    summary: str = ""
    category: str = "context"
    importance: float = 0.5
    source: Source = field(default_factory=Source)
    scopes: list[list[str]] = field(default_factory=_scopes)
    labels: list[str] = field(default_factory=list)
    created_at: str = ""
    created_by: str | None = None
    deleted: bool = False


@dataclass(kw_only=True)
class Instruction(_Record):
    """A standing behavioural instruction for the assistant ("Always answer in German")."""

    _nested: ClassVar[dict[str, type]] = {"source": Source}

    id: str
    context_id: str = ""
    label: str = ""
    description: str = ""
    source: Source = field(default_factory=Source)
    scopes: list[list[str]] = field(default_factory=_scopes)
    labels: list[str] = field(default_factory=list)
    created_at: str = ""
    created_by: str | None = None
    active: bool = True
    deleted: bool = False


@dataclass(kw_only=True)
class Uncertainty(_Record):
    """Something memory is unsure about. When it records a claim that was *not* stored as a
    current value (low confidence, or contradicting an authoritative fact), ``entity_id``,
    ``key`` and ``proposed_value`` name the claim so it can be confirmed later."""

    _nested: ClassVar[dict[str, type]] = {"source": Source}

    id: str
    context_id: str = ""
    about: str = ""
    reason: str = ""
    entity_id: str | None = None
    key: str | None = None
    proposed_value: str | None = None
    resolved: bool = False
    source: Source = field(default_factory=Source)
    scopes: list[list[str]] = field(default_factory=_scopes)
    labels: list[str] = field(default_factory=list)
    created_at: str = ""
    created_by: str | None = None
    deleted: bool = False
    # Set by POST /uncertainty/{id}/resolve; an unresolved row does not store them.
    resolved_at: str | None = None
    accepted_value: str | None = None
    note: str | None = None
    resolved_by: str | None = None

    _RESOLUTION: ClassVar[tuple[str, ...]] = ("resolvedAt", "acceptedValue", "note", "resolvedBy")

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if not self.resolved:
            for key in self._RESOLUTION:
                out.pop(key, None)
        return out

"""The stored-memory response models (``FactSource``, ``MemoryEntity``, ``MemoryAttribute``,
``MemoryRelation``, ``MemoryAction``, ``MemoryInstruction``, ``MemoryUncertainty``): the
part of the wire that the facts presenter builds on every function that presents a fact
(chat's extraction, entities, state).

Their own module so those functions build these eight models at import and not the other
seventy-odd of ``models.wire`` (about 40 ms of CPU at a cold start), which no request of
theirs presents. ``models.wire`` re-exports them: it stays the one namespace of the wire
(the SDK, tests/http/test_wire_models.py).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent_memory.models.wire_base import WireModel

Category = Literal["identity", "knowledge", "context"]


class FactSource(WireModel):
    kind: Literal["turn", "upsert", "document", "observation", "reflection", "elaboration"]
    ref: str | None = None
    session_id: str | None = None


class MemoryEntity(WireModel):
    id: str
    name: str
    entity_type: str
    memory_category: Category
    importance: float
    created_at: str
    updated_at: str


# The parts of a stored fact, each field declared once. pydantic puts a base's fields before
# its subclass's own and takes the bases right to left, so a fact lists its parts last to
# first: id, what it states, weight, validity, source, tags, the order openapi.yaml gives.
class _Identified(WireModel):
    id: str


class _Weighed(WireModel):
    memory_category: Category
    importance: float


class _Versioned(WireModel):
    valid_from: str | None
    valid_until: str | None
    supersedes: str | None
    superseded_by: str | None


class _Sourced(WireModel):
    source: FactSource
    created_at: str


class _Tagged(WireModel):
    labels: list[str] = Field(default_factory=list)
    #: The DNF scopes the stating write carried ([] unscoped): values of one single-valued key
    #: written under different scopes are current side by side (each supersedes only its own).
    scopes: list[list[str]] = Field(default_factory=list)


class _VersionedFact(_Tagged, _Sourced, _Versioned, _Weighed):
    """What an attribute and a relation share after what they state."""


class _AttributeStatement(_Identified):
    entity: str
    key: str
    value: str


class _RelationStatement(_Identified):
    subject: str
    label: str
    object: str


class _ActionStatement(_Identified):
    actor: str
    verb: str
    object: str | None
    occurred_at: str | None
    summary: str


class MemoryAttribute(_VersionedFact, _AttributeStatement):
    #: A later statement that backdated its start covered this value's whole window: it never
    #: held (validFrom == validUntil) and no asOf read returns it.
    retracted: bool = False


class MemoryRelation(_VersionedFact, _RelationStatement):
    pass


class MemoryAction(_Sourced, _Weighed, _ActionStatement):
    pass


class StateInstruction(WireModel):
    id: str
    label: str
    description: str


class MemoryInstruction(_Sourced, StateInstruction):
    pass


class MemoryUncertainty(WireModel):
    id: str
    about: str
    reason: str
    entity: str | None
    key: str | None
    proposed_value: str | None
    resolved: bool
    resolved_at: str | None
    accepted_value: str | None
    note: str | None
    created_at: str

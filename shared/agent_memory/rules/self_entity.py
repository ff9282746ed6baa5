"""Who "I" is: the speaker mapping shared by the prompt, the extractors and reconciliation.

Decision. A context has one *self* entity, the speaking user, with the stable id
``entity:person/user`` (``SELF_ENTITY_ID``), whatever the user's name is and whenever it
is learned:

- "I", "me", "my" in a user turn are the self entity. Extractors (the offline one and
  real models, told so by the prompt) name it ``User`` (``SELF_NAME``).
- Learning the name ("My name is Alice") stores ``name = Alice`` as an attribute *of the
  self entity*; the entity's display name becomes Alice but its id does not change. No
  merge is ever needed, history and supersession chains stay on one id, and profile /
  selfFacts find the user at a fixed id.
- The caller passes the current name as ``speaker_name``. A person named exactly that
  (case-insensitively) is the self entity too, so "Alice works at Acme" and a model that
  writes "Alice" instead of "User" land on ``entity:person/user``. The cost: a *different*
  person with the speaker's name cannot be told apart in the same context; we accept it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, Protocol, TypeVar

from agent_memory.kernel.ids import (
    entity_id,
    entity_name_fits,
    normalise_entity_name,
    normalise_entity_type,
    split_entity_id,
)

SELF_NAME = "User"
SELF_ENTITY_ID = "entity:person/user"
SELF_ALIASES = frozenset({"user", "the user", "i", "me", "myself", "speaker", "the speaker", "self"})
_PERSONISH = frozenset({"person", "other"})


def is_self(name: str | None, entity_type: str | None = "person", speaker_name: str | None = None) -> bool:
    """Whether an extracted entity reference means the speaking user."""
    folded = (name or "").strip().casefold()
    if not folded:
        return False
    if folded in SELF_ALIASES:
        return True
    personish = normalise_entity_type(entity_type or "person") in _PERSONISH
    return bool(speaker_name) and personish and folded == speaker_name.strip().casefold()


def resolve_self(name: str, entity_type: str | None, speaker_name: str | None = None) -> str:
    """``SELF_ENTITY_ID`` for the speaker, else the natural key ``entity:<type>/<name>``."""
    if is_self(name, entity_type, speaker_name):
        return SELF_ENTITY_ID
    return entity_id(entity_type or "other", name)


def self_display_name(speaker_name: str | None) -> str:
    return speaker_name.strip() if speaker_name and speaker_name.strip() else SELF_NAME


class KnownEntity(Protocol):
    """What the resolver reads of a stored entity (``models.facts.Entity`` is one): the rules
    name no record model, so they sit below the models."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def deleted(self) -> bool: ...


E = TypeVar("E", bound=KnownEntity)


class EntityResolver(Generic[E]):
    """Names -> entity ids, consistently for one write.

    Order of preference for a name: the speaker (``is_self``); an existing entity with the
    same normalised name (same type first, so a model that types "Acme" as a person still
    lands on the organisation; the self entity first when it carries that name); an
    entity already resolved earlier in this write; else a new natural key. ``names`` keeps
    each resolved id's display name (existing name, else the first spelling seen).
    """

    def __init__(self, existing: Iterable[E] = (), *, speaker_name: str | None = None):
        self.speaker_name = speaker_name
        self.existing: dict[str, E] = {e.id: e for e in existing if not e.deleted}
        self._by_name: dict[str, list[str]] = {}
        for e in self.existing.values():
            self._index(e.name or split_entity_id(e.id)[1], e.id)
        self.names: dict[str, str] = {eid: e.name for eid, e in self.existing.items() if e.name}
        if SELF_ENTITY_ID not in self.names or speaker_name:
            self.names[SELF_ENTITY_ID] = self_display_name(speaker_name)

    def _index(self, name: str, eid: str) -> None:
        ids = self._by_name.setdefault(normalise_entity_name(name), [])
        if eid not in ids:
            ids.append(eid)

    def resolve(self, name: str | None, entity_type: str | None = None) -> str | None:
        name = (name or "").strip()
        if not name or not entity_name_fits(name):  # too long to be a record key: not an entity
            return None
        if is_self(name, entity_type, self.speaker_name):
            return SELF_ENTITY_ID
        etype = normalise_entity_type(entity_type or "other")
        candidates = self._by_name.get(normalise_entity_name(name), [])
        if SELF_ENTITY_ID in candidates and etype in _PERSONISH:
            return SELF_ENTITY_ID
        same_type = [c for c in candidates if split_entity_id(c)[0] == etype]
        eid = (same_type or candidates or [entity_id(etype, name)])[0]
        self._index(name, eid)
        self.names.setdefault(eid, name)
        return eid

    def is_new(self, eid: str) -> bool:
        return eid not in self.existing

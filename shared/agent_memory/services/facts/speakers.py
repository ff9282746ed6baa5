"""A turn's speaker as stored data: resolution of the ``speaker`` field of a write.

The stored form on a turn row is ``{"name": ..., "entityId": ...}``. Projection turns it
into the unit's entity label and ``metadata.speaker``; nothing reads a speaker out of text.
A user turn written without a speaker is the context's own user (the self entity).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory.kernel.ids import entity_id
from agent_memory.models.records import Turn
from agent_memory.models.speaker import Speaker
from agent_memory.rules.self_entity import SELF_ENTITY_ID, SELF_NAME, is_self

if TYPE_CHECKING:
    from agent_memory.models.extraction import ExtractionOutput


def speaker_entity_id(speaker: Speaker) -> str:
    """The given entity id; the self entity for a self alias ("User", "me"); else the
    person of that name."""
    if speaker.entity_id:
        return speaker.entity_id
    if is_self(speaker.name):
        return SELF_ENTITY_ID
    return entity_id("person", speaker.name)


def speaker_record(speaker: Speaker | None) -> dict[str, str] | None:
    """What a turn row stores for ``speaker`` (``None``: no speaker given)."""
    if speaker is None:
        return None
    return {"name": speaker.name, "entityId": speaker_entity_id(speaker)}


def self_speaker(name: str | None) -> dict[str, str]:
    """The context's own user as a turn's speaker (chat's user turns)."""
    return {"name": (name or "").strip() or SELF_NAME, "entityId": SELF_ENTITY_ID}


def turn_speaker(turn: Turn) -> tuple[str | None, str | None]:
    """``(name, entity id)`` of a stored turn: its ``speaker`` field; a user turn without
    one is the self entity (no name); other roles without one have neither."""
    stored = turn.speaker
    if isinstance(stored, dict) and stored.get("entityId"):
        return stored.get("name"), stored["entityId"]
    return (None, SELF_ENTITY_ID) if turn.role == "user" else (None, None)


def is_other_speaker(speaker: dict[str, str] | None) -> bool:
    """Whether a turn was said by someone other than the context's own user."""
    return bool(speaker) and speaker.get("entityId") != SELF_ENTITY_ID


def attribute_to_speaker(extraction: ExtractionOutput, speaker_name: str) -> ExtractionOutput:
    """Extraction names the turn's "I" ``User`` (the self entity); in a turn said by someone
    else, "I" is that speaker. Every self reference becomes the speaker's name, so
    reconciliation files the facts under the speaker's entity, not the context's user."""

    def who(name: str) -> str:
        return speaker_name if is_self(name) else name

    return extraction.model_copy(update={
        "entities": [e.model_copy(update={"name": who(e.name), "type": "person" if is_self(e.name) else e.type})
                     for e in extraction.entities],
        "attributes": [a.model_copy(update={"entity": who(a.entity)}) for a in extraction.attributes],
        "relations": [r.model_copy(update={"subject": who(r.subject), "object": who(r.object)})
                      for r in extraction.relations],
        "actions": [a.model_copy(update={"actor": who(a.actor)}) for a in extraction.actions],
    })

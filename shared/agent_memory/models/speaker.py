"""Who said a turn: a field of the write, never parsed out of the turn's text.

``POST /facts`` and each ``/facts/batch`` message take an optional ``speaker``: a name and,
optionally, the entity id the speaker is (``entity:person/ann-lee``). A plain string is
shorthand for ``{"name": ...}``. Without an entity id the speaker is the person of that name
(``entity:person/<name>``), or the context's own user when the name is one of the self aliases
("User", "me"...): ``services/facts/speakers.py`` resolves it. Retrieval labels the turn with that entity, so "what did Ann say" finds
Ann's turns inside the search, and the turn's indexed text stays what was said.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from agent_memory.kernel.errors import InvalidRequest
from agent_memory.kernel.ids import ENTITY_TYPES, normalise_entity_name

MAX_SPEAKER_NAME_CHARS = 128


class Speaker(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(min_length=1, max_length=MAX_SPEAKER_NAME_CHARS)
    entity_id: str | None = Field(default=None, validation_alias=AliasChoices("entityId", "entity_id"))

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"name": value}
        if isinstance(value, dict) and "entityId" in value and "entity_id" in value:
            # both spellings, as every request field takes them: one when they agree
            if value["entityId"] != value["entity_id"]:
                raise InvalidRequest("entityId and entity_id are two spellings of one field and differ",
                                     field="speaker.entityId and speaker.entity_id")
            value = {k: v for k, v in value.items() if k != "entity_id"}
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = " ".join(value.split())
        if not normalise_entity_name(value):
            raise ValueError("speaker name must contain a letter or digit")
        return value

    @field_validator("entity_id")
    @classmethod
    def _entity(cls, value: str | None) -> str | None:
        if value is None:
            return None
        etype, _, name = value.removeprefix("entity:").partition("/")
        if etype not in ENTITY_TYPES or not name or normalise_entity_name(name) != name:
            raise ValueError("speaker entityId must be an entity id such as entity:person/ann-lee")
        return f"entity:{etype}/{name}"

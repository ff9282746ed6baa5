"""Extraction: what a model returns for one turn, and what a write reports to clients.

``ExtractionOutput`` is the schema handed to ``LanguageModel.structured``. It is kept
friendly to strict JSON-schema modes: plain objects, no unions other than ``Optional``,
enums as ``Literal``, every field defaulted so a sparse answer still validates. Entities
are named, not identified: the model sees names, reconciliation turns them into ids. Time
phrases stay verbatim ("last month"); ``rules.event_time`` resolves them against the
turn's ``observed_at``. Lenient ``before`` validators absorb the usual model slips
(``null`` for a string, ``"Identity"`` for ``identity``, ``""`` for a missing time phrase) without changing the
schema.

``ExtractionResult`` is the per-write delta (``ExtractionResultJson`` in the spec):
camelCase on the wire by alias, built by reconciliation, serialised with ``to_wire()``.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema

from agent_memory.models.wire_base import WireModel

Category = Literal["identity", "knowledge", "context"]
CardinalityHint = Literal["single", "multi"]

_CATEGORIES = {"identity", "knowledge", "context"}


class _Extracted(BaseModel):
    # built at the first validation, not at import (recall and state read no extractions)
    model_config = ConfigDict(extra="ignore", defer_build=True)

    @field_validator("*", mode="before")
    @classmethod
    def _lenient(cls, value: Any, info: Any) -> Any:
        field = cls.model_fields[info.field_name]
        if value is None:
            return field.get_default(call_default_factory=True)
        if field.annotation is str and isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        if info.field_name == "category" and isinstance(value, str):
            v = value.strip().lower()
            return v if v in _CATEGORIES else None
        if info.field_name == "cardinality" and isinstance(value, str):
            v = value.strip().lower()
            return v if v in ("single", "multi") else None
        if isinstance(value, str) and not value.strip() and field.get_default() is None:
            return None
        return value


class _FromPassage(_Extracted):
    # Set only when one call extracts several passages of a document (a window): which passage
    # the item comes from, so each fact is cited to its own chunk.
    passage: int | None = Field(default=None, description="Index in `passages` of the passage this item "
                                                           "comes from; only when the data block has passages")


class ExtractedEntity(_FromPassage):
    name: str = ""
    type: str = Field(default="other", description="person, organisation, project, location, topic, product, "
                      "policy, concept, event, agent, service or other")
    category: Category | None = None


class ExtractedAttribute(_FromPassage):
    entity: str = Field(default="", description="Entity name exactly as listed in the known entities, or 'User'")
    entity_type: str = "person"
    key: str = Field(default="", description="lower snake_case, e.g. location, employer, job_title, likes")
    value: str = ""
    cardinality: CardinalityHint | None = None
    negated: bool = False
    category: Category | None = None
    confidence: float = 0.9
    valid_from: str | None = Field(default=None, description="Event-time phrase verbatim, e.g. 'last month'")
    # Set by a triple's ``valid_until`` only (the value's stated end); kept out of the schema
    # the model fills, which states ends as negations.
    valid_until: SkipJsonSchema[str | None] = None


class ExtractedRelation(_FromPassage):
    subject: str = ""
    subject_type: str = "person"
    label: str = Field(default="", description="Role of the object for the subject, e.g. sister, manager")
    object: str = ""
    object_type: str = "person"
    negated: bool = False
    category: Category | None = None
    valid_from: str | None = None
    valid_until: str | None = None


class ExtractedAction(_FromPassage):
    actor: str = ""
    actor_type: str = "person"
    verb: str = ""
    object: str | None = None
    occurred_at: str | None = Field(default=None, description="Event-time phrase verbatim, e.g. 'yesterday'")
    summary: str = ""
    category: Category | None = None


class ExtractedInstruction(_FromPassage):
    label: str = ""
    description: str = ""


class ExtractedUncertainty(_FromPassage):
    about: str = ""
    reason: str = ""


class ExtractionOutput(_Extracted):
    """Everything one turn states. Empty lists when the turn states nothing (a question)."""

    entities: list[ExtractedEntity] = Field(default_factory=list)
    attributes: list[ExtractedAttribute] = Field(default_factory=list)
    relations: list[ExtractedRelation] = Field(default_factory=list)
    actions: list[ExtractedAction] = Field(default_factory=list)
    instructions: list[ExtractedInstruction] = Field(default_factory=list)
    uncertainties: list[ExtractedUncertainty] = Field(default_factory=list)

    def is_empty(self) -> bool:
        return not any((self.entities, self.attributes, self.relations, self.actions,
                        self.instructions, self.uncertainties))


# ---------------------------------------------------------------------------
# Wire: ExtractionResultJson
# ---------------------------------------------------------------------------


class _Wire(WireModel):
    # Unknown fields are dropped, so an SDK parsing a newer service's diff keeps working.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class EntitySummary(_Wire):
    id: str
    name: str
    entity_type: str
    memory_category: Category
    is_new: bool


class AttributeSummary(_Wire):
    id: str
    entity_id: str
    key: str
    value: str
    memory_category: Category


class RelationSummary(_Wire):
    subject: str
    label: str
    object: str
    memory_category: Category


class ActionSummary(_Wire):
    actor: str
    verb: str
    object: str | None = None
    occurred_at: str | None = None
    summary: str
    memory_category: Category


class InstructionSummary(_Wire):
    id: str
    label: str
    description: str


class UncertaintySummary(_Wire):
    about: str
    reason: str


class CorrectionValue(NamedTuple):
    value: str


class CorrectionSummary(_Wire):
    entity_id: str
    key: str
    old_value: str
    new_value: str

    @property
    def previous(self) -> CorrectionValue:
        """The superseded side (``c.previous.value``), as the chat loop of the spec reads it."""
        return CorrectionValue(self.old_value)

    @property
    def current(self) -> CorrectionValue:
        return CorrectionValue(self.new_value)


class ExtractionResult(_Wire):
    turn_id: str
    entities: list[EntitySummary] = Field(default_factory=list)
    attributes: list[AttributeSummary] = Field(default_factory=list)
    relations: list[RelationSummary] = Field(default_factory=list)
    actions: list[ActionSummary] = Field(default_factory=list)
    instructions: list[InstructionSummary] = Field(default_factory=list)
    uncertainties: list[UncertaintySummary] = Field(default_factory=list)
    corrections: list[CorrectionSummary] = Field(default_factory=list)

    def to_wire(self) -> dict[str, Any]:
        """The camelCase ``ExtractionResultJson`` dict (every key present, nulls kept)."""
        return self.model_dump(by_alias=True, mode="json")

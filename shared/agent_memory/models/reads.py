"""Request bodies of the memory read area (forget, uncertainty resolution). Field names
follow openapi.yaml; camelCase and snake_case are both accepted."""

from __future__ import annotations

from pydantic import AliasChoices, Field, field_validator

from agent_memory.models.request_base import RequestModel, rfc3339


class ForgetRequest(RequestModel):
    query: str = Field(min_length=1, max_length=8192)
    limit: int = Field(default=5, ge=1, le=20)
    # Cosine similarity of query and unit text; the default keeps loosely related memory.
    min_score: float = Field(default=0.25, ge=-1, le=1,
                                    validation_alias=AliasChoices("minScore", "min_score"))
    dry_run: bool = Field(default=False, validation_alias=AliasChoices("dryRun", "dry_run"))
    purge: bool = False


class ResolveUncertaintyRequest(RequestModel):
    accepted_value: str = Field(min_length=1, max_length=4096,
                                validation_alias=AliasChoices("acceptedValue", "accepted_value"))
    note: str | None = Field(default=None, max_length=4096)


class CorrectFactRequest(RequestModel):
    """``PATCH /{ctx}/attributes/{id}`` and ``/relations/{id}``: the value that replaces the
    fact's (a relation's: its object, ``type/name``, ``entity:type/name`` or a bare name that
    keeps the old object's type)."""

    value: str = Field(min_length=1, max_length=4096)
    note: str | None = Field(default=None, max_length=4096)
    observed_at: str | None = Field(default=None, validation_alias=AliasChoices("observedAt", "observed_at"))

    _observed = field_validator("observed_at")(classmethod(lambda cls, v: rfc3339(v)))

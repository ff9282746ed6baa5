"""Request bodies of the memory-care verbs (consolidate, reflect, elaborate, lifecycle, fsck)
and the structured outputs their model calls answer with. Field names follow openapi.yaml;
camelCase and snake_case are both accepted. Every field is optional except reflect's
``query``: the official client sends no body with default arguments."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, Field

from agent_memory.models.request_base import RequestModel

FsckCheck = Literal["contradictions", "duplicates", "injection"]


class ConsolidateRequest(RequestModel):
    dry_run: bool = Field(default=False, validation_alias=AliasChoices("dryRun", "dry_run"))
    fact_limit: int | None = Field(default=None, ge=1, le=5000,
                                   validation_alias=AliasChoices("factLimit", "fact_limit"))
    observation_limit: int | None = Field(default=None, ge=1, le=500,
                                          validation_alias=AliasChoices("observationLimit", "observation_limit"))


class ReflectRequest(RequestModel):
    query: str = Field(min_length=1, max_length=8192)
    persist: bool = False


class ElaborateRequest(RequestModel):
    entity_ref: str | None = Field(default=None, min_length=1, max_length=600,
                                   validation_alias=AliasChoices("entityRef", "entity_ref"))
    budget: int | None = Field(default=None, ge=0, le=64)
    dry_run: bool = Field(default=False, validation_alias=AliasChoices("dryRun", "dry_run"))
    sweep: bool = False


class ExpireRequest(RequestModel):
    dry_run: bool = Field(default=False, validation_alias=AliasChoices("dryRun", "dry_run"))


class FsckRequest(RequestModel):
    check: FsckCheck | None = None
    duplicate_threshold: float = Field(default=0.9, ge=0.01, le=1,
                                       validation_alias=AliasChoices("duplicateThreshold", "duplicate_threshold"))
    max_results: int = Field(default=50, ge=1, le=500, validation_alias=AliasChoices("maxResults", "max_results"))
    # Questions and assistant replies repeat by nature: the duplicate check leaves them out unless asked.
    include_echoes: bool = Field(default=False, validation_alias=AliasChoices("includeEchoes", "include_echoes"))


# --- model outputs (LanguageModel.structured schemas) -------------------------------------


class Conclusion(BaseModel):
    """One conclusion of a reflection, stored as an attribute when the caller persists it."""

    entity: str
    entity_type: str = "other"
    key: str
    value: str


class ReflectionOutput(BaseModel):
    reflection: str
    evidence: list[str] = Field(default_factory=list)  # ids of the evidence lines it rests on
    conclusions: list[Conclusion] = Field(default_factory=list)


class ProposedRelation(BaseModel):
    subject: str          # entity ids as the prompt lists them (entity:<type>/<name>)
    label: str
    object: str
    rationale: str = ""


class ElaborationOutput(BaseModel):
    relations: list[ProposedRelation] = Field(default_factory=list)

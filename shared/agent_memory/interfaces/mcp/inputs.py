"""Tool inputs for what the HTTP API takes as path or query parameters (the other tools take
the service's request models as they are)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent_memory.models.requests import rfc3339
from agent_memory.models.threads import AppendThreadTurnRequest, ThreadContextRequest


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StateInput(_Input):
    """GET /state: the current snapshot, by category."""

    limit: int | None = Field(default=None, ge=1, le=1000, description="rows per table (service default 100)")


class EntityInput(_Input):
    """GET /entities/{type}/{name}: an entity's current attributes and relations."""

    type: str = Field(min_length=1, max_length=256, description="entity type, e.g. person")
    name: str = Field(min_length=1, max_length=256, description="entity name, e.g. user")
    as_of: str | None = Field(default=None, description="read the record as it was at this RFC 3339 instant")
    limit: int | None = Field(default=None, ge=1, le=1000, description="rows per list")

    _as_of = field_validator("as_of")(classmethod(lambda cls, v: rfc3339(v)))


class HistoryInput(_Input):
    """GET /entities/{type}/{name}/attributes/{key}/history: one attribute's supersession chain."""

    type: str = Field(min_length=1, max_length=256, description="entity type, e.g. person")
    name: str = Field(min_length=1, max_length=256, description="entity name, e.g. user")
    key: str = Field(min_length=1, max_length=256, description="attribute key, e.g. location")


_FACT_ID = Field(min_length=5, max_length=128, pattern=r"^(attr|rel|act|instr)_[A-Za-z0-9]+$",
                 description="the fact's id (attr_..., rel_..., act_... or instr_...), as recall, state and "
                             "remember report it")


class FactInput(_Input):
    """DELETE /{attributes|relations|actions|instructions}/{id}: forget one fact."""

    id: str = _FACT_ID
    purge: bool = Field(default=False, description="also hard-delete its superseded history")


class CorrectFactInput(_Input):
    """PATCH /{attributes|relations}/{id}: correct one fact (its history is kept)."""

    id: str = Field(min_length=5, max_length=128, pattern=r"^(attr|rel)_[A-Za-z0-9]+$",
                    description="the attribute's or relation's id (attr_... or rel_...)")
    value: str = Field(min_length=1, max_length=4096,
                       description="the correct value (a relation: its object, e.g. person/erin)")
    note: str | None = Field(default=None, max_length=4096, description="why it was wrong, kept with the change")


class ThreadAppendInput(AppendThreadTurnRequest):
    thread_id: str = Field(min_length=1, max_length=256, description="the thread to append to")


class ThreadContextInput(ThreadContextRequest):
    thread_id: str = Field(min_length=1, max_length=256, description="the thread to read")

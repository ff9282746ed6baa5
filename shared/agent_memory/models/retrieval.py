"""Request bodies of the recall area (/query, /context, /sessions/{id}/context), validated
with pydantic. Field names follow openapi.yaml; camelCase and snake_case are both accepted."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from agent_memory.models.requests import RequestModel, both, rfc3339

RetrievalMode = Literal["hybrid", "vector", "bm25", "graph"]
HitKind = Literal["attribute", "entity", "action", "chunk", "turn", "relation", "instruction"]

QUERY_MAX_CHARS = 8192
K_DEFAULT = 10
K_MAX = 50


class QueryRequest(RequestModel):
    query: str = Field(min_length=1, max_length=QUERY_MAX_CHARS)
    k: int = Field(default=K_DEFAULT, ge=1, le=K_MAX)
    mode: RetrievalMode = "hybrid"
    include: list[HitKind] | None = Field(default=None, min_length=1)
    as_of: str | None = both("as_of", "asOf")
    session_id: str | None = both("session_id", "sessionId")
    labels: list[str] | None = None

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    _as_of = field_validator("as_of")(classmethod(lambda cls, v: rfc3339(v)))

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and any(not label.strip() or len(label) > 128 for label in value):
            raise ValueError("labels must be non-empty strings of at most 128 characters")
        return sorted(set(value)) if value else None


class ContextRequest(RequestModel):
    # Empty or omitted: the recent window and the standing instructions, no retrieval
    # (``ContextService.recent``); the Spectron integrations' ``context`` tool sends "".
    query: str = Field(default="", max_length=QUERY_MAX_CHARS)
    k: int = Field(default=K_DEFAULT, ge=1, le=K_MAX)
    subject: str | None = Field(default=None, min_length=1, max_length=256)
    labels: list[str] | None = None

    _labels = field_validator("labels")(classmethod(lambda cls, v: QueryRequest._labels(v)))


class SessionContextRequest(RequestModel):
    query: str = Field(min_length=1, max_length=QUERY_MAX_CHARS)
    k: int = Field(default=K_DEFAULT, ge=1, le=K_MAX)

    _query = field_validator("query")(classmethod(lambda cls, v: QueryRequest._query(v)))

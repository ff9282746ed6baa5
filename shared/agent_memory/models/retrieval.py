"""Request bodies of the recall area (/query, /context, /sessions/{id}/context), validated
with pydantic. Field names follow openapi.yaml; camelCase and snake_case are both accepted."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from agent_memory.access import scopes as scope_lib
from agent_memory.kernel.errors import InvalidRequest
from agent_memory.models.request_base import RequestModel, both, rfc3339
from agent_memory.rules import geo

RetrievalMode = Literal["hybrid", "vector", "bm25", "graph"]
HitKind = Literal["attribute", "entity", "action", "chunk", "turn", "relation", "instruction"]
# ``facts`` and ``passages`` (the Spectron client's words) stand for kinds (``RetrievalService``).
IncludeKind = Literal["attribute", "entity", "action", "chunk", "turn", "relation", "instruction",
                      "facts", "passages"]
ScopeView = Literal["strict", "merged", "crossTeam"]
SOURCE_MAX_CHARS = 256
LENS_MAX_CLAUSES = 16

QUERY_MAX_CHARS = 8192
K_DEFAULT = 10
K_MAX = 50


class Near(RequestModel):
    """A circle: ``lat``/``lng`` in degrees and one radius, ``radiusKm`` (the Spectron
    client's) or ``radiusM``."""

    lat: float = Field(ge=-90, le=90)
    lng: float = Field(ge=-180, le=180)
    radius_km: float | None = Field(default=None, ge=0.001, le=20_038, alias="radiusKm")
    radius_m: float | None = Field(default=None, ge=1, le=20_038_000, alias="radiusM")

    @model_validator(mode="after")
    def _one_radius(self) -> Near:
        if (self.radius_km is None) == (self.radius_m is None):
            raise InvalidRequest("location.near: give one of radiusKm and radiusM", field="location.near")
        return self

    def km(self) -> float:
        return self.radius_km if self.radius_km is not None else (self.radius_m or 0) / 1000


class Location(RequestModel):
    """``near`` (a circle) or ``within`` (a WKT POLYGON / MULTIPOLYGON, ``lng lat`` order)."""

    near: Near | None = None
    within: str | None = Field(default=None, min_length=1, max_length=256 * 1024)
    _area: geo.Area | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _one_shape(self) -> Location:
        if (self.near is None) == (self.within is None):
            raise InvalidRequest("location: give one of near and within", field="location")
        if self.near is not None:
            self._area = geo.Area(center=(self.near.lat, self.near.lng), radius_km=self.near.km())
        else:
            try:
                self._area = geo.Area.of_wkt(self.within or "")
            except geo.InvalidGeometry as exc:
                raise InvalidRequest(f"location.within: {exc}", field="location.within") from exc
        return self

    @property
    def area(self) -> geo.Area:
        assert self._area is not None
        return self._area


class RecallFilters(RequestModel):
    """The recall filters ``/query`` and ``/context`` share (``RetrievalService.retrieve``)."""

    include: list[IncludeKind] | None = Field(default=None, min_length=1)
    as_of: str | None = both("as_of", "asOf")
    at_instant: str | None = both("at_instant", "atInstant")
    valid_from: str | None = both("valid_from", "validFrom")
    valid_until: str | None = both("valid_until", "validUntil")
    session_id: str | None = both("session_id", "sessionId")
    labels: list[str] | None = None
    lens: list[list[str]] | None = None
    scope_view: ScopeView | None = both("scope_view", "scopeView")
    source: str | None = Field(default=None, min_length=1, max_length=SOURCE_MAX_CHARS)
    location: Location | None = None

    _times = field_validator("as_of", "at_instant", "valid_from", "valid_until")(
        classmethod(lambda cls, v: rfc3339(v)))

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and any(not label.strip() or len(label) > 128 for label in value):
            raise ValueError("labels must be non-empty strings of at most 128 characters")
        return sorted(set(value)) if value else None

    @field_validator("lens", mode="before")
    @classmethod
    def _lens(cls, value: Any) -> list[list[str]] | None:
        if value is None:
            return None
        try:
            dnf = scope_lib.normalise_dnf(value)
        except scope_lib.InvalidScope as exc:
            raise ValueError(str(exc)) from exc
        if not dnf:
            raise ValueError("must name at least one scope path")
        if len(dnf) > LENS_MAX_CLAUSES:
            raise ValueError(f"at most {LENS_MAX_CLAUSES} clauses")
        if any(scope_lib.WILDCARD in p.split("/") for c in dnf for p in c):
            raise ValueError("lens paths name scopes: no '*' segments")
        return dnf

    @model_validator(mode="after")
    def _consistent(self) -> RecallFilters:
        if self.as_of and self.at_instant and self.as_of != self.at_instant:
            raise InvalidRequest("atInstant: asOf and atInstant both name the instant to read at and differ",
                                 field="atInstant")
        if self.valid_from and self.valid_until and self.valid_from >= self.valid_until:
            raise InvalidRequest("validFrom: must be before validUntil", field="validFrom")
        # ``strict`` is the default view: without a lens it reads the caller's whole read region
        # (the Spectron client sends it so). The other views widen a lens, so they need one.
        if self.scope_view not in (None, "strict") and not self.lens:
            raise InvalidRequest(f"scopeView: {self.scope_view} needs a lens to view", field="scopeView")
        return self

    def filters(self) -> dict[str, Any]:
        """The keyword arguments of ``RetrievalService.retrieve`` these fields set."""
        return {"include": self.include, "as_of": self.at_instant or self.as_of, "session_id": self.session_id,
                "labels": self.labels,
                "valid_window": (self.valid_from, self.valid_until) if self.valid_from or self.valid_until else None,
                "lens": self.lens, "scope_view": self.scope_view or "strict", "source": self.source,
                "area": self.location.area if self.location is not None else None}


def not_blank(value: str) -> str:
    """A question's text: something besides whitespace (the models' ``query`` validators)."""
    if not value.strip():
        raise ValueError("must not be blank")
    return value


class QueryRequest(RecallFilters):
    query: str = Field(min_length=1, max_length=QUERY_MAX_CHARS)
    k: int = Field(default=K_DEFAULT, ge=1, le=K_MAX)
    mode: RetrievalMode = "hybrid"

    _query = field_validator("query")(staticmethod(not_blank))


class ContextRequest(RecallFilters):
    # Empty or omitted: the recent window and the standing instructions, no retrieval
    # (``PromptContextService.recent``); the Spectron integrations' ``context`` tool sends "".
    query: str = Field(default="", max_length=QUERY_MAX_CHARS)
    k: int = Field(default=K_DEFAULT, ge=1, le=K_MAX)
    subject: str | None = Field(default=None, min_length=1, max_length=256)


class SessionContextRequest(RequestModel):
    query: str = Field(min_length=1, max_length=QUERY_MAX_CHARS)
    k: int = Field(default=K_DEFAULT, ge=1, le=K_MAX)

    _query = field_validator("query")(staticmethod(not_blank))

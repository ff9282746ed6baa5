"""Request bodies, validated with pydantic. Field names follow openapi.yaml (checked by
tests/http/test_openapi_contract.py); requests accept camelCase and the spec's snake_case.
The shared base and validator bodies are in ``models.request_base``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, ConfigDict, Field, field_validator, model_validator

from agent_memory.kernel.errors import InvalidRequest
from agent_memory.models.request_base import (  # noqa: F401 - re-exported: the request models' one import
    RequestModel,
    ScopedRequest,
    both,
    memory_category,
    rfc3339,
    session_id,
)
from agent_memory.models.speaker import Speaker

Role = Literal["user", "assistant", "system", "tool"]
Category = Literal["identity", "knowledge", "context"]


class CreateSessionRequest(ScopedRequest):
    # The caller's own description of the session (the Spectron client's ``metadata``): a flat
    # map of scalars, checked as a thread turn's (``models.threads.check_metadata``) and returned.
    metadata: dict[str, Any] | None = None


class Triple(RequestModel):
    """One pre-extracted fact for ``infer: triples`` (validated semantically by the facts service)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    entity: dict[str, Any]
    key: str | None = None
    value: Any = None
    target: dict[str, Any] | None = None
    verb: str | None = None
    object: str | None = None
    summary: str | None = None
    confidence: float | None = None
    occurred_at: str | None = both("occurred_at", "occurredAt")
    valid_from: str | None = both("valid_from", "validFrom")
    valid_until: str | None = both("valid_until", "validUntil")
    memory_category: Category | None = both("memory_category", "memoryCategory")

    _category = field_validator("memory_category", mode="before")(classmethod(lambda cls, v: memory_category(v)))


class WriteFactsRequest(ScopedRequest):
    # Absent only with triples (the Spectron client's ``remember(triples=...)``): the stored
    # turn then states the triples (``statement_of_triples``).
    text: str | None = Field(default=None, min_length=1)
    infer: Literal["full", "triples", "preview", "none"] = "full"
    # One write is one transaction (at most ports.MAX_TRANSACT_OPS operations): 16 triples always fit.
    triples: list[dict[str, Any]] | None = Field(default=None, max_length=16)
    session_id: str | None = both("session_id", "sessionId")
    memory_category: Category | None = both("memory_category", "memoryCategory")
    role: Role = "user"
    observed_at: str | None = both("observed_at", "observedAt")
    speaker: Speaker | None = None

    _observed = field_validator("observed_at")(classmethod(lambda cls, v: rfc3339(v)))
    _session = field_validator("session_id")(classmethod(lambda cls, v: session_id(v)))
    _category = field_validator("memory_category", mode="before")(classmethod(lambda cls, v: memory_category(v)))

    @model_validator(mode="after")
    def _triples_alone(self) -> WriteFactsRequest:
        # Triples sent without ``infer`` are written as triples (the client sends no infer).
        if self.triples and "infer" not in self.model_fields_set:
            self.infer = "triples"
        if self.text is None:
            if not self.triples or self.infer != "triples":
                raise InvalidRequest("text: required (only a write of triples may leave it out)", field="text")
            self.text = statement_of_triples(self.triples)
        return self


def statement_of_triples(triples: list[dict[str, Any]]) -> str:
    """The text a write of triples without text stores as its turn: one line per triple,
    ``<entity> <key>: <value>`` (or its target, or its verb and object), so the turn reads
    back and is found as what the triples say."""
    lines = []
    for t in triples:
        entity = t.get("entity") if isinstance(t.get("entity"), dict) else {}
        name = str(entity.get("name") or "").strip() or "?"
        target = t.get("target") if isinstance(t.get("target"), dict) else None
        key = str(t.get("key") or "").replace("_", " ").strip()
        if target is not None:
            lines.append(f"{name} {key}: {str(target.get('name') or '').strip()}")
        elif t.get("verb"):
            lines.append(" ".join(str(p).strip() for p in (name, t.get("verb"), t.get("object") or "") if p))
        else:
            lines.append(f"{name} {key}: {t.get('value')}")
    return "\n".join(lines) or "(triples)"


class BatchMessage(RequestModel):
    role: Role = "user"
    content: str = Field(min_length=1)
    ts: str | None = None
    speaker: Speaker | None = None

    _ts = field_validator("ts")(classmethod(lambda cls, v: rfc3339(v)))


class WriteFactsBatchRequest(ScopedRequest):
    messages: list[BatchMessage] = Field(min_length=1, max_length=500)
    extract: Literal["per_message", "whole_conversation"] = "per_message"
    infer: Literal["full", "triples", "preview", "none"] = "full"
    session_id: str | None = both("session_id", "sessionId")
    memory_category: Category | None = both("memory_category", "memoryCategory")

    _session = field_validator("session_id")(classmethod(lambda cls, v: session_id(v)))
    _category = field_validator("memory_category", mode="before")(classmethod(lambda cls, v: memory_category(v)))


class ChatRequest(ScopedRequest):
    """ChatRequestJson (spec: chat-endpoint-openapi.md)."""

    message: str = Field(min_length=1)
    session_id: str | None = both("session_id", "sessionId")
    model: str | None = None
    stream: bool = False
    bypass_cache: bool = Field(default=False, validation_alias=AliasChoices("bypassCache", "bypass_cache"))
    suppress_markers: bool = Field(default=False,
                                   validation_alias=AliasChoices("suppressMarkers", "suppress_markers"))

    _session = field_validator("session_id")(classmethod(lambda cls, v: session_id(v)))


# --- administration (/keys, /principals, /scopes) -------------------------------------------

class CreateKeyRequest(RequestModel):
    """``POST /keys``: ``grants`` is ``{verb: [paths]}`` (``access.authority``); absent, the
    minter's own authority in this context. ``contexts`` (admins only): bind it there too."""

    name: str | None = None
    grants: dict[str, Any] | None = None
    contexts: list[str] | None = None

    @field_validator("contexts")
    @classmethod
    def _contexts(cls, v: list[str] | None) -> list[str] | None:
        # Each becomes part of the key's stored grants: a context id, as the path's ContextId.
        from agent_memory.kernel.ids import valid_context_id

        for name in v or []:
            if not valid_context_id(name):
                raise ValueError(f"{name!r} is not a context id (letters, digits, '.', '_', '-'; 1-128)")
        return v


class GrantChangeRequest(RequestModel):
    """``POST``/``DELETE /principals/{id}/grants``: one path and the verbs granted or revoked there."""

    path: str = Field(min_length=1)
    verbs: list[str] = Field(min_length=1)


class RegisterScopeRequest(RequestModel):
    """``POST /scopes``: a scope path of the context, with a name and a description to show."""

    path: str
    display_name: str | None = both("display_name", "displayName")
    description: str | None = None


class ForgetScopeRequest(RequestModel):
    """``POST /scopes/forget``: the subtree whose records go; ``continuation``: resume a forget
    that stopped at the request deadline (the previous answer's)."""

    path: str
    continuation: str | None = None


class ExportJobRequest(RequestModel):
    """``POST /export/jobs``: what ``GET /export``'s query says, as a body (docs/export.md)."""

    partition: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
    include_principals: bool = Field(default=False, strict=True,
                                     validation_alias=AliasChoices("include_principals", "includePrincipals"))
    originals: bool = Field(default=True, strict=True)


class ImportJobRequest(RequestModel):
    """``POST /import/jobs``: the size of the stream the caller then PUTs to the job's URL."""

    size: int = Field(ge=1, strict=True, description="Bytes the caller will PUT (the URL is signed for exactly this).")

"""Request bodies, validated with pydantic. Field names follow openapi.yaml (checked by
tests/http/test_openapi_contract.py); requests accept camelCase and the spec's snake_case."""

from __future__ import annotations

import typing
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from agent_memory.access import scopes as scope_lib
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import InvalidRequest
from agent_memory.models.speaker import Speaker

Role = Literal["user", "assistant", "system", "tool"]
Category = Literal["identity", "knowledge", "context"]


def _spellings(name: str, field: Any) -> list[str]:
    alias = field.validation_alias
    if isinstance(alias, AliasChoices):
        return [c for c in alias.choices if isinstance(c, str)] or [name]
    return [alias] if isinstance(alias, str) else [name]


def _is_number(annotation: Any) -> bool:
    args = typing.get_args(annotation) or (annotation,)
    return any(a in (int, float) for a in args) and bool not in args


def _is_boolean(annotation: Any) -> bool:
    args = typing.get_args(annotation) or (annotation,)
    return bool in args and not any(a in (int, float, str) for a in args)


def _json_type_problem(spelling: str, value: Any, annotation: Any) -> str | None:
    """One strictness for JSON scalars: a boolean field takes only ``true``/``false`` and a
    number field only a JSON number (pydantic's lax mode would read ``"yes"`` as true,
    ``true`` as 1 and ``"5"`` as 5)."""
    if value is None:
        return None
    if _is_boolean(annotation) and not isinstance(value, bool):
        return f"{spelling}: must be true or false (a JSON boolean), not {type(value).__name__}"
    if _is_number(annotation) and (isinstance(value, bool) or not isinstance(value, int | float)):
        kind = "a boolean" if isinstance(value, bool) else type(value).__name__
        return f"{spelling}: must be a number, not {kind}"
    return None


def both(snake: str, camel: str) -> Any:
    return Field(default=None, validation_alias=AliasChoices(snake, camel))


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, str_strip_whitespace=False)

    @model_validator(mode="before")
    @classmethod
    def _spellings_and_numbers(cls, data: Any) -> Any:
        """One value per field whatever its spelling, and numbers that are numbers.

        A field may be sent as ``sessionId`` or ``session_id``; both at once are accepted
        when they agree and rejected naming both when they do not. Booleans and numbers are
        strict alike (``_json_type_problem``)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for name, field in cls.model_fields.items():
            spellings = _spellings(name, field)
            sent = [s for s in spellings if s in data]
            if len(sent) > 1:
                values = [data[s] for s in sent]
                if any(v != values[0] or type(v) is not type(values[0]) for v in values[1:]):
                    raise InvalidRequest(f"{' and '.join(sent)} are two spellings of one field and differ",
                                         field=" and ".join(sent))
                for extra in sent[1:]:
                    del data[extra]
                sent = sent[:1]
            problem = _json_type_problem(sent[0], data[sent[0]], field.annotation) if sent else None
            if problem:
                raise InvalidRequest(problem, field=sent[0])
        return data


class ScopedRequest(RequestModel):
    scopes: list[list[str]] = Field(default_factory=list)
    labels: list[str] = Field(default_factory=list)

    @field_validator("scopes", mode="before")
    @classmethod
    def _dnf(cls, value: Any) -> list[list[str]]:
        try:
            return scope_lib.normalise_dnf(value)
        except scope_lib.InvalidScope as exc:
            raise ValueError(str(exc)) from exc

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: list[str]) -> list[str]:
        if any(not label.strip() or len(label) > 128 for label in value):
            raise ValueError("labels must be non-empty strings of at most 128 characters")
        return sorted(set(value))


def rfc3339(value: str | None) -> str | None:
    """Validator body: an RFC 3339 timestamp normalised to UTC, or ``None``."""
    if value is None:
        return None
    try:
        return timeutil.normalise(value)
    except ValueError as exc:
        raise ValueError(f"must be an RFC 3339 timestamp in the years {timeutil.MIN_YEAR:04d}-{timeutil.MAX_YEAR} "
                         "(UTC)") from exc


def memory_category(value: Any) -> Any:
    """Validator body: a write's ``memory_category``, ours or a synonym mapped to ours
    (``rules.vocabulary.CATEGORY_SYNONYMS``); any other word is a 400 naming what is accepted."""
    from agent_memory.rules.vocabulary import CATEGORY_SYNONYMS, category_of

    if value is None or not isinstance(value, str):
        return value
    category = category_of(value)
    if category is None:
        raise ValueError(f"must be identity, knowledge or context, or one of {', '.join(sorted(CATEGORY_SYNONYMS))}")
    return category


def session_id(value: str | None) -> str | None:
    """Validator body: a session id a write names (kept as given; a new one is created with it)."""
    from agent_memory.kernel.ids import id_problem

    problem = id_problem("sessionId", value) if value is not None else None
    if problem:
        raise ValueError(problem)
    return value


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

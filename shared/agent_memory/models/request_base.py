"""What every request body shares: ``RequestModel`` (one value per field whatever its spelling,
strict JSON scalars), ``ScopedRequest`` and the validator bodies. Apart from the request models
themselves (``models.requests``, ``models.retrieval``...) so a function that validates only its
own bodies (recall) does not build every other route's models at import."""

from __future__ import annotations

import typing
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from agent_memory.access import scopes as scope_lib
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import InvalidRequest


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
        if value is None:  # left out means unscoped; an explicit null is not a scope (openapi.yaml)
            raise ValueError("must be a scope path, a list of paths or a list of clauses (leave it out for none)")
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



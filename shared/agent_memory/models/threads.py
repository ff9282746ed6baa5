"""Request bodies of the threads area (``/api/v1/{context}/threads/{thread_id}/...``).

Field names follow openapi.yaml; like every request model they accept the spec's
snake_case and camelCase. Checks pydantic cannot phrase with a useful field name (metadata
values, strings that cannot be stored) live in ``check_*`` helpers that raise
``InvalidRequest`` naming the offending field, so bad input is a 400, never a 500.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pydantic import AliasChoices, Field, field_validator

from agent_memory.kernel.errors import InvalidRequest
from agent_memory.models.request_base import RequestModel, both

THREAD_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
MAX_READERS = 64
MAX_READER_CHARS = 256
MAX_ENTITY_ID_CHARS = 256
MAX_METADATA_KEYS = 64
MAX_METADATA_KEY_CHARS = 128
MAX_METADATA_VALUE_CHARS = 4096
MAX_METADATA_BYTES = 16 * 1024  # keeps a turn row (text + metadata + reader lists) in one item
MAX_QUERY_CHARS = 8192
# Control characters other than tab, newline and carriage return are refused in text: they
# are never conversation, and JSON escapes each as six bytes, which would blow the stored
# item and response size budgets.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def check_thread_id(thread_id: str) -> str:
    if not THREAD_ID_RE.match(thread_id or ""):
        raise InvalidRequest("thread id must be 1-128 characters of letters, digits, '.', '_', ':' or '-'",
                             field="thread_id")
    return thread_id


def check_storable(value: str, field: str) -> None:
    """A string must be valid Unicode (no lone surrogates from ``\\ud800`` escapes)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequest(f"{field} is not valid Unicode (lone surrogate)", field=field) from exc


def check_text(text: str, field: str = "text") -> None:
    check_storable(text, field)
    if _CONTROL.search(text):
        raise InvalidRequest(f"{field} must not contain control characters other than tab, newline and "
                             "carriage return", field=field)


def check_metadata(metadata: dict[str, Any] | None) -> None:
    """Metadata is a flat map of scalars (string, number, boolean, null)."""
    if metadata is None:
        return
    if len(metadata) > MAX_METADATA_KEYS:
        raise InvalidRequest(f"metadata has more than {MAX_METADATA_KEYS} keys", field="metadata")
    for key, value in metadata.items():
        field = f"metadata.{key}"
        check_storable(key, "metadata")
        if not key or len(key) > MAX_METADATA_KEY_CHARS:
            raise InvalidRequest(f"metadata keys must be 1-{MAX_METADATA_KEY_CHARS} characters", field=field)
        if isinstance(value, str):
            check_storable(value, field)
            if len(value) > MAX_METADATA_VALUE_CHARS:
                raise InvalidRequest(f"{field} is longer than {MAX_METADATA_VALUE_CHARS} characters", field=field)
        elif isinstance(value, float) and not math.isfinite(value):
            raise InvalidRequest(f"{field} must be a finite number", field=field)
        elif value is not None and not isinstance(value, bool | int | float):
            raise InvalidRequest(f"{field} must be a string, number, boolean or null, not "
                                 f"{'an object' if isinstance(value, dict) else 'an array'}", field=field)
    size = len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise InvalidRequest(f"metadata is {size} bytes as JSON; the limit is {MAX_METADATA_BYTES}", field="metadata")


def _readers(value: list[str] | None) -> list[str] | None:
    """``None`` stays ``None`` (no list); a list is deduplicated and sorted; ``[]`` stays empty."""
    if value is None:
        return None
    if len(value) > MAX_READERS:
        raise ValueError(f"at most {MAX_READERS} readers")
    for reader in value:
        if not reader.strip() or len(reader) > MAX_READER_CHARS or reader != reader.strip():
            raise ValueError(f"readers must be non-empty names of at most {MAX_READER_CHARS} characters "
                             "without surrounding spaces")
        if reader.startswith("group:") and len(reader) == len("group:"):
            raise ValueError("group: needs a group name")
        check_storable(reader, "acl_readers")
    return sorted(set(value))


def _entity(value: str | None) -> str | None:
    if value is None:
        return None
    if not value.strip() or len(value) > MAX_ENTITY_ID_CHARS or _CONTROL.search(value):
        raise ValueError(f"entity_id must be 1-{MAX_ENTITY_ID_CHARS} printable characters")
    check_storable(value, "entity_id")
    return value


class AppendThreadTurnRequest(RequestModel):
    text: str = Field(min_length=1)
    entity_id: str | None = both("entity_id", "entityId")
    metadata: dict[str, Any] | None = None
    acl_readers: list[str] | None = both("acl_readers", "aclReaders")
    idempotency_key: str | None = both("idempotency_key", "idempotencyKey")

    @field_validator("acl_readers")
    @classmethod
    def _check_readers(cls, value: list[str] | None) -> list[str] | None:
        return _readers(value)

    @field_validator("entity_id")
    @classmethod
    def _check_entity(cls, value: str | None) -> str | None:
        return _entity(value)

    def check(self) -> None:
        check_text(self.text)
        check_metadata(self.metadata)

    def fingerprint_payload(self, thread_id: str) -> dict[str, Any]:
        """What makes two appends "the same request" for idempotency (the key excluded)."""
        return {"thread_id": thread_id, "text": self.text, "entity_id": self.entity_id,
                "metadata": self.metadata, "acl_readers": self.acl_readers}


class ThreadContextRequest(RequestModel):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    last_n_turns: int = Field(default=10, ge=1, le=1000, strict=True,
                              validation_alias=AliasChoices("last_n_turns", "lastNTurns"))
    recent_first: bool = Field(default=False, strict=True,
                               validation_alias=AliasChoices("recent_first", "recentFirst"))
    entity_id: str | None = both("entity_id", "entityId")

    @field_validator("entity_id")
    @classmethod
    def _check_entity(cls, value: str | None) -> str | None:
        return _entity(value)

    def check(self) -> None:
        check_storable(self.query, "query")


class SetThreadAclRequest(RequestModel):
    # Omitted is the same as null: the list is cleared (the thread is tenant-visible).
    acl_readers: list[str] | None = Field(default=None, validation_alias=AliasChoices("acl_readers", "aclReaders"))

    @field_validator("acl_readers")
    @classmethod
    def _check_readers(cls, value: list[str] | None) -> list[str] | None:
        return _readers(value)

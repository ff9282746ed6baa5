"""The caller an API key stands for (``StaticPrincipal``), and the configured keys' parsing.

A configured key (yaml ``principals`` / env ``AGENT_MEMORY_PRINCIPALS_JSON``, parsed by
``parse_principals`` when ``config.load_settings`` reads them), a stored key
(``access.api_keys``) and the stack's bootstrap key all resolve to one ``StaticPrincipal``;
its grants are checked by ``access.grants``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_memory.kernel.errors import ConfigurationError

GRANT_FIELDS = ("contexts", "partitions", "read_region", "write_region", "default_write_scope", "verbs")


@dataclass(frozen=True)
class StaticPrincipal:
    """One entry of the optional ``principals`` list: the caller a bearer API key stands for.

    Only the key's SHA-256 is kept, so a settings dump or a log line never shows a key; the
    config may give the key itself (``key``) or its digest (``key_sha256``, for deployments
    that keep raw keys out of configuration).
    """

    key_sha256: str
    principal: str
    groups: tuple[str, ...] = ()
    admin: bool = False
    # Grants (agent_memory.access.grants). The defaults are today's single-user behaviour: any
    # context and partition, unrestricted regions, read/write/forget.
    contexts: tuple[str, ...] | None = None  # None: every context
    partitions: tuple[str, ...] | None = None  # None: every partition
    read_region: tuple[str, ...] | None = None  # None: unrestricted
    write_region: tuple[str, ...] | None = None  # None: unrestricted
    default_write_scope: str | None = None
    verbs: tuple[str, ...] | None = None  # None: memory:read, memory:write, memory:forget
    # A stored key's principal's grants per context (``{context: {verb: [paths]}}``), kept on
    # the key record by the administration service: the key's authority there is the
    # intersection (``agent_memory.access.authority.bounded``). ``None``: the key's own.
    principal_grants: dict[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)
    # Where the key stops working (RFC 3339, UTC); ``None``: never.
    valid_until: str | None = None
    # A stored key's id (``key_...``), which its cost rows carry (``access.key_use``); ``None``: a configured key.
    key_id: str | None = field(default=None, compare=False, hash=False, repr=False)


def parse_principals(env_json: str | None, file_value: Any) -> tuple[StaticPrincipal, ...]:
    """Parse ``[{key | key_sha256, principal, groups?, admin?}, ...]`` (env JSON wins over yaml)."""
    import hashlib
    import json

    raw: Any = file_value
    if env_json:
        try:
            raw = json.loads(env_json)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"AGENT_MEMORY_PRINCIPALS_JSON: invalid JSON: {exc}") from exc
    if raw in (None, ""):
        return ()
    if not isinstance(raw, list):
        raise ConfigurationError("principals: expected a list of {key, principal, groups, admin}")
    out: list[StaticPrincipal] = []
    for i, entry in enumerate(raw):
        where = f"principals[{i}]"
        if not isinstance(entry, dict) or set(entry) - {"key", "key_sha256", "principal", "groups", "admin",
                                                         *GRANT_FIELDS}:
            raise ConfigurationError(f"{where}: expected keys key|key_sha256, principal, groups, admin, "
                                     + ", ".join(GRANT_FIELDS))
        key, digest = entry.get("key"), entry.get("key_sha256")
        if (key is None) == (digest is None):
            raise ConfigurationError(f"{where}: give exactly one of key or key_sha256")
        if key is not None:
            if not isinstance(key, str) or len(key) < 16:
                raise ConfigurationError(f"{where}.key: expected a string of at least 16 characters")
            digest = hashlib.sha256(key.encode()).hexdigest()
        if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ConfigurationError(f"{where}.key_sha256: expected 64 lower-case hex digits")
        principal, groups = entry.get("principal"), entry.get("groups") or []
        if not isinstance(principal, str) or not principal.strip() or principal.startswith("group:"):
            raise ConfigurationError(f"{where}.principal: expected a non-empty name (not starting with group:)")
        if not isinstance(groups, list) or not all(isinstance(g, str) and g.strip() for g in groups):
            raise ConfigurationError(f"{where}.groups: expected a list of non-empty strings")
        if not isinstance(entry.get("admin", False), bool):
            raise ConfigurationError(f"{where}.admin: expected true or false")
        if any(p.key_sha256 == digest for p in out):
            raise ConfigurationError(f"{where}: the same API key is listed twice")
        from agent_memory.access.grants import parse_grant_fields

        try:
            grant = parse_grant_fields(entry)
        except ValueError as exc:
            raise ConfigurationError(f"{where}: {exc}") from exc
        out.append(StaticPrincipal(key_sha256=digest, principal=principal,
                                   groups=tuple(g.removeprefix("group:") for g in groups),
                                   admin=entry.get("admin", False), **grant))
    return tuple(out)

"""The one place a request becomes a caller identity.

Every request resolves once, here, to a principal, a read region, a write region and a
partition. Until access control lands, every caller is the configured default principal
with full access (unrestricted regions, admin). Nothing else in the code reads auth headers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agent_memory.errors import InvalidContext, InvalidRequest
from agent_memory.ids import valid_context_id

PARTITION_HEADER = "x-memory-partition"
_PARTITION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class RequestContext:
    context_id: str
    principal: str
    partition: str = "default"
    read_region: tuple[str, ...] | None = None  # None: unrestricted
    write_region: tuple[str, ...] | None = None  # None: unrestricted
    groups: tuple[str, ...] = ()
    admin: bool = False
    request_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def principals(self) -> list[str]:
        """Names a reader list can match: the principal and its ``group:`` memberships."""
        return [self.principal, *(f"group:{g}" if not g.startswith("group:") else g for g in self.groups)]


def resolve(context_id: str, headers: dict[str, str] | None, *, default_principal: str,
            request_id: str | None = None) -> RequestContext:
    if not valid_context_id(context_id):
        raise InvalidContext(f"context id {context_id!r} must be 1-128 characters of letters, digits, '.', '_' "
                             "or '-', starting with a letter or digit")
    headers = {k.lower(): v for k, v in (headers or {}).items()}
    partition = (headers.get(PARTITION_HEADER) or "default").strip()
    if not _PARTITION_RE.match(partition):
        raise InvalidRequest("X-Memory-Partition must be 1-64 characters of letters, digits, '.', '_' or '-'",
                             field="X-Memory-Partition")
    return RequestContext(context_id=context_id, principal=default_principal, partition=partition,
                          admin=True, request_id=request_id)

"""A principal's grants in a context, versioned: one item per change, never rewritten.

``pk = t#principals``, ``sk = <context>#<principal, %-quoted>#<valid_from>#<ulid>``; each
version holds the whole grant map (``{verb: [paths]}``, ``access.authority``) from its
``valid_from`` until the next version's. ``as_of`` answers for a past instant, so an audit row
can be explained by the grants in force when it was written. Only the administration
service writes here (its function's role is the only one allowed ``t#*`` writes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from agent_memory.kernel import timeutil
from agent_memory.kernel.ids import new_ulid
from agent_memory.ports import Condition, Record, RecordStore

PRINCIPALS_PK = "t#principals"


@dataclass(frozen=True)
class GrantVersion:
    context_id: str
    principal: str
    grants: dict[str, list[str]]
    valid_from: str
    changed_by: str
    display_name: str | None = None


def _prefix(context_id: str, principal: str | None = None) -> str:
    return f"{context_id}#" + (f"{quote(principal, safe='')}#" if principal is not None else "")


class PrincipalGrants:
    def __init__(self, store: RecordStore):
        self.store = store

    def history(self, context_id: str, principal: str) -> list[GrantVersion]:
        return [v for v in self._versions(_prefix(context_id, principal)) if v.principal == principal]

    def current(self, context_id: str, principal: str) -> GrantVersion | None:
        found = self.history(context_id, principal)
        return found[-1] if found else None

    def as_of(self, context_id: str, principal: str, instant: str) -> GrantVersion | None:
        found = [v for v in self.history(context_id, principal) if v.valid_from <= instant]
        return found[-1] if found else None

    def of_principal(self, principal: str) -> dict[str, dict[str, list[str]]]:
        """``{context: grants}``: a principal's current grants in every context that records
        any (the whole partition is read: for minting a key, never a request's hot path)."""
        latest: dict[str, GrantVersion] = {}
        for v in self._versions(""):
            if v.principal == principal:
                latest[v.context_id] = v
        return {c: v.grants for c, v in latest.items()}

    def principals(self, context_id: str) -> dict[str, GrantVersion]:
        """Every principal with grants in ``context_id``: its current version."""
        latest: dict[str, GrantVersion] = {}
        for v in self._versions(_prefix(context_id)):
            latest[v.principal] = v
        return latest

    def record(self, context_id: str, principal: str, grants: dict[str, list[str]], changed_by: str,
               display_name: str | None = None) -> GrantVersion:
        now = timeutil.now_iso()
        version = GrantVersion(context_id, principal, grants, now, changed_by, display_name)
        data: dict[str, Any] = {"kind": "principal_grants", "context_id": context_id, "principal": principal,
                                "grants": grants, "valid_from": now, "changed_by": changed_by}
        if display_name:
            data["display_name"] = display_name
        self.store.put(Record(pk=PRINCIPALS_PK, sk=f"{_prefix(context_id, principal)}{now}#{new_ulid()}", data=data),
                       Condition.absent())
        return version

    def _versions(self, prefix: str) -> list[GrantVersion]:
        found: list[GrantVersion] = []
        after = None
        while True:
            page = self.store.query(PRINCIPALS_PK, prefix=prefix or None, after=after, limit=200)
            for r in page.records:
                d = r.data
                if d.get("kind") == "principal_grants":
                    found.append(GrantVersion(d["context_id"], d["principal"], dict(d.get("grants") or {}),
                                              d["valid_from"], d.get("changed_by", ""), d.get("display_name")))
            if page.last_key is None:
                return found
            after = page.last_key

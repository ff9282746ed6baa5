"""When each stored API key was last used, kept apart from the key records.

A key's last use comes from the audit log's cost rows (``keyId`` on each), not from the
request: the row that says so is written where the cost rows are written, off the request
path (``AuditFunction`` on a stack, the local server's background audit sink), so no read
route writes anything and only the administration function writes key records.

One row per key, tenant-wide (a key may serve several contexts): ``pk = c#~keys#audit`` (no
context id or partition name starts with ``~``, and the audit role writes only ``c#*#audit``),
``sk = <key id>``, ``data.lastUsedAt``. A batch moves a key's row only forward: the row is read
and replaced on its version, so a late or redelivered batch never turns last use back.
The row expires with the cost row that last moved it; a key then reads as not used lately
(a deleted key's row is left to expire: nothing lists it, and the administration role needs no
write to the audit partitions).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from agent_memory.ports import Condition, ConditionFailed, Record, RecordStore

KEY_USE_PK = "c#~keys#audit"
_ATTEMPTS = 3


def latest_uses(rows: Iterable[Record]) -> dict[str, tuple[str, int | None]]:
    """The newest ``at`` per ``keyId`` among cost rows, with that row's expiry (rows of
    callers without a stored key carry no ``keyId``)."""
    found: dict[str, tuple[str, int | None]] = {}
    for row in rows:
        key_id, at = row.data.get("keyId"), row.data.get("at")
        if isinstance(key_id, str) and key_id and isinstance(at, str) and at > found.get(key_id, ("", None))[0]:
            found[key_id] = (at, row.expires_at)
    return found


class KeyUse:
    def __init__(self, store: RecordStore):
        self.store = store

    def record(self, uses: Mapping[str, tuple[str, int | None]]) -> int:
        """Move each key's last use forward to ``uses[key]`` (``(at, expires_at)``, as
        ``latest_uses`` gives); how many rows moved."""
        moved = 0
        for key_id, (at, expires) in uses.items():
            for _ in range(_ATTEMPTS):
                current = self.store.get(KEY_USE_PK, key_id)
                if current is not None and str(current.data.get("lastUsedAt", "")) >= at:
                    break
                row = Record(pk=KEY_USE_PK, sk=key_id, data={"kind": "key_use", "keyId": key_id, "lastUsedAt": at},
                             version=(current.version + 1) if current is not None else 1, expires_at=expires)
                try:
                    self.store.put(row, Condition.absent() if current is None
                                   else Condition.version_is(current.version))
                except ConditionFailed:
                    continue  # another batch moved it meanwhile: read again
                moved += 1
                break
        return moved

    def last_used(self) -> dict[str, str]:
        """Every key's last use (one query of the key-use partition)."""
        found: dict[str, str] = {}
        after = None
        now = int(time.time())
        while True:
            page = self.store.query(KEY_USE_PK, after=after, limit=500)
            for r in page.records:
                if r.data.get("kind") == "key_use" and (r.expires_at is None or r.expires_at > now):
                    found[r.sk] = str(r.data["lastUsedAt"])
            if page.last_key is None:
                return found
            after = page.last_key

"""Sessions and their raw turns.

A session row carries a turn counter; appending turns is one transaction that bumps the
counter under a version condition and creates the turn rows, so sequence numbers are dense
and two concurrent appends never share one. Closing keeps the turns; deleting removes them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory import cursor, deadline, grants, keys, timeutil
from agent_memory import scopes as scope_lib
from agent_memory.config import Settings
from agent_memory.errors import Conflict, NotFound, SessionClosed
from agent_memory.ids import new_id
from agent_memory.ports import Condition, ConditionFailed, Delete, Put, Record, RecordStore, WriteOp
from agent_memory.request_context import RequestContext

APPEND_ATTEMPTS = 40


@dataclass
class NewTurn:
    role: str
    content: str
    observed_at: str | None = None
    infer: str = "full"
    speaker: dict[str, str] | None = None  # stored form (services/speakers.py)


def session_wire(data: dict[str, Any]) -> dict[str, Any]:
    return {"id": data["id"], "scopes": data["scopes"], "labels": data.get("labels", []),
            "createdAt": data["createdAt"], "closedAt": data.get("closedAt")}


def turn_wire(data: dict[str, Any]) -> dict[str, Any]:
    out = {"id": data["id"], "session": data["session"], "role": data["role"], "content": data["content"],
           "seq": data["seq"], "createdAt": data["createdAt"], "observedAt": data.get("observedAt")}
    if data.get("speaker"):
        out["speaker"] = dict(data["speaker"])
    return out


class SessionService:
    def __init__(self, store: RecordStore, settings: Settings,
                 on_turns_removed: list[Callable[[RequestContext, list[str]], None]] | None = None):
        self.store = store
        self.settings = settings
        # Derived copies (search units, caches) subscribe here to follow deletions.
        self.on_turns_removed = on_turns_removed if on_turns_removed is not None else []

    # --- sessions -------------------------------------------------------------------

    def _new_session_record(self, ctx: RequestContext, scopes: list[list[str]], labels: list[str]) -> Record:
        sid = new_id("sess")
        data = {"kind": "session", "contextId": ctx.context_id, "id": sid, "scopes": scopes, "labels": labels, "createdAt": timeutil.now_iso(),
                "createdBy": ctx.principal, "closedAt": None, "turnCount": 0, "partition": ctx.partition}
        return Record(pk=keys.sessions_pk(ctx), sk=sid, data=data)

    def create(self, ctx: RequestContext, scopes: list[list[str]], labels: list[str]) -> dict[str, Any]:
        record = self._new_session_record(ctx, scopes, labels)
        self.store.put(record, Condition.absent())
        return session_wire(record.data)

    def load(self, ctx: RequestContext, session_id: str) -> Record:
        record = self.store.get(keys.sessions_pk(ctx), session_id) if session_id.startswith("sess_") else None
        # A session outside the caller's read region answers exactly as a missing one.
        if record is None or record.data.get("deleted") \
                or not scope_lib.visible(record.data.get("scopes") or [], ctx.read_region):
            raise NotFound(f"session {session_id} does not exist")
        return record

    def get(self, ctx: RequestContext, session_id: str) -> dict[str, Any]:
        return session_wire(self.load(ctx, session_id).data)

    def close(self, ctx: RequestContext, session_id: str) -> dict[str, Any]:
        for _ in range(APPEND_ATTEMPTS):
            record = self.load(ctx, session_id)
            # Closing changes the session: only a key that may write its scopes may do it.
            grants.check_writable(record.data.get("scopes") or [], ctx.write_region, "session")
            if record.data.get("closedAt"):
                return session_wire(record.data)
            record.data["closedAt"] = timeutil.now_iso()
            try:
                self.store.put(_bumped(record), Condition.version_is(record.version))
                return session_wire(record.data)
            except ConditionFailed:
                continue
        raise Conflict(f"session {session_id} is being modified concurrently; retry")

    def delete(self, ctx: RequestContext, session_id: str) -> None:
        """Mark the session deleted (reads 404 from here on), then remove its turns."""
        for _ in range(APPEND_ATTEMPTS):
            record = self.load(ctx, session_id)
            record.data["deleted"] = True
            try:
                self.store.put(_bumped(record), Condition.version_is(record.version))
                break
            except ConditionFailed:
                continue
        else:
            raise Conflict(f"session {session_id} is being modified concurrently; retry")
        pk = keys.turns_pk(ctx, session_id)
        after = None
        while True:
            page = self.store.query(pk, after=after, limit=100)
            if page.records:
                self.store.transact([Delete(r.pk, r.sk) for r in page.records])
                ids = [r.data["id"] for r in page.records]
                for listener in self.on_turns_removed:
                    listener(ctx, ids)
            if page.last_key is None:
                break
            after = page.last_key

    # --- turns ----------------------------------------------------------------------

    def list_turns(self, ctx: RequestContext, session_id: str, limit: int, page_cursor: str | None) -> dict[str, Any]:
        self.load(ctx, session_id)
        secret = self.settings.cursor_secret()
        collection = f"turns:{session_id}"
        after = cursor.decode(secret, ctx.context_id, collection, page_cursor)
        page = self.store.query(keys.turns_pk(ctx, session_id), after=after, limit=limit)
        next_cursor = cursor.encode(secret, ctx.context_id, collection, page.last_key)
        if next_cursor and page.records:
            # DynamoDB may return a last key on an exactly-full final page; look ahead so
            # hasMore is truthful.
            probe = self.store.query(keys.turns_pk(ctx, session_id), after=page.last_key, limit=1)
            if not probe.records:
                next_cursor = None
        # Forgotten turns (``deleted``, see services/forget.py) are skipped; a page may be short.
        return {"turns": [turn_wire(r.data) for r in page.records if not r.data.get("deleted")],
                "page": {"hasMore": next_cursor is not None, "nextCursor": next_cursor}}

    def get_turn(self, ctx: RequestContext, turn_id: str) -> dict[str, Any] | None:
        page = self.store.query(keys.turn_ids_gsi(ctx), between=(turn_id, turn_id), index="gsi1", limit=1)
        return page.records[0].data if page.records and not page.records[0].data.get("deleted") else None

    def resolve_for_write(self, ctx: RequestContext, session_id: str | None, scopes: list[list[str]],
                          labels: list[str]) -> Record:
        """The session a write lands in: the given one (must exist and be open) or a new one
        (not yet stored: ``append_turns`` creates it in the same transaction as its turns)."""
        if session_id is None:
            return self._new_session_record(ctx, scopes, labels)
        record = self.load(ctx, session_id)
        if record.data.get("closedAt"):
            raise SessionClosed(f"session {session_id} is closed; its turns are kept but it takes no new writes")
        return record

    def append_turns(self, ctx: RequestContext, session: Record, turns: Sequence[NewTurn],
                     scopes: list[list[str]], labels: list[str],
                     extra_ops: Callable[[list[dict[str, Any]]], list[WriteOp]] | None = None,
                     ) -> list[dict[str, Any]]:
        """Append turns and commit them together with ``extra_ops(turns)`` in one transaction.

        The session counter is bumped under a version condition; on contention the session
        is re-read and the append retried, so turn seq stays dense. A new session (version 1,
        not stored yet) is created in the same transaction.
        """
        is_new = self.store.get(session.pk, session.sk) is None
        for attempt in range(APPEND_ATTEMPTS):
            deadline.check("the write")  # past the deadline, commit nothing (the caller gets a 503)
            if not is_new:
                session = self.load(ctx, session.sk)
                if session.data.get("closedAt"):
                    raise SessionClosed(f"session {session.sk} is closed")
            now = timeutil.now_iso()
            start = session.data.get("turnCount", 0)
            rows: list[dict[str, Any]] = []
            for i, turn in enumerate(turns):
                rows.append({"kind": "turn", "contextId": ctx.context_id, "id": new_id("turn"), "session": session.sk, "role": turn.role, "content": turn.content,
                             "seq": start + i + 1, "createdAt": now, "observedAt": turn.observed_at or now,
                             "infer": turn.infer, "scopes": scopes, "labels": labels, "createdBy": ctx.principal,
                             "partition": ctx.partition})
                if turn.speaker:
                    rows[-1]["speaker"] = dict(turn.speaker)
            session.data["turnCount"] = start + len(turns)
            session.data["lastTurnAt"] = now
            ops: list[WriteOp] = [Put(session, Condition.absent()) if is_new
                                  else Put(_bumped(session), Condition.version_is(session.version))]
            for row in rows:
                ops.append(Put(Record(pk=keys.turns_pk(ctx, session.sk), sk=keys.turn_sk(row["seq"]), data=row,
                                      gsi1pk=keys.turn_ids_gsi(ctx), gsi1sk=row["id"]), Condition.absent()))
            if extra_ops is not None:
                ops.extend(extra_ops(rows))
            try:
                self.store.transact(ops)
                return rows
            except ConditionFailed as exc:
                if exc.index is not None and exc.index > len(rows):
                    raise  # a condition of the caller's own ops: not ours to retry
                if is_new:
                    raise Conflict("session id collision; retry") from exc
                backoff(attempt)
                continue
        raise Conflict(f"session {session.sk} is receiving too many concurrent writes; retry")


def backoff(attempt: int, base_s: float = 0.005, cap_s: float = 0.2) -> None:
    """Full-jitter exponential backoff between optimistic-concurrency retries."""
    time.sleep(random.uniform(0, min(cap_s, base_s * 2 ** attempt)))


def _bumped(record: Record) -> Record:
    return Record(pk=record.pk, sk=record.sk, data=record.data, version=record.version + 1,
                  gsi1pk=record.gsi1pk, gsi1sk=record.gsi1sk, expires_at=record.expires_at)

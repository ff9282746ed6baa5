"""Sessions and their raw turns.

A session row carries a turn counter; appending turns is one transaction that bumps the
counter under a version condition and creates the turn rows, so sequence numbers are dense
and two concurrent appends never share one. Closing keeps the turns; deleting removes them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agent_memory.access import grants
from agent_memory.access import scopes as scope_lib
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import cursor, deadline, timeutil
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import Conflict, NotFound, SessionClosed
from agent_memory.kernel.ids import new_id
from agent_memory.kernel.stored_item import record_bytes
from agent_memory.models.conversation_records import Session
from agent_memory.models.records import Page, Turn
from agent_memory.ports import Condition, ConditionFailed, Delete, Put, Record, RecordStore, WriteOp
from agent_memory.services.events import DomainEvents, EventPublisher, RecordsForgotten
from agent_memory.services.operations import receipts

APPEND_ATTEMPTS = 40


@dataclass
class NewTurn:
    role: str
    content: str
    observed_at: str | None = None
    infer: str = "full"
    speaker: dict[str, str] | None = None  # stored form (services/facts/speakers.py)
    unsupported: bool = False  # a chat reply that cited no memory (``Turn.unsupported``)


@dataclass(frozen=True)
class OpenedSession:
    """A session opened for a write (``SessionService.open_for_append``): the session, whether
    it is new (not stored yet), and its stored row as read then (None when new), which the
    append's first attempt conditions on instead of reading the session a second time."""

    session: Session
    is_new: bool
    row: Record | None = field(default=None, compare=False, repr=False)

    def appended(self) -> OpenedSession:
        """This session once a first append stored it: stored, its row read afresh."""
        return OpenedSession(self.session, False)


class SessionService:
    """Sessions and their turns. Deleting a session publishes ``RecordsForgotten`` for its
    turns on ``events`` (search units go with the rows, through projection)."""

    def __init__(self, store: RecordStore, cursor_secret: cursor.CursorSecret, events: DomainEvents | None = None):
        self.store = store
        self._cursor_secret = cursor_secret
        self._events = events if events is not None else EventPublisher()

    # --- sessions -------------------------------------------------------------------

    # The stored record (its keys and version, for a conditioned write) stays inside this
    # service: callers get the typed ``Session``, and every change here re-reads the record.

    def _new_session(self, ctx: RequestContext, scopes: list[list[str]], labels: list[str]) -> Session:
        return Session(id=new_id("sess"), context_id=ctx.context_id, partition=ctx.partition, scopes=scopes,
                       labels=labels, created_at=timeutil.now_iso(), created_by=ctx.principal)

    def create(self, ctx: RequestContext, scopes: list[list[str]], labels: list[str],
               metadata: dict[str, Any] | None = None) -> Session:
        session = replace(self._new_session(ctx, scopes, labels), metadata=metadata or None)
        self.store.put(Record(pk=keys.sessions_pk(ctx), sk=session.id, data=session.to_item()), Condition.absent())
        return session

    def _load(self, ctx: RequestContext, session_id: str) -> Record:
        """The session's stored record, for a conditioned write (``session_of`` reads it)."""
        return _visible(ctx, self.store.get(keys.sessions_pk(ctx), session_id), session_id)

    def get(self, ctx: RequestContext, session_id: str) -> Session:
        """The session, if it exists and the caller may read it (else ``NotFound``)."""
        return session_of(self._load(ctx, session_id))

    def close(self, ctx: RequestContext, session_id: str) -> Session:
        for _ in range(APPEND_ATTEMPTS):
            record = self._load(ctx, session_id)
            session = session_of(record)
            # Closing changes the session: only a key that may write its scopes may do it.
            grants.check_writable(session.scopes or [], ctx.write_region, "session")
            if session.closed_at:
                return session
            closed = replace(session, closed_at=timeutil.now_iso())
            try:
                self.store.put(_bumped(record, closed), Condition.version_is(record.version))
                return closed
            except ConditionFailed:
                continue
        raise Conflict(f"session {session_id} is being modified concurrently; retry")

    def delete(self, ctx: RequestContext, session_id: str) -> None:
        """Mark the session deleted (reads 404 from here on), then remove its turns."""
        for _ in range(APPEND_ATTEMPTS):
            record = self._load(ctx, session_id)
            try:
                self.store.put(_bumped(record, replace(session_of(record), deleted=True)),
                               Condition.version_is(record.version))
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
                receipts.note_rows(page.records)
                turns = [Turn.from_item(r.data) for r in page.records]
                self._events.publish(RecordsForgotten(ctx, frozenset(t.id for t in turns),
                                                      frozenset(t.content for t in turns if t.content)))
            if page.last_key is None:
                break
            after = page.last_key

    # --- turns ----------------------------------------------------------------------

    def list_turns(self, ctx: RequestContext, session_id: str, limit: int, page_cursor: str | None,
                   offset: int = 0) -> Page[Turn]:
        """A session's turns in order. ``offset`` (the Spectron client's paging) skips that many
        positions (``seq`` is dense per session, so it is a key range, not a skip-scan); a
        cursor resumes where its page ended and ignores ``offset``."""
        self._load(ctx, session_id)
        secret = self._cursor_secret
        collection = f"turns:{session_id}"
        after = cursor.decode(secret, ctx.context_id, collection, page_cursor)
        between = (keys.turn_sk(offset + 1), keys.turn_sk(10**12 - 1)) if offset and after is None else None
        page = self.store.query(keys.turns_pk(ctx, session_id), after=after, between=between, limit=limit)
        next_cursor = cursor.encode(secret, ctx.context_id, collection, page.last_key)
        if next_cursor and page.records:
            # DynamoDB may return a last key on an exactly-full final page; look ahead so
            # hasMore is truthful.
            probe = self.store.query(keys.turns_pk(ctx, session_id), after=page.last_key, between=between, limit=1)
            if not probe.records:
                next_cursor = None
        # Forgotten turns (``deleted``, see services/facts/forget.py) are skipped; a page may be short.
        turns = [Turn.from_item(r.data) for r in page.records]
        return Page([t for t in turns if not t.deleted], next_cursor)

    def latest_turns(self, ctx: RequestContext, session_id: str, limit: int) -> list[Turn]:
        """The session's last ``limit`` turns, oldest first, forgotten ones left out (chat's
        transcript window is cut from them)."""
        page = self.store.query(keys.turns_pk(ctx, session_id), limit=limit, forward=False)
        turns = [Turn.from_item(r.data) for r in reversed(page.records)]
        return [t for t in turns if not t.deleted]

    def get_turn(self, ctx: RequestContext, turn_id: str) -> Turn | None:
        page = self.store.query(keys.turn_ids_gsi(ctx), between=(turn_id, turn_id), index="gsi1", limit=1)
        turn = Turn.from_item(page.records[0].data) if page.records else None
        return turn if turn is not None and not turn.deleted else None

    def resolve_for_write(self, ctx: RequestContext, session_id: str | None, scopes: list[list[str]],
                          labels: list[str]) -> Session:
        """The session a write lands in (``open_for_write`` without its second answer)."""
        return self.open_for_write(ctx, session_id, scopes, labels)[0]

    def open_for_write(self, ctx: RequestContext, session_id: str | None, scopes: list[list[str]],
                       labels: list[str]) -> tuple[Session, bool]:
        """The session a write lands in and whether it is new (``open_for_append``)."""
        opened = self.open_for_append(ctx, session_id, scopes, labels)
        return opened.session, opened.is_new

    def open_for_append(self, ctx: RequestContext, session_id: str | None, scopes: list[list[str]],
                        labels: list[str]) -> OpenedSession:
        """The session a write lands in, read once. New (not yet stored: ``append_turns``
        creates it in the same transaction as its turns) when no id is given, or when the id
        names no session: then it is scoped as an auto-created one (agent frameworks tie memory
        to their own conversation ids). An existing one must be readable and open."""
        if session_id is None:
            return OpenedSession(self._new_session(ctx, scopes, labels), True)
        record = self.store.get(keys.sessions_pk(ctx), session_id)
        if record is None:
            return OpenedSession(replace(self._new_session(ctx, scopes, labels), id=session_id), True)
        session = session_of(_visible(ctx, record, session_id))
        if session.closed_at:
            raise SessionClosed(f"session {session_id} is closed; its turns are kept but it takes no new writes")
        return OpenedSession(session, False, record)

    def append_turns(self, ctx: RequestContext, session: Session, turns: Sequence[NewTurn],
                     scopes: list[list[str]], labels: list[str],
                     extra_ops: Callable[[list[Turn], Sequence[WriteOp]], list[WriteOp]] | None = None,
                     is_new: bool | None = None, row: Record | None = None) -> list[Turn]:
        """Append turns and commit them together with ``extra_ops(turns, own)`` in one
        transaction (``own``: this method's operations, the session row and the turn rows, so
        the caller can budget what it adds within one transaction's count and size).

        The session counter is bumped under a version condition; on contention the session
        is re-read and the append retried, so turn seq stays dense. A new session (version 1,
        not stored yet) is created in the same transaction. ``is_new``: whether ``session``
        is the new one ``resolve_for_write`` made (so no read is needed to tell); None reads
        to find out. A new session's row is put on absence, so a wrong True fails cleanly.
        ``row``: the session's row as ``open_for_append`` read it; the first attempt conditions
        on it rather than reading it again (a change since fails that attempt, and the retry reads).
        """
        record = Record(pk=keys.sessions_pk(ctx), sk=session.id, data=session.to_item())
        if is_new is None:
            is_new = self.store.get(record.pk, record.sk) is None
        for attempt in range(APPEND_ATTEMPTS):
            deadline.check("the write")  # past the deadline, commit nothing (the caller gets a 503)
            if not is_new:
                record = row if row is not None and attempt == 0 else self._load(ctx, session.id)
                if session_of(record).closed_at:
                    raise SessionClosed(f"session {session.id} is closed")
            now = timeutil.now_iso()
            current = session_of(record)
            start = current.turn_count
            rows = [_turn(ctx, session.id, turn, start + i + 1, now, scopes, labels) for i, turn in enumerate(turns)]
            bumped = replace(current, turn_count=start + len(turns), last_turn_at=now)
            ops: list[WriteOp] = [Put(Record(record.pk, record.sk, bumped.to_item(), version=record.version),
                                      Condition.absent()) if is_new
                                  else Put(_bumped(record, bumped), Condition.version_is(record.version))]
            ops.extend(Put(_turn_record(ctx, row), Condition.absent()) for row in rows)
            if extra_ops is not None:
                ops.extend(extra_ops(rows, tuple(ops)))
            try:
                self.store.transact(ops)
                return rows
            except ConditionFailed as exc:
                if exc.index is not None and exc.index > len(rows):
                    raise  # a condition of the caller's own ops: not ours to retry
                if is_new:
                    # Another write created this session first (two first writes naming one
                    # id): append to it as it now stands.
                    is_new = False
                    continue
                backoff(attempt)
                continue
        raise Conflict(f"session {session.id} is receiving too many concurrent writes; retry")


def planned_turn_bytes(ctx: RequestContext, session: Session, turn: NewTurn, scopes: list[list[str]],
                       labels: list[str]) -> int:
    """The size (``kernel.stored_item``) of the row ``append_turns`` stores for ``turn``, at
    most: an id and timestamps of the stored lengths and a sequence number of nine digits."""
    row = _turn(ctx, session.id, turn, 999_999_999, timeutil.now_iso(), scopes, labels)
    return record_bytes(_turn_record(ctx, row))


def planned_session_bytes(ctx: RequestContext, session: Session) -> int:
    """The size of ``session``'s row as ``append_turns`` stores it (a counter of nine digits)."""
    bumped = replace(session, turn_count=999_999_999, last_turn_at=timeutil.now_iso())
    return record_bytes(Record(keys.sessions_pk(ctx), session.id, bumped.to_item(), version=999_999_999))


def _turn(ctx: RequestContext, session_id: str, turn: NewTurn, seq: int, now: str, scopes: list[list[str]],
          labels: list[str]) -> Turn:
    return Turn(id=new_id("turn"), context_id=ctx.context_id, session=session_id, role=turn.role,
                content=turn.content, seq=seq, created_at=now, observed_at=turn.observed_at or now,
                infer=turn.infer, scopes=scopes, labels=labels, created_by=ctx.principal,
                partition=ctx.partition, speaker=dict(turn.speaker) if turn.speaker else None,
                unsupported=turn.unsupported)


def _turn_record(ctx: RequestContext, row: Turn) -> Record:
    return Record(pk=keys.turns_pk(ctx, row.session), sk=keys.turn_sk(row.seq), data=row.to_item(),
                  gsi1pk=keys.turn_ids_gsi(ctx), gsi1sk=row.id)


def backoff(attempt: int, base_s: float = 0.005, cap_s: float = 0.2) -> None:
    """Full-jitter exponential backoff between optimistic-concurrency retries."""
    time.sleep(random.uniform(0, min(cap_s, base_s * 2 ** attempt)))


def _visible(ctx: RequestContext, record: Record | None, session_id: str) -> Record:
    """``record`` if it is a live session the caller may read; else ``NotFound``: a session
    outside the caller's read region answers exactly as a missing one."""
    session = Session.from_item(record.data) if record is not None else None
    if session is None or session.deleted or not scope_lib.visible(session.scopes or [], ctx.read_region):
        raise NotFound(f"session {session_id} does not exist")
    return record


def session_of(record: Record) -> Session:
    return Session.from_item(record.data)


def _bumped(record: Record, session: Session) -> Record:
    """``session`` as the next version of ``record``."""
    return Record(pk=record.pk, sk=record.sk, data=session.to_item(), version=record.version + 1,
                  gsi1pk=record.gsi1pk, gsi1sk=record.gsi1sk, expires_at=record.expires_at)

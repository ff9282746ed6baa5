"""Conversational threads: ordered turns per thread, reader lists, and prompt context.

Data (``kernel/storage_keys.py``): one thread row per thread (the turn counter and the thread's reader
list) and one row per turn, keyed by its 12-digit ``turn_index``.

Appends. ``turn_index`` is dense and gap-free per thread under any concurrency: an append
is one transaction that bumps the thread row under a version condition (or creates it) and
creates the turn row. A writer that loses the race re-reads and retries with jitter; one
that keeps losing gets a retriable 503 rather than an index that might collide. Indexes are
never renumbered. An idempotency key (``Idempotency-Key`` header or body field) is applied
by the HTTP layer (``http.idempotent``): the same key and body replay the first reply (200)
without writing; another body is a 409.

Reader lists (``services/conversation/reader_access.py`` has the three states). The thread's list is the
default for turns appended without a list of their own; a turn's explicit list (``[]``
included) wins. The default is resolved when a turn is *read*, from the current thread row,
so ``PUT .../acl`` takes effect for every inheriting turn at once. Search units carry the
effective list too, re-stamped after ``PUT .../acl`` (which re-projects them); until that
lands, each semantic hit is re-checked against the store, so a stale unit never leaks.
Changing a thread's list takes an admin: a reader must not be able to widen it.

Read regions. A thread keeps the scopes of the write that made it, and each turn the scopes
of its append (the key's default write scope, else its write region; else the thread's), so
a turn is read only by a caller whose read region covers them *and* whose reader list admits
it. A thread outside the caller's region reads as missing (404), like one its reader list
excludes. Threads and turns written before they carried scopes are unscoped: every reader of
the context reads them, as any unscoped record, and only their reader lists guard them
(docs/access.md).

Context (``POST .../context``). The latest ``last_n_turns`` turns come first (chronological,
or newest first with ``recent_first``), then up to five older turns of the same thread that
match the query (the index filters by thread, partition, reader list and entity inside the
search, and excludes the recent window). A turn in both sets appears once, as recent.
With ``entity_id`` the server takes the last N turns of the thread and *then* keeps that
entity's; it does not scan further back to fill the window, so a mixed-entity thread can
return fewer than N recent items. Denied turns are dropped from the window the same way.
If semantic matches are needed (turns older than the window exist) while the thread's
latest turn has not reached the index yet, the answer is 503 ``thread_projection_pending``
with ``Retry-After``: answering without it would silently miss history.

Sizes. A turn's text is capped at ``limits.thread_turn_bytes`` (1 MiB, 413 above); text
larger than one record holds is split into part rows written in the append's transaction.
Responses inline at most ``RESPONSE_TEXT_BYTES`` of turn text (Lambda answers at most 6 MB):
a turn page stops early (``hasMore``), and ``/context`` items past the budget come with
``textInline: false`` and ``textBytes``; the SDK downloads those through
``GET .../turns/{turn_index}``.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from agent_memory.access import grants
from agent_memory.access import scopes as scope_lib
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import cursor, stored_item, timeutil
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import Forbidden, InvalidRequest, NotFound, PayloadTooLarge, ServiceBusy
from agent_memory.kernel.ids import new_id
from agent_memory.models.conversation_records import Thread, ThreadTurnPart
from agent_memory.models.records import Page, ThreadTurn
from agent_memory.models.threads import (
    AppendThreadTurnRequest,
    SetThreadAclRequest,
    ThreadContextRequest,
    check_thread_id,
)
from agent_memory.ports import Condition, ConditionFailed, Put, Record, RecordStore, SearchFilter, SearchIndex
from agent_memory.services.conversation import reader_access
from agent_memory.services.conversation.thread_units import entity_label

APPEND_ATTEMPTS = 64
INLINE_TEXT_BYTES = 256 * 1024  # of JSON-encoded text per record (the item limit is 400 KB)
RESPONSE_TEXT_BYTES = 2 * 1024 * 1024  # UTF-8 text per response; JSON at most doubles it
SEMANTIC_MATCHES = 5
SCAN_BUDGET = 2000  # turn rows one list request reads at most (reader/entity filters skip rows)
RESTAMP_BATCH = 25
PROJECTION_RETRY_AFTER_S = 1


@dataclass(frozen=True)
class TurnText:
    """A turn with its full text (``None``: not inlined in this response, see ``recall_turns``)."""

    turn: ThreadTurn
    text: str | None


@dataclass(frozen=True)
class RecalledTurn(TurnText):
    origin: str  # "recent" or "semantic"
    score: float | None = None


def thread_of(record: Record) -> Thread:
    return Thread.from_item(record.data)


def turn_of(record: Record) -> ThreadTurn:
    return ThreadTurn.from_item(record.data)


def _encoded_len(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8"))


def split_text(text: str, max_bytes: int = INLINE_TEXT_BYTES) -> list[str]:
    """Cut ``text`` into pieces whose JSON encoding fits ``max_bytes`` (at code-point bounds)."""
    pieces: list[str] = []
    i = 0
    while i < len(text):
        n = min(len(text) - i, max_bytes)
        while _encoded_len(text[i:i + n]) > max_bytes:
            n = max(1, min(n - 1, n * max_bytes // _encoded_len(text[i:i + n])))
        pieces.append(text[i:i + n])
        i += n
    return pieces or [""]


class ThreadService:
    """Threads and their turns. ``audit`` records admin reads past reader lists; a turn's
    text is at most ``turn_bytes`` (``limits.thread_turn_bytes``)."""

    def __init__(self, store: RecordStore, search: SearchIndex | None, cursor_secret: cursor.CursorSecret,
                 audit: reader_access.AuditLog, *, turn_bytes: int,
                 settle: Callable[[str], bool] | None = None):
        self.store = store
        self.search = search
        # Read-your-writes (``Projector.settle``): a context right after an append waits for it.
        self._settle = settle
        self._cursor_secret = cursor_secret
        self.audit = audit
        self._turn_bytes = turn_bytes

    # --- append ---------------------------------------------------------------------

    def check_append(self, thread_id: str, req: AppendThreadTurnRequest) -> None:
        """The append's input checks (400, 413), done before an idempotency key is looked up."""
        check_thread_id(thread_id)
        req.check()
        size = len(req.text.encode("utf-8"))
        cap = self._turn_bytes
        if size > cap:
            raise PayloadTooLarge(f"text is {size} bytes; the limit for a thread turn is {cap}", field="text")

    def append(self, ctx: RequestContext, thread_id: str, req: AppendThreadTurnRequest) -> ThreadTurn:
        """Append one turn (the idempotency key is the HTTP layer's: ``http.idempotent``)."""
        self.check_append(thread_id, req)
        head, *rest = split_text(req.text)
        try:
            written: list[list[str]] | None = ctx.write_scopes([]) or None
            refused: Forbidden | None = None
        except Forbidden as exc:  # a wildcard write region and no default scope: the thread's may do
            written, refused = None, exc
        for attempt in range(APPEND_ATTEMPTS):
            now = timeutil.now_iso()
            current = self.store.get(keys.threads_pk(ctx), thread_id)
            if current is not None and not self._visible(ctx, thread_of(current)):
                # No writer list beyond the readers: a non-reader may not append, and is
                # told what a reader of a missing thread would be.
                raise NotFound(f"thread {thread_id} does not exist")
            thread = thread_of(current) if current is not None else self._new_thread(ctx, thread_id, now, written)
            if refused is not None:
                if not thread.scopes:
                    raise refused
                grants.check_writable(thread.scopes, ctx.write_region, "thread")
            index = thread.turn_count + 1
            turn = ThreadTurn(context_id=ctx.context_id, partition=ctx.partition, thread_id=thread_id,
                              id=new_id("tturn"), turn_index=index, entity_id=req.entity_id,
                              metadata=req.metadata or {}, acl_readers=req.acl_readers, thread_acl=thread.acl_readers,
                              thread_acl_version=thread.acl_version, created_at=now, created_by=ctx.principal,
                              text_bytes=len(req.text.encode("utf-8")), scopes=written or thread.scopes,
                              **({"text_head": head, "text_parts": len(rest)} if rest else {"text": head}))
            bumped = Record(pk=keys.threads_pk(ctx), sk=thread_id,
                            version=(current.version + 1) if current else 1,
                            data=replace(thread, turn_count=index, updated_at=now).to_item())
            ops = [Put(bumped, Condition.version_is(current.version) if current else Condition.absent()),
                   Put(Record(pk=keys.thread_turns_pk(ctx, thread_id), sk=keys.thread_turn_sk(index),
                              data=turn.to_item()), Condition.absent())]
            for part_no, piece in enumerate(rest, start=1):
                ops.append(Put(Record(pk=keys.thread_parts_pk(ctx, thread_id),
                                      sk=keys.thread_part_sk(index, part_no),
                                      data=ThreadTurnPart(turn_id=turn.id, text=piece).to_item()),
                               Condition.absent()))
            try:
                self.store.transact(ops)
            except ConditionFailed:
                time.sleep(random.uniform(0, min(0.05, 0.001 * 2 ** attempt)))
                continue
            return turn
        raise ServiceBusy(f"thread {thread_id} is receiving too many concurrent appends; retry",
                          retry_after=1, code="thread_append_contention")

    @staticmethod
    def _new_thread(ctx: RequestContext, thread_id: str, now: str,
                    scopes: list[list[str]] | None = None) -> Thread:
        return Thread(context_id=ctx.context_id, partition=ctx.partition, id=thread_id, turn_count=0,
                      acl_readers=None, acl_version=0, created_at=now, updated_at=now, created_by=ctx.principal,
                      scopes=scopes or None)

    # --- thread ---------------------------------------------------------------------

    def _thread(self, ctx: RequestContext, thread_id: str) -> Thread | None:
        record = self.store.get(keys.threads_pk(ctx), check_thread_id(thread_id))
        return thread_of(record) if record is not None else None

    @staticmethod
    def _visible(ctx: RequestContext, thread: Thread) -> bool:
        """Whether the thread's own reader list and scopes let the caller see it at all."""
        return reader_access.check(thread.acl_readers, ctx).allowed \
            and scope_lib.visible(thread.scopes or [], ctx.read_region)

    @staticmethod
    def _in_region(ctx: RequestContext, row: ThreadTurn, thread: Thread) -> bool:
        """Whether the caller's read region covers a turn (its scopes, else its thread's)."""
        return scope_lib.visible(row.scopes or thread.scopes or [], ctx.read_region)

    def get_thread(self, ctx: RequestContext, thread_id: str) -> Thread:
        """Thread metadata; a thread whose own reader list or scopes exclude the caller reads
        as absent."""
        thread = self._thread(ctx, thread_id)
        if thread is None or not self._visible(ctx, thread):
            raise NotFound(f"thread {thread_id} does not exist")
        return thread

    def set_acl(self, ctx: RequestContext, thread_id: str, req: SetThreadAclRequest) -> Thread:
        """Set the thread's default reader list (``None`` clears it); creates the thread if new,
        so a policy can be in place before the first turn."""
        check_thread_id(thread_id)
        if not ctx.admin:
            raise Forbidden("changing a thread's reader list takes an admin principal")
        for _ in range(APPEND_ATTEMPTS):
            now = timeutil.now_iso()
            current = self.store.get(keys.threads_pk(ctx), thread_id)
            thread = thread_of(current) if current is not None else self._new_thread(ctx, thread_id, now)
            updated = replace(thread, acl_readers=req.acl_readers, acl_version=thread.acl_version + 1, updated_at=now)
            record = Record(pk=keys.threads_pk(ctx), sk=thread_id, data=updated.to_item(),
                            version=(current.version + 1) if current else 1)
            try:
                self.store.put(record, Condition.version_is(current.version) if current else Condition.absent())
            except ConditionFailed:
                continue
            self._restamp(ctx, thread_id, updated.acl_readers, updated.acl_version)
            return updated
        raise ServiceBusy(f"thread {thread_id} is being modified concurrently; retry", retry_after=1)

    def _restamp(self, ctx: RequestContext, thread_id: str, readers: list[str] | None, acl_version: int) -> None:
        """Copy the thread's new list onto turns that inherit it, so their search units follow."""
        pk, after = keys.thread_turns_pk(ctx, thread_id), None
        while True:
            page = self.store.query(pk, after=after, limit=100)
            stale = [r for r in page.records if _inherits_older(turn_of(r), acl_version)]
            writes = [(r, Put(_stamped(r, readers, acl_version), Condition.version_is(r.version))) for r in stale]
            # RESTAMP_BATCH turns, or fewer where their text passes DynamoDB's 4 MB a transaction.
            for batch in stored_item.batches(writes, lambda w: stored_item.op_bytes(w[1]), max_count=RESTAMP_BATCH):
                try:
                    self.store.transact([op for _, op in batch])
                except ConditionFailed:
                    for record, _ in batch:
                        self._restamp_one(record, readers, acl_version)
            if page.last_key is None:
                return
            after = page.last_key

    def _restamp_one(self, record: Record, readers: list[str] | None, acl_version: int) -> None:
        for _ in range(APPEND_ATTEMPTS):
            current = self.store.get(record.pk, record.sk)
            if current is None or not _inherits_older(turn_of(current), acl_version):
                return
            try:
                self.store.put(_stamped(current, readers, acl_version), Condition.version_is(current.version))
                return
            except ConditionFailed:
                continue

    # --- reads ----------------------------------------------------------------------

    def list_turns(self, ctx: RequestContext, thread_id: str, *, limit: int, page_cursor: str | None,
                   after_index: int | None, entity_id: str | None) -> Page[TurnText]:
        """Readable turns in ``turn_index`` order, paged (by cursor or ``after_index``). A thread
        whose own list excludes the caller, and none of whose turns names the caller, reads as
        missing (404); an explicit turn list still wins over the thread's."""
        thread = self._thread(ctx, thread_id)
        if thread is None:
            raise NotFound(f"thread {thread_id} does not exist")
        if page_cursor is not None and after_index is not None:
            raise InvalidRequest("pass cursor or after_index, not both", field="cursor")
        pk = keys.thread_turns_pk(ctx, thread_id)
        secret, collection = self._cursor_secret, f"thread-turns:{ctx.partition}:{thread_id}"
        after = cursor.decode(secret, ctx.context_id, collection, page_cursor)
        if after is not None and (set(after) != {"pk", "sk"} or after["pk"] != pk):
            raise InvalidRequest("cursor belongs to another thread", field="cursor")
        if after_index is not None:
            after = {"pk": pk, "sk": keys.thread_turn_sk(after_index)}
        default = thread.acl_readers
        chosen: list[ThreadTurn] = []
        bypassed: list[str] = []
        text_bytes, scanned, last_sk, stopped = 0, 0, None, False
        while not stopped:
            page = self.store.query(pk, after=after, limit=min(limit + 1, 100))
            for record in page.records:
                row = turn_of(record)
                if len(chosen) >= limit or scanned >= SCAN_BUDGET or (
                        chosen and text_bytes + row.text_bytes > RESPONSE_TEXT_BYTES):
                    stopped = True
                    break
                scanned += 1
                last_sk = record.sk
                if entity_id is not None and row.entity_id != entity_id:
                    continue
                if not self._in_region(ctx, row, thread):
                    continue
                verdict = reader_access.check(reader_access.effective(row.acl_readers, default), ctx)
                if not verdict.allowed:
                    continue
                if verdict.bypass:
                    bypassed.append(row.id)
                chosen.append(row)
                text_bytes += row.text_bytes
            if page.last_key is None:
                break
            after = page.last_key
        # Stopping early leaves last_sk set (something was scanned); look ahead so hasMore is truthful.
        has_more = stopped and last_sk is not None and bool(
            self.store.query(pk, after={"pk": pk, "sk": last_sk}, limit=1).records)
        if not chosen and page_cursor is None and after_index is None and not self._visible(ctx, thread):
            raise NotFound(f"thread {thread_id} does not exist")
        self.audit.bypass(ctx, "thread.list_turns", bypassed, threadId=thread_id)
        texts = self._texts(ctx, thread_id, chosen)
        next_cursor = cursor.encode(secret, ctx.context_id, collection, {"pk": pk, "sk": last_sk}) if has_more else None
        return Page([TurnText(t, texts[t.id]) for t in chosen], next_cursor)

    def get_turn(self, ctx: RequestContext, thread_id: str, turn_index: int) -> TurnText:
        """One turn with its full text (how the SDK fetches text ``/context`` did not inline)."""
        thread = self._thread(ctx, thread_id)
        record = None if thread is None else self.store.get(keys.thread_turns_pk(ctx, thread_id),
                                                            keys.thread_turn_sk(turn_index))
        row = turn_of(record) if record is not None else None
        verdict = reader_access.Verdict(False)
        if thread is not None and row is not None and self._in_region(ctx, row, thread):
            verdict = reader_access.check(reader_access.effective(row.acl_readers, thread.acl_readers), ctx)
        if row is None or not verdict.allowed:  # denied reads as absent: no oracle for content
            raise NotFound(f"turn {turn_index} of thread {thread_id} does not exist")
        if verdict.bypass:
            self.audit.bypass(ctx, "thread.get_turn", [row.id], threadId=thread_id)
        return TurnText(row, self._texts(ctx, thread_id, [row])[row.id])

    def recall_turns(self, ctx: RequestContext, thread_id: str, req: ThreadContextRequest) -> list[RecalledTurn]:
        """The recent window and older semantic matches of a thread. A missing thread, and one
        whose own reader list excludes the caller with no turn of the answer naming it, is 404,
        alike (as every thread read): no oracle for a restricted thread's existence."""
        req.check()
        thread = self._thread(ctx, thread_id)
        if thread is None:
            raise NotFound(f"thread {thread_id} does not exist")
        items = self._recall_turns(ctx, thread, req)
        if not items and not self._visible(ctx, thread):
            raise NotFound(f"thread {thread_id} does not exist")
        return items

    def _recall_turns(self, ctx: RequestContext, thread: Thread, req: ThreadContextRequest) -> list[RecalledTurn]:
        thread_id = thread.id
        pk = keys.thread_turns_pk(ctx, thread_id)
        records = self.store.query(pk, limit=req.last_n_turns, forward=False).records  # newest first
        if not records:
            return []
        window = [(record, turn_of(record)) for record in records]
        default = thread.acl_readers
        bypassed: list[str] = []

        def readable(row: ThreadTurn) -> bool:
            if req.entity_id is not None and row.entity_id != req.entity_id:
                return False
            if not self._in_region(ctx, row, thread):
                return False
            verdict = reader_access.check(reader_access.effective(row.acl_readers, default), ctx)
            if verdict.bypass:
                bypassed.append(row.id)
            return verdict.allowed

        rows = [row for _, row in window]
        recent = [row for row in (rows if req.recent_first else reversed(rows)) if readable(row)]
        start = rows[-1].turn_index
        semantic: list[tuple[ThreadTurn, float]] = []
        if start > 1 and self.search is not None:
            if self._settle is not None:
                self._settle(ctx.context_id)
            self._require_projected(ctx, thread_id, *window[0])
            semantic = self._semantic(ctx, thread_id, req, rows, start, readable)
        self.audit.bypass(ctx, "thread.context", bypassed, threadId=thread_id)
        return self._recalled_turns(ctx, thread_id, recent, semantic)

    def _require_projected(self, ctx: RequestContext, thread_id: str, record: Record, latest: ThreadTurn) -> None:
        unit = self.search.get(ctx.context_id, latest.id) if self.search is not None else None
        if unit is None or unit.revision < record.version:
            raise ServiceBusy(f"turn {latest.turn_index} of thread {thread_id} is not searchable yet; "
                              "retry shortly", retry_after=PROJECTION_RETRY_AFTER_S,
                              code="thread_projection_pending")

    def _semantic(self, ctx: RequestContext, thread_id: str, req: ThreadContextRequest, window: list[ThreadTurn],
                  start: int, readable: Callable[[ThreadTurn], bool]) -> list[tuple[ThreadTurn, float]]:
        """Up to five readable turns older than the window, best match first."""
        flt = SearchFilter(
            context_id=ctx.context_id, partition=ctx.partition,
            read_region=list(ctx.read_region) if ctx.read_region is not None else None,
            principals=ctx.principals, admin=ctx.admin, kinds=["thread_turn"], thread_id=thread_id,
            labels=[entity_label(req.entity_id)] if req.entity_id is not None else None,
            exclude_ids=[row.id for row in window])
        # lazy: ranking loads numpy, which the threads handler's cold start does without
        from agent_memory.ranking.recipes import RECIPES
        from agent_memory.ranking.search import search as ranked_search

        # Plain reciprocal-rank fusion of a BM25 and a vector leg (the "rrf" recipe): the retrieval
        # rules weigh sessions, speakers' roles and facts, which thread turns do not have.
        ranked = ranked_search(self.search, req.query, flt, RECIPES["rrf"], k=2 * SEMANTIC_MATCHES)
        hits = [h for h in ranked
                if isinstance(h.unit.metadata.get("turnIndex"), int) and h.unit.metadata["turnIndex"] < start]
        pk = keys.thread_turns_pk(ctx, thread_id)
        rows = {(r.pk, r.sk): turn_of(r) for r in self.store.batch_get(
            [(pk, keys.thread_turn_sk(h.unit.metadata["turnIndex"])) for h in hits])}
        out: list[tuple[ThreadTurn, float]] = []
        for hit in hits:
            row = rows.get((pk, keys.thread_turn_sk(hit.unit.metadata["turnIndex"])))
            # The store decides: a unit may lag a re-stamped reader list or a removed turn.
            if row is not None and row.id == hit.unit.id and readable(row):
                out.append((row, hit.score))
            if len(out) == SEMANTIC_MATCHES:
                break
        return out

    def entity_matches(self, ctx: RequestContext, entity_id: str, query: str,
                       k: int = SEMANTIC_MATCHES) -> list[EntityMatch]:
        """The entity's turns that best match ``query`` across all its threads: the
        entity-wide view ``Memory.recall`` composes with one thread's context (a thread per
        appointment still finds what the entity said in another). Each match is re-checked
        against the store as the thread reads are: the caller's read region, the reader list
        (an admin's bypass audited), and a unit that lags its row is dropped."""
        if self.search is None or not query.strip():
            return []
        flt = SearchFilter(
            context_id=ctx.context_id, partition=ctx.partition,
            read_region=list(ctx.read_region) if ctx.read_region is not None else None,
            principals=ctx.principals, admin=ctx.admin, kinds=["thread_turn"], labels=[entity_label(entity_id)])
        from agent_memory.ranking.recipes import RECIPES
        from agent_memory.ranking.search import search as ranked_search

        ranked = [h for h in ranked_search(self.search, query, flt, RECIPES["rrf"], k=2 * k)
                  if h.unit.thread_id and isinstance(h.unit.metadata.get("turnIndex"), int)]
        where = {h.unit.id: (keys.thread_turns_pk(ctx, h.unit.thread_id),
                             keys.thread_turn_sk(h.unit.metadata["turnIndex"])) for h in ranked}
        rows = {(r.pk, r.sk): turn_of(r) for r in self.store.batch_get(list(dict.fromkeys(where.values())))}
        threads: dict[str, Thread | None] = {}
        bypassed: list[str] = []
        found: list[tuple[ThreadTurn, float]] = []
        for hit in ranked:
            row = rows.get(where[hit.unit.id])
            if row is None or row.id != hit.unit.id or row.entity_id != entity_id:
                continue
            if row.thread_id not in threads:
                threads[row.thread_id] = self._thread(ctx, row.thread_id)
            thread = threads[row.thread_id]
            if thread is None or not self._in_region(ctx, row, thread):
                continue
            verdict = reader_access.check(reader_access.effective(row.acl_readers, thread.acl_readers), ctx)
            if not verdict.allowed:
                continue
            if verdict.bypass:
                bypassed.append(row.id)
            found.append((row, hit.score))
            if len(found) == k:
                break
        self.audit.bypass(ctx, "thread.recall", bypassed, entityId=entity_id)
        texts: dict[str, str] = {}
        for thread_id in dict.fromkeys(row.thread_id for row, _ in found):
            texts.update(self._texts(ctx, thread_id, [row for row, _ in found if row.thread_id == thread_id]))
        return [EntityMatch(row, texts.get(row.id, ""), score) for row, score in found]

    def _recalled_turns(self, ctx: RequestContext, thread_id: str, recent: list[ThreadTurn],
                        semantic: list[tuple[ThreadTurn, float]]) -> list[RecalledTurn]:
        seen: set[str] = set()
        ordered: list[tuple[ThreadTurn, str, float | None]] = []
        for row, origin, score in [*((r, "recent", None) for r in recent), *((r, "semantic", s) for r, s in semantic)]:
            if row.id not in seen:
                seen.add(row.id)
                ordered.append((row, origin, score))
        inline: list[ThreadTurn] = []
        budget = 0
        for row, _, _ in ordered:  # greedy: a turn too large for what is left does not stop smaller ones
            if budget + row.text_bytes <= RESPONSE_TEXT_BYTES:
                budget += row.text_bytes
                inline.append(row)
        texts = self._texts(ctx, thread_id, inline)
        return [RecalledTurn(row, texts.get(row.id), origin, score) for row, origin, score in ordered]

    def _texts(self, ctx: RequestContext, thread_id: str, rows: Sequence[ThreadTurn]) -> dict[str, str]:
        """Full text of each row by turn id, reading part rows for split turns in one batch."""
        part_keys = [(keys.thread_parts_pk(ctx, thread_id), keys.thread_part_sk(r.turn_index, n))
                     for r in rows for n in range(1, (r.text_parts or 0) + 1)]
        parts = {(p.pk, p.sk): ThreadTurnPart.from_item(p.data).text
                 for p in self.store.batch_get(part_keys)} if part_keys else {}
        out: dict[str, str] = {}
        for r in rows:
            if r.text is not None:
                out[r.id] = r.text
                continue
            pieces = [r.text_head or ""]
            for n in range(1, (r.text_parts or 0) + 1):
                piece = parts.get((keys.thread_parts_pk(ctx, thread_id), keys.thread_part_sk(r.turn_index, n)))
                if piece is None:
                    raise RuntimeError(f"turn {r.id} is missing text part {n}")
                pieces.append(piece)
            out[r.id] = "".join(pieces)
        return out


@dataclass(frozen=True)
class EntityMatch:
    """One turn of ``ThreadService.entity_matches``: the row, its full text, its score."""

    turn: ThreadTurn
    text: str
    score: float


def _inherits_older(turn: ThreadTurn, acl_version: int) -> bool:
    """A turn without its own list, stamped with an older thread list than ``acl_version``."""
    return turn.acl_readers is None and turn.thread_acl_version < acl_version


def _stamped(record: Record, readers: list[str] | None, acl_version: int) -> Record:
    turn = replace(turn_of(record), thread_acl=readers, thread_acl_version=acl_version)
    return Record(pk=record.pk, sk=record.sk, version=record.version + 1, gsi1pk=record.gsi1pk,
                  gsi1sk=record.gsi1sk, expires_at=record.expires_at, data=turn.to_item())

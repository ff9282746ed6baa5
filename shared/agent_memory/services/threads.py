"""Conversational threads: ordered turns per thread, reader lists, and prompt context.

Data (``keys.py``): one thread row per thread (the turn counter and the thread's reader
list) and one row per turn, keyed by its 12-digit ``turn_index``.

Appends. ``turn_index`` is dense and gap-free per thread under any concurrency: an append
is one transaction that bumps the thread row under a version condition (or creates it) and
creates the turn row. A writer that loses the race re-reads and retries with jitter; one
that keeps losing gets a retriable 503 rather than an index that might collide. Indexes are
never renumbered. With an idempotency key (``Idempotency-Key`` header or body field) the
same key and body replay the first reply (200) without writing; another body is a 409.

Reader lists (``services/reader_access.py`` has the three states). The thread's list is the
default for turns appended without a list of their own; a turn's explicit list (``[]``
included) wins. The default is resolved when a turn is *read*, from the current thread row,
so ``PUT .../acl`` takes effect for every inheriting turn at once. Search units carry the
effective list too, re-stamped after ``PUT .../acl`` (which re-projects them); until that
lands, each semantic hit is re-checked against the store, so a stale unit never leaks.
Changing a thread's list takes an admin: a reader must not be able to widen it.

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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory import cursor, keys, timeutil
from agent_memory.config import Settings
from agent_memory.errors import Forbidden, InvalidRequest, NotFound, PayloadTooLarge, ServiceBusy
from agent_memory.ids import new_id
from agent_memory.models.threads import (
    AppendThreadTurnRequest,
    SetThreadAclRequest,
    ThreadContextRequest,
    check_thread_id,
)
from agent_memory.ports import Condition, ConditionFailed, Put, Record, RecordStore, SearchFilter, SearchIndex
from agent_memory.request_context import RequestContext
from agent_memory.services import reader_access
from agent_memory.services.idempotency import IdempotencyService
from agent_memory.services.thread_units import entity_label

APPEND_ATTEMPTS = 64
INLINE_TEXT_BYTES = 256 * 1024  # of JSON-encoded text per record (the item limit is 400 KB)
RESPONSE_TEXT_BYTES = 2 * 1024 * 1024  # UTF-8 text per response; JSON at most doubles it
SEMANTIC_MATCHES = 5
SCAN_BUDGET = 2000  # turn rows one list request reads at most (reader/entity filters skip rows)
RESTAMP_BATCH = 25
PROJECTION_RETRY_AFTER_S = 1


@dataclass
class AppendOutcome:
    body: dict[str, Any]
    status: int
    replayed: bool


# --- wire shapes ----------------------------------------------------------------------


def thread_wire(data: dict[str, Any]) -> dict[str, Any]:
    return {"threadId": data["id"], "partition": data["partition"], "turnCount": data["turnCount"],
            "aclReaders": data.get("aclReaders"), "createdAt": data["createdAt"], "updatedAt": data["updatedAt"]}


def turn_wire(data: dict[str, Any], text: str | None) -> dict[str, Any]:
    return {"threadId": data["threadId"], "turnId": data["id"], "turnIndex": data["turnIndex"], "text": text,
            "entityId": data.get("entityId"), "metadata": data.get("metadata") or {},
            "aclReaders": data.get("aclReaders"), "createdAt": data["createdAt"],
            "createdBy": data.get("createdBy"), "textBytes": data["textBytes"]}


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
    def __init__(self, store: RecordStore, search: SearchIndex | None, settings: Settings,
                 idempotency: IdempotencyService):
        self.store = store
        self.search = search
        self.settings = settings
        self.idempotency = idempotency
        self.audit = reader_access.AuditLog(store, settings.limits.audit_ttl_s)

    # --- append ---------------------------------------------------------------------

    def append(self, ctx: RequestContext, thread_id: str, req: AppendThreadTurnRequest,
               header_key: str | None = None) -> AppendOutcome:
        check_thread_id(thread_id)
        req.check()
        size = len(req.text.encode("utf-8"))
        cap = self.settings.limits.thread_turn_bytes
        if size > cap:
            raise PayloadTooLarge(f"text is {size} bytes; the limit for a thread turn is {cap}", field="text")
        if header_key is not None and req.idempotency_key is not None and header_key != req.idempotency_key:
            raise InvalidRequest("Idempotency-Key header and idempotency_key differ", field="idempotency_key")
        key = header_key if header_key is not None else req.idempotency_key

        def run() -> tuple[dict[str, Any], int, list[str]]:
            body = self._append(ctx, thread_id, req)
            return body, 201, [body["turnId"]]

        outcome = self.idempotency.run(ctx, "thread-append", key, req.fingerprint_payload(thread_id), run)
        return AppendOutcome(outcome.body, outcome.status, outcome.replayed)

    def _append(self, ctx: RequestContext, thread_id: str, req: AppendThreadTurnRequest) -> dict[str, Any]:
        head, *rest = split_text(req.text)
        for attempt in range(APPEND_ATTEMPTS):
            now = timeutil.now_iso()
            current = self.store.get(keys.threads_pk(ctx), thread_id)
            if current is not None and not self._visible(ctx, current):
                # No writer list beyond the readers: a non-reader may not append, and is
                # told what a reader of a missing thread would be.
                raise NotFound(f"thread {thread_id} does not exist")
            thread = current or self._new_thread(ctx, thread_id, now)
            index = thread.data["turnCount"] + 1
            turn = {"kind": "thread_turn", "contextId": ctx.context_id, "partition": ctx.partition,
                    "threadId": thread_id, "id": new_id("tturn"), "turnIndex": index, "entityId": req.entity_id,
                    "metadata": req.metadata or {}, "aclReaders": req.acl_readers,
                    "threadAcl": thread.data.get("aclReaders"), "threadAclVersion": thread.data["aclVersion"],
                    "createdAt": now, "createdBy": ctx.principal, "textBytes": len(req.text.encode("utf-8"))}
            if rest:
                turn.update(textHead=head, textParts=len(rest))
            else:
                turn["text"] = head
            bumped = Record(pk=thread.pk, sk=thread.sk, version=thread.version + (1 if current else 0),
                            data={**thread.data, "turnCount": index, "updatedAt": now})
            ops = [Put(bumped, Condition.version_is(current.version) if current else Condition.absent()),
                   Put(Record(pk=keys.thread_turns_pk(ctx, thread_id), sk=keys.thread_turn_sk(index), data=turn),
                       Condition.absent())]
            for part_no, piece in enumerate(rest, start=1):
                ops.append(Put(Record(pk=keys.thread_parts_pk(ctx, thread_id),
                                      sk=keys.thread_part_sk(index, part_no),
                                      data={"kind": "thread_turn_part", "turnId": turn["id"], "text": piece}),
                               Condition.absent()))
            try:
                self.store.transact(ops)
            except ConditionFailed:
                time.sleep(random.uniform(0, min(0.05, 0.001 * 2 ** attempt)))
                continue
            return {"threadId": thread_id, "turnIndex": index, "turnId": turn["id"], "entityId": req.entity_id,
                    "createdAt": now}
        raise ServiceBusy(f"thread {thread_id} is receiving too many concurrent appends; retry",
                          retry_after=1, code="thread_append_contention")

    def _new_thread(self, ctx: RequestContext, thread_id: str, now: str) -> Record:
        return Record(pk=keys.threads_pk(ctx), sk=thread_id, data={
            "kind": "thread", "contextId": ctx.context_id, "partition": ctx.partition, "id": thread_id,
            "turnCount": 0, "aclReaders": None, "aclVersion": 0, "createdAt": now, "updatedAt": now,
            "createdBy": ctx.principal})

    # --- thread ---------------------------------------------------------------------

    def _thread(self, ctx: RequestContext, thread_id: str) -> Record | None:
        return self.store.get(keys.threads_pk(ctx), check_thread_id(thread_id))

    @staticmethod
    def _visible(ctx: RequestContext, thread: Record) -> bool:
        """Whether the thread's own reader list lets the caller see it at all."""
        return reader_access.check(thread.data.get("aclReaders"), ctx).allowed

    def _readable_thread(self, ctx: RequestContext, thread_id: str) -> Record | None:
        """The thread, or ``None`` when it is missing or the caller may not see it: the two
        answer alike, so a restricted thread's existence does not leak."""
        thread = self._thread(ctx, thread_id)
        return thread if thread is not None and self._visible(ctx, thread) else None

    def get_thread(self, ctx: RequestContext, thread_id: str) -> dict[str, Any]:
        """Thread metadata; a thread whose own reader list excludes the caller reads as absent."""
        thread = self._thread(ctx, thread_id)
        if thread is None or not reader_access.check(thread.data.get("aclReaders"), ctx).allowed:
            raise NotFound(f"thread {thread_id} does not exist")
        return thread_wire(thread.data)

    def set_acl(self, ctx: RequestContext, thread_id: str, req: SetThreadAclRequest) -> dict[str, Any]:
        """Set the thread's default reader list (``None`` clears it); creates the thread if new,
        so a policy can be in place before the first turn."""
        check_thread_id(thread_id)
        if not ctx.admin:
            raise Forbidden("changing a thread's reader list takes an admin principal")
        for _ in range(APPEND_ATTEMPTS):
            now = timeutil.now_iso()
            current = self._thread(ctx, thread_id)
            thread = current or self._new_thread(ctx, thread_id, now)
            data = {**thread.data, "aclReaders": req.acl_readers, "aclVersion": thread.data["aclVersion"] + 1,
                    "updatedAt": now}
            updated = Record(pk=thread.pk, sk=thread.sk, data=data, version=thread.version + (1 if current else 0))
            try:
                self.store.put(updated, Condition.version_is(current.version) if current else Condition.absent())
            except ConditionFailed:
                continue
            self._restamp(ctx, thread_id, data["aclReaders"], data["aclVersion"])
            return thread_wire(data)
        raise ServiceBusy(f"thread {thread_id} is being modified concurrently; retry", retry_after=1)

    def _restamp(self, ctx: RequestContext, thread_id: str, readers: list[str] | None, acl_version: int) -> None:
        """Copy the thread's new list onto turns that inherit it, so their search units follow."""
        pk, after = keys.thread_turns_pk(ctx, thread_id), None
        while True:
            page = self.store.query(pk, after=after, limit=100)
            stale = [r for r in page.records if r.data.get("aclReaders") is None
                     and r.data.get("threadAclVersion", 0) < acl_version]
            for lo in range(0, len(stale), RESTAMP_BATCH):
                batch = stale[lo:lo + RESTAMP_BATCH]
                try:
                    self.store.transact([Put(_stamped(r, readers, acl_version), Condition.version_is(r.version))
                                         for r in batch])
                except ConditionFailed:
                    for record in batch:
                        self._restamp_one(record, readers, acl_version)
            if page.last_key is None:
                return
            after = page.last_key

    def _restamp_one(self, record: Record, readers: list[str] | None, acl_version: int) -> None:
        for _ in range(APPEND_ATTEMPTS):
            current = self.store.get(record.pk, record.sk)
            if current is None or current.data.get("aclReaders") is not None \
                    or current.data.get("threadAclVersion", 0) >= acl_version:
                return
            try:
                self.store.put(_stamped(current, readers, acl_version), Condition.version_is(current.version))
                return
            except ConditionFailed:
                continue

    # --- reads ----------------------------------------------------------------------

    def list_turns(self, ctx: RequestContext, thread_id: str, *, limit: int, page_cursor: str | None,
                   after_index: int | None, entity_id: str | None) -> dict[str, Any]:
        """Readable turns in ``turn_index`` order, paged (by cursor or ``after_index``). A thread
        whose own list excludes the caller, and none of whose turns names the caller, reads as
        missing (404); an explicit turn list still wins over the thread's."""
        thread = self._thread(ctx, thread_id)
        if thread is None:
            raise NotFound(f"thread {thread_id} does not exist")
        if page_cursor is not None and after_index is not None:
            raise InvalidRequest("pass cursor or after_index, not both", field="cursor")
        pk = keys.thread_turns_pk(ctx, thread_id)
        secret, collection = self.settings.cursor_secret(), f"thread-turns:{ctx.partition}:{thread_id}"
        after = cursor.decode(secret, ctx.context_id, collection, page_cursor)
        if after is not None and (set(after) != {"pk", "sk"} or after["pk"] != pk):
            raise InvalidRequest("cursor belongs to another thread", field="cursor")
        if after_index is not None:
            after = {"pk": pk, "sk": keys.thread_turn_sk(after_index)}
        default = thread.data.get("aclReaders")
        chosen: list[Record] = []
        bypassed: list[str] = []
        text_bytes, scanned, last_sk, stopped = 0, 0, None, False
        while not stopped:
            page = self.store.query(pk, after=after, limit=min(limit + 1, 100))
            for row in page.records:
                if len(chosen) >= limit or scanned >= SCAN_BUDGET or (
                        chosen and text_bytes + row.data["textBytes"] > RESPONSE_TEXT_BYTES):
                    stopped = True
                    break
                scanned += 1
                last_sk = row.sk
                if entity_id is not None and row.data.get("entityId") != entity_id:
                    continue
                verdict = reader_access.check(reader_access.effective(row.data.get("aclReaders"), default), ctx)
                if not verdict.allowed:
                    continue
                if verdict.bypass:
                    bypassed.append(row.data["id"])
                chosen.append(row)
                text_bytes += row.data["textBytes"]
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
        return {"items": [turn_wire(r.data, texts[r.data["id"]]) for r in chosen],
                "page": {"hasMore": has_more, "nextCursor": next_cursor}}

    def get_turn(self, ctx: RequestContext, thread_id: str, turn_index: int) -> dict[str, Any]:
        """One turn with its full text (how the SDK fetches text ``/context`` did not inline)."""
        thread = self._thread(ctx, thread_id)
        row = None if thread is None else self.store.get(keys.thread_turns_pk(ctx, thread_id),
                                                         keys.thread_turn_sk(turn_index))
        verdict = reader_access.Verdict(False)
        if thread is not None and row is not None:
            readers = reader_access.effective(row.data.get("aclReaders"), thread.data.get("aclReaders"))
            verdict = reader_access.check(readers, ctx)
        if row is None or not verdict.allowed:  # denied reads as absent: no oracle for content
            raise NotFound(f"turn {turn_index} of thread {thread_id} does not exist")
        if verdict.bypass:
            self.audit.bypass(ctx, "thread.get_turn", [row.data["id"]], threadId=thread_id)
        return turn_wire(row.data, self._texts(ctx, thread_id, [row])[row.data["id"]])

    def context(self, ctx: RequestContext, thread_id: str, req: ThreadContextRequest) -> dict[str, Any]:
        req.check()
        thread = self._readable_thread(ctx, thread_id)
        if thread is None:  # missing and unreadable threads answer alike: nothing to recall yet
            return {"items": []}
        pk = keys.thread_turns_pk(ctx, thread_id)
        window = self.store.query(pk, limit=req.last_n_turns, forward=False).records  # newest first
        if not window:
            return {"items": []}
        default = thread.data.get("aclReaders")
        bypassed: list[str] = []

        def readable(row: Record) -> bool:
            if req.entity_id is not None and row.data.get("entityId") != req.entity_id:
                return False
            verdict = reader_access.check(reader_access.effective(row.data.get("aclReaders"), default), ctx)
            if verdict.bypass:
                bypassed.append(row.data["id"])
            return verdict.allowed

        recent = [row for row in (window if req.recent_first else reversed(window)) if readable(row)]
        start = window[-1].data["turnIndex"]
        semantic: list[tuple[Record, float]] = []
        if start > 1 and self.search is not None:
            self._require_projected(ctx, thread_id, window[0])
            semantic = self._semantic(ctx, thread_id, req, window, start, readable)
        self.audit.bypass(ctx, "thread.context", bypassed, threadId=thread_id)
        return {"items": self._context_items(ctx, thread_id, recent, semantic)}

    def _require_projected(self, ctx: RequestContext, thread_id: str, latest: Record) -> None:
        unit = self.search.get(ctx.context_id, latest.data["id"]) if self.search is not None else None
        if unit is None or unit.revision < latest.version:
            raise ServiceBusy(f"turn {latest.data['turnIndex']} of thread {thread_id} is not searchable yet; "
                              "retry shortly", retry_after=PROJECTION_RETRY_AFTER_S,
                              code="thread_projection_pending")

    def _semantic(self, ctx: RequestContext, thread_id: str, req: ThreadContextRequest, window: list[Record],
                  start: int, readable: Any) -> list[tuple[Record, float]]:
        """Up to five readable turns older than the window, best match first."""
        flt = SearchFilter(
            context_id=ctx.context_id, partition=ctx.partition,
            read_region=list(ctx.read_region) if ctx.read_region is not None else None,
            principals=ctx.principals, admin=ctx.admin, kinds=["thread_turn"], thread_id=thread_id,
            labels=[entity_label(req.entity_id)] if req.entity_id is not None else None,
            exclude_ids=[row.data["id"] for row in window])
        hits = [h for h in self.search.search(req.query, flt, k=2 * SEMANTIC_MATCHES)
                if isinstance(h.unit.metadata.get("turnIndex"), int) and h.unit.metadata["turnIndex"] < start]
        pk = keys.thread_turns_pk(ctx, thread_id)
        rows = {(r.pk, r.sk): r for r in self.store.batch_get(
            [(pk, keys.thread_turn_sk(h.unit.metadata["turnIndex"])) for h in hits])}
        out: list[tuple[Record, float]] = []
        for hit in hits:
            row = rows.get((pk, keys.thread_turn_sk(hit.unit.metadata["turnIndex"])))
            # The store decides: a unit may lag a re-stamped reader list or a removed turn.
            if row is not None and row.data["id"] == hit.unit.id and readable(row):
                out.append((row, hit.score))
            if len(out) == SEMANTIC_MATCHES:
                break
        return out

    def _context_items(self, ctx: RequestContext, thread_id: str, recent: list[Record],
                       semantic: list[tuple[Record, float]]) -> list[dict[str, Any]]:
        seen: set[str] = set()
        ordered: list[tuple[Record, str, float | None]] = []
        for row, origin, score in [*((r, "recent", None) for r in recent), *((r, "semantic", s) for r, s in semantic)]:
            if row.data["id"] not in seen:
                seen.add(row.data["id"])
                ordered.append((row, origin, score))
        inline: list[Record] = []
        budget = 0
        for row, _, _ in ordered:  # greedy: a turn too large for what is left does not stop smaller ones
            if budget + row.data["textBytes"] <= RESPONSE_TEXT_BYTES:
                budget += row.data["textBytes"]
                inline.append(row)
        texts = self._texts(ctx, thread_id, inline)
        items = []
        for row, origin, score in ordered:
            d = row.data
            item = {"turnId": d["id"], "turnIndex": d["turnIndex"], "text": texts.get(d["id"]),
                    "metadata": d.get("metadata") or {}, "entityId": d.get("entityId"), "origin": origin,
                    "createdAt": d["createdAt"], "textBytes": d["textBytes"], "textInline": d["id"] in texts}
            if score is not None:
                item["score"] = score
            items.append(item)
        return items

    def _texts(self, ctx: RequestContext, thread_id: str, rows: Sequence[Record]) -> dict[str, str]:
        """Full text of each row by turn id, reading part rows for split turns in one batch."""
        part_keys = [(keys.thread_parts_pk(ctx, thread_id), keys.thread_part_sk(r.data["turnIndex"], n))
                     for r in rows for n in range(1, r.data.get("textParts", 0) + 1)]
        parts = {(p.pk, p.sk): p.data["text"] for p in self.store.batch_get(part_keys)} if part_keys else {}
        out: dict[str, str] = {}
        for r in rows:
            if "text" in r.data:
                out[r.data["id"]] = r.data["text"]
                continue
            pieces = [r.data["textHead"]]
            for n in range(1, r.data["textParts"] + 1):
                piece = parts.get((keys.thread_parts_pk(ctx, thread_id), keys.thread_part_sk(r.data["turnIndex"], n)))
                if piece is None:
                    raise RuntimeError(f"turn {r.data['id']} is missing text part {n}")
                pieces.append(piece)
            out[r.data["id"]] = "".join(pieces)
        return out


def _stamped(record: Record, readers: list[str] | None, acl_version: int) -> Record:
    return Record(pk=record.pk, sk=record.sk, version=record.version + 1, gsi1pk=record.gsi1pk,
                  gsi1sk=record.gsi1sk, expires_at=record.expires_at,
                  data={**record.data, "threadAcl": readers, "threadAclVersion": acl_version})

"""What a caller may pick: the contexts (and their partitions) a key may use, and the
sessions, threads and documents of one context, each as a cursor-paged list filtered by
access like every read (scopes against the read region, reader lists against the caller).

Contexts and partitions are noted as they are written to (one conditional put per context
and partition per process); a key bound to contexts or partitions lists exactly those.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from agent_memory.access import scopes as scope_lib
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import cursor, timeutil
from agent_memory.kernel import storage_keys as keys
from agent_memory.models.conversation_records import Session, Thread
from agent_memory.models.document_records import Document
from agent_memory.models.documents import FORMAT_MIME_TYPES
from agent_memory.models.records import NumberedPage, Page
from agent_memory.ports import Condition, ConditionFailed, Record, RecordStore
from agent_memory.services import paging
from agent_memory.services.conversation import reader_access

PARTITIONS_SHOWN = 50  # partitions listed inline with each context

R = TypeVar("R")


@dataclass(frozen=True)
class ContextEntry:
    """A context a key may use, with the partitions listed for it."""

    context_id: str
    partitions: list[str]


class CatalogueService:
    def __init__(self, store: RecordStore, cursor_secret: cursor.CursorSecret):
        self.store = store
        self._cursor_secret = cursor_secret
        self._noted: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    # --- noting what exists ---------------------------------------------------------

    def note(self, ctx: RequestContext) -> None:
        """Remember that ``ctx``'s context and partition hold data (once per process)."""
        marker = (ctx.context_id, ctx.partition)
        with self._lock:
            if marker in self._noted:
                return
        now = timeutil.now_iso()
        for pk, sk, kind in ((keys.CONTEXTS_PK, ctx.context_id, "context"),
                             (keys.partitions_pk(ctx.context_id), ctx.partition, "partition")):
            try:
                self.store.put(Record(pk, sk, {"kind": kind, "id": sk, "createdAt": now}), Condition.absent())
            except ConditionFailed:
                pass  # noted before (by this or another process)
        with self._lock:
            self._noted.add(marker)

    # --- contexts -------------------------------------------------------------------

    def list_contexts(self, *, bound_contexts: Sequence[str] | None, bound_partitions: Sequence[str] | None,
                      limit: int, page_cursor: str | None, unreadable: Sequence[str] = ()) -> Page[ContextEntry]:
        """The contexts a key may use: those it is bound to, else every context written to;
        never one in ``unreadable`` (its principal's grants there leave it no read)."""
        secret = self._cursor_secret
        after = cursor.decode(secret, "*", "contexts", page_cursor)
        if bound_contexts is not None:
            names = sorted(bound_contexts)
            start = len([n for n in names if n <= str(after.get("sk", ""))]) if after else 0
            chosen = names[start:start + limit]
            last = {"pk": keys.CONTEXTS_PK, "sk": chosen[-1]} if start + limit < len(names) and chosen else None
        else:
            page = self.store.query(keys.CONTEXTS_PK, after=after, limit=limit)
            chosen = [r.sk for r in page.records]
            last = _truthful(self.store, keys.CONTEXTS_PK, page.last_key)
        items = [ContextEntry(name, self._partitions(name, bound_partitions)) for name in chosen
                 if name not in unreadable]
        return Page(items, cursor.encode(secret, "*", "contexts", last))

    def _partitions(self, context_id: str, bound: Sequence[str] | None) -> list[str]:
        if bound is not None:
            return sorted(bound)
        page = self.store.query(keys.partitions_pk(context_id), limit=PARTITIONS_SHOWN)
        names = [r.sk for r in page.records]
        return names if "default" in names else ["default", *names][:PARTITIONS_SHOWN]

    # --- one context's collections --------------------------------------------------

    def list_sessions(self, ctx: RequestContext, limit: int, page_cursor: str | None) -> Page[Session]:
        def keep(session: Session) -> bool:
            return not session.deleted and scope_lib.visible(session.scopes or [], ctx.read_region)

        return self._page(ctx, "sessions", keys.sessions_pk(ctx), Session.from_item, keep, limit, page_cursor,
                          read_region=ctx.read_region)

    def list_threads(self, ctx: RequestContext, limit: int, page_cursor: str | None) -> Page[Thread]:
        def keep(thread: Thread) -> bool:
            return reader_access.check(thread.acl_readers, ctx).allowed

        # Reader lists are not scopes: the store cannot filter them, so the page reads on past
        # the threads the caller may not read (``paging.read_page``'s scan budget bounds it).
        return self._page(ctx, "threads", keys.threads_pk(ctx), Thread.from_item, keep, limit, page_cursor)

    def list_documents(self, ctx: RequestContext, limit: int, page_cursor: str | None, *, page: int | None = None,
                       status: str | None = None, mime_type: str | None = None) -> NumberedPage[Document]:
        """The documents the caller may read, oldest first (ids are ULIDs), optionally only
        those with ``status`` or ``mime_type``, paged by number or cursor (``paging.numbered``).
        Reads the context's document rows (at most ``paging.NUMBERED_MAX``) to count the total."""
        rows: list[tuple[str, Document]] = []
        src = paging.Source(keys.documents_pk(ctx), prefix="doc_")
        for record in itertools.islice(paging.scan(self.store, src, read_region=ctx.read_region), paging.NUMBERED_MAX):
            if record.data.get("kind") != Document.KIND:
                continue  # the documents partition holds other rows beside the documents
            doc = Document.from_item(record.data)
            if doc.deleted or not scope_lib.visible(doc.scopes or [], ctx.read_region):
                continue
            if status is not None and doc.status != status:
                continue
            if mime_type is not None and (doc.mime_type or FORMAT_MIME_TYPES.get(doc.format)) != mime_type:
                continue
            rows.append((record.sk, doc))
        collection = f"documents:{ctx.partition}:{status or ''}:{mime_type or ''}"
        return paging.numbered(self._cursor_secret, ctx.context_id, collection, rows, page=page, page_size=limit,
                               page_cursor=page_cursor)

    def _page(self, ctx: RequestContext, collection: str, pk: str, load: Callable[[dict[str, Any]], R | None],
              keep: Callable[[R], bool], limit: int, page_cursor: str | None, *,
              read_region: Sequence[str] | None = None) -> Page[R]:
        """Newest first is not an order the store keeps; ids are ULIDs, so oldest first.

        A page holds the first ``limit`` rows the caller may see after the cursor
        (``paging.read_page``: ``read_region`` filtered inside the store's query, ``keep``
        checked on every row, reading on until the page is full or the scan budget is spent),
        so a page is short only at the end of the list or past that budget, and ``hasMore`` is
        truthful. The cursor is encrypted (``kernel.cursor``): when the budget cuts a page past
        rows the caller may not see, the key it resumes from tells nothing about them."""
        secret, name = self._cursor_secret, f"{collection}:{ctx.partition}"
        after = cursor.decode(secret, ctx.context_id, name, page_cursor)
        loaded: dict[int, R] = {}

        def visible(records: list[Record]) -> list[Record]:
            out = []
            for record in records:
                row = load(record.data)
                if row is not None and keep(row):
                    loaded[id(record)] = row
                    out.append(record)
            return out

        records, last = paging.read_page(self.store, paging.Source(pk), limit=limit, after=after, keep=visible,
                                         read_region=read_region)
        return Page([loaded[id(r)] for r in records], cursor.encode(secret, ctx.context_id, name, last))


def _truthful(store: RecordStore, pk: str, last_key: dict[str, str] | None) -> dict[str, str] | None:
    """DynamoDB may return a last key on an exactly full final page: look one row ahead."""
    if last_key is not None and not store.query(pk, after=last_key, limit=1).records:
        return None
    return last_key

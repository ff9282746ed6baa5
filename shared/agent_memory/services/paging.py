"""Keyset paging over one record-store query, with a filter, behind encrypted cursors.

Every collection of the read API (``/entities``, ``/attributes``, ``/relations``,
``/actions``, ``/instructions``, ``/uncertainty``, entity history) is one partition (or the
gsi1 current-facts index) read in sort-key order. Pages are cut by *key*, never by offset:

- a page holds the first ``limit`` records after the cursor's key that pass the filter;
- the cursor is the store key of the last record the page covered (its sort key is
  immutable: ids are ULIDs, entity keys are natural keys, action keys are
  ``<occurredAt>#<id>``), so a write landing between two pages can neither shift a record
  that existed before it onto a second page (repeat) nor past the cursor (skip): records
  after the cursor are read next time whatever was inserted or removed before it;
- ``hasMore`` is truthful: a cursor is only handed out when a further matching record was
  seen. A sparse filter may scan far; a page also ends after ``max_scan`` scanned records
  (``hasMore`` true, possibly followed by a short or empty page; follow ``nextCursor``).
- the caller's read region is applied by the store inside its query (``read_region``),
  not after it: a narrow region still gets full pages.

Cursors (``agent_memory.kernel.cursor``) are encrypted and authenticated over the context and a
*collection name* that
includes the partition and every filter, so a cursor replayed with other filters, in another
context or partition, is a 400 rather than a key outside the queried range.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import cursor
from agent_memory.models.records import NumberedPage
from agent_memory.ports import Record, RecordStore

BatchFilter = Callable[[list[Record]], list[Record]]
MAX_SCAN = 5000
SCAN_BATCH = 200


@dataclass(frozen=True)
class Source:
    """One ordered read: a partition (optionally a prefix or an inclusive range) or gsi1."""

    pk: str
    prefix: str | None = None
    between: tuple[str, str] | None = None
    index: Literal["gsi1"] | None = None
    forward: bool = True


def resume_key(record: Record, index: Literal["gsi1"] | None) -> dict[str, str]:
    """The store key that resumes a query just past ``record``: the same shape both adapters
    return as ``Page.last_key`` (``pk``/``sk``, plus the gsi1 pair on gsi1 queries)."""
    if index == "gsi1":
        return {"gsi1pk": record.gsi1pk or "", "gsi1sk": record.gsi1sk or "", "pk": record.pk, "sk": record.sk}
    return {"pk": record.pk, "sk": record.sk}


def scan(store: RecordStore, src: Source, *, after: dict[str, str] | None = None,
         batch: int = SCAN_BATCH, read_region: Sequence[str] | None = None):
    """Yield every record of ``src`` after ``after`` in key order (pages of ``batch``),
    only those ``read_region`` may read when it is given (filtered by the store)."""
    while True:
        page = store.query(src.pk, prefix=src.prefix, between=src.between, after=after, limit=batch,
                           forward=src.forward, index=src.index, read_region=read_region)
        yield from page.records
        if page.last_key is None:
            return
        after = page.last_key


def read_page(store: RecordStore, src: Source, *, limit: int, after: dict[str, str] | None,
              keep: BatchFilter | None = None, max_scan: int = MAX_SCAN,
              read_region: Sequence[str] | None = None) -> tuple[list[Record], dict[str, str] | None]:
    """Up to ``limit`` records passing ``keep`` after ``after``, and the key to resume from
    (``None`` when no further matching record exists).

    ``read_region`` is handed to the store, which filters inside its query (SQL, or a
    DynamoDB FilterExpression under a read budget), so records outside the caller's region
    never take a page's room; ``keep`` still checks every record exactly. The scan budget
    counts what the store evaluated; when it is spent the page ends (short, even empty) with
    the store's resume key, so the next page continues exactly past what was evaluated."""
    out: list[Record] = []
    scanned = 0
    while True:
        page = store.query(src.pk, prefix=src.prefix, between=src.between, after=after,
                           limit=max(SCAN_BATCH, limit + 1), forward=src.forward, index=src.index,
                           read_region=read_region)
        kept = keep(page.records) if keep is not None else page.records
        kept_ids = {id(r) for r in kept}
        for record in page.records:
            if id(record) in kept_ids:
                if len(out) == limit:
                    return out, resume_key(out[-1], src.index)
                out.append(record)
        scanned += page.scanned if page.scanned is not None else len(page.records)
        if page.last_key is None:
            return out, None
        if scanned >= max_scan:
            return out, page.last_key
        after = page.last_key


def count(store: RecordStore, src: Source, keep: BatchFilter | None = None,
          read_region: Sequence[str] | None = None) -> int:
    total = 0
    after = None
    while True:
        page = store.query(src.pk, prefix=src.prefix, between=src.between, after=after, limit=500,
                           forward=src.forward, index=src.index, read_region=read_region)
        total += len(keep(page.records) if keep is not None else page.records)
        if page.last_key is None:
            return total
        after = page.last_key


def collection_name(ctx: RequestContext, name: str, **filters: Any) -> str:
    parts = [ctx.partition, name] + [f"{k}={v}" for k, v in sorted(filters.items()) if v is not None]
    return "|".join(parts)


@dataclass
class Paged:
    """One page of a collection (``presenters.memory.page`` puts it on the wire)."""

    items: list[dict[str, Any]]
    next_cursor: str | None
    total: int | None = None



def paged(store: RecordStore, secret: bytes | cursor.CursorSecret, ctx: RequestContext, collection: str, src: Source, *,
          limit: int, page_cursor: str | None, render: Callable[[Record], dict[str, Any]],
          keep: BatchFilter | None = None, with_total: bool = False) -> Paged:
    """Decode the cursor, read one page, render it and sign the next cursor."""
    after = cursor.decode(secret, ctx.context_id, collection, page_cursor)
    records, last = read_page(store, src, limit=limit, after=after, keep=keep, read_region=ctx.read_region)
    total = count(store, src, keep, read_region=ctx.read_region) if with_total else None
    return Paged([render(r) for r in records], cursor.encode(secret, ctx.context_id, collection, last), total)


def chain(*filters: BatchFilter | None) -> BatchFilter:
    """Apply several batch filters in order."""
    active: Sequence[BatchFilter] = [f for f in filters if f is not None]

    def run(records: list[Record]) -> list[Record]:
        for f in active:
            if not records:
                break
            records = f(records)
        return records

    return run


# --- lists paged by number as well as by cursor (/documents, /documents/{id}/chunks) ------------

# The most rows a numbered list reads to count its total and cut a page (documents of one
# context, chunks of one document): beyond it, ``total`` counts the first this many.
NUMBERED_MAX = 10_000


def numbered(secret: bytes | cursor.CursorSecret, context_id: str, collection: str, rows: Sequence[tuple[str, Any]], *,
             page: int | None, page_size: int, page_cursor: str | None) -> NumberedPage[Any]:
    """One page of ``rows`` (every matching row, in key order, as ``(sort key, item)``).

    The official Spectron client pages by number (``page``, ``page_size``) and reads ``total``;
    our clients follow ``nextCursor``. A cursor is still a key (the last row it covered), so a
    write between two pages shifts nothing past it; a page number is an offset into the rows
    as they are now. Both at once: the cursor wins."""
    after = cursor.decode(secret, context_id, collection, page_cursor)
    if after is not None:
        last = after.get("sk", "")
        start = next((i for i, (key, _) in enumerate(rows) if key > last), len(rows))
    else:
        start = ((page or 1) - 1) * page_size
    chunk = rows[start:start + page_size]
    more = start + page_size < len(rows)
    next_cursor = cursor.encode(secret, context_id, collection, {"sk": chunk[-1][0]}) if more and chunk else None
    return NumberedPage([item for _, item in chunk], next_cursor, page=start // page_size + 1,
                        page_size=page_size, total=len(rows))

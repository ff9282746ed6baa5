"""Documents: ingest a text or markdown document as chunks and authoritative facts; read,
page and delete it. Key layout: ``agent_memory.kernel.storage_keys`` ("documents"); chunking rules:
``services/documents/chunking.py``; how a chunk is searched: ``services/documents/units.py``.

Upload (``ingest``), in this order, so that a failure at any step before the claim writes nothing:

1. size cap (413), normalise, hash (``contentHash`` = sha256 of the normalised text), chunk;
2. dedupe: a content-hash row (per context, partition and scopes) already names a live
   document (not failed) -> that document, ``deduplicated: true``;
3. claim: the content-hash row and the document row (``status: "ingesting"``, ``chunksDone: 0``)
   in ONE transaction, both conditioned on absence. Of two concurrent uploads of the same
   content exactly one claim commits; the other answers with the winner's id;
4. the chunks' sources as part rows (transactions within DynamoDB's 100 items and 4 MB: ``kernel.stored_item.transaction_batches``), then one job on the
   ingestion queue; the caller gets 202 at once.

The worker (``services/documents/ingestion.py``) makes the model calls, commits chunk by chunk (chunks
become searchable as they commit; ``chunksDone`` counts them) and ends ``ready`` or ``failed``.
When a step after the claim fails, the upload removes what it wrote and the error propagates.
A claim whose ingest died (``STALE_INGEST_S`` without finishing) or that failed is discarded by
the next upload of the same content or by a DELETE.

Large documents (over ``limits.sync_body_bytes``, which keeps a synchronous request below
Lambda's 6 MB payload limit; the sync route answers 413 naming this route) go through a
presigned upload: ``uploads.py`` (``DocumentService.uploads``). What an upload's bytes become
(text, chunks, title, the keys its original is kept under) is ``content.py``'s.

Delete marks the document row deleted (reads 404 from then on), removes its chunks (their
search units go with them through projection) and parts, then the row and its content-hash
row, so the same content can be uploaded again. It works while the document ingests: the
worker stops at its next commit. Facts learned from the document stay.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from agent_memory.access import scopes as scope_lib
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import cursor, timeutil
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import (
    Conflict,
    DomainError,
    NotFound,
    PayloadTooLarge,
)
from agent_memory.kernel.ids import new_id
from agent_memory.kernel.storage_keys import scope_sig
from agent_memory.kernel.stored_item import transaction_batches
from agent_memory.models.document_records import Document, DocumentHash, DocumentKeyword
from agent_memory.models.documents import (
    FORMAT_MIME_TYPES,
    DocumentFileUpload,
)
from agent_memory.models.records import Chunk, NumberedPage
from agent_memory.ports import (
    Condition,
    ConditionFailed,
    Delete,
    JobQueue,
    Put,
    Record,
    RecordStore,
    UploadStore,
)
from agent_memory.services import paging
from agent_memory.services.documents import chunking, links
from agent_memory.services.documents.content import (
    CLAIM_ATTEMPTS,
    OriginalFile,
    default_title,
    document_of,
    hash_row,
    is_stale,
    mark_failed,
    original_key,
    read_content,
    rebuilt_content,
    staging_key,
)
from agent_memory.services.documents.ingestion import (
    IngestionJob,
    part_rows,
    remove_all,
    remove_parts,
)
from agent_memory.services.documents.keywords import KeywordIndex
from agent_memory.services.documents.uploads import PresignedUploads
from agent_memory.services.operations import receipts

log = logging.getLogger("agent_memory.documents")

RELINK_SYNC_CHUNKS = 2_000  # chunks a recompute-links request relinks itself; the rest go to the worker


@dataclass(frozen=True)
class IngestResult:
    """An upload's outcome: the document, and whether this upload created it (``False``: the
    same content was already stored, ``deduplicated``)."""

    document: Document
    created: bool


@dataclass(frozen=True)
class RawOriginal:
    """``GET /documents/{id}/raw``: the original's bytes, or a URL to them (large, S3)."""

    content_type: str
    data: bytes | None = None
    url: str | None = None
    size: int = 0


@dataclass(frozen=True)
class RelinkResult:
    """What one recompute-links call did: documents relinked, the document-entity links they
    hold, and (when the rest was queued) the last document done."""

    documents: int
    links: int
    next_after: str | None = None


@dataclass(frozen=True)
class CarryPlan:
    """A reprocess: for each new chunk its id (an unchanged chunk's own), the old chunk rows
    to remove (vanished, or moved to another ordinal), the carried chunks to write at their new
    place (``(new chunk, old row)``), and how many chunks are carried over."""

    chunk_ids: list[str]
    removed: list[Chunk]
    rewritten: list[tuple[Any, Chunk]]
    carried: int


def carry_plan(old: list[Chunk], new: list[Any], new_chunk_id: Callable[[], str] = lambda: new_id("chunk")) -> CarryPlan:
    """Match the new chunks to the stored ones by text (in order, each old chunk used once)."""
    by_text: dict[str, list[Chunk]] = {}
    for chunk in sorted((c for c in old if not c.deleted), key=lambda c: c.ordinal or 0):
        by_text.setdefault(chunk.text, []).append(chunk)
    ids: list[str] = []
    keep: dict[int, Chunk] = {}  # ordinal -> the old row that stays there untouched
    rewritten: list[tuple[Any, Chunk]] = []
    carried = 0
    for c in new:
        same = by_text.get(c.text)
        if not same:
            ids.append(new_chunk_id())
            continue
        # the one at the same ordinal if there is one, else the first
        kept = next((o for o in same if o.ordinal == c.ordinal), same[0])
        same.remove(kept)
        ids.append(kept.id)
        carried += 1
        place_same = (kept.ordinal == c.ordinal and kept.offset == c.offset
                      and kept.position_percent == c.position_percent
                      and list(kept.heading_path or []) == list(c.heading_path)
                      and kept.page == getattr(c, "page", None))
        if place_same:
            keep[c.ordinal] = kept
        else:
            rewritten.append((c, kept))
    # An old row stays where it is, or is overwritten by its own chunk; every other row goes.
    in_place = {id(k) for n, k in rewritten if n.ordinal == k.ordinal} | {id(k) for k in keep.values()}
    removed = [o for o in old if id(o) not in in_place]
    return CarryPlan(ids, removed, rewritten, carried)


class DocumentService:
    """``ingestion_queue`` and ``upload_store`` are providers: the queue and the bucket client
    are built on first use (a function that only reads documents never creates them). A
    document is at most ``document_bytes`` (``limits.document_bytes``); a presigned upload
    URL stays valid ``upload_url_ttl_s`` seconds."""

    def __init__(self, store: RecordStore, cursor_secret: cursor.CursorSecret, *,
                 ingestion_queue: Callable[[], JobQueue], upload_store: Callable[[], UploadStore | None],
                 document_bytes: int, upload_url_ttl_s: int, keywords: KeywordIndex | None = None):
        self.store = store
        self.keywords = keywords
        self._cursor_secret = cursor_secret
        self._document_bytes = document_bytes
        self._upload_url_ttl_s = upload_url_ttl_s
        self._queue = ingestion_queue
        self._uploads = upload_store
        self.uploads = PresignedUploads(store, ingestion_queue=ingestion_queue, upload_store=upload_store,
                                        document_bytes=document_bytes, upload_url_ttl_s=upload_url_ttl_s,
                                        load=self._load, live_document=self._live_document)

    # --- ingest ---------------------------------------------------------------------

    def ingest(self, ctx: RequestContext, upload: DocumentFileUpload,
               original: OriginalFile | None = None) -> IngestResult:
        """A JSON upload (``upload.text``), or a file (``original``: its bytes, read as its
        content type says and checked against them, ``services/documents/formats.py``)."""
        cap = self._document_bytes
        content = read_content(upload, original, cap)
        text, fmt, chunks = content.text, content.format, content.chunks
        digest = chunking.content_hash(text)
        hash_key = (keys.document_hashes_pk(ctx), f"{digest}#{scope_sig(upload.scopes)}")
        existing = self._live_document(ctx, hash_key)
        if existing is not None:
            return IngestResult(existing, created=False)

        now = timeutil.now_iso()
        doc_id = new_id("doc")
        uploads = self._uploads()
        doc = Document(id=doc_id, context_id=ctx.context_id, partition=ctx.partition,
                       title=upload.title or content.title or default_title(text, fmt, upload.filename),
                       content_hash=digest, size=len(text.encode("utf-8")), chunk_count=len(chunks), chunks_done=0,
                       status="ingesting", format=content.kind, filename=upload.filename, created_at=now,
                       updated_at=now, observed_at=upload.observed_at or now, scopes=upload.scopes,
                       labels=upload.labels, created_by=ctx.principal, source=upload.source,
                       mime_type=upload.mime_type or content.mime_type,
                       original_key=original_key(doc_id) if uploads is not None else None,
                       original_size=len(content.raw))
        for _ in range(CLAIM_ATTEMPTS):
            try:
                self.store.transact([
                    Put(hash_row(ctx, hash_key, doc.id, digest), Condition.absent()),
                    Put(Record(keys.documents_pk(ctx), doc.id, doc.to_item()), Condition.absent()),
                ])
                break
            except ConditionFailed:
                existing = self._live_document(ctx, hash_key)
                if existing is not None:
                    return IngestResult(existing, created=False)
        else:
            raise Conflict("a document with this content is being written concurrently; retry")

        # The chunks' sources are stored, then the job is queued; the worker does the model calls.
        try:
            if uploads is not None:
                uploads.write(original_key(doc.id), content.raw, content.mime_type)
            parts = part_rows(ctx, doc.id, chunks, lambda: new_id("chunk"))
            for batch in transaction_batches(parts):
                self.store.transact(batch)
            self._queue().send(IngestionJob.for_document(ctx, doc.id))
        except BaseException:
            try:
                self._discard(ctx, doc.id, hash_key)
            except Exception:  # the claim turns stale and the next upload or DELETE finishes this
                log.exception("could not remove the partial document %s", doc.id)
            raise
        return IngestResult(doc, created=True)

    def _live_document(self, ctx: RequestContext, hash_key: tuple[str, str]) -> Document | None:
        """The document a content-hash row names, unless that claim was abandoned (its
        document is gone, deleted, or stuck ingesting): then the claim is cleared and None."""
        claim = self.store.get(*hash_key)
        if claim is None:
            return None
        doc_id = DocumentHash.from_item(claim.data).document_id
        record = self.store.get(keys.documents_pk(ctx), doc_id)
        doc = document_of(record) if record is not None else None
        if doc is not None and not doc.deleted and not is_stale(doc) and doc.status != "failed":
            return doc
        self._discard(ctx, doc_id, hash_key)
        return None

    def _discard(self, ctx: RequestContext, doc_id: str, hash_key: tuple[str, str] | None) -> None:
        """Remove a document's chunks and stored parts, then its row and (if it still names it)
        its hash row."""
        remove_parts(self.store, ctx, doc_id)
        chunks_pk = keys.chunks_pk(ctx, doc_id)
        receipts.note_partition(chunks_pk, [str(r.data.get("id")) for r in paging.scan(self.store, paging.Source(chunks_pk))
                                            if r.data.get("id")])
        remove_all(self.store, chunks_pk)
        if self.keywords is not None:
            self.keywords.remove_document(ctx, doc_id)
        self.remove_original(doc_id)
        if hash_key is not None:
            claim = self.store.get(*hash_key)
            if claim is not None and DocumentHash.from_item(claim.data).document_id == doc_id:
                try:
                    self.store.delete(*hash_key, Condition.version_is(claim.version))
                except ConditionFailed:
                    pass  # another upload took the claim over meanwhile
        doc_row = self.store.get(keys.documents_pk(ctx), doc_id)
        if doc_row is not None:
            receipts.note_rows([doc_row])
        self.store.delete(keys.documents_pk(ctx), doc_id)

    def remove_original(self, doc_id: str) -> None:
        """Remove a document's original and any staged upload (delete, forget and purge call this)."""
        uploads = self._uploads()
        if uploads is None:
            return
        uploads.delete(original_key(doc_id))
        uploads.delete(staging_key(doc_id))
        receipts.note_objects([original_key(doc_id), staging_key(doc_id)])

    def forget_passages(self, ctx: RequestContext, counts: dict[str, int]) -> None:
        """``POST /forget`` is removing chunks of these documents (``{document id: chunks}``):
        their originals (and any staged upload) hold the forgotten text too, so they go first;
        each document row then records that its source is now the chunks it has left
        (``original_key`` cleared, ``passages_forgotten`` counted), so that a reprocess rebuilds
        it from them rather than failing for want of an original."""
        for doc_id, count in sorted(counts.items()):
            if not doc_id:
                continue
            self.remove_original(doc_id)
            for _ in range(8):
                record = self.store.get(keys.documents_pk(ctx), doc_id)
                if record is None or document_of(record).deleted:
                    break
                doc = document_of(record)
                marked = replace(doc, original_key=None, passages_forgotten=(doc.passages_forgotten or 0) + count,
                                 updated_at=timeutil.now_iso())
                try:
                    self.store.put(Record(record.pk, record.sk, marked.to_item(), version=record.version + 1),
                                   Condition.version_is(record.version))
                    break
                except ConditionFailed:
                    continue  # the worker moved it on meanwhile: mark the fresh row
            else:
                raise Conflict(f"document {doc_id} is being modified concurrently; retry")

    # --- reprocess (PUT /documents/{id}) -------------------------------------------------

    def reprocess(self, ctx: RequestContext, doc_id: str) -> tuple[Document, bool]:
        """Queue a re-ingest of the document from its stored original; ``(document, queued)``.
        A document already ingesting or uploading answers as it is (nothing more is queued: a
        repeat while one runs starts no second), unless its ingest died (``STALE_INGEST_S``
        without progress): then this queues it again, carrying what was committed. The flip
        to ``ingesting`` is conditioned on the row's version, so of two concurrent calls one
        queues."""
        record = self._load(ctx, doc_id)
        doc = document_of(record)
        if doc.status == "uploading" or (doc.status == "ingesting" and not is_stale(doc)):
            return doc, False
        if not doc.passages_forgotten and (not doc.original_key or self._uploads() is None):
            raise Conflict(f"document {doc_id} has no original kept to reprocess from; upload it again",
                           code="original_unavailable")
        queued = replace(doc, status="ingesting", reprocess=True, error=None, updated_at=timeutil.now_iso())
        try:
            self.store.put(Record(record.pk, record.sk, queued.to_item(), version=record.version + 1),
                           Condition.version_is(record.version))
        except ConditionFailed:
            return self.get(ctx, doc_id), False
        try:
            self._queue().send(IngestionJob.for_document(ctx, doc_id))
        except BaseException:  # not queued: the document goes back to what it was
            current = self.store.get(record.pk, record.sk)
            if current is not None and current.version == record.version + 1:
                self.store.put(Record(record.pk, record.sk, doc.to_item(), version=current.version + 1),
                               Condition.version_is(current.version))
            raise
        return queued, True

    def claim_reprocess(self, ctx: RequestContext, record: Record) -> str:
        """The worker's first step of a reprocess: read the original, extract and chunk it again
        (the limits and checks of an upload), carry over each chunk whose text is unchanged (its
        id, its facts and links: not extracted again, rewritten only when its place moved), remove
        the chunks that vanished, and store the sources of the new ones as part rows for the
        worker to extract. Returns ``ingesting`` (the worker continues), ``failed`` or ``gone``.
        A document whose original ``POST /forget`` removed (``passages_forgotten``) is rebuilt
        from its remaining chunks instead (``_rebuilt``): they all carry over, the forgotten
        ones' rows go, and it never fails for want of the original. Facts learned from vanished chunks stay, as for a deleted document; facts of changed
        chunks are extracted again and reconciled with what is stored (a fact already known
        stores nothing new, a changed single value supersedes the old one)."""
        doc = document_of(record)
        uploads = self._uploads()
        cap = self._document_bytes
        chunks_pk = keys.chunks_pk(ctx, doc.id)
        old = [Chunk.from_item(r.data) for r in paging.scan(self.store, paging.Source(chunks_pk))]
        try:
            if doc.passages_forgotten and not doc.original_key:
                # Forget took the original (it held the forgotten text): the document is what
                # its remaining chunks say, each chunked again on its own (chunking.rebuilt).
                content = rebuilt_content(doc, old)
            elif uploads is None or not doc.original_key:
                raise Conflict(f"document {doc.id} has no original kept", code="original_unavailable")
            else:
                try:
                    raw = uploads.read(doc.original_key, max(cap, doc.original_size or 0))
                except ValueError as exc:
                    raise PayloadTooLarge(str(exc), limit=cap) from exc
                if raw is None:
                    raise Conflict(f"the original of document {doc.id} is no longer kept",
                                   code="original_unavailable")
                hint = doc.format if doc.format in ("text", "markdown") else None
                upload = DocumentFileUpload(format=hint, filename=doc.filename)  # type: ignore[arg-type]
                content = read_content(upload, OriginalFile(raw, doc.mime_type), cap)
        except DomainError as exc:  # the old chunks stay searchable; the error says why
            unflagged = Record(record.pk, record.sk, replace(doc, reprocess=False).to_item(), version=record.version)
            return mark_failed(self.store, unflagged, exc)
        plan = carry_plan(old, content.chunks)
        # Vanished and moved rows go first (their own transactions), so that the projection
        # removes their units before the moved chunks' rows (same ids) are written again.
        stale = [Delete(chunks_pk, keys.chunk_sk(c.ordinal or 0)) for c in plan.removed]
        for batch in transaction_batches(stale):  # type: ignore[arg-type]
            self.store.transact(batch)
        remove_parts(self.store, ctx, doc.id)
        ids = iter(plan.chunk_ids)
        parts = part_rows(ctx, doc.id, content.chunks, lambda: next(ids))
        for batch in transaction_batches(parts):
            self.store.transact(batch)
        moved = [Put(Record(chunks_pk, keys.chunk_sk(new.ordinal), replace(
                     kept, ordinal=new.ordinal, offset=new.offset, position_percent=new.position_percent,
                     heading_path=list(new.heading_path), page=getattr(new, "page", None),
                     document_title=doc.title).to_item()))
                 for new, kept in plan.rewritten]
        for batch in transaction_batches(moved):
            self.store.transact(batch)
        text = content.text
        digest = chunking.content_hash(text)
        claimed = replace(doc, content_hash=digest, size=len(text.encode("utf-8")), chunk_count=len(content.chunks),
                          chunks_done=plan.carried, status="ingesting", reprocess=False, format=content.kind,
                          content_version=(doc.content_version or 1) + 1,
                          updated_at=timeutil.now_iso(),
                          original_size=len(content.raw) if doc.original_key else doc.original_size)
        ops: list[Any] = [Put(Record(record.pk, record.sk, claimed.to_item(), version=record.version + 1),
                              Condition.version_is(record.version))]
        if digest != doc.content_hash:  # the content-hash row follows the new text when it is free
            old_key = (keys.document_hashes_pk(ctx), f"{doc.content_hash}#{scope_sig(doc.scopes)}")
            new_key = (keys.document_hashes_pk(ctx), f"{digest}#{scope_sig(doc.scopes)}")
            if self.store.get(*new_key) is None:
                ops.append(Put(hash_row(ctx, new_key, doc.id, digest), Condition.absent()))
                claim = self.store.get(*old_key)
                if claim is not None and DocumentHash.from_item(claim.data).document_id == doc.id:
                    ops.append(Delete(*old_key, Condition.version_is(claim.version)))
        try:
            self.store.transact(ops)
        except ConditionFailed:
            current = self.store.get(record.pk, record.sk)
            if current is None or document_of(current).deleted:
                return "gone"
            if current.version != record.version:
                return document_of(current).status
            self.store.transact(ops[:1])  # the hash rows moved meanwhile: keep the document's claim as it was
        return "ingesting"

    # --- links (POST /documents/recompute-links) ----------------------------------------

    def recompute_links(self, ctx: RequestContext, *, chunk_budget: int = RELINK_SYNC_CHUNKS) -> RelinkResult:
        """Rebuild the chunk-entity links (``links.py``) of the documents the caller may read, in
        id order: whole documents in this call while their chunks stay within ``chunk_budget``, the rest in
        one queued job (the worker hands it on until every document is done). Idempotent: a
        repeat rebuilds the same links."""
        names = links.load_entity_names(self.store, ctx)
        # A document that would take the request past the budget goes to the worker, whole.
        result = self._relink(ctx, names, after="", stop=lambda seen, next_doc: seen + next_doc > chunk_budget)
        if result.next_after is not None:
            self._queue().send(IngestionJob.for_links(ctx, result.next_after))
        return result

    def relink_job(self, job: IngestionJob, should_stop: Callable[[], bool]) -> str:
        """The worker's part of a recompute-links: every document after ``job.after``; out of
        time, the rest is handed on (``IngestionInterrupted`` carrying the last document done)."""
        from agent_memory.services.documents.ingestion import IngestionInterrupted

        ctx = job.request_context()
        names = links.load_entity_names(self.store, ctx)
        result = self._relink(ctx, names, after=job.after, stop=lambda _seen, _next: should_stop(), progress=True)
        if result.next_after is not None:
            raise IngestionInterrupted(f"recompute-links: out of time after document {result.next_after}",
                                       done=job.progress + result.documents, after=result.next_after)
        log.info("recompute-links of %s: %d documents, %d links", ctx.context_id,
                 job.progress + result.documents, result.links)
        return "relinked"

    def _relink(self, ctx: RequestContext, names: links.EntityNames, *, after: str,
                stop: Callable[[int, int], bool], progress: bool = False) -> RelinkResult:
        """Relink the documents after ``after`` until ``stop(chunks so far, the next
        document's chunks)``; ``progress``: the first document is relinked whatever ``stop``
        says (a worker delivery always advances)."""
        documents = linked = chunks_seen = 0
        last = after
        src = paging.Source(keys.documents_pk(ctx), prefix="doc_")
        start = {"pk": src.pk, "sk": after} if after else None
        for record in paging.scan(self.store, src, after=start):
            if record.data.get("kind") != Document.KIND:
                continue
            doc = document_of(record)
            if (documents or not progress) and stop(chunks_seen, doc.chunk_count):
                return RelinkResult(documents, linked, next_after=last)
            if not doc.deleted and scope_lib.visible(doc.scopes or [], ctx.read_region):
                n_chunks, n_links = self._relink_document(ctx, doc.id, names)
                chunks_seen += n_chunks
                linked += n_links
            documents += 1
            last = record.sk
        return RelinkResult(documents, linked)

    def _relink_document(self, ctx: RequestContext, doc_id: str, names: links.EntityNames) -> tuple[int, int]:
        """Rewrite the links of the document's chunks whose links changed; ``(chunks, links)``,
        ``links`` counting the distinct entities the document mentions."""
        mentioned: set[str] = set()
        n = 0
        for record in paging.scan(self.store, paging.Source(keys.chunks_pk(ctx, doc_id))):
            chunk = Chunk.from_item(record.data)
            if chunk.deleted:
                continue
            n += 1
            ids = names.mentioned(chunk.text)
            mentioned.update(ids)
            if ids != sorted(chunk.entity_ids or []):
                updated = replace(chunk, entity_ids=ids or None)
                try:
                    self.store.put(Record(record.pk, record.sk, updated.to_item(), version=record.version + 1),
                                   Condition.version_is(record.version))
                except ConditionFailed:
                    pass  # rewritten meanwhile (a reprocess, a forget): the next recompute sees it
        return n, len(mentioned)

    # --- reads ----------------------------------------------------------------------

    def raw(self, ctx: RequestContext, doc_id: str, *, inline_bytes: int) -> RawOriginal:
        """The original as uploaded: its bytes, or (an object over ``inline_bytes`` in a store
        that presigns reads, S3) a URL to fetch it from. 404 when none is kept."""
        doc = document_of(self._load(ctx, doc_id))
        uploads = self._uploads()
        content_type = doc.mime_type or FORMAT_MIME_TYPES.get(doc.format, "application/octet-stream")
        if uploads is None or not doc.original_key:
            raise NotFound(f"document {doc_id} has no original kept", code="original_unavailable")
        if doc.original_size is not None and doc.original_size > inline_bytes:
            url = uploads.presign_get(doc.original_key, self._upload_url_ttl_s, content_type)
            if url is not None:
                return RawOriginal(content_type, url=url, size=doc.original_size)
        data = uploads.read(doc.original_key, max(self._document_bytes, doc.original_size or 0))
        if data is None:
            raise NotFound(f"the original of document {doc_id} is no longer kept", code="original_unavailable")
        return RawOriginal(content_type, data=data, size=len(data))

    # --- reads ----------------------------------------------------------------------

    def _load(self, ctx: RequestContext, doc_id: str) -> Record:
        record = self.store.get(keys.documents_pk(ctx), doc_id) if doc_id.startswith("doc_") else None
        # A document outside the caller's read region answers exactly as a missing one (its
        # chunks carry its scopes, so they are covered by this check too).
        doc = document_of(record) if record is not None else None
        if doc is None or doc.deleted or not scope_lib.visible(doc.scopes or [], ctx.read_region):
            raise NotFound(f"document {doc_id} does not exist")
        return record

    def get(self, ctx: RequestContext, doc_id: str) -> Document:
        return document_of(self._load(ctx, doc_id))

    def list_chunks(self, ctx: RequestContext, doc_id: str, limit: int, page_cursor: str | None, *,
                    page: int | None = None) -> NumberedPage[Chunk]:
        """A document's chunks in order, paged by number or cursor (``paging.numbered``; a
        document has at most ``paging.NUMBERED_MAX`` chunks read to count them)."""
        self._load(ctx, doc_id)
        rows = [(r.sk, Chunk.from_item(r.data))
                for r in itertools.islice(paging.scan(self.store, paging.Source(keys.chunks_pk(ctx, doc_id))),
                                          paging.NUMBERED_MAX)]
        return paging.numbered(self._cursor_secret, ctx.context_id, f"chunks:{doc_id}",
                               [(sk, c) for sk, c in rows if not c.deleted], page=page, page_size=limit,
                               page_cursor=page_cursor)

    def keywords_of(self, ctx: RequestContext, doc_id: str) -> list[DocumentKeyword]:
        """``GET /documents/{id}/keywords``: a readable document's keywords, best first."""
        self._load(ctx, doc_id)
        return self.keywords.for_document(ctx, doc_id) if self.keywords is not None else []

    # --- delete ---------------------------------------------------------------------

    def delete(self, ctx: RequestContext, doc_id: str) -> None:
        record = self.store.get(keys.documents_pk(ctx), doc_id) if doc_id.startswith("doc_") else None
        doc = document_of(record) if record is not None else None
        if doc is None or not scope_lib.visible(doc.scopes or [], ctx.read_region):
            raise NotFound(f"document {doc_id} does not exist")  # forget only removes what it can read
        # While it ingests too: the worker sees the tombstone before its next commit, stops and
        # removes what it wrote after this; what it wrote before, this removes.
        if not doc.deleted:
            tombstone = replace(doc, deleted=True, updated_at=timeutil.now_iso())
            try:
                self.store.put(Record(record.pk, record.sk, tombstone.to_item(), version=record.version + 1),
                               Condition.version_is(record.version))
            except ConditionFailed as exc:
                raise Conflict(f"document {doc_id} is being modified concurrently; retry") from exc
        hash_key = (keys.document_hashes_pk(ctx), f"{doc.content_hash}#{scope_sig(doc.scopes)}")
        self._discard(ctx, doc_id, hash_key)

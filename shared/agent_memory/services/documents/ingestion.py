"""The document ingestion worker: turns a claimed document's stored parts into chunks and facts.

``POST /documents`` (``services/documents/document_service.py``) claims the document (``status: "ingesting"``),
stores its chunk sources as part rows (``keys.document_parts_pk``, 32 shards) and sends an
``IngestionJob`` to the ingestion queue: in-process locally (``adapters/ingestion_queues``),
SQS plus the ``ingestion`` function on AWS. ``process`` then:

- runs the extraction model calls of the parts with bounded parallelism
  (``limits.document_concurrency``, default 8 calls in flight per document), one call per
  window of consecutive chunks (``limits.document_window_chars``, default 4,000 characters),
  each extracted item attributed back to its own chunk (``facts/extraction/windows.py``);
- commits each chunk as its window's call returns: its facts first, then its chunk row (conditioned
  on absence), then ``chunksDone`` on the document row. A part whose chunk row exists was
  committed by an earlier delivery and is skipped, so a redelivered job re-does only the
  chunks it had not finished (idempotent; at worst one chunk's facts are reconciled twice,
  which stores nothing new);
- checks the document row before each commit: a document deleted meanwhile stops the work
  and what was written for it is removed (the post-commit check closes the race with a
  DELETE that ran between the check and the write);
- ends ``ready`` (parts removed), or ``failed`` with a problem document when a model call
  failed; committed chunks of a failed document stay searchable until it is deleted or the
  same content is uploaded again.

A job that runs out of time (``should_stop``) stops starting model calls, commits the calls
in flight and raises ``IngestionInterrupted`` (with the chunks done). ``deliver`` (the SQS
worker's entry) turns that into a *continuation*: when the delivery committed chunks, the rest
is handed on as a new message carrying the progress (``IngestionJob.continued``) and the
delivery counts as a success, so running out of time never spends one of the queue's receives
and a long document never reaches the dead-letter queue while it advances. Only a delivery
that failed (an error, or out of time without committing a chunk) is reported failed: SQS
delivers it again, and after ``maxReceiveCount`` such failures moves it to the dead-letter
queue.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import PROBLEM_TYPE_BASE, DomainError
from agent_memory.models.document_records import Document, DocumentPart
from agent_memory.models.records import Chunk
from agent_memory.ports import Condition, ConditionFailed, Delete, Put, Record, RecordStore
from agent_memory.services.documents.links import EntityNames, add_entities, load_entity_names

if TYPE_CHECKING:
    from agent_memory.models.extraction import ExtractionOutput
    from agent_memory.services.documents.keywords import KeywordIndex
    from agent_memory.services.facts.write import FactsService

log = logging.getLogger("agent_memory.ingestion")

PAGE = 100


class IngestionInterrupted(Exception):
    """The job stopped before finishing (out of time); deliver it again to continue.
    ``done``: the document's chunks committed when it stopped (``None``: unknown)."""

    def __init__(self, message: str, *, done: int | None = None, total: int | None = None,
                 after: str | None = None):
        super().__init__(message)
        self.done = done
        self.total = total
        self.after = after  # a links job: the last document relinked


@dataclass(frozen=True)
class IngestionJob:
    """What the queue carries: the document and the identity of the caller who uploaded it."""

    context_id: str
    partition: str
    principal: str
    document_id: str
    groups: tuple[str, ...] = ()
    admin: bool = False
    # A continuation (``continued``): how many messages handed this document on before this
    # one, and the chunks done when this one was sent (what the next delivery must pass).
    continuation: int = 0
    progress: int = 0
    # ``"ingest"`` (the document's chunks), or ``"links"``: rebuild the chunk-entity links of
    # the context's documents after ``after`` (a document id; ``links.py``); ``document_id`` empty.
    task: str = "ingest"
    after: str = ""
    read_region: tuple[str, ...] | None = None  # a links job: the documents the caller may read

    @classmethod
    def for_document(cls, ctx: RequestContext, document_id: str) -> IngestionJob:
        return cls(ctx.context_id, ctx.partition, ctx.principal, document_id, tuple(ctx.groups), ctx.admin)

    @classmethod
    def for_links(cls, ctx: RequestContext, after: str) -> IngestionJob:
        return cls(ctx.context_id, ctx.partition, ctx.principal, "", tuple(ctx.groups), ctx.admin,
                   task="links", after=after, read_region=ctx.read_region)

    def continued(self, done: int, after: str | None = None) -> IngestionJob:
        """The message that hands the rest of this job on, with ``done`` chunks committed
        (a links job: ``done`` documents relinked, the next after document ``after``)."""
        return replace(self, continuation=self.continuation + 1, progress=done,
                       after=self.after if after is None else after)

    def to_message(self) -> dict[str, Any]:
        region = None if self.read_region is None else list(self.read_region)
        return {**asdict(self), "groups": list(self.groups), "read_region": region}

    @classmethod
    def from_message(cls, data: dict[str, Any]) -> IngestionJob:
        return cls(str(data["context_id"]), str(data["partition"]), str(data["principal"]),
                   str(data["document_id"]), tuple(data.get("groups") or ()), bool(data.get("admin")),
                   int(data.get("continuation") or 0), int(data.get("progress") or 0),
                   str(data.get("task") or "ingest"), str(data.get("after") or ""),
                   None if data.get("read_region") is None else tuple(data["read_region"]))

    def request_context(self) -> RequestContext:
        return RequestContext(context_id=self.context_id, principal=self.principal, partition=self.partition,
                              groups=self.groups, admin=self.admin, read_region=self.read_region)


def problem_of(exc: DomainError) -> dict[str, Any]:
    """The problem document a failed ingestion keeps on its document row."""
    body = {"type": PROBLEM_TYPE_BASE + exc.type_slug, "title": exc.title, "status": exc.status,
            "detail": exc.detail}
    return {**body, "code": exc.code} if exc.code else body


class DocumentIngestion:
    """``claim_upload`` is the first step of a presigned upload (``PresignedUploads.claim``, ``uploads.py``:
    read the object, store its parts, claim the document); ``facts`` extracts and writes each
    chunk's facts; ``concurrency`` bounds the model calls in flight per document;
    ``window_chars`` is how much consecutive chunk text one call covers (``windows``);
    ``keywords`` indexes a document's keywords as it becomes ready (``documents/keywords.py``)."""

    def __init__(self, store: RecordStore, *, claim_upload: Callable[[RequestContext, Record], str],
                 facts: FactsService, concurrency: int, window_chars: int = 0,
                 keywords: KeywordIndex | None = None,
                 claim_reprocess: Callable[[RequestContext, Record], str] | None = None,
                 relink: Callable[[IngestionJob, Callable[[], bool]], str] | None = None):
        self.store = store
        self.keywords = keywords
        self.claim_upload = claim_upload
        self.claim_reprocess = claim_reprocess
        self.relink = relink
        self.facts = facts
        self.concurrency = max(1, concurrency)
        self.window_chars = max(0, window_chars)
        self._row_lock = threading.Lock()

    def process(self, job: IngestionJob, should_stop: Callable[[], bool] = lambda: False) -> str:
        """Ingest the job's document; returns its final status (``ready``, ``failed``, or
        ``gone`` when it was deleted). Raises ``IngestionInterrupted`` when ``should_stop``."""
        ctx = job.request_context()
        if job.task == "links":  # POST /documents/recompute-links beyond what the request did
            if self.relink is None:
                raise RuntimeError("this worker cannot relink documents")
            return self.relink(job, should_stop)
        record = self.store.get(keys.documents_pk(ctx), job.document_id)
        doc = Document.from_item(record.data) if record is not None else None
        if record is None or doc is None or doc.deleted:
            self._remove_written(ctx, job.document_id)
            return "gone"
        # A presigned upload is read and claimed first; a reprocess (PUT /documents/{id})
        # re-chunks the original, carrying the unchanged chunks over. Either rewrites the row.
        for claim, due in ((self.claim_upload, lambda d: d.status == "uploading"),
                           (self.claim_reprocess, lambda d: d.status == "ingesting" and d.reprocess)):
            if claim is None or not due(doc):
                continue
            status = claim(ctx, record)
            if status != "ingesting":
                return status
            record = self.store.get(keys.documents_pk(ctx), job.document_id)
            doc = Document.from_item(record.data) if record is not None else None
            if record is None or doc is None or doc.deleted:
                self._remove_written(ctx, job.document_id)
                return "gone"
        if doc.status != "ingesting":
            return doc.status  # a duplicate delivery of a finished job
        parts = self._parts(ctx, job.document_id)
        committed = {r.sk for r in self._all(keys.chunks_pk(ctx, job.document_id))}
        todo = [p for p in parts if p.sk not in committed]
        state = _Progress(record, done=len(parts) - len(todo))
        state.names = load_entity_names(self.store, ctx) if todo else None
        concurrency = self.concurrency
        pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="extract")
        pending: dict[Future, list[DocumentPart]] = {}
        queue = list(reversed(windows([DocumentPart.from_item(p.data) for p in todo], self.window_chars)))
        try:
            def refill() -> None:
                while queue and len(pending) < concurrency and not should_stop():
                    window = queue.pop()
                    pending[pool.submit(self._extract, ctx, doc, window)] = window

            refill()
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                done = [(future, pending.pop(future)) for future in finished]
                refill()  # the next calls start before these commit: the model stays busy
                for future, window in done:
                    try:
                        extractions = future.result()
                    except DomainError as exc:
                        return self._fail(ctx, state, exc)
                    for part, extraction in zip(window, extractions, strict=True):
                        if not self._commit(ctx, state, part, extraction):
                            self._remove_written(ctx, job.document_id)
                            return "gone"
            if queue:
                raise IngestionInterrupted(f"document {job.document_id}: out of time, "
                                           f"{state.done}/{len(parts)} chunks done",
                                           done=state.done, total=len(parts))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return self._finish(ctx, state, len(parts), keyword_texts([DocumentPart.from_item(p.data) for p in parts]))

    def deliver(self, job: IngestionJob, *, should_stop: Callable[[], bool],
                hand_on: Callable[[IngestionJob], None]) -> str:
        """One queue delivery of ``job``: its final status, or ``"continued"`` when it ran out
        of time after committing chunks and handed the rest on (``hand_on``: the queue's send;
        the delivery then succeeds). Out of time without progress re-raises
        ``IngestionInterrupted``: a failed delivery, as an error is."""
        try:
            return self.process(job, should_stop=should_stop)
        except IngestionInterrupted as stopped:
            if stopped.done is None or stopped.done <= job.progress:
                raise
            hand_on(job.continued(stopped.done, stopped.after))
            log.info("document %s: %s; continued as message %d", job.document_id, stopped, job.continuation + 1)
            return "continued"

    # --- steps ----------------------------------------------------------------------

    def _extract(self, ctx: RequestContext, doc: Document, window: list[DocumentPart]) -> list[ExtractionOutput]:
        """One model call for the window: one extraction per chunk, in order."""
        return self.facts.extract_window(ctx, [part.text for part in window], doc.observed_at)

    def _commit(self, ctx: RequestContext, state: _Progress, part: DocumentPart,
                extraction: ExtractionOutput) -> bool:
        """Facts, chunk row, progress; False when the document is gone (nothing more to do)."""
        if state.refresh(self.store) is None:
            return False
        doc = state.document
        if not extraction.is_empty():
            results = self.facts.write_document_facts(ctx, [(part.chunk_id, extraction)], doc.scopes, doc.labels,
                                                      doc.observed_at)
            if state.names is not None:
                with self._row_lock:
                    add_entities(state.names, (e for r in results for e in r.entities))
        chunk = Chunk(id=part.chunk_id, context_id=ctx.context_id, partition=ctx.partition, document_id=doc.id,
                      document_title=doc.title, text=part.text, ordinal=part.ordinal, offset=part.offset,
                      position_percent=part.position_percent, heading_path=part.heading_path, page=part.page,
                      scopes=doc.scopes, labels=doc.labels, observed_at=doc.observed_at, created_at=doc.created_at,
                      created_by=doc.created_by,
                      entity_ids=(state.names.mentioned(part.text) or None) if state.names is not None else None)
        try:
            self.store.put(Record(keys.chunks_pk(ctx, doc.id), keys.chunk_sk(part.ordinal), chunk.to_item()),
                           Condition.absent())
        except ConditionFailed:
            pass  # committed by an earlier delivery
        state.done += 1
        return self._save(state, chunks_done=state.done) is not None

    def _finish(self, ctx: RequestContext, state: _Progress, total: int, texts: list[str]) -> str:
        # The keyword index takes the document before it reads ready (a redelivery redoes
        # what is missing); a delete meanwhile removes them with the rest.
        changes: dict[str, Any] = {}
        if self.keywords is not None:
            changes["keyword_count"] = self.keywords.add_document(ctx, state.document, texts)
        if self._save(state, status="ready", chunks_done=total, **changes) is None:
            self._remove_written(ctx, state.document.id)
            return "gone"
        self._remove_parts(ctx, state.document.id)
        return "ready"

    def _fail(self, ctx: RequestContext, state: _Progress, exc: DomainError) -> str:
        log.warning("document %s failed: %s", state.document.id, exc.detail)
        if self._save(state, status="failed", error=problem_of(exc)) is None:
            self._remove_written(ctx, state.document.id)
            return "gone"
        self._remove_parts(ctx, state.document.id)
        return "failed"

    def _save(self, state: _Progress, **changes: Any) -> Record | None:
        """Apply ``changes`` (document fields) to the document row under its version; None
        when it was deleted."""
        with self._row_lock:
            for _ in range(5):
                record = state.record
                if state.document.deleted:
                    return None
                data = replace(state.document, **changes, updated_at=timeutil.now_iso()).to_item()
                try:
                    self.store.put(Record(record.pk, record.sk, data, version=record.version + 1),
                                   Condition.version_is(record.version))
                    state.record = Record(record.pk, record.sk, data, version=record.version + 1)
                    return state.record
                except ConditionFailed:
                    if state.refresh(self.store) is None:
                        return None
            raise IngestionInterrupted("the document row kept changing under the worker")

    def _parts(self, ctx: RequestContext, doc_id: str) -> list[Record]:
        """Every shard's part rows, in chunk order (their sort keys are the zero-padded ordinals)."""
        parts = [r for pk in keys.document_parts_pks(ctx, doc_id) for r in self._all(pk)]
        return sorted(parts, key=lambda r: r.sk)

    def _all(self, pk: str) -> list[Record]:
        out: list[Record] = []
        after = None
        while True:
            page = self.store.query(pk, after=after, limit=PAGE)
            out += page.records
            if page.last_key is None or not page.records:
                return out
            after = page.last_key

    def _remove_parts(self, ctx: RequestContext, doc_id: str) -> None:
        remove_parts(self.store, ctx, doc_id)

    def _remove_written(self, ctx: RequestContext, doc_id: str) -> None:
        """A deleted document: nothing of it may stay (its chunks, parts, keywords)."""
        remove_all(self.store, keys.chunks_pk(ctx, doc_id))
        remove_parts(self.store, ctx, doc_id)
        if self.keywords is not None:
            self.keywords.remove_document(ctx, doc_id)


def keyword_texts(parts: list[DocumentPart]) -> list[str]:
    """What a document's keywords are extracted from: its chunks' text, each section's headings
    once (chunk text leaves its heading lines out; the heading path carries them)."""
    out: list[str] = []
    previous: list[str] | None = None
    for part in parts:
        if part.heading_path and part.heading_path != previous:
            out.append("\n".join(part.heading_path))
        previous = part.heading_path
        out.append(part.text)
    return out


def windows(parts: list[DocumentPart], budget: int) -> list[list[DocumentPart]]:
    """``parts`` (in chunk order) packed into runs of consecutive chunks whose text together
    stays within ``budget`` characters; a chunk alone never exceeds it (chunks are at most
    1,200 characters), and a budget of 0 leaves every chunk its own call."""
    out: list[list[DocumentPart]] = []
    size = 0
    for part in parts:
        if out and size + len(part.text) <= budget:
            out[-1].append(part)
            size += len(part.text)
        else:
            out.append([part])
            size = len(part.text)
    return out


def remove_all(store: Any, pk: str) -> None:
    while True:
        page = store.query(pk, limit=PAGE)
        if not page.records:
            return
        store.transact([Delete(r.pk, r.sk) for r in page.records])


def remove_parts(store: Any, ctx: RequestContext, doc_id: str) -> None:
    """Remove a document's part rows, every shard."""
    for pk in keys.document_parts_pks(ctx, doc_id):
        remove_all(store, pk)


def part_rows(ctx: RequestContext, doc_id: str, chunks: list[Any], new_chunk_id: Callable[[], str]) -> list[Put]:
    """The stored source of each chunk (its text and place), written at upload."""
    return [Put(Record(keys.document_parts_pk(ctx, doc_id, c.ordinal), keys.chunk_sk(c.ordinal),
                       DocumentPart(chunk_id=new_chunk_id(), document_id=doc_id, text=c.text, ordinal=c.ordinal,
                                    offset=c.offset, position_percent=c.position_percent,
                                    heading_path=list(c.heading_path), page=getattr(c, "page", None)).to_item()),
                Condition.absent())
            for c in chunks]


class _Progress:
    """The worker's view of the document row and how many chunks are committed."""

    def __init__(self, record: Record, done: int):
        self.record = record
        self.done = done
        self.names: EntityNames | None = None  # what chunks are linked against (``links.py``)

    @property
    def document(self) -> Document:
        return Document.from_item(self.record.data)

    def refresh(self, store: Any) -> Record | None:
        record = store.get(self.record.pk, self.record.sk)
        if record is None or Document.from_item(record.data).deleted:
            return None
        self.record = record
        return record

"""Erasure receipts (issue 70): what one removal took out of each place, stored without the
erased content, read back (``GET /receipts/{id}``) and re-checked (``POST /receipts/{id}/verify``).

A removal route runs its use case inside ``ReceiptBook.collect(ctx, action)``. While it runs,
the code that removes things notes them on the current ``Erasure`` (a context variable, so no
service has to pass it along): ``note_rows`` (record-store rows, by kind: id and key),
``note_partition`` (a whole partition emptied: a document's chunks), ``note_objects``
(originals and staged uploads), and the ``RecordsForgotten`` subscribers (``runtime``) add the
search units, the response-cache entries and query embeddings dropped, the stored idempotency
replies deleted and the traces redacted. What the removed records said is kept only as
SHA-256 hashes (``contentHashes``), never as text.

On exit the receipt is written to the audit log (``reason:
"erasure"``, a decision row at ``GET /audit``) with a pointer row that finds it by id. A dry run
(``preview``) builds the same shape and stores nothing.

``verify`` looks again in every place a receipt names, by its ids, keys and hashes, and lists
what remains: a row still there (a soft delete's tombstone is reported as ``tombstone``), a
search unit, an idempotency or cache reference, a trace string or query embedding
whose hash is one of the erased texts.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import NotFound
from agent_memory.kernel.ids import new_id
from agent_memory.ports import Condition, Put, Record, RecordStore

PREFIX_KINDS = {"attr": "attribute", "rel": "relation", "act": "action", "instr": "instruction",
                "turn": "turn", "chunk": "chunk", "doc": "document", "unc": "uncertainty",
                "sess": "session", "thread": "thread"}


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def kind_of(record_id: str) -> str:
    if record_id.startswith("entity:"):
        return "entity"
    return PREFIX_KINDS.get(record_id.split("_", 1)[0], "other")


@dataclass
class Erasure:
    """What one removal took out, place by place (ids, keys and hashes only)."""

    action: str
    purge: bool = True
    rows: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # kind -> id -> [pk, sk]
    partitions: set[str] = field(default_factory=set)
    search_units: dict[str, None] = field(default_factory=dict)  # ordered sets: ids in removal order
    objects: set[str] = field(default_factory=set)
    hashes: set[str] = field(default_factory=set)
    traces: dict[str, None] = field(default_factory=dict)
    idempotency_replies: int = 0
    idempotency_refs: set[str] = field(default_factory=set)
    response_cache: int = 0
    cache_refs: set[str] = field(default_factory=set)
    query_embeddings: int = 0
    receipt: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        originals = sorted(k for k in self.objects if k.startswith("originals/"))
        staged = sorted(k for k in self.objects if not k.startswith("originals/"))
        return {
            "action": self.action, "purge": self.purge,
            "records": {kind: list(ids) for kind, ids in sorted(self.rows.items()) if ids},
            "partitions": len(self.partitions),
            "searchUnits": list(self.search_units),
            "originals": originals, "stagedUploads": staged,
            "responseCache": self.response_cache, "queryEmbeddings": self.query_embeddings,
            "idempotencyReplies": self.idempotency_replies,
            "traces": list(self.traces),
            "contentHashes": sorted(self.hashes),
        }


_current: ContextVar[Erasure | None] = ContextVar("erasure", default=None)


def current() -> Erasure | None:
    return _current.get()


def note_rows(records: Iterable[Record]) -> None:
    """Record-store rows removed (or tombstoned: ``purge`` says which)."""
    erasure = _current.get()
    if erasure is None:
        return
    for r in records:
        record_id = str(r.data.get("id") or r.sk)
        erasure.rows.setdefault(str(r.data.get("kind") or kind_of(record_id)), {})[record_id] = [r.pk, r.sk]


def note_partition(pk: str, ids: Iterable[str] = ()) -> None:
    """A partition emptied whole (a document's chunks); ``ids`` the records it held."""
    erasure = _current.get()
    if erasure is None:
        return
    erasure.partitions.add(pk)
    for record_id in ids:
        erasure.rows.setdefault(kind_of(record_id), {}).setdefault(record_id, [pk, ""])


def note_objects(object_keys: Iterable[str]) -> None:
    erasure = _current.get()
    if erasure is not None:
        erasure.objects.update(object_keys)


def note_texts(texts: Iterable[str]) -> None:
    erasure = _current.get()
    if erasure is not None:
        erasure.hashes.update(content_hash(t) for t in texts if t)


def note_derived(*, search_units: Iterable[str] = (), traces: Iterable[str] = (), idempotency: int = 0,
                 idempotency_refs: Iterable[str] = (), response_cache: int = 0, cache_refs: Iterable[str] = (),
                 query_embeddings: int = 0) -> None:
    """The derived copies a removal's subscribers took out."""
    erasure = _current.get()
    if erasure is None:
        return
    erasure.search_units.update(dict.fromkeys(sorted(search_units) if isinstance(search_units, set)
                                              else search_units))
    erasure.traces.update(dict.fromkeys(traces))
    erasure.idempotency_replies += idempotency
    erasure.idempotency_refs.update(idempotency_refs)
    erasure.response_cache += response_cache
    erasure.cache_refs.update(cache_refs)
    erasure.query_embeddings += query_embeddings


@dataclass
class Places:
    """How ``verify`` looks in each place (the runtime provides them)."""

    search_get: Callable[[str, str], Any] | None = None  # (context id, unit id) -> unit or None
    object_exists: Callable[[str], bool] | None = None
    traces_holding: Callable[[RequestContext, set[str], set[str]], list[str]] | None = None
    cached_queries: Callable[[set[str]], int] | None = None  # query embeddings whose text hash is given
    cache_ref_exists: Callable[[RequestContext, str], bool] | None = None


def receipts_pk(ctx: RequestContext) -> str:
    return f"{keys.base(ctx)}#receipts"


class ReceiptBook:
    """Issues, stores, reads and verifies erasure receipts (module docstring)."""

    def __init__(self, store: RecordStore, places: Places, ttl_s: int | None = None):
        self.store = store
        self.places = places
        self.ttl_s = ttl_s

    @staticmethod
    @contextmanager
    def _gathering(action: str, purge: bool) -> Iterator[Erasure]:
        """What the removals run inside note (``note_derived`` and the stores' hooks)."""
        erasure = Erasure(action, purge)
        token = _current.set(erasure)
        try:
            yield erasure
        finally:
            _current.reset(token)

    @contextmanager
    def collect(self, ctx: RequestContext, action: str, *, purge: bool = True) -> Iterator[Erasure]:
        """Run a removal inside; on success its receipt is stored (``erasure.receipt``)."""
        with self._gathering(action, purge) as erasure:
            yield erasure
        erasure.receipt = self._store(ctx, erasure)

    @contextmanager
    def preview(self, ctx: RequestContext, action: str, *, purge: bool = True) -> Iterator[Erasure]:
        """A dry run: the same shape, nothing stored (``receipt`` has no id)."""
        with self._gathering(action, purge) as erasure:
            yield erasure
        erasure.receipt = {"id": None, "at": None, "dryRun": True, "principal": ctx.delegated_by or ctx.principal,
                           **erasure.to_wire()}

    def _store(self, ctx: RequestContext, erasure: Erasure) -> dict[str, Any]:
        receipt_id = new_id("rcpt")
        at = timeutil.now_iso()
        receipt = {"id": receipt_id, "at": at, "dryRun": False, "principal": ctx.delegated_by or ctx.principal,
                   **erasure.to_wire()}
        # Where to look again (keys, not content): rows by key, partitions, cache references.
        check = {"rows": {kind: ids for kind, ids in erasure.rows.items()}, "partitions": sorted(erasure.partitions),
                 "idempotencyRefs": sorted(erasure.idempotency_refs), "cacheRefs": sorted(erasure.cache_refs)}
        audit_id = new_id("audit")
        # An audit decision (the Spectron client's row kinds), reason ``erasure``.
        data = {"kind": "audit", "id": audit_id, "at": at, "contextId": ctx.context_id,
                "partition": ctx.partition, "principal": receipt["principal"], "action": erasure.action,
                "reason": "erasure", "requestId": ctx.request_id,
                "recordIds": [i for ids in erasure.rows.values() for i in ids],
                "receiptId": receipt_id, "receipt": receipt}
        if ctx.delegated_by is not None:
            data["onBehalfOf"] = ctx.principal
        expires = int(time.time()) + self.ttl_s if self.ttl_s else None
        self.store.transact([
            Put(Record(keys.audit_pk(ctx), f"{at}#{audit_id}", data, expires_at=expires), Condition.absent()),
            Put(Record(receipts_pk(ctx), receipt_id, {"kind": "receipt", "receipt": receipt, "check": check,
                                                      "auditSk": f"{at}#{audit_id}"}, expires_at=expires),
                Condition.absent())])
        return receipt

    def _load(self, ctx: RequestContext, receipt_id: str) -> Record:
        record = self.store.get(receipts_pk(ctx), receipt_id) if receipt_id.startswith("rcpt_") else None
        if record is None or (not ctx.admin and record.data["receipt"].get("principal") not in
                              (ctx.principal, ctx.delegated_by)):
            raise NotFound(f"receipt {receipt_id} does not exist")
        return record

    def get(self, ctx: RequestContext, receipt_id: str) -> dict[str, Any]:
        return self._load(ctx, receipt_id).data["receipt"]

    def verify(self, ctx: RequestContext, receipt_id: str) -> dict[str, Any]:
        """Look again in every place the receipt names; ``remaining`` lists what is still there."""
        record = self._load(ctx, receipt_id)
        receipt, check = record.data["receipt"], record.data["check"]
        purge = bool(receipt.get("purge"))
        remaining: list[dict[str, Any]] = []
        checked: dict[str, int] = {}
        for kind, ids in sorted(check.get("rows", {}).items()):
            for record_id, (pk, sk) in sorted(ids.items()):
                checked["records"] = checked.get("records", 0) + 1
                row = self.store.get(pk, sk) if sk else None
                if row is None or row.data.get("id", record_id) != record_id:
                    continue
                if row.data.get("deleted") and not purge:
                    remaining.append({"place": "records", "kind": kind, "id": record_id, "state": "tombstone"})
                else:
                    remaining.append({"place": "records", "kind": kind, "id": record_id, "state": "present"})
        for pk in check.get("partitions", []):
            checked["partitions"] = checked.get("partitions", 0) + 1
            if self.store.query(pk, limit=1).records:
                remaining.append({"place": "partitions", "id": pk.rsplit("#", 1)[-1], "state": "present"})
        if self.places.search_get is not None:
            for unit_id in receipt.get("searchUnits", []):
                checked["searchUnits"] = checked.get("searchUnits", 0) + 1
                if self.places.search_get(ctx.context_id, unit_id) is not None:
                    remaining.append({"place": "searchUnits", "id": unit_id, "state": "present"})
        if self.places.object_exists is not None:
            for place in ("originals", "stagedUploads"):
                for key in receipt.get(place, []):
                    checked[place] = checked.get(place, 0) + 1
                    if self.places.object_exists(key):
                        remaining.append({"place": place, "id": key, "state": "present"})
        hashes = set(receipt.get("contentHashes", []))
        ids = {i for kind_ids in check.get("rows", {}).values() for i in kind_ids}
        if self.places.traces_holding is not None:
            checked["traces"] = len(receipt.get("traces", []))
            for trace_id in self.places.traces_holding(ctx, ids, hashes):
                remaining.append({"place": "traces", "id": trace_id, "state": "quotes erased text"})
        if self.places.cached_queries is not None and hashes:
            left = self.places.cached_queries(hashes)
            checked["queryEmbeddings"] = receipt.get("queryEmbeddings", 0)
            if left:
                remaining.append({"place": "queryEmbeddings", "id": str(left), "state": "present"})
        if self.places.cache_ref_exists is not None:
            for ref in check.get("cacheRefs", []) + [f"idem:{i}" for i in check.get("idempotencyRefs", [])]:
                place = "idempotencyReplies" if ref.startswith("idem:") else "responseCache"
                checked[place] = checked.get(place, 0) + 1
                if self.places.cache_ref_exists(ctx, ref):
                    remaining.append({"place": place, "id": ref.removeprefix("idem:"), "state": "present"})
        return {"id": receipt_id, "verifiedAt": timeutil.now_iso(), "clean": not remaining,
                "checked": dict(sorted(checked.items())), "remaining": remaining}

"""``POST /forget``: a semantic soft delete of the memory closest to a query.

``{query, limit (default 5, max 20), minScore, dryRun, purge}`` ->
``{deleted, items: [{id, kind, text, score}], entities: [{id, name}]}``.

1. **Find.** One vector search of the caller's visible, *current* memory (the read region
   and reader lists apply; kinds ``attribute``, ``relation``, ``action``, ``instruction``,
   ``turn``, ``chunk``), ``limit`` nearest units. ``score`` is the cosine similarity of the
   query and the unit text (both search backends report it in vector mode), so ``minScore``
   is a similarity threshold in [-1, 1] (default 0.25); hits below it are left alone. A unit whose record
   is already gone is a stale projection: it is removed from the index and not listed.
   What projection has not indexed yet (stream lag) cannot be found.
2. **Locate.** Each hit's id prefix picks a ``Forgetter`` from a registry (``attr``,
   ``rel``, ``act``, ``instr``, ``turn``, ``chunk``, each declared below with
   ``register_forgetter``), which finds the stored record behind the unit.
3. **Remove** (unless ``dryRun``, which lists and deletes nothing). Soft delete: each record
   is rewritten with ``deleted: true`` in conditioned transactions (on the version read;
   a lost race re-reads and retries), facts drop out of the gsi1 current index. Every read
   skips deleted records (/state, /profile, entity reads, ``asOf``, history, collections,
   session turns) and projection removes their search units. A forgotten turn also loses
   its text (its row stays, so session sequence numbers stay dense). ``purge: true`` hard-deletes
   instead, together with the forgotten fact's superseded history (``Forgetter.history``:
   for a single-valued key every row of the slot in the same scope, for a multi-valued
   key the rows of the same value, plus anything linked by supersedes/supersededBy).
4. **Entities left with nothing.** An entity the removed records name that has no facts,
   actions, turns or chunks left is removed with them (``OrphanedEntities``); ``entities``
   lists them (with ``dryRun``: those that would go).
5. **Derived copies.** The search units are also deleted directly (retrieval forgets at
   once, whatever the projection lag), and a ``RecordsForgotten`` event names the removed
   ids (``services/events.py``): its subscribers delete stored idempotency replies that
   mention one, then the response cache entries that used one. Session delete publishes the
   same event for its turns. A forgotten document chunk also takes its document's kept
   original (the uploaded file) out of object storage, before the records go.

Soft-deleted rows stay in the store (an audit trail an operator can inspect); forgotten
rows never come back through the API, and a later statement of the same fact is stored
as a new fact.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_memory.access import scopes as scope_lib
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel import stored_item, timeutil
from agent_memory.kernel.errors import Conflict, ServiceBusy
from agent_memory.ports import (
    Condition,
    ConditionFailed,
    Delete,
    Put,
    Record,
    RecordStore,
    SearchFilter,
    SearchUnavailable,
    SearchUnit,
)
from agent_memory.services import paging
from agent_memory.services.conversation.sessions import backoff
from agent_memory.services.events import RecordsForgotten
from agent_memory.services.facts.fact_kinds import (
    BY_KIND,
    FACT_KINDS,
    Forgetter,
    live,
)
from agent_memory.services.operations import receipts

if TYPE_CHECKING:
    from agent_memory.models.reads import ForgetRequest
    from agent_memory.ports import SearchIndex
    from agent_memory.services.conversation.sessions import SessionService
    from agent_memory.services.events import DomainEvents

log = logging.getLogger("agent_memory.forget")

DERIVED_FACTS_MAX = 500  # facts learned from one chunk (at most 1,200 characters) looked for at once
TRANSACT_CHUNK = 25  # records per transaction at most (and 4 MB: kernel.stored_item.batches)
WRITE_ATTEMPTS = 8


# --- removing records (shared by forget and entity delete) ---------------------------


def tombstone(record: Record, at: str) -> Record:
    """The soft-deleted version of ``record``: ``deleted: true``, out of the current-facts
    index. A turn keeps its row (session seq stays dense) and turn-id index entry, but not
    its text: raw text must not depend on every transcript reader checking ``deleted``."""
    data = {**record.data, "deleted": True, "deletedAt": at}
    keep_index = data.get("kind") == "turn"
    if keep_index:
        data["content"] = ""
    if data.get("kind") == "chunk":
        data["text"] = ""
    return Record(pk=record.pk, sk=record.sk, data=data, version=record.version + 1,
                  gsi1pk=record.gsi1pk if keep_index else None, gsi1sk=record.gsi1sk if keep_index else None,
                  expires_at=record.expires_at)


def _removal(record: Record, at: str, purge: bool) -> Any:
    """The conditioned write removing ``record``; ``None`` for a tombstone already in place."""
    if purge:
        return Delete(record.pk, record.sk, Condition.version_is(record.version))
    if record.data.get("deleted"):
        return None
    return Put(tombstone(record, at), Condition.version_is(record.version))


def remove_records(store: RecordStore, records: Iterable[Record], *, purge: bool) -> set[str]:
    """Soft-delete (or, with ``purge``, delete) ``records`` in conditioned transactions.

    Each write is conditioned on the version that was read; when a transaction loses a race
    its records are re-read and the write retried. Returns the ids of the removed records.
    """
    unique: dict[tuple[str, str], Record] = {}
    for r in records:
        unique[(r.pk, r.sk)] = r
    receipts.note_rows(unique.values())
    pending = list(unique.values())
    removed: set[str] = set()
    at = timeutil.now_iso()
    for attempt in range(WRITE_ATTEMPTS):
        failed: list[Record] = []
        planned = [(r, _removal(r, at, purge)) for r in pending]
        # At most TRANSACT_CHUNK records and DynamoDB's 4 MB (a tombstone keeps most of its record).
        for chunk in stored_item.batches(planned, lambda p: stored_item.op_bytes(p[1]) if p[1] else 0,
                                         max_count=TRANSACT_CHUNK):
            ops = [op for _, op in chunk if op is not None]
            try:
                if ops:
                    store.transact(ops)
                removed.update(r.data.get("id") or r.sk for r, _ in chunk)
            except ConditionFailed:
                failed += [r for r, _ in chunk]
        if not failed:
            return removed
        backoff(attempt)
        pending = [fresh for r in failed if (fresh := store.get(r.pk, r.sk)) is not None]
        removed.update((r.data.get("id") or r.sk) for r in failed
                       if all(f.pk != r.pk or f.sk != r.sk for f in pending))
        if not pending:
            return removed
    raise Conflict("the records to delete keep changing concurrently; retry")


# --- forgetters: how each kind of search unit maps back to stored records -------------


FORGETTERS: dict[str, Forgetter] = {k.id_prefix: k.forgetter for k in FACT_KINDS
                                    if k.id_prefix and k.forgetter is not None}
FORGET_KINDS = [k.kind for k in FACT_KINDS if k.forgetter is not None] + ["turn", "chunk"]


def register_forgetter(prefix: str) -> Callable[[type[Forgetter]], type[Forgetter]]:
    """Class decorator for search units that are not fact kinds (those are declared in
    ``fact_kinds``): ``@register_forgetter("chunk") class ChunkForgetter(Forgetter): ...``."""

    def register(cls: type[Forgetter]) -> type[Forgetter]:
        FORGETTERS[prefix] = cls()
        return cls

    return register


_live = live


@register_forgetter("turn")
class TurnForgetter(Forgetter):
    def locate(self, svc: ForgetService, ctx: RequestContext, unit: SearchUnit) -> Record | None:
        turn = svc.sessions.get_turn(ctx, unit.id)
        if turn is None:
            return None
        return _live(svc.store.get(keys.turns_pk(ctx, turn.session), keys.turn_sk(turn.seq)))

    def derived(self, svc: ForgetService, ctx: RequestContext, record: Record) -> list[tuple[Forgetter, Record]]:
        """A forgotten user turn's reply (the assistant turn right after it, written by the same
        chat call) goes with it: it answers, and may repeat, what was said."""
        data = record.data
        if data.get("role") != "user" or data.get("seq") is None:
            return []
        reply = _live(svc.store.get(record.pk, keys.turn_sk(int(data["seq"]) + 1)))
        if reply is None or reply.data.get("role") != "assistant" or reply.data.get("infer") != "none" \
                or reply.data.get("observedAt") != data.get("observedAt"):
            return []
        return [(self, reply)]


@register_forgetter("chunk")
class ChunkForgetter(Forgetter):
    """A forgotten chunk is marked deleted (its text emptied like a turn's); the document
    keeps its other chunks, but not its original (the uploaded file, which holds the forgotten
    text as well). Its unit carries the document id and ordinal that key it."""

    def locate(self, svc: ForgetService, ctx: RequestContext, unit: SearchUnit) -> Record | None:
        meta = unit.metadata or {}
        if "documentId" not in meta or meta.get("ordinal") is None:
            return None
        return _live(svc.store.get(keys.chunks_pk(ctx, meta["documentId"]), keys.chunk_sk(int(meta["ordinal"]))))

    def remove(self, svc: ForgetService, ctx: RequestContext, records: list[Record], purge: bool) -> set[str]:
        # The document's original holds the forgotten text too: it goes first (the document
        # keeps its other chunks, ``GET /documents/{id}/raw`` answers 404 from then on, and a
        # reprocess rebuilds the document from the chunks it has left).
        counts: dict[str, int] = {}
        for r in records:
            if not r.data.get("deleted"):
                counts[r.data.get("documentId") or ""] = counts.get(r.data.get("documentId") or "", 0) + 1
        svc.forget_passages(ctx, counts)
        return svc.remove(records, purge)

    def derived(self, svc: ForgetService, ctx: RequestContext, record: Record) -> list[tuple[Forgetter, Record]]:
        """The facts learned from this chunk (their ``source.ref`` is its id): they were read
        out of the forgotten text, so they go with it (a fact a later turn or another chunk
        stated again cites that one, not this chunk, and stays)."""
        chunk_id = record.data.get("id")
        if not chunk_id or svc.search is None:
            return []
        kinds = [k.kind for k in FACT_KINDS if k.forgetter is not None]
        flt = SearchFilter(context_id=ctx.context_id, partition=ctx.partition, admin=True, kinds=kinds,
                           source_ids=[chunk_id], valid_window=(None, None))
        found: list[tuple[Forgetter, Record]] = []
        if svc.settle is not None:
            svc.settle(ctx.context_id)
        hits = svc.search.search(record.data.get("text") or chunk_id, flt, k=DERIVED_FACTS_MAX, mode="vector")
        for hit in hits:
            forgetter = FORGETTERS.get(hit.unit.id.split("_", 1)[0])
            fact = forgetter.locate(svc, ctx, hit.unit) if forgetter is not None else None
            if forgetter is not None and fact is not None and (fact.data.get("source") or {}).get("ref") == chunk_id:
                found.append((forgetter, fact))
        return found


# --- entities left with nothing ---------------------------------------------------------


def entity_refs(data: dict[str, Any]) -> list[str]:
    """The entity ids a fact or action record refers to."""
    kind = BY_KIND.get(data.get("kind"))  # type: ignore[arg-type]
    return kind.entities_in(data) if kind is not None else []


class OrphanedEntities:
    """Entities a forget leaves with no facts, actions, turns or chunks (docs/decisions.md, "Forget").

    Candidates are the entities the removed records refer to, plus those an attribute value
    names ("I live in Oslo" stores Oslo as a value and as an entity). A candidate stays
    while the store still holds a live fact about it (its own attributes and relations,
    history included, a current relation pointing at it, an action it did) outside the
    records being removed, or the search index a turn or chunk labelled with it. The
    speaker's own entity always stays.
    """

    def __init__(self, svc: ForgetService, ctx: RequestContext):
        self.svc, self.ctx = svc, ctx

    def find(self, removing: Sequence[Record]) -> list[Record]:
        from agent_memory.rules.self_entity import SELF_ENTITY_ID
        from agent_memory.services.facts.repository import MemoryRepository

        gone = {r.data.get("id") for r in removing}
        candidates = {eid for r in removing for eid in entity_refs(r.data) if eid}
        values = [r.data["value"] for r in removing if r.data.get("kind") == "attribute" and r.data.get("value")]
        candidates |= set(MemoryRepository(self.svc.store).entities_by_name(self.ctx, values))
        candidates.discard(SELF_ENTITY_ID)
        left = {eid for eid in candidates if not self._own_facts(eid, gone)}
        left -= self._referenced_elsewhere(left, gone)
        left = {eid for eid in left if not self._in_turns_or_chunks(eid, gone)}
        records = [self.svc.store.get(keys.entities_pk(self.ctx), keys.entity_sk(eid)) for eid in sorted(left)]
        return [r for r in records if _live(r) is not None]

    def _live_rows(self, src: paging.Source, gone: set[str]) -> Iterable[Record]:
        return (r for r in paging.scan(self.svc.store, src, batch=500)
                if not r.data.get("deleted") and r.data.get("id") not in gone and r.data.get("kind"))

    def _own_facts(self, eid: str, gone: set[str]) -> bool:
        return any(True for pk in (keys.attrs_pk(self.ctx, eid), keys.rels_pk(self.ctx, eid))
                   for _ in self._live_rows(paging.Source(pk, prefix="a#"), gone))

    def _referenced_elsewhere(self, eids: set[str], gone: set[str]) -> set[str]:
        if not eids:
            return set()
        found: set[str] = set()
        inbound = paging.Source(keys.current_gsi(self.ctx, "relation"), index="gsi1")
        found |= {r.data.get("object") for r in self._live_rows(inbound, gone)} & eids
        found |= {r.data.get("actor") for r in self._live_rows(paging.Source(keys.actions_pk(self.ctx)), gone)} & eids
        return found

    def _in_turns_or_chunks(self, eid: str, gone: set[Any]) -> bool:
        """A turn or chunk labelled with the entity, other than those being removed (a
        forgotten chunk that named it is still in the index until the removal)."""
        search = self.svc.search
        if search is None:
            return True  # cannot tell: keep it
        flt = SearchFilter(context_id=self.ctx.context_id, partition=self.ctx.partition, admin=True,
                           kinds=["turn", "chunk", "thread_turn"], labels=[eid])
        hits = search.search(eid.split("/", 1)[-1], flt, k=len(gone) + 1, mode="vector")
        return any(hit.unit.id not in gone for hit in hits)


def record_text(data: dict[str, Any]) -> str:
    """What a removed record said: a turn's content, a chunk's text, a fact's unit text."""
    if data.get("kind") == "turn":
        return data.get("content") or ""
    if data.get("kind") == "chunk":
        return data.get("text") or ""
    return _fact_text(data)


def _fact_text(data: dict[str, Any]) -> str:
    """The text a fact's search unit holds (what forget lists for a hit)."""
    kind = BY_KIND.get(data.get("kind"))  # type: ignore[arg-type]
    if kind is None or kind.project is None:
        return ""
    units = kind.project(data, 0)
    return units[0].text if units else data.get("description", "")


# --- the service -------------------------------------------------------------------------


@dataclass
class ForgottenItem:
    id: str
    kind: str
    text: str
    score: float


@dataclass
class OrphanedEntity:
    id: str
    name: str


@dataclass
class DerivedFact:
    """A record that goes with a forgotten one (``source``: its id): a fact learned from a
    forgotten chunk, or the reply to a forgotten user turn."""

    id: str
    kind: str
    text: str
    source: str


@dataclass
class ForgetOutcome:
    """What a forget removed (or, with ``dryRun``, would remove; then ``deleted`` is 0)."""

    deleted: int
    items: list[ForgottenItem]
    entities: list[OrphanedEntity]
    derived: list[DerivedFact] = field(default_factory=list)


class ForgetService:
    """Semantic forget and the clean-up after any removal. Forgetters read ``store``,
    ``search`` and ``sessions`` from it; a ``RecordsForgotten`` on ``events`` lets the
    subscribers remove derived copies of removed records (stored idempotency replies, the
    response cache)."""

    def __init__(self, store: RecordStore, search: SearchIndex | None, sessions: SessionService,
                 events: DomainEvents, *, remove_originals: Callable[[Iterable[str]], None] | None = None,
                 forget_passages: Callable[[RequestContext, dict[str, int]], None] | None = None,
                 settle: Callable[[str], bool] | None = None):
        self.store = store
        self.search = search
        self.sessions = sessions
        self._events = events
        self._remove_originals = remove_originals
        self._forget_passages = forget_passages
        # Read-your-writes (``Projector.settle``): what the caller wrote just before is found.
        self.settle = settle

    def forget_passages(self, ctx: RequestContext, counts: dict[str, int]) -> None:
        """Chunks of these documents (``{document id: chunks}``) are being forgotten: their
        originals go and the documents are marked to rebuild from their remaining chunks
        (``DocumentService.forget_passages``); without that collaborator, the originals go."""
        counts = {d: n for d, n in counts.items() if d}
        if not counts:
            return
        if self._forget_passages is not None:
            self._forget_passages(ctx, counts)
        else:
            self.remove_originals(counts)

    def remove_originals(self, document_ids: Iterable[str]) -> None:
        """Remove the kept originals (object storage) of these documents: called before the
        records that name them go, so a failure leaves the forget to be retried whole."""
        ids = sorted({d for d in document_ids if d})
        if ids and self._remove_originals is not None:
            self._remove_originals(ids)

    def remove(self, records: list[Record], purge: bool) -> set[str]:
        """Soft-delete (or purge) records, the way every forget rule removes by default."""
        return remove_records(self.store, records, purge=purge)

    def forget(self, ctx: RequestContext, req: ForgetRequest) -> ForgetOutcome:
        if self.search is None:
            raise ServiceBusy("forget needs the search index, and this deployment has none configured",
                              code="search_unavailable", retry_after=3600)
        # Forget removes only what the caller can both read and write: the search looks in
        # the intersection of the two regions, and every scope of a hit must be writable.
        region = scope_lib.intersect_regions(ctx.read_region, ctx.write_region)
        flt = SearchFilter(context_id=ctx.context_id, partition=ctx.partition,
                           read_region=list(region) if region is not None else None,
                           principals=ctx.principals, admin=ctx.admin, kinds=list(FORGET_KINDS))
        # Forget ranks by vector similarity alone, on purpose (one leg, no fusion, so no recipe):
        # ``min_score`` is a cosine threshold on how close in meaning a unit is to what the caller
        # names, and a shared word (BM25) or a fused rank must never get a unit forgotten.
        if self.settle is not None:
            self.settle(ctx.context_id)
        hits = self.search.search(req.query, flt, k=req.limit, mode="vector")
        items: list[ForgottenItem] = []
        targets: list[tuple[Forgetter | None, Record | None, str]] = []
        stale: list[str] = []
        for hit in hits:
            if hit.score < req.min_score or scope_lib.writable(hit.unit.scopes, ctx.write_region) \
                    or (ctx.write_region is not None and not hit.unit.scopes):
                continue
            unit = hit.unit
            forgetter = FORGETTERS.get(unit.id.split("_", 1)[0])
            record = forgetter.locate(self, ctx, unit) if forgetter is not None else None
            if forgetter is not None and record is None:
                stale.append(unit.id)
                continue
            if forgetter is None:
                log.warning("forget: no forgetter for %s; removing its search unit only", unit.id)
            items.append(ForgottenItem(unit.id, unit.kind, unit.text, round(hit.score, 6)))
            targets.append((forgetter, record, unit.id))
        plans = [(forgetter, record, unit_id,
                  ([record, *forgetter.history(self, ctx, record)] if req.purge else [record])
                  if forgetter is not None and record is not None else [])
                 for forgetter, record, unit_id in targets]
        # Facts learned from a forgotten chunk go with it (``ChunkForgetter.derived``).
        listed = {unit_id for *_, unit_id in targets}
        derived: list[DerivedFact] = []
        for forgetter, record, unit_id in targets:
            if forgetter is None or record is None:
                continue
            for fact_forgetter, fact in forgetter.derived(self, ctx, record):
                fact_id = fact.data["id"]
                if fact_id in listed:
                    continue
                listed.add(fact_id)
                derived.append(DerivedFact(fact_id, fact.data["kind"], record_text(fact.data), unit_id))
                rows = [fact, *fact_forgetter.history(self, ctx, fact)] if req.purge else [fact]
                plans.append((fact_forgetter, fact, fact_id, rows))
        going = [row for *_, rows in plans for row in rows]
        orphans = OrphanedEntities(self, ctx).find(going)
        entities = [OrphanedEntity(o.data["id"], o.data.get("name") or o.data["id"]) for o in orphans]
        if req.dry_run:
            # The receipt's preview: what would go, from the same places (nothing is removed).
            receipts.note_rows([*going, *orphans])
            receipts.note_texts([i.text for i in items] + [record_text(r.data) for r in going])
            receipts.note_objects(f"originals/{r.data['documentId']}" for r in going
                                  if r.data.get("kind") == "chunk" and r.data.get("documentId"))
            receipts.note_derived(search_units=[*(i.id for i in items), *(d.id for d in derived),
                                                *(o.data["id"] for o in orphans)])
            return ForgetOutcome(0, items, entities, derived)
        removed: set[str] = set(stale)
        for forgetter, _, unit_id, rows in plans:
            removed.add(unit_id)
            if forgetter is not None and rows:
                removed |= forgetter.remove(self, ctx, rows, req.purge)
        if orphans:
            removed |= remove_records(self.store, orphans, purge=req.purge)
        texts = [i.text for i in items] + [d.text for d in derived] + [record_text(r.data) for r in going]
        self.after_removal(ctx, removed, texts)
        return ForgetOutcome(len(items), items, entities, derived)

    def forget_record(self, ctx: RequestContext, record: Record, *, purge: bool = False) -> ForgetOutcome:
        """Forget one fact record the caller named by id (``edits.FactEdits.delete``, which
        checked its regions): steps 3-5 above for that record alone."""
        kind = BY_KIND[record.data["kind"]]
        forgetter = kind.forgetter
        assert forgetter is not None
        rows = [record, *forgetter.history(self, ctx, record)] if purge else [record]
        orphans = OrphanedEntities(self, ctx).find(rows)
        removed = {record.data["id"]} | forgetter.remove(self, ctx, rows, purge)
        if orphans:
            removed |= remove_records(self.store, orphans, purge=purge)
        self.after_removal(ctx, removed, [record_text(r.data) for r in rows])
        unit_kind = record.data["kind"]
        item = ForgottenItem(record.data["id"], unit_kind, _fact_text(record.data), 1.0)
        return ForgetOutcome(1, [item], [OrphanedEntity(o.data["id"], o.data.get("name") or o.data["id"])
                                         for o in orphans])

    def after_removal(self, ctx: RequestContext, ids: Sequence[str] | set[str],
                      texts: Iterable[str] = ()) -> None:
        """Derived copies: search units now (whatever the projection lag), then the event's
        subscribers (idempotency replies, the response cache, traces quoting ``texts``: what
        the removed records said, never stored)."""
        ids = set(ids)
        if not ids:
            return
        texts = [t for t in texts if t]
        receipts.note_texts(texts)
        receipts.note_derived(search_units=ids)
        if self.search is not None:
            try:
                self.search.delete(ctx.context_id, sorted(ids))
            except SearchUnavailable:
                # The records are gone (readers check units against the store) and the
                # projection's pending entry removes their units once the index answers.
                log.warning("search unavailable after a removal; its units go with the projection")
        self._events.publish(RecordsForgotten(ctx, frozenset(ids), frozenset(texts)))

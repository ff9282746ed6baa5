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
   once, whatever the projection lag); stored idempotency replies that mention a removed
   id are deleted, and every ``runtime.on_forget`` hook gets ``(ctx, removed ids)`` (the
   response cache subscribes there). Session delete calls the same hooks for its turns.

Soft-deleted rows stay in the store (an audit trail an operator can inspect); forgotten
rows never come back through the API, and a later statement of the same fact is stored
as a new fact.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from agent_memory import keys, timeutil
from agent_memory import scopes as scope_lib
from agent_memory.errors import Conflict, ServiceBusy
from agent_memory.models.memory import Attribute, Relation
from agent_memory.ports import (
    Condition,
    ConditionFailed,
    Delete,
    Put,
    Record,
    RecordStore,
    SearchFilter,
    SearchUnit,
)
from agent_memory.request_context import RequestContext
from agent_memory.services import cardinality as card
from agent_memory.services import paging
from agent_memory.services.reconcile import normalise_value
from agent_memory.services.sessions import backoff

if TYPE_CHECKING:
    from agent_memory.models.reads import ForgetRequest
    from agent_memory.runtime import Runtime

log = logging.getLogger("agent_memory.forget")

FORGET_KINDS = ["attribute", "relation", "action", "instruction", "turn", "chunk"]
TRANSACT_CHUNK = 25  # records per transaction: well inside MAX_TRANSACT_OPS (ports) and DynamoDB's 4 MB
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


def remove_records(store: RecordStore, records: Iterable[Record], *, purge: bool) -> set[str]:
    """Soft-delete (or, with ``purge``, delete) ``records`` in conditioned transactions.

    Each write is conditioned on the version that was read; when a transaction loses a race
    its records are re-read and the write retried. Returns the ids of the removed records.
    """
    unique: dict[tuple[str, str], Record] = {}
    for r in records:
        unique[(r.pk, r.sk)] = r
    pending = list(unique.values())
    removed: set[str] = set()
    at = timeutil.now_iso()
    for attempt in range(WRITE_ATTEMPTS):
        failed: list[Record] = []
        for start in range(0, len(pending), TRANSACT_CHUNK):
            chunk = pending[start:start + TRANSACT_CHUNK]
            ops: list[Any] = []
            for r in chunk:
                if purge:
                    ops.append(Delete(r.pk, r.sk, Condition.version_is(r.version)))
                elif not r.data.get("deleted"):
                    ops.append(Put(tombstone(r, at), Condition.version_is(r.version)))
            try:
                if ops:
                    store.transact(ops)
                removed.update(r.data.get("id") or r.sk for r in chunk)
            except ConditionFailed:
                failed += chunk
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


class Forgetter:
    """Finds the stored record behind a search unit, and (for purge) its history.

    Register one per id prefix with ``register_forgetter``. ``locate`` returns ``None``
    when the record no longer exists (the unit is stale). Records are removed generically
    (``remove_records``: ``deleted: true``, or a hard delete on purge); a kind whose
    records need more (document chunks with part rows, say) overrides ``remove``.
    """

    def locate(self, rt: Runtime, ctx: RequestContext, unit: SearchUnit) -> Record | None:
        raise NotImplementedError

    def history(self, rt: Runtime, ctx: RequestContext, record: Record) -> list[Record]:
        return []

    def remove(self, rt: Runtime, ctx: RequestContext, records: list[Record], purge: bool) -> set[str]:
        return remove_records(rt.store, records, purge=purge)


FORGETTERS: dict[str, Forgetter] = {}


def register_forgetter(prefix: str) -> Callable[[type[Forgetter]], type[Forgetter]]:
    """Class decorator: ``@register_forgetter("chunk") class ChunkForgetter(Forgetter): ...``."""

    def register(cls: type[Forgetter]) -> type[Forgetter]:
        FORGETTERS[prefix] = cls()
        return cls

    return register


def _live(record: Record | None) -> Record | None:
    return record if record is not None and not record.data.get("deleted") else None


def _slot_records(store: RecordStore, pk: str, key: str) -> list[Record]:
    return [r for r in paging.scan(store, paging.Source(pk, prefix=f"a#{key}#"), batch=500)
            if r.data.get("kind") in ("attribute", "relation")]


def fact_history(store: RecordStore, record: Record) -> list[Record]:
    """The superseded history of one fact row (module docstring, step 3)."""
    data = record.data
    if data.get("kind") == "attribute":
        fact: Attribute | Relation = Attribute.from_dict(data)
        slot, value, multi = fact.key, fact.value, card.cardinality(fact.key) == "multi"
    else:
        fact = Relation.from_dict(data)
        slot, value, multi = fact.label, fact.object, card.label_cardinality(fact.label) == "multi"
    rows = _slot_records(store, record.pk, slot)
    by_id = {r.data.get("id"): r for r in rows}
    chosen: dict[str, Record] = {}
    for r in rows:
        same_scope = (r.data.get("scopes") or []) == (data.get("scopes") or [])
        other = r.data.get("value") if r.data.get("kind") == "attribute" else r.data.get("object")
        if same_scope and (not multi or normalise_value(other or "") == normalise_value(value)):
            chosen[r.data["id"]] = r
    todo = [data["id"]]
    while todo:  # plus everything linked to the row, in either direction
        current = by_id.get(todo.pop())
        if current is None:
            continue
        chosen.setdefault(current.data["id"], current)
        for link in (current.data.get("supersedes"), current.data.get("supersededBy")):
            if link and link not in chosen and link in by_id:
                todo.append(link)
                chosen[link] = by_id[link]
    chosen.pop(data["id"], None)
    return list(chosen.values())


@register_forgetter("attr")
class AttributeForgetter(Forgetter):
    def locate(self, rt: Runtime, ctx: RequestContext, unit: SearchUnit) -> Record | None:
        entity, key = unit.metadata.get("entity"), unit.metadata.get("key")
        if not entity or not key:
            return None
        return _live(rt.store.get(keys.attrs_pk(ctx, entity), keys.fact_sk(key, unit.id)))

    def history(self, rt: Runtime, ctx: RequestContext, record: Record) -> list[Record]:
        return fact_history(rt.store, record)


@register_forgetter("rel")
class RelationForgetter(Forgetter):
    def locate(self, rt: Runtime, ctx: RequestContext, unit: SearchUnit) -> Record | None:
        subject, label = unit.metadata.get("subject"), unit.metadata.get("label")
        if not subject or not label:
            return None
        return _live(rt.store.get(keys.rels_pk(ctx, subject), keys.fact_sk(label, unit.id)))

    def history(self, rt: Runtime, ctx: RequestContext, record: Record) -> list[Record]:
        return fact_history(rt.store, record)


@register_forgetter("act")
class ActionForgetter(Forgetter):
    def locate(self, rt: Runtime, ctx: RequestContext, unit: SearchUnit) -> Record | None:
        pk = keys.actions_pk(ctx)
        if unit.occurred_at:
            found = rt.store.get(pk, f"{unit.occurred_at}#{unit.id}")
            if found is not None:
                return _live(found)
        # An action without an event time is keyed by its creation time: look it up.
        return _live(next((r for r in paging.scan(rt.store, paging.Source(pk), batch=500)
                           if r.data.get("id") == unit.id), None))


@register_forgetter("instr")
class InstructionForgetter(Forgetter):
    def locate(self, rt: Runtime, ctx: RequestContext, unit: SearchUnit) -> Record | None:
        return _live(rt.store.get(keys.instructions_pk(ctx), unit.id))


@register_forgetter("turn")
class TurnForgetter(Forgetter):
    def locate(self, rt: Runtime, ctx: RequestContext, unit: SearchUnit) -> Record | None:
        turn = rt.sessions.get_turn(ctx, unit.id)
        if turn is None:
            return None
        return _live(rt.store.get(keys.turns_pk(ctx, turn.session), keys.turn_sk(turn.seq)))


@register_forgetter("chunk")
class ChunkForgetter(Forgetter):
    """A forgotten chunk is marked deleted (its text emptied like a turn's); the document
    keeps its other chunks. Its unit carries the document id and ordinal that key it."""

    def locate(self, rt: Runtime, ctx: RequestContext, unit: SearchUnit) -> Record | None:
        meta = unit.metadata or {}
        if "documentId" not in meta or meta.get("ordinal") is None:
            return None
        return _live(rt.store.get(keys.chunks_pk(ctx, meta["documentId"]), keys.chunk_sk(int(meta["ordinal"]))))


# --- entities left with nothing ---------------------------------------------------------


def entity_refs(data: dict[str, Any]) -> list[str]:
    """The entity ids a fact or action record refers to."""
    kind = data.get("kind")
    if kind == "attribute":
        return [data.get("entityId", "")]
    if kind == "relation":
        return [data.get("subject", ""), data.get("object", "")]
    if kind == "action":
        return [data.get("actor", "")]
    return []


class OrphanedEntities:
    """Entities a forget leaves with no facts, actions, turns or chunks (docs/decisions.md, "Forget").

    Candidates are the entities the removed records refer to, plus those an attribute value
    names ("I live in Oslo" stores Oslo as a value and as an entity). A candidate stays
    while the store still holds a live fact about it (its own attributes and relations,
    history included, a current relation pointing at it, an action it did) outside the
    records being removed, or the search index a turn or chunk labelled with it. The
    speaker's own entity always stays.
    """

    def __init__(self, rt: Runtime, ctx: RequestContext):
        self.rt, self.ctx = rt, ctx

    def find(self, removing: Sequence[Record]) -> list[Record]:
        from agent_memory.services.extraction.speaker import SELF_ENTITY_ID
        from agent_memory.services.memory_repo import MemoryRepository

        gone = {r.data.get("id") for r in removing}
        candidates = {eid for r in removing for eid in entity_refs(r.data) if eid}
        values = [r.data["value"] for r in removing if r.data.get("kind") == "attribute" and r.data.get("value")]
        candidates |= set(MemoryRepository(self.rt.store).entities_by_name(self.ctx, values))
        candidates.discard(SELF_ENTITY_ID)
        left = {eid for eid in candidates if not self._own_facts(eid, gone)}
        left -= self._referenced_elsewhere(left, gone)
        left = {eid for eid in left if not self._in_turns_or_chunks(eid)}
        records = [self.rt.store.get(keys.entities_pk(self.ctx), keys.entity_sk(eid)) for eid in sorted(left)]
        return [r for r in records if _live(r) is not None]

    def _live_rows(self, src: paging.Source, gone: set[str]) -> Iterable[Record]:
        return (r for r in paging.scan(self.rt.store, src, batch=500)
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

    def _in_turns_or_chunks(self, eid: str) -> bool:
        search = self.rt.search
        if search is None:
            return True  # cannot tell: keep it
        flt = SearchFilter(context_id=self.ctx.context_id, partition=self.ctx.partition, admin=True,
                           kinds=["turn", "chunk", "thread_turn"], labels=[eid])
        return bool(search.search(eid.split("/", 1)[-1], flt, k=1, mode="vector"))


# --- the service -------------------------------------------------------------------------


class ForgetService:
    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    def forget(self, ctx: RequestContext, req: ForgetRequest) -> dict[str, Any]:
        rt = self.runtime
        if rt.search is None:
            raise ServiceBusy("forget needs the search index, and this deployment has none configured",
                              code="search_unavailable", retry_after=3600)
        # Forget removes only what the caller can both read and write: the search looks in
        # the intersection of the two regions, and every scope of a hit must be writable.
        region = scope_lib.intersect_regions(ctx.read_region, ctx.write_region)
        flt = SearchFilter(context_id=ctx.context_id, partition=ctx.partition,
                           read_region=list(region) if region is not None else None,
                           principals=ctx.principals, admin=ctx.admin, kinds=list(FORGET_KINDS))
        hits = rt.search.search(req.query, flt, k=req.limit, mode="vector")
        items: list[dict[str, Any]] = []
        targets: list[tuple[Forgetter | None, Record | None, str]] = []
        stale: list[str] = []
        for hit in hits:
            if hit.score < req.min_score or scope_lib.writable(hit.unit.scopes, ctx.write_region) \
                    or (ctx.write_region is not None and not hit.unit.scopes):
                continue
            unit = hit.unit
            forgetter = FORGETTERS.get(unit.id.split("_", 1)[0])
            record = forgetter.locate(rt, ctx, unit) if forgetter is not None else None
            if forgetter is not None and record is None:
                stale.append(unit.id)
                continue
            if forgetter is None:
                log.warning("forget: no forgetter for %s; removing its search unit only", unit.id)
            items.append({"id": unit.id, "kind": unit.kind, "text": unit.text, "score": round(hit.score, 6)})
            targets.append((forgetter, record, unit.id))
        plans = [(forgetter, record, unit_id,
                  ([record, *forgetter.history(rt, ctx, record)] if req.purge else [record])
                  if forgetter is not None and record is not None else [])
                 for forgetter, record, unit_id in targets]
        going = [row for *_, rows in plans for row in rows]
        orphans = OrphanedEntities(rt, ctx).find(going)
        entities = [{"id": o.data["id"], "name": o.data.get("name") or o.data["id"]} for o in orphans]
        if req.dry_run:
            return {"deleted": 0, "items": items, "entities": entities}
        removed: set[str] = set(stale)
        for forgetter, _, unit_id, rows in plans:
            removed.add(unit_id)
            if forgetter is not None and rows:
                removed |= forgetter.remove(rt, ctx, rows, req.purge)
        if orphans:
            removed |= remove_records(rt.store, orphans, purge=req.purge)
        self.after_removal(ctx, removed)
        return {"deleted": len(items), "items": items, "entities": entities}

    def after_removal(self, ctx: RequestContext, ids: Sequence[str] | set[str]) -> None:
        """Derived copies: search units now (whatever the projection lag), idempotency
        replies and subscribers (``runtime.notify_forgotten``)."""
        ids = set(ids)
        if not ids:
            return
        if self.runtime.search is not None:
            self.runtime.search.delete(ctx.context_id, sorted(ids))
        self.runtime.notify_forgotten(ctx, ids)

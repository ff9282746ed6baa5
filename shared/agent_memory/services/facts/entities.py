"""Entities: list, read (current or ``asOf``), soft delete, and attribute history.

- ``GET /entities`` pages the entities partition, whose sort key ``<type>/<name>`` orders
  by type then name; ``?type=`` is a prefix query on ``<type>/``.
- ``GET /entities/{type}/{name}`` returns the entity with its current attributes and its
  outgoing relations (relations *to* it: ``GET /relations?dst=``). With ``asOf`` (RFC 3339)
  it returns the rows whose validity contains the instant (``validFrom <= t < validUntil``,
  docs/decisions.md, "Time"), read from the history rows, so superseded values come back for the time
  they were true. ``limit`` (default 500) bounds each list; ``truncated`` says when it cut.
- An entity is visible to whoever may see a fact about it: its row's scopes are the union
  (OR) of the scopes of the writes that named it (the write path widens them), so a team that
  wrote facts about ``person/user`` reads the entity whoever wrote about it first.
- ``DELETE /entities/{type}/{name}`` is a soft delete of what the caller may both read and
  write about the entity (``/forget``'s rule): its attributes and relations, history
  included; relations from other entities to it, its actions and uncertainties about it
  (found through its reference rows, ``storage_keys``: the delete reads the entity's own
  partitions, never another entity's, and the store filters them by the read region). They are
  marked ``deleted`` in conditioned transactions, so they leave every read, and projection
  removes their search units. What others wrote stays, and so does the entity for them: its
  scopes lose the clauses nothing readable is left in (a caller who reads everything knows
  exactly; one who does not keeps the clauses it cannot read or write). Only when nothing is
  left is the entity row itself deleted; readers then also hide facts naming it (a write racing
  the delete), and mentioning it again creates it afresh. A caller who reads the entity but
  may remove nothing about it gets 403 and nothing changes.
- ``GET /entities/{type}/{name}/history/{key}``: one attribute's rows, oldest to newest
  (by ``validFrom``, then creation), with their ``supersedes``/``supersededBy`` links;
  ``.../history``: every key's rows, paged in key order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

from agent_memory.access import scopes
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import Conflict, Forbidden, InvalidRequest, NotFound
from agent_memory.kernel.ids import (
    ENTITY_TYPES,
    MAX_ENTITY_NAME_BYTES,
    MAX_KEY_BYTES,
    entity_name_fits,
    key_fits,
    normalise_entity_name,
    normalise_entity_type,
)
from agent_memory.models.facts import Attribute, Entity, Relation
from agent_memory.ports import Condition, ConditionFailed, Record
from agent_memory.rules import vocabulary as vocab
from agent_memory.services import paging
from agent_memory.services.facts.forget import record_text, remove_records, tombstone
from agent_memory.services.facts.readable import Readable, named_entities

if TYPE_CHECKING:
    from agent_memory.kernel.cursor import CursorSecret
    from agent_memory.ports import RecordStore
    from agent_memory.services.facts.forget import ForgetService

DELETE_ATTEMPTS = 20


def entity_type_param(value: str) -> str:
    """A type from the closed vocabulary (or a known alias: ``organization``, ``city``); 400 else."""
    raw = unquote(value or "").strip().lower()
    etype = normalise_entity_type(raw)
    if etype == "other" and raw != "other":
        raise InvalidRequest(f"unknown entity type {value!r}; one of {', '.join(ENTITY_TYPES)}", field="type")
    return etype


def entity_ref(entity_type: str, name: str) -> str:
    """``entity:<type>/<name>`` from route parts (type from the closed vocabulary; name
    URL-decoded and normalised as ids are)."""
    etype = entity_type_param(entity_type)
    norm = normalise_entity_name(unquote(name or ""))
    if not norm:
        raise InvalidRequest("entity name is empty", field="name")
    if not entity_name_fits(norm):
        raise InvalidRequest(f"entity name is longer than {MAX_ENTITY_NAME_BYTES} bytes", field="name")
    return f"entity:{etype}/{norm}"


def parse_entity_param(value: str | None, field: str) -> str | None:
    """A query parameter naming an entity: ``type/name`` or ``entity:type/name``."""
    if value is None:
        return None
    etype, sep, name = value.removeprefix("entity:").partition("/")
    if not sep:
        raise InvalidRequest(f"{field} must be type/name", field=field)
    try:
        return entity_ref(etype, name)
    except InvalidRequest as exc:
        raise InvalidRequest(f"{field}: {exc.detail}", field=field) from exc


def stated_order(rows: list[Attribute]) -> list[Attribute]:
    """One key's versions as history lists them everywhere (docs/decisions.md, "History under
    out-of-order writes"): in the order they were stated (``said_at``, else when written),
    the current value last. A value stated late about an earlier time sits where it was
    said, not where its window starts; a retracted one (its window empty) where it was said."""
    return sorted(rows, key=lambda a: (a.is_current, a.said_at or a.created_at or "", a.created_at or "", a.id))


@dataclass
class EntityView:
    """An entity with its current (or ``as_of``) attributes and outgoing relations."""

    entity: Entity
    attributes: list[Attribute]
    relations: list[Relation]
    as_of: str | None
    attributes_truncated: bool
    relations_truncated: bool


class EntityService:
    def __init__(self, store: RecordStore, cursor_secret: CursorSecret, forget: ForgetService):
        self.store = store
        self._cursor_secret = cursor_secret
        self._forget = forget

    def load(self, ctx: RequestContext, entity_id: str) -> Record:
        record = self.store.get(keys.entities_pk(ctx), keys.entity_sk(entity_id))
        if record is None or not Readable(self.store, ctx).visible(record.data):
            raise NotFound(f"entity {entity_id.removeprefix('entity:')} does not exist")
        return record

    # --- list and read ---------------------------------------------------------------

    def list(self, ctx: RequestContext, entity_type: str | None, limit: int, page_cursor: str | None,
             with_total: bool = False) -> paging.Paged:
        entity_type = entity_type_param(entity_type) if entity_type is not None else None
        src = paging.Source(keys.entities_pk(ctx), prefix=f"{entity_type}/" if entity_type else None)
        return paging.paged(self.store, self._cursor_secret, ctx, paging.collection_name(ctx, "entities", type=entity_type),
                            src, limit=limit, page_cursor=page_cursor, with_total=with_total,
                            render=lambda r: Entity.from_dict(r.data),
                            keep=Readable(self.store, ctx, {"entity"}))

    def get(self, ctx: RequestContext, entity_id: str, as_of: str | None, limit: int) -> EntityView:
        entity = Entity.from_dict(self.load(ctx, entity_id).data)
        readable = Readable(self.store, ctx)

        def when(cls: type[Attribute] | type[Relation]) -> paging.BatchFilter:
            def keep(records: list[Record]) -> list[Record]:
                facts = [(r, cls.from_dict(r.data)) for r in readable(records)]
                return [r for r, f in facts if (f.valid_at(as_of) if as_of else f.is_current)]
            return keep

        attrs, more_attrs = paging.read_page(self.store, paging.Source(keys.attrs_pk(ctx, entity_id), prefix="a#"),
                                             limit=limit, after=None, keep=when(Attribute),
                                             read_region=ctx.read_region)
        rels, more_rels = paging.read_page(self.store, paging.Source(keys.rels_pk(ctx, entity_id), prefix="a#"),
                                           limit=limit, after=None, keep=when(Relation),
                                           read_region=ctx.read_region)
        return EntityView(entity=entity, attributes=[Attribute.from_dict(r.data) for r in attrs],
                          relations=[Relation.from_dict(r.data) for r in rels], as_of=as_of,
                          attributes_truncated=more_attrs is not None, relations_truncated=more_rels is not None)

    # --- history -----------------------------------------------------------------------

    def history(self, ctx: RequestContext, entity_id: str, key: str) -> list[Attribute]:
        self.load(ctx, entity_id)
        slot = vocab.normalise_key(key)
        if not slot:
            raise InvalidRequest("key is empty", field="key")
        if not key_fits(slot):
            raise InvalidRequest(f"key is longer than {MAX_KEY_BYTES} bytes", field="key")
        readable = Readable(self.store, ctx, {"attribute"})
        src = paging.Source(keys.attrs_pk(ctx, entity_id), prefix=f"a#{slot}#")
        rows = [Attribute.from_dict(r.data) for r in readable(list(paging.scan(self.store, src, batch=500,
                                                                                       read_region=ctx.read_region)))]
        return stated_order(rows)

    def history_all(self, ctx: RequestContext, entity_id: str, limit: int, page_cursor: str | None,
                    with_total: bool = False) -> paging.Paged:
        self.load(ctx, entity_id)
        src = paging.Source(keys.attrs_pk(ctx, entity_id), prefix="a#")
        collection = paging.collection_name(ctx, "history", entity=entity_id)
        return paging.paged(self.store, self._cursor_secret, ctx, collection, src, limit=limit, page_cursor=page_cursor,
                            with_total=with_total, render=lambda r: Attribute.from_dict(r.data),
                            keep=Readable(self.store, ctx, {"attribute"}))

    # --- delete ------------------------------------------------------------------------

    def delete(self, ctx: RequestContext, entity_id: str) -> None:
        """Remove what the caller may both read and write about the entity (module docstring)."""
        for _ in range(DELETE_ATTEMPTS):
            record = self.load(ctx, entity_id)
            rows, refs = self._fact_rows(ctx, entity_id)
            may = [scopes.removable(r.data.get("scopes") or [], ctx.read_region, ctx.write_region) for r in rows]
            ok = [r for r, m in zip(rows, may, strict=True) if m]
            kept = [r for r, m in zip(rows, may, strict=True) if not m]
            left = self._scopes_left(ctx, record.data.get("scopes") or [], ok, kept)
            if not ok and left is not None and left == scopes.normalise_dnf(record.data.get("scopes") or []):
                raise Forbidden(f"entity {entity_id.removeprefix('entity:')}: nothing about it lies in your "
                                "write region", code="scope_not_writable")
            removed = remove_records(self.store, ok, purge=False)
            gone = {(r.pk, r.sk) for r in ok}
            remove_records(self.store, [ref for ref, row in refs if row is None or (row.pk, row.sk) in gone
                                        if scopes.removable(ref.data.get("scopes") or [], ctx.read_region,
                                                            ctx.write_region)], purge=True)
            now = timeutil.now_iso()
            if left is None:
                update = tombstone(record, now)
            else:
                update = Record(record.pk, record.sk, {**record.data, "scopes": left, "updatedAt": now},
                                version=record.version + 1, expires_at=record.expires_at)
            try:
                self.store.put(update, Condition.version_is(record.version))
            except ConditionFailed:  # a write widened (or a delete removed) it meanwhile: read again
                self._forget.after_removal(ctx, removed)
                continue
            self._forget.after_removal(ctx, removed | ({entity_id} if left is None else set()),
                                       [record_text(r.data) for r in ok])
            return
        raise Conflict(f"entity {entity_id} is being modified concurrently; retry")

    @staticmethod
    def _scopes_left(ctx: RequestContext, entity_scopes: list[list[str]], removed: list[Record],
                     kept: list[Record]) -> list[list[str]] | None:
        """The entity's scopes once ``removed`` are gone (``None``: nothing left, the entity goes).

        The entity row's scopes are the union of the scopes of what was written about it. A
        caller who reads everything knows what is left: the union of ``kept``. Any other caller
        cannot see what lies outside its read region, so the clauses it cannot read stay, as do
        those it cannot write and those of the rows it keeps; an unscoped entity stays so."""
        def union(rows: list[Record]) -> list[list[str]] | None:
            out: list[list[str]] | None = None
            for r in rows:
                row_scopes = r.data.get("scopes") or []
                out = row_scopes if out is None else scopes.union(out, row_scopes)
            return scopes.normalise_dnf(out) if out is not None else None

        if ctx.read_region is None:
            return union(kept)
        if not entity_scopes:
            return []
        clauses = [c for c in scopes.normalise_dnf(entity_scopes)
                   if not scopes.removable([c], ctx.read_region, ctx.write_region)]
        from_kept = union(kept)
        if from_kept == []:
            return []
        clauses = scopes.normalise_dnf(clauses + (from_kept or []))
        return clauses or None

    def _fact_rows(self, ctx: RequestContext, entity_id: str) -> tuple[list[Record], list[tuple[Record, Record | None]]]:
        """The live rows about the entity the caller may read, and its reference rows (each with
        the row it points at, ``None`` when that is gone), read by key: the entity's attribute
        and relation partitions, and its references (relations to it from other entities,
        actions it is the actor of, uncertainties about it), region filtered in the store."""
        readable = Readable(self.store, ctx)

        def live(src: paging.Source) -> list[Record]:
            return [r for r in paging.scan(self.store, src, batch=500, read_region=ctx.read_region)
                    if r.data.get("kind") and readable.visible(r.data)]

        rows = live(paging.Source(keys.attrs_pk(ctx, entity_id), prefix="a#"))
        rows += live(paging.Source(keys.rels_pk(ctx, entity_id), prefix="a#"))
        refs = live(paging.Source(keys.refs_pk(ctx, entity_id)))
        wanted = [(r.data["rowPk"], r.data["rowSk"]) for r in refs]
        found: dict[tuple[str, str], Record] = {}
        for start in range(0, len(wanted), 100):
            found.update({(r.pk, r.sk): r for r in self.store.batch_get(wanted[start:start + 100])})
        pointed: list[tuple[Record, Record | None]] = []
        for ref in refs:
            row = found.get((ref.data["rowPk"], ref.data["rowSk"]))
            names_it = entity_id in named_entities(row.data) or row.data.get("entityId") == entity_id \
                if row is not None else False
            if row is not None and (not readable.visible(row.data) or not names_it):
                row = None
            pointed.append((ref, row))
            if row is not None:
                rows.append(row)
        return rows, pointed

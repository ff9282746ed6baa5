"""Entities: list, read (current or ``asOf``), soft delete, and attribute history.

- ``GET /entities`` pages the entities partition, whose sort key ``<type>/<name>`` orders
  by type then name; ``?type=`` is a prefix query on ``<type>/``.
- ``GET /entities/{type}/{name}`` returns the entity with its current attributes and its
  outgoing relations (relations *to* it: ``GET /relations?dst=``). With ``asOf`` (RFC 3339)
  it returns the rows whose validity contains the instant (``validFrom <= t < validUntil``,
  docs/decisions.md, "Time"), read from the history rows, so superseded values come back for the time
  they were true. ``limit`` (default 500) bounds each list; ``truncated`` says when it cut.
- ``DELETE /entities/{type}/{name}`` is a soft delete: the entity row and every fact row
  about it (its attributes and relations, history included; relations from other entities
  to it; its actions; uncertainties about it) are marked ``deleted`` in conditioned
  transactions, so they leave every read, and projection removes their search units.
  Readers also hide facts naming a deleted entity (a write racing the delete). Mentioning
  the entity again later creates it afresh (the write path re-creates a deleted row).
- ``GET /entities/{type}/{name}/history/{key}``: one attribute's rows, oldest to newest
  (by ``validFrom``, then creation), with their ``supersedes``/``supersededBy`` links;
  ``.../history``: every key's rows, paged in key order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import Conflict, InvalidRequest, NotFound
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
from agent_memory.services.facts.forget import remove_records, tombstone
from agent_memory.services.facts.readable import Readable

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
        rows.sort(key=lambda a: (a.valid_from or "", a.created_at or "", a.id))
        return rows

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
        for _ in range(DELETE_ATTEMPTS):
            record = self.load(ctx, entity_id)
            try:
                self.store.put(tombstone(record, timeutil.now_iso()), Condition.version_is(record.version))
                break
            except ConditionFailed:
                continue
        else:
            raise Conflict(f"entity {entity_id} is being modified concurrently; retry")
        rows = self._fact_rows(ctx, entity_id)
        removed = remove_records(self.store, rows, purge=False)
        self._forget.after_removal(ctx, removed | {entity_id})

    def _fact_rows(self, ctx: RequestContext, entity_id: str) -> list[Record]:
        """Every live row about the entity (see the module docstring)."""
        store = self.store

        def live(src: paging.Source, match=lambda d: True) -> list[Record]:
            return [r for r in paging.scan(store, src, batch=500)
                    if not r.data.get("deleted") and r.data.get("kind") and match(r.data)]

        rows = live(paging.Source(keys.attrs_pk(ctx, entity_id), prefix="a#"))
        rows += live(paging.Source(keys.rels_pk(ctx, entity_id), prefix="a#"))
        # Relations from other entities to this one live in their subjects' partitions.
        for other in paging.scan(store, paging.Source(keys.entities_pk(ctx)), batch=500):
            subject = other.data.get("id")
            if subject and subject != entity_id:
                rows += live(paging.Source(keys.rels_pk(ctx, subject), prefix="a#"),
                             lambda d: d.get("object") == entity_id)
        rows += live(paging.Source(keys.actions_pk(ctx)), lambda d: d.get("actor") == entity_id)
        rows += live(paging.Source(keys.uncertainties_pk(ctx)), lambda d: d.get("entityId") == entity_id)
        return rows


"""Paged collections of the memory graph: ``/attributes``, ``/relations``, ``/actions``,
``/instructions``, ``/uncertainty``, and ``POST /uncertainty/{id}/resolve``.

Every collection answers ``{items, page: {hasMore, nextCursor, totalSize?}}`` (``totalSize``
only with ``?count=true``), ``limit`` default 100, max 500, and pages by key
(``services/paging.py``: no skips or repeats when writes land between pages). Which key:

=================================  =========================================================
``/attributes``                     current attributes. ``entity=type/name``: that entity's
                                    partition (``a#<key>#<id>``: key, then creation order);
                                    otherwise the gsi1 current index
                                    (``<category>#<entity>#<key>#<id>``). ``key`` filters.
``/relations``                      current relations. ``src``: the subject's partition
                                    (``a#<label>#<id>``), else the gsi1 current index;
                                    ``dst`` and ``label`` filter.
``/actions``                        the actions partition (``<occurredAt>#<id>``, oldest
                                    first); ``since`` (inclusive) / ``until`` (exclusive) are
                                    a key range; ``actor`` and ``verb`` filter.
``/instructions``                   active instructions in creation (id) order.
``/uncertainty``                    uncertainties in creation order; ``entity`` and
                                    ``resolved`` (true/false) filter.
=================================  =========================================================

Resolving an uncertainty that names a claim (entity, key, proposed value) writes the
accepted value through the write path as an authoritative ``upsert`` triple, so it
supersedes the current value exactly as any correction does (one transaction, chain
links, search projection), then marks the uncertainty resolved. An uncertainty without a
claim (a model's open question) is only marked resolved, with the value and note kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_memory.access import grants
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import Conflict, InvalidRequest, NotFound
from agent_memory.kernel.ids import ENTITY_TYPES, split_entity_id
from agent_memory.models.extraction import ExtractionResult
from agent_memory.models.facts import Attribute, Relation, Uncertainty
from agent_memory.models.reads import ResolveUncertaintyRequest
from agent_memory.models.requests import WriteFactsRequest
from agent_memory.ports import Condition, ConditionFailed, Record
from agent_memory.rules import vocabulary as vocab
from agent_memory.services import paging
from agent_memory.services.facts.readable import Readable, memory_record
from agent_memory.services.facts.reconcile import normalise_value

if TYPE_CHECKING:
    from agent_memory.kernel.cursor import CursorSecret
    from agent_memory.ports import RecordStore

RESOLVE_ATTEMPTS = 20


def _where(pred: Callable[[dict[str, Any]], bool]) -> paging.BatchFilter:
    return lambda records: [r for r in records if pred(r.data)]


def _current(data: dict[str, Any]) -> bool:
    return not data.get("deleted") and data.get("supersededBy") is None and data.get("validUntil") is None


@dataclass
class ResolvedUncertainty:
    """A resolved uncertainty, and the current fact that now holds the accepted value."""

    uncertainty: Uncertainty
    fact: Attribute | Relation | None


class CollectionService:
    """The paged fact collections and uncertainty resolution. ``write_facts(ctx, request)``
    is the write path (``FactsService.write``) that stores an accepted value."""

    def __init__(self, store: RecordStore, cursor_secret: CursorSecret,
                 write_facts: Callable[[RequestContext, WriteFactsRequest], Any]):
        self.store = store
        self._cursor_secret = cursor_secret
        self._write_facts = write_facts

    def _page(self, ctx: RequestContext, name: str, filters: dict[str, Any], src: paging.Source, kinds: set[str],
              pred: Callable[[dict[str, Any]], bool], limit: int, page_cursor: str | None,
              with_total: bool) -> paging.Paged:
        keep = paging.chain(Readable(self.store, ctx, kinds), _where(pred))
        return paging.paged(self.store, self._cursor_secret, ctx,
                            paging.collection_name(ctx, name, **filters), src, limit=limit, page_cursor=page_cursor,
                            render=memory_record, keep=keep, with_total=with_total)

    def attributes(self, ctx: RequestContext, *, entity: str | None, key: str | None, limit: int,
                   page_cursor: str | None, with_total: bool = False) -> paging.Paged:
        slot = vocab.normalise_key(key) if key else None
        if entity:
            src = paging.Source(keys.attrs_pk(ctx, entity), prefix=f"a#{slot}#" if slot else "a#")
        else:
            src = paging.Source(keys.current_gsi(ctx, "attribute"), index="gsi1")
        return self._page(ctx, "attributes", {"entity": entity, "key": slot}, src, {"attribute"},
                          lambda d: _current(d) and (slot is None or d.get("key") == slot),
                          limit, page_cursor, with_total)

    def relations(self, ctx: RequestContext, *, src: str | None, dst: str | None, label: str | None, limit: int,
                  page_cursor: str | None, with_total: bool = False) -> paging.Paged:
        lab = vocab.normalise_label(label) if label else None
        if src:
            source = paging.Source(keys.rels_pk(ctx, src), prefix=f"a#{lab}#" if lab else "a#")
        else:
            source = paging.Source(keys.current_gsi(ctx, "relation"), index="gsi1")
        return self._page(ctx, "relations", {"src": src, "dst": dst, "label": lab}, source, {"relation"},
                          lambda d: _current(d) and (lab is None or d.get("label") == lab)
                          and (dst is None or d.get("object") == dst),
                          limit, page_cursor, with_total)

    def actions(self, ctx: RequestContext, *, actor: str | None, verb: str | None, since: str | None,
                until: str | None, limit: int, page_cursor: str | None, with_total: bool = False) -> paging.Paged:
        if since and until and since >= until:
            raise InvalidRequest("since must be before until", field="since")
        between = (since or "0", until or "~") if since or until else None
        src = paging.Source(keys.actions_pk(ctx), between=between)
        folded = verb.casefold() if verb else None
        return self._page(ctx, "actions", {"actor": actor, "verb": folded, "since": since, "until": until}, src,
                          {"action"},
                          lambda d: (actor is None or d.get("actor") == actor)
                          and (folded is None or (d.get("verb") or "").casefold() == folded),
                          limit, page_cursor, with_total)

    def instructions(self, ctx: RequestContext, *, limit: int, page_cursor: str | None,
                     with_total: bool = False) -> paging.Paged:
        return self._page(ctx, "instructions", {}, paging.Source(keys.instructions_pk(ctx)), {"instruction"},
                          lambda d: d.get("active", True), limit, page_cursor, with_total)

    def uncertainties(self, ctx: RequestContext, *, entity: str | None, resolved: bool | None, limit: int,
                      page_cursor: str | None, with_total: bool = False) -> paging.Paged:
        return self._page(ctx, "uncertainty", {"entity": entity, "resolved": resolved},
                          paging.Source(keys.uncertainties_pk(ctx)), {"uncertainty"},
                          lambda d: (entity is None or d.get("entityId") == entity)
                          and (resolved is None or bool(d.get("resolved")) == resolved),
                          limit, page_cursor, with_total)

    # --- resolving an uncertainty ----------------------------------------------------

    def resolve(self, ctx: RequestContext, uncertainty_id: str, req: ResolveUncertaintyRequest
                ) -> ResolvedUncertainty:
        pk = keys.uncertainties_pk(ctx)
        readable = Readable(self.store, ctx, {"uncertainty"})
        for _ in range(RESOLVE_ATTEMPTS):
            record = self.store.get(pk, uncertainty_id) if uncertainty_id.startswith("unc_") else None
            if record is None or not readable.visible(record.data):
                raise NotFound(f"uncertainty {uncertainty_id} does not exist")
            if record.data.get("resolved"):
                raise Conflict(f"uncertainty {uncertainty_id} is already resolved", code="already_resolved")
            # Resolving writes the uncertainty and the accepted fact under its scopes.
            grants.check_writable(record.data.get("scopes") or [], ctx.write_region, "uncertainty")
            data = {**record.data, "resolved": True, "resolvedAt": timeutil.now_iso(),
                    "acceptedValue": req.accepted_value, "note": req.note, "resolvedBy": ctx.principal}
            claimed = Record(pk=pk, sk=record.sk, data=data, version=record.version + 1)
            try:
                self.store.put(claimed, Condition.version_is(record.version))  # claim it: one resolver wins
                break
            except ConditionFailed:
                continue
        else:
            raise Conflict(f"uncertainty {uncertainty_id} is being modified concurrently; retry")
        unc = Uncertainty.from_dict(data)
        try:
            fact = self._write_accepted(ctx, unc, req) if unc.entity_id and unc.key else None
        except BaseException:
            # Nothing was written: release the claim so the caller can retry.
            self.store.put(Record(pk=pk, sk=record.sk, data=record.data, version=claimed.version + 1),
                           Condition.version_is(claimed.version))
            raise
        return ResolvedUncertainty(unc, fact)

    def _write_accepted(self, ctx: RequestContext, unc: Uncertainty, req: ResolveUncertaintyRequest
                        ) -> Attribute | Relation | None:
        etype, name = split_entity_id(unc.entity_id or "")
        triple: dict[str, Any] = {"entity": {"type": etype, "name": name}, "key": unc.key}
        relation = (unc.proposed_value or "").startswith("entity:") or unc.key in vocab.LABELS
        if relation:
            target = _target(req.accepted_value, unc.proposed_value)
            triple["target"] = {"type": target[0], "name": target[1]}
        else:
            triple["value"] = req.accepted_value
        text = f"Resolved: {unc.about} Accepted value: {req.accepted_value}." + (f" {req.note}" if req.note else "")
        write = WriteFactsRequest(text=text, infer="triples", triples=[triple], role="system", scopes=unc.scopes,
                                  labels=unc.labels)
        result = self._write_facts(ctx, write).extraction
        return self._accepted_row(ctx, unc, result, relation, req.accepted_value)

    def _accepted_row(self, ctx: RequestContext, unc: Uncertainty, result: ExtractionResult | None,
                      relation: bool, accepted: str) -> Attribute | Relation | None:
        """The current row that now holds the accepted value (new, or reinforced)."""
        if relation:
            rel = next(iter(result.relations if result else []), None)
            subject, label = (rel.subject, rel.label) if rel else (unc.entity_id, unc.key)
            pk, want = keys.rels_pk(ctx, subject), rel.object if rel else None
        else:
            attr = next(iter(result.attributes if result else []), None)
            if attr is not None:
                found = self.store.get(keys.attrs_pk(ctx, attr.entity_id), keys.fact_sk(attr.key, attr.id))
                if found is not None:
                    return Attribute.from_dict(found.data)
            pk, label, want = keys.attrs_pk(ctx, unc.entity_id or ""), unc.key or "", None
        for r in paging.scan(self.store, paging.Source(pk, prefix=f"a#{label}#"), batch=500):
            if not _current(r.data):
                continue
            if relation and (want is None or r.data.get("object") == want):
                return Relation.from_dict(r.data)
            if not relation and normalise_value(r.data.get("value", "")) == normalise_value(accepted):
                return Attribute.from_dict(r.data)
        return None


def _target(accepted: str, proposed: str | None) -> tuple[str, str]:
    """An accepted relation object: ``entity:type/name``, ``type/name``, or a bare name that
    keeps the proposed object's type."""
    body = accepted.strip().removeprefix("entity:")
    etype, sep, name = body.partition("/")
    if sep and etype in ENTITY_TYPES and name:
        return etype, name
    return (split_entity_id(proposed)[0] if proposed and proposed.startswith("entity:") else "person"), accepted.strip()


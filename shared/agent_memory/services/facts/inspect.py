"""``GET /inspect?ref=``: one memory object by reference, with its history and provenance.

References (``REF_GRAMMAR``; a type and a name as ``GET /entities/{type}/{name}`` takes them):

- ``entity:<type>/<name>``: the entity, its attributes and outgoing relations in the view,
  and every attribute row it has had (``history``);
- ``attribute:<type>/<name>/<key>``: the entity's rows of one key in the view, and all of them;
- ``relation:<type>/<name>/<label>/<type>/<name>``: the subject's rows of one label to one
  object (an ``entity:`` prefix on either side is accepted);
- ``trace:<id>``: the stored trace, as ``GET /traces/{id}`` answers it.

The view is the current state; with ``asOf`` (or ``atInstant``, the same reading) the rows
valid at that instant; with ``validFrom``/``validUntil`` the rows whose validity overlaps
the window, closed ones included: the readings ``/query`` gives those parameters.
``provenance`` groups the history's rows by the source that stated them. Every read obeys
the caller's read region as the entity and history reads do (rows outside it are left out; an
entity or trace the caller cannot see is a 404, like a missing one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import InvalidRequest
from agent_memory.kernel.ids import MAX_KEY_BYTES, key_fits
from agent_memory.models.facts import Attribute, Entity, Relation
from agent_memory.rules import vocabulary as vocab
from agent_memory.services import paging
from agent_memory.services.facts.entities import entity_ref
from agent_memory.services.facts.readable import Readable

if TYPE_CHECKING:
    from agent_memory.ports import RecordStore
    from agent_memory.services.facts.entities import EntityService
    from agent_memory.services.operations.traces import TraceStore

REF_GRAMMAR = ("entity:<type>/<name>, attribute:<type>/<name>/<key>, "
               "relation:<subject type>/<subject name>/<label>/<object type>/<object name>, or trace:<id>")
#: Rows of history one inspection returns at most (``truncated`` says when it cut).
HISTORY_LIMIT = 500
KINDS = ("entity", "attribute", "relation", "trace")


@dataclass(frozen=True)
class Ref:
    kind: str
    entity: str = ""  # entity id (the subject of a relation)
    key: str = ""  # attribute key or relation label
    object: str = ""  # relation object entity id
    trace_id: str = ""

    def text(self) -> str:
        """The reference in its normal form (names normalised as ids are)."""
        body = self.entity.removeprefix("entity:")
        if self.kind == "entity":
            return f"entity:{body}"
        if self.kind == "attribute":
            return f"attribute:{body}/{self.key}"
        if self.kind == "relation":
            return f"relation:{body}/{self.key}/{self.object.removeprefix('entity:')}"
        return f"trace:{self.trace_id}"


def _bad(detail: str) -> InvalidRequest:
    return InvalidRequest(f"ref {detail}; a reference is {REF_GRAMMAR}", field="ref")


def _entity(etype: str, name: str) -> str:
    try:
        return entity_ref(etype, name)
    except InvalidRequest as exc:
        raise _bad(f"names no entity ({exc.detail})") from exc


def parse_ref(raw: str | None) -> Ref:
    """A reference in ``REF_GRAMMAR``; 400 naming the grammar otherwise."""
    if not raw:
        raise _bad("is required")
    kind, sep, body = raw.partition(":")
    if not sep or kind not in KINDS:
        raise _bad(f"{raw[:80]!r} names no known kind")
    if kind == "trace":
        if not body or "/" in body or "#" in body or len(body) > 128:
            raise _bad("trace: needs one trace id (at most 128 characters, no '/' or '#')")
        return Ref("trace", trace_id=body)
    body = body.removeprefix("entity:")
    if kind == "relation":  # an entity: prefix may sit before the object's type too
        body = body.replace("/entity:", "/")
    parts = body.split("/")
    want = {"entity": 2, "attribute": 3, "relation": 5}[kind]
    if len(parts) != want or not all(parts):
        raise _bad(f"{kind}: needs {want} non-empty segments separated by '/'")
    subject = _entity(parts[0], parts[1])
    if kind == "entity":
        return Ref("entity", entity=subject)
    if kind == "attribute":
        key = vocab.normalise_key(parts[2])
        if not key or not key_fits(key):
            raise _bad(f"attribute key must be 1 to {MAX_KEY_BYTES} bytes")
        return Ref("attribute", entity=subject, key=key)
    label = vocab.normalise_label(parts[2])
    if not label or not key_fits(label):
        raise _bad(f"relation label must be 1 to {MAX_KEY_BYTES} bytes")
    return Ref("relation", entity=subject, key=label, object=_entity(parts[3], parts[4]))


@dataclass(frozen=True)
class View:
    """Which rows the view selects: current ones, those valid at ``at``, or those whose
    validity overlaps ``[valid_from, valid_until)``."""

    at: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None

    @classmethod
    def of(cls, as_of: str | None, at_instant: str | None, valid_from: str | None,
           valid_until: str | None) -> View:
        if as_of and at_instant and as_of != at_instant:
            raise InvalidRequest("atInstant: asOf and atInstant both name the instant to read at and differ",
                                 field="atInstant")
        at = at_instant or as_of
        if at and (valid_from or valid_until):
            raise InvalidRequest("validFrom: an instant (asOf, atInstant) and a window (validFrom, validUntil) "
                                 "are two readings; give one", field="validFrom")
        if valid_from and valid_until and valid_from >= valid_until:
            raise InvalidRequest("validFrom: must be before validUntil", field="validFrom")
        return cls(at, valid_from, valid_until)

    def admits(self, fact: Attribute | Relation) -> bool:
        if fact.deleted:
            return False
        if self.at:
            return fact.valid_at(self.at)
        if self.valid_from or self.valid_until:
            if self.valid_until and fact.valid_from and fact.valid_from >= self.valid_until:
                return False
            return not (self.valid_from and fact.valid_until and fact.valid_until <= self.valid_from)
        return fact.is_current

    def wire(self) -> dict[str, Any]:
        return {"asOf": self.at, "validFrom": self.valid_from, "validUntil": self.valid_until}


@dataclass
class Inspection:
    ref: Ref
    view: View
    entity: Entity | None = None
    attributes: list[Attribute] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    history: list[Attribute | Relation] = field(default_factory=list)
    truncated: bool = False
    trace: dict[str, Any] | None = None


class Inspector:
    def __init__(self, store: RecordStore, entities: EntityService, traces: TraceStore):
        self.store = store
        self.entities = entities
        self.traces = traces

    def inspect(self, ctx: RequestContext, ref: Ref, view: View) -> Inspection:
        if ref.kind == "trace":
            return Inspection(ref, view, trace=self.traces.get(ctx, ref.trace_id))
        entity = Entity.from_dict(self.entities.load(ctx, ref.entity).data)  # 404 when missing or unreadable
        out = Inspection(ref, view, entity=entity)
        if ref.kind == "relation":
            rows, out.truncated = self._rows(ctx, keys.rels_pk(ctx, ref.entity), f"a#{ref.key}#", Relation,
                                             lambda d: d.get("object") == ref.object)
            out.relations = [r for r in rows if view.admits(r)]
            out.history = sorted(rows, key=_order)
            return out
        prefix = f"a#{ref.key}#" if ref.kind == "attribute" else "a#"
        rows, out.truncated = self._rows(ctx, keys.attrs_pk(ctx, ref.entity), prefix, Attribute)
        out.attributes = [a for a in rows if view.admits(a)]
        out.history = sorted(rows, key=_order)
        if ref.kind == "entity":
            rels, more = self._rows(ctx, keys.rels_pk(ctx, ref.entity), "a#", Relation)
            out.relations = [r for r in rels if view.admits(r)]
            out.truncated = out.truncated or more
        return out

    def _rows(self, ctx: RequestContext, pk: str, prefix: str, cls: type[Attribute] | type[Relation],
              match: Callable[[dict[str, Any]], bool] = lambda d: True) -> tuple[list[Any], bool]:
        """The readable rows of one entity's facts under ``prefix`` (history included), at most
        ``HISTORY_LIMIT``, and whether there were more."""
        readable = Readable(self.store, ctx, {cls.__name__.lower()})

        def keep(records: list[Any]) -> list[Any]:
            return [r for r in readable(records) if match(r.data)]

        records, more = paging.read_page(self.store, paging.Source(pk, prefix=prefix), limit=HISTORY_LIMIT,
                                         after=None, keep=keep, read_region=ctx.read_region)
        return [cls.from_dict(r.data) for r in records], more is not None


def _order(fact: Attribute | Relation) -> tuple[str, str, str, str]:
    key = fact.key if isinstance(fact, Attribute) else fact.label
    return (key, fact.valid_from or "", fact.created_at or "", fact.id)

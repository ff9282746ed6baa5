"""``GET /state`` and ``GET /profile``: bounded snapshots of current memory.

/state (docs/decisions.md, "State and diffs") reads each of its six tables once, up to ``limit`` rows
(default 100, cap 500), and flags the table in ``truncated`` when more rows exist:

- entities: the entities partition in type/name order;
- attributes and relations: the gsi1 current-facts index (current rows only: superseded,
  closed and deleted rows are not in it), read category by category (identity, knowledge,
  context), so a truncated snapshot keeps the identity facts;
- actions: newest first; instructions: active ones, oldest first; unknowns: unresolved
  uncertainties, oldest first.

Everything is grouped by memory category (``identity``, ``knowledge``, ``context``).
Nothing deleted, forgotten, outside the caller's read region, or about a deleted entity is
returned (``readable.Readable``). gsi1 reads are eventually consistent on DynamoDB: a
fact written a moment ago may show up a moment later.

/profile: see ``services/facts/profile.py`` for its rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.ids import split_entity_id
from agent_memory.models.facts import Action, Attribute, Entity, Instruction, Relation, Uncertainty
from agent_memory.ports import Record, RecordStore
from agent_memory.rules.self_entity import SELF_ENTITY_ID
from agent_memory.services import paging
from agent_memory.services.facts import profile
from agent_memory.services.facts.readable import Readable

CATEGORIES = ("identity", "knowledge", "context")
PROFILE_SCAN = 2000


@dataclass
class StateView:
    """What /state shows: readable records per table (grouped by category on the wire)."""

    entities: list[Entity]
    attributes: list[Attribute]
    relations: list[Relation]
    actions: list[Action]
    instructions: list[Instruction]
    unknowns: list[Uncertainty]
    truncated: dict[str, bool]
    categories: tuple[str, ...] = CATEGORIES

    @staticmethod
    def category_of(category: str | None) -> str:
        return _cat(category)


@dataclass
class ProfileFact:
    entity: str
    entity_type: str
    key: str
    value: str


@dataclass
class ProfileView:
    """What /profile shows: facts by section (``selfFacts``, ``static``, ...) and instructions."""

    sections: dict[str, list[ProfileFact]]
    instructions: list[Instruction]


class StateService:
    def __init__(self, store: RecordStore):
        self.store = store

    # --- /state -----------------------------------------------------------------------

    def state(self, ctx: RequestContext, limit: int) -> StateView:
        entities, t_ent = self._read(ctx, paging.Source(keys.entities_pk(ctx)), limit, {"entity"})
        attributes, t_attr = self._current(ctx, "attribute", limit)
        relations, t_rel = self._current(ctx, "relation", limit)
        actions, t_act = self._read(ctx, paging.Source(keys.actions_pk(ctx), forward=False), limit, {"action"})
        instructions, t_ins = self._read(ctx, paging.Source(keys.instructions_pk(ctx)), limit, {"instruction"},
                                         lambda r: r.data.get("active", True))
        unknowns, t_unk = self._read(ctx, paging.Source(keys.uncertainties_pk(ctx)), limit, {"uncertainty"},
                                     lambda r: not r.data.get("resolved"))
        return StateView(
            entities=[Entity.from_dict(r.data) for r in entities],
            attributes=[Attribute.from_dict(r.data) for r in attributes],
            relations=[Relation.from_dict(r.data) for r in relations],
            actions=[Action.from_dict(r.data) for r in actions],
            instructions=[Instruction.from_dict(r.data) for r in instructions],
            unknowns=[Uncertainty.from_dict(r.data) for r in unknowns],
            truncated={"entities": t_ent, "attributes": t_attr, "relations": t_rel, "actions": t_act,
                       "instructions": t_ins, "unknowns": t_unk})

    def _read(self, ctx: RequestContext, src: paging.Source, limit: int, kinds: set[str],
              extra: Callable[[Record], bool] | None = None) -> tuple[list[Record], bool]:
        readable = Readable(self.store, ctx, kinds)
        keep = paging.chain(readable, (lambda rs: [r for r in rs if extra(r)]) if extra else None)
        records, more = paging.read_page(self.store, src, limit=limit, after=None, keep=keep,
                                         read_region=ctx.read_region)
        return records, more is not None

    def _current(self, ctx: RequestContext, kind: str, limit: int) -> tuple[list[Record], bool]:
        """Current facts of one kind from gsi1, identity first; truncated past ``limit``."""
        readable = Readable(self.store, ctx, {kind})
        rows: list[Record] = []
        for category in CATEGORIES:
            src = paging.Source(keys.current_gsi(ctx, kind), prefix=f"{category}#", index="gsi1")
            if len(rows) >= limit:  # full: is anything readable left in the next categories?
                probe, _ = paging.read_page(self.store, src, limit=1, after=None, keep=readable,
                                            read_region=ctx.read_region)
                if probe:
                    return rows, True
                continue
            records, more = paging.read_page(self.store, src, limit=limit - len(rows), after=None, keep=readable,
                                             read_region=ctx.read_region)
            rows += records
            if more is not None:
                return rows, True
        return rows, False

    # --- /profile ---------------------------------------------------------------------

    def profile(self, ctx: RequestContext, limit: int) -> ProfileView:
        readable = Readable(self.store, ctx, {"attribute", "relation"})
        facts: list[tuple[str, str, str, str, str]] = []  # entity, key, value, section, kind
        names: dict[str, str] = {}
        for kind in ("attribute", "relation"):
            src = paging.Source(keys.current_gsi(ctx, kind), index="gsi1")
            records, _ = paging.read_page(self.store, src, limit=PROFILE_SCAN, after=None, keep=readable,
                                          read_region=ctx.read_region)
            for r in records:
                if kind == "attribute":
                    a = Attribute.from_dict(r.data)
                    facts.append((a.entity_id, a.key, a.value, profile.attribute_section(a.key, a.category), kind))
                else:
                    rel = Relation.from_dict(r.data)
                    names[rel.object] = r.data.get("objectName") or ""
                    facts.append((rel.subject, rel.label, rel.object, profile.relation_section(rel.label), kind))
        self._display_names(ctx, names)
        facts.sort(key=lambda f: (f[0] != SELF_ENTITY_ID, f[0], f[1], f[2]))
        out: dict[str, list[ProfileFact]] = {"selfFacts": [], "static": [], "dynamic": [], "preferences": []}
        for entity, key, value, section, kind in facts:
            entry = ProfileFact(entity=entity, entity_type=split_entity_id(entity)[0], key=key,
                                value=(names.get(value) or split_entity_id(value)[1]) if kind == "relation" else value)
            if entity == SELF_ENTITY_ID and len(out["selfFacts"]) < limit:
                out["selfFacts"].append(entry)
            if len(out[section]) < limit:
                out[section].append(entry)
        instructions, _ = self._read(ctx, paging.Source(keys.instructions_pk(ctx)), limit, {"instruction"},
                                     lambda r: r.data.get("active", True))
        return ProfileView(out, [Instruction.from_dict(r.data) for r in instructions])

    def _display_names(self, ctx: RequestContext, names: dict[str, str]) -> None:
        """Current display names of relation objects (an entity may be renamed)."""
        ids = sorted(names)
        pk = keys.entities_pk(ctx)
        for start in range(0, len(ids), 100):
            for rec in self.store.batch_get([(pk, keys.entity_sk(i)) for i in ids[start:start + 100]]):
                if rec.data.get("name"):
                    names[rec.data["id"]] = rec.data["name"]


def _cat(category: str | None) -> str:
    return category if category in CATEGORIES else "knowledge"

"""Storage of the memory graph (entities, attributes, relations, actions, instructions,
uncertainties) on the RecordStore port. Key layout: ``agent_memory.kernel.storage_keys``.

Reads return domain objects together with the record versions that writes condition on;
``plan_ops`` turns a ``ReconcilePlan`` into one list of conditioned write operations, so a
write commits its turn and every fact change in a single transaction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agent_memory.access.request_context import RequestContext
from agent_memory.access.scopes import normalise_dnf
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.ids import ENTITY_TYPES, entity_name_fits, normalise_entity_name, split_entity_id
from agent_memory.kernel.storage_keys import scope_sig
from agent_memory.models.facts import Action, Attribute, Entity, Instruction, Relation, Uncertainty
from agent_memory.ports import Condition, Page, Put, Record, RecordStore, WriteOp
from agent_memory.rules import vocabulary as vocab
from agent_memory.rules.self_entity import SELF_ENTITY_ID
from agent_memory.services.facts.fact_kinds import BY_KIND, RECORD_KINDS
from agent_memory.services.facts.reconcile import ReconcilePlan, normalise_value

Fact = Attribute | Relation


def value_sig(value: str) -> str:
    return hashlib.sha1(normalise_value(value).encode()).hexdigest()[:12]


def fact_kind(fact: Fact) -> str:
    return "attribute" if isinstance(fact, Attribute) else "relation"


@dataclass
class Loaded:
    """Rows read for one write, with the versions its transaction conditions on."""

    entities: dict[str, Entity] = field(default_factory=dict)
    attributes: list[Attribute] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    versions: dict[str, int] = field(default_factory=dict)  # record id -> version
    heads: dict[tuple[str, str], Record] = field(default_factory=dict)  # (pk, sk) -> head record
    # Soft-deleted entity rows (DELETE /entities) by id -> version: a write that mentions the
    # entity again re-creates it over the tombstone, conditioned on that version.
    tombstones: dict[str, int] = field(default_factory=dict)


# Kinds stored outside their entity's partitions whose rows get a reference row (storage_keys).
REFERENCED_KINDS = ("action", "uncertainty")
ENTITY_NAMES = 200  # existing entity names an extraction prompt lists


class PartitionReads:
    """Whole partitions read for one write attempt, by pk, each read once: the speaker's name
    and the slots a write touches are rows of the same entity partitions, so a write reads
    each partition in one query (``a#`` rows and ``h#`` heads together) instead of two per
    slot. The rows are as of the read; the write's transaction conditions on their versions,
    so a change in between fails it and the retry reads afresh (a new ``PartitionReads``)."""

    def __init__(self, store: RecordStore):
        self.store = store
        self._rows: dict[str, list[Record]] = {}
        self._listings: dict[str, tuple[list[Record], bool]] = {}

    def listing(self, pk: str, limit: int) -> tuple[list[Record], bool]:
        """The first ``limit`` rows of ``pk`` (one query, read once) and whether that is all
        of them: the entity names for the extraction prompt, which then answer the write's
        entity reads too when the partition is complete."""
        if pk not in self._listings:
            page = self.store.query(pk, limit=limit)
            self._listings[pk] = (page.records, page.last_key is None and len(page.records) < limit)
        return self._listings[pk]

    def complete(self, pk: str) -> dict[str, Record] | None:
        """Every row of ``pk`` by sort key, when a listing read all of them; else None."""
        if pk in self._rows:
            return {r.sk: r for r in self._rows[pk]}
        records, whole = self._listings.get(pk, ([], False))
        return {r.sk: r for r in records} if whole else None

    def rows(self, pk: str) -> list[Record]:
        if pk not in self._rows:
            rows: list[Record] = []
            after = None
            while True:
                page = self.store.query(pk, after=after, limit=500)
                rows += page.records
                if page.last_key is None:
                    break
                after = page.last_key
            self._rows[pk] = rows
        return self._rows[pk]


class MemoryRepository:
    def __init__(self, store: RecordStore):
        self.store = store

    def partition_reads(self) -> PartitionReads:
        return PartitionReads(self.store)

    # --- reads ----------------------------------------------------------------------

    def entities_by_name(self, ctx: RequestContext, names: Iterable[str],
                         tombstones: dict[str, int] | None = None,
                         versions: dict[str, int] | None = None,
                         reads: PartitionReads | None = None) -> dict[str, Entity]:
        """Existing entities any of ``names`` could refer to (every type), by id; deleted ones
        are left out (their versions go to ``tombstones`` when given, live ones' to ``versions``).
        From ``reads`` when it holds the whole entities partition (``PartitionReads.listing``)."""
        wanted = {normalise_entity_name(n) for n in names if n and n.strip() and entity_name_fits(n)}
        keys_ = [(keys.entities_pk(ctx), f"{t}/{n}") for n in sorted(wanted) for t in ENTITY_TYPES]
        keys_.append((keys.entities_pk(ctx), keys.entity_sk(SELF_ENTITY_ID)))
        found: dict[str, Entity] = {}
        whole = reads.complete(keys.entities_pk(ctx)) if reads is not None else None
        if whole is not None:  # the partition was read in full for this write: no batch read
            records = [whole[sk] for _, sk in keys_ if sk in whole]
        else:
            records = [r for i in range(0, len(keys_), 100) for r in self.store.batch_get(keys_[i:i + 100])]
        for record in records:
            entity = Entity.from_dict(record.data)
            if not entity.deleted:
                found[entity.id] = entity
                if versions is not None:
                    versions[entity.id] = record.version
            elif tombstones is not None:
                tombstones[entity.id] = record.version
        return found

    def read_entities(self, ctx: RequestContext, reads: PartitionReads) -> None:
        """List the entities partition into ``reads`` now (what ``entity_names`` lists), so
        the reads before the write (chat's retrieval) take their entities from it too."""
        reads.listing(keys.entities_pk(ctx), ENTITY_NAMES)

    def entity_names(self, ctx: RequestContext, limit: int = ENTITY_NAMES, reads: PartitionReads | None = None) -> list[str]:
        """Names of existing entities for the extraction prompt (so models reuse them); kept
        in ``reads`` when given, so the write's entity reads can come from the same query."""
        pk = keys.entities_pk(ctx)
        records = reads.listing(pk, limit)[0] if reads is not None else self.store.query(pk, limit=limit).records
        return [r.data.get("name") or split_entity_id(r.data["id"])[1] for r in records
                if not r.data.get("deleted")]

    def speaker_name(self, ctx: RequestContext, reads: PartitionReads | None = None) -> str | None:
        for attr in self.slot_rows(ctx, "attribute", SELF_ENTITY_ID, "name", reads=reads):
            if attr.is_current:
                return attr.value
        return None

    def slot_rows(self, ctx: RequestContext, kind: str, entity_id: str, key: str,
                  loaded: Loaded | None = None, reads: PartitionReads | None = None) -> Iterator[Fact]:
        """Every row (history included) of one slot, oldest first, plus its head rows; from
        ``reads`` (the whole partition, read once) when given, else two prefix queries."""
        pk = keys.attrs_pk(ctx, entity_id) if kind == "attribute" else keys.rels_pk(ctx, entity_id)
        cls = Attribute if kind == "attribute" else Relation
        for prefix in (f"a#{key}#", f"h#{key}#"):
            after = None
            while True:
                if reads is not None:
                    page = Page([r for r in reads.rows(pk) if r.sk.startswith(prefix)], None)
                else:
                    page = self.store.query(pk, prefix=prefix, after=after, limit=500)
                for record in page.records:
                    if prefix.startswith("h#"):
                        if loaded is not None:
                            loaded.heads[(record.pk, record.sk)] = record
                        continue
                    fact = cls.from_dict(record.data)
                    if loaded is not None:
                        loaded.versions[fact.id] = record.version
                    yield fact
                if page.last_key is None:
                    break
                after = page.last_key

    def load_entities(self, ctx: RequestContext, names: Iterable[str], reads: PartitionReads | None = None) -> Loaded:
        """The entities a write names (with the versions its transaction conditions on)."""
        loaded = Loaded()
        loaded.entities = self.entities_by_name(ctx, names, loaded.tombstones, loaded.versions, reads)
        return loaded

    def load_for_write(self, ctx: RequestContext, attribute_slots: Iterable[tuple[str, str]],
                       relation_slots: Iterable[tuple[str, str]], names: Iterable[str],
                       loaded: Loaded | None = None, reads: PartitionReads | None = None) -> Loaded:
        """``load_entities`` (unless given) plus every live row (history too: a late value is
        placed among it) and the heads of the slots: one query per entity partition."""
        loaded = loaded if loaded is not None else self.load_entities(ctx, names)
        reads = reads if reads is not None else self.partition_reads()
        for eid, key in sorted(attribute_slots):
            # Observations (POST /consolidate) sit beside the facts of their slot; they follow
            # the facts and never take part in a write's supersession.
            loaded.attributes += [a for a in self.slot_rows(ctx, "attribute", eid, key, loaded, reads)
                                  if not a.deleted and a.source.kind != "observation"]
        for subject, label in sorted(relation_slots):
            loaded.relations += [r for r in self.slot_rows(ctx, "relation", subject, label, loaded, reads)
                                 if not r.deleted]
        return loaded

    def instructions(self, ctx: RequestContext, limit: int = 500) -> list[Instruction]:
        page = self.store.query(keys.instructions_pk(ctx), limit=limit)
        return [i for i in (Instruction.from_dict(r.data) for r in page.records) if i.active and not i.deleted]

    # --- writes ---------------------------------------------------------------------

    def plan_ops(self, ctx: RequestContext, plan: ReconcilePlan, loaded: Loaded) -> list[WriteOp]:
        """Conditioned write operations for a plan: new rows on absence, changed rows on
        their version, and one head update per touched slot on the head's version."""
        ops: list[WriteOp] = []
        names = {eid: e.name for eid, e in loaded.entities.items()}
        for touch in plan.entities:
            names[touch.entity.id] = touch.entity.name
        widened: dict[str, Entity] = {}  # existing entities a write in new scopes makes visible to more readers
        for touch in plan.entities:
            entity = touch.entity
            if entity.id in loaded.tombstones and entity.id not in loaded.versions:
                tomb = loaded.tombstones[entity.id]
                ops.append(Put(self._entity_record(ctx, entity, tomb + 1), Condition.version_is(tomb)))
            elif touch.is_new or entity.id not in loaded.versions:
                ops.append(Put(self._entity_record(ctx, entity, 1), Condition.absent()))
            elif (stored := loaded.entities.get(entity.id)) is not None and \
                    normalise_dnf(entity.scopes) != normalise_dnf(stored.scopes):
                widened[entity.id] = entity
        renamed = self._self_rename(ctx, plan, loaded, widened)
        if renamed is not None:
            ops.append(renamed)
            names[SELF_ENTITY_ID] = renamed.record.data["name"]
        for eid, entity in widened.items():
            version = loaded.versions[eid]
            ops.append(Put(self._entity_record(ctx, entity, version + 1), Condition.version_is(version)))

        final: dict[str, Fact] = {}
        for row in plan.updated_rows():
            final[row.id] = row
            ops.append(Put(self._fact_record(ctx, row, loaded.versions[row.id] + 1, names),
                           Condition.version_is(loaded.versions[row.id])))
        for row in [*plan.inserts, *plan.relation_inserts]:
            final[row.id] = row
            ops.append(Put(self._fact_record(ctx, row, 1, names), Condition.absent()))
        ops.extend(self._head_ops(ctx, plan, loaded, final))
        for rel in plan.relation_inserts:  # a relation to another entity: a reference in that entity's
            if rel.object.startswith("entity:") and rel.object != rel.subject:
                ops.append(self._ref(ctx, rel.object, "relation", rel.id, keys.rels_pk(ctx, rel.subject),
                                     keys.fact_sk(rel.label, rel.id), rel.scopes))
        for kind in RECORD_KINDS:  # the other kinds' records, where their registry entry keys them
            if kind.store_key is not None:
                for created in plan.created[kind.kind]:
                    pk, sk = kind.store_key(ctx, created)
                    ops.append(Put(self._plain_record(ctx, pk, sk, kind.kind, created.to_dict(), names),
                                   Condition.absent()))
                    about = getattr(created, "actor", None) or getattr(created, "entity_id", None)
                    if kind.kind in REFERENCED_KINDS and about and about.startswith("entity:"):
                        ops.append(self._ref(ctx, about, kind.kind, created.id, pk, sk, created.scopes))
        return ops

    @staticmethod
    def _ref(ctx: RequestContext, entity_id: str, kind: str, row_id: str, pk: str, sk: str,
             scopes: list[list[str]]) -> Put:
        """The reference row telling ``entity_id`` of a row elsewhere that names it (storage_keys)."""
        data = {"kind": "ref", "of": kind, "rowId": row_id, "rowPk": pk, "rowSk": sk, "entityId": entity_id,
                "scopes": [list(c) for c in scopes], "contextId": ctx.context_id, "partition": ctx.partition}
        return Put(Record(pk=keys.refs_pk(ctx, entity_id), sk=keys.ref_sk(kind, row_id), data=data),
                   Condition.absent())

    def _self_rename(self, ctx: RequestContext, plan: ReconcilePlan, loaded: Loaded,
                     widened: dict[str, Entity]) -> Put | None:
        """Learning the user's name renames the self entity for display; its id never changes.
        A self entity this write also widens is renamed in that one write (taken from ``widened``)."""
        names = [a.value for a in plan.inserts if a.entity_id == SELF_ENTITY_ID and a.key == "name"
                 and a.valid_until is None]
        if not names:
            return None
        new_entity = next((t for t in plan.entities if t.entity.id == SELF_ENTITY_ID and
                           (t.is_new or SELF_ENTITY_ID not in loaded.versions)), None)
        if new_entity is not None:
            new_entity.entity.name = names[-1]
            return None  # the insert above carries the new name
        entity = widened.pop(SELF_ENTITY_ID, None) or loaded.entities.get(SELF_ENTITY_ID)
        if entity is None or SELF_ENTITY_ID not in loaded.versions:
            return None
        entity.name = names[-1]
        version = loaded.versions[SELF_ENTITY_ID]
        return Put(self._entity_record(ctx, entity, version + 1), Condition.version_is(version))

    def _head_ops(self, ctx: RequestContext, plan: ReconcilePlan, loaded: Loaded,
                  final: dict[str, Fact]) -> list[WriteOp]:
        """One head row per touched slot (single-valued) or slot value (multi-valued)."""
        touched: dict[tuple[str, str], Fact] = {}
        for fact in final.values():
            pk, sk = self._head_key(ctx, fact)
            touched.setdefault((pk, sk), fact)
        current_by_head: dict[tuple[str, str], str | None] = {k: None for k in touched}
        survivors = {f.id: f for f in [*loaded.attributes, *loaded.relations]}
        survivors.update(final)
        for fact in survivors.values():
            head = self._head_key(ctx, fact)
            if head in current_by_head and fact.is_current:
                current_by_head[head] = fact.id
        ops: list[WriteOp] = []
        for (pk, sk), current in current_by_head.items():
            existing = loaded.heads.get((pk, sk))
            version = existing.version + 1 if existing else 1
            record = Record(pk=pk, sk=sk, version=version,
                            data={"kind": "head", "contextId": ctx.context_id, "current": current})
            ops.append(Put(record, Condition.version_is(existing.version) if existing else Condition.absent()))
        return ops

    def _head_key(self, ctx: RequestContext, fact: Fact) -> tuple[str, str]:
        if isinstance(fact, Attribute):
            pk, key, value, multi = (keys.attrs_pk(ctx, fact.entity_id), fact.key, fact.value,
                                     vocab.cardinality(fact.key) == "multi")
        else:
            pk, key, value, multi = (keys.rels_pk(ctx, fact.subject), fact.label, fact.object,
                                     vocab.label_cardinality(fact.label) == "multi")
        return pk, keys.head_sk(key, scope_sig(fact.scopes), value_sig(value) if multi else None)

    # --- record shapes --------------------------------------------------------------

    def _entity_record(self, ctx: RequestContext, entity: Entity, version: int) -> Record:
        data = {**entity.to_dict(), "kind": "entity", "contextId": ctx.context_id, "partition": ctx.partition}
        return Record(pk=keys.entities_pk(ctx), sk=keys.entity_sk(entity.id), data=data, version=version)

    def fact_record(self, ctx: RequestContext, fact: Fact, version: int, names: dict[str, str]) -> Record:
        """The stored row of a fact (on gsi1 while it is current), as a write stores it."""
        return self._fact_record(ctx, fact, version, names)

    def _fact_record(self, ctx: RequestContext, fact: Fact, version: int, names: dict[str, str]) -> Record:
        kind = fact_kind(fact)
        data: dict[str, Any] = {**fact.to_dict(), "kind": kind, "partition": ctx.partition}
        if isinstance(fact, Attribute):
            pk, sk = keys.attrs_pk(ctx, fact.entity_id), keys.fact_sk(fact.key, fact.id)
            data["entityName"] = names.get(fact.entity_id) or split_entity_id(fact.entity_id)[1]
            order = f"{fact.category}#{fact.entity_id}#{fact.key}#{fact.id}"
        else:
            pk, sk = keys.rels_pk(ctx, fact.subject), keys.fact_sk(fact.label, fact.id)
            data["subjectName"] = names.get(fact.subject) or split_entity_id(fact.subject)[1]
            data["objectName"] = names.get(fact.object) or split_entity_id(fact.object)[1]
            order = f"{fact.category}#{fact.subject}#{fact.label}#{fact.id}"
        current = fact.is_current
        return Record(pk=pk, sk=sk, data=data, version=version,
                      gsi1pk=keys.current_gsi(ctx, kind) if current else None, gsi1sk=order if current else None)

    def _plain_record(self, ctx: RequestContext, pk: str, sk: str, kind: str, data: dict[str, Any],
                      names: dict[str, str]) -> Record:
        data = {**data, "kind": kind, "contextId": ctx.context_id, "partition": ctx.partition}
        if kind == "action":
            data["actorName"] = names.get(data.get("actor", "")) or split_entity_id(data.get("actor", ""))[1]
        return Record(pk=pk, sk=sk, data=data)


def fact_from_record(record: Record) -> Fact | Action | Instruction | Uncertainty | Entity | None:
    kind = BY_KIND.get(record.data.get("kind", ""))
    return kind.record_type.from_dict(record.data) if kind else None

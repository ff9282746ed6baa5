"""Reconciliation: what one extraction changes in memory, as a plan (pure, no I/O).

Input: one ``ExtractionOutput``, the *current* facts of the slots it touches (the caller
loads them; ``slots()`` says which), the existing entities, and the write's provenance
(source, scopes, labels, observed_at). Output: a ``ReconcilePlan`` the facts service
writes in one transaction (new rows conditioned on absence, old rows on their version),
so two concurrent corrections leave exactly one current value.

Rules (docs/decisions.md, "Cardinality", "Time"):

- A *slot* is (entity, key) for attributes and (subject, label) for relations; keys and
  labels are normalised by ``rules.vocabulary``. Only rows in the same scope compete: scope
  equality is canonical DNF equality, so values in different scopes coexist.
- ``validFrom`` = the statement's event-time phrase resolved against ``observed_at``, else
  ``observed_at``, else now.
- Same value again (case-, whitespace- and article-insensitive) -> *reinforcement*:
  importance + ``reinforce_step`` (capped at 1.0), ``lastSeenAt`` = now, ``reinforced`` + 1.
- A single-valued slot's rows (history included) form one chain in event-time
  (``validFrom``) order: each row's ``validUntil`` is the next row's ``validFrom``, linked
  by ``supersedes``/``supersededBy`` in that order (docs/decisions.md, "History under out-of-order
  writes"). A claim is placed in the chain by its ``validFrom``: after the last row that
  began at or before it (that row's window is cut there) and before the next one (where
  its own window ends). Placed last, it is a *supersession* of the current value and a
  correction {entityId, key, oldValue, newValue} is reported; placed earlier (a value that
  arrives late), it is history and the current value stays current. A claim of the value
  the window it falls in already holds reinforces that row; one of the value of the next
  row starts that row sooner. So the chain does not depend on the order writes arrive in.
  A statement *made* after the latest row began but about an earlier time ("I moved to
  Berlin last month") is news, not a late arrival: it becomes current from its event time,
  and rows that began after that close empty (retracted), never inverted.
- Multi-valued slot: each value has its own window; a new value is inserted, values
  accumulate; a claim before a value's window starts it sooner.
- Negation -> *close*: the matching current row gets ``validUntil`` (single-valued: the
  current value if it matches, or whatever is current when no value is given;
  multi-valued: only the negated value). Reported as a correction with ``newValue`` "".
  A negation that matches nothing changes nothing.
- Authoritative facts (source ``upsert`` or ``document``) are never superseded or closed
  by a conversational turn: the claim becomes an *uncertainty* instead. Authoritative
  writes may replace anything.
- Claims under ``confidence_floor`` are not stored as values: they become uncertainties.
- Within one extraction, claims are first collapsed so each slot (single-valued) or slot
  value (multi-valued) has one outcome: the last positive claim of a single-valued slot
  wins and earlier ones are never stored; a later negation of that same value cancels it;
  negations of other values are dropped (the winner supersedes the current value anyway).
  For a multi-valued slot the last claim per value wins. A kept claim without an event
  time borrows one from an earlier claim of the same value ("I moved to Berlin last week.
  I live in Berlin.").
- Categories: the model's, else the key's registry default; initial importance identity
  1.0, knowledge 0.8, context 0.5. Relations use the same rules with label cardinality
  (``manager``, ``spouse`` single; ``sister``, ``friend``, ``colleague`` multi); their
  values, and the values of their corrections, are object entity ids. A relation stated
  with a ``valid_until`` closes the matching current row then (or is stored closed); so does an
  attribute triple with one.

The kinds come from the registry (``services/facts/fact_kinds.py``): the slot planner below plans
the ``slotted`` kinds (attributes, relations); every other kind's claims become records
through its entry's ``plan`` step, in registry order; entities are touched last, for every
name the claims mention (each kind's ``claim_names``). The plan keeps the created records
by kind (``ReconcilePlan.created``) and ``to_result`` summarises them with each entry's
``summarise``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from agent_memory.access.scopes import normalise_dnf
from agent_memory.access.scopes import union as scope_union
from agent_memory.kernel import timeutil
from agent_memory.kernel.ids import key_fits, new_id, split_entity_id
from agent_memory.models.extraction import CorrectionSummary, ExtractionOutput, ExtractionResult
from agent_memory.models.facts import (
    Action,
    Attribute,
    Entity,
    Instruction,
    Relation,
    Source,
    Uncertainty,
)
from agent_memory.rules import vocabulary as vocab
from agent_memory.rules.event_time import resolve_event_time
from agent_memory.rules.self_entity import SELF_ENTITY_ID, EntityResolver
from agent_memory.rules.vocabulary import normalise_value
from agent_memory.services.facts.fact_kinds import FACT_KINDS, RECORD_KINDS, PlanInputs, ReconcileSettings
from agent_memory.services.facts.fact_kinds import Write as _Write

Fact = Attribute | Relation
Kind = Literal["attribute", "relation"]
MAX_STATED_AT = 64  # restatements kept per row (the latest); older ones only coarsen a late split


@dataclass
class EntityTouch:
    """An entity the turn mentioned. New ones are written create-only; for existing ones
    ``entity`` is the stored row with ``updated_at`` (and a newly learned ``name``) set."""

    entity: Entity
    is_new: bool


@dataclass
class Supersession:
    old_id: str
    new_id: str
    valid_until: str
    updated: Fact  # the old row as it must be written back


@dataclass
class Close:
    old_id: str
    valid_until: str
    updated: Fact


@dataclass
class Reinforcement:
    id: str
    importance: float
    last_seen_at: str
    updated: Fact


@dataclass
class ReconcilePlan:
    entities: list[EntityTouch] = field(default_factory=list)
    # The records the write creates, by kind (every kind of ``RECORD_KINDS``, registry order).
    created: dict[str, list] = field(default_factory=lambda: {k.kind: [] for k in RECORD_KINDS})
    supersessions: list[Supersession] = field(default_factory=list)
    closes: list[Close] = field(default_factory=list)
    reinforcements: list[Reinforcement] = field(default_factory=list)
    corrections: list[CorrectionSummary] = field(default_factory=list)
    # Existing rows whose window or chain links moved (an out-of-order value placed among them).
    adjustments: list[Fact] = field(default_factory=list)

    @property
    def inserts(self) -> list[Attribute]:
        return self.created["attribute"]

    @property
    def relation_inserts(self) -> list[Relation]:
        return self.created["relation"]

    @property
    def actions(self) -> list[Action]:
        return self.created["action"]

    @property
    def instructions(self) -> list[Instruction]:
        return self.created["instruction"]

    @property
    def uncertainties(self) -> list[Uncertainty]:
        return self.created["uncertainty"]

    def updated_rows(self) -> list[Fact]:
        """Every existing row the plan changes, once each, in its final state."""
        rows: dict[str, Fact] = {}
        for row in self.adjustments:
            rows[row.id] = row
        for change in (*self.supersessions, *self.closes, *self.reinforcements):
            rows[change.updated.id] = change.updated
        return list(rows.values())

    def to_result(self, turn_id: str) -> ExtractionResult:
        """The write's ``ExtractionResultJson`` (``.to_wire()`` for the camelCase dict): each
        kind's records summarised by its registry entry."""
        lists = {k.field: [k.summarise(r) for r in (self.entities if k.kind == "entity" else self.created[k.kind])]
                 for k in FACT_KINDS if k.summarise is not None}
        return ExtractionResult(turn_id=turn_id, **lists, corrections=list(self.corrections))


# ---------------------------------------------------------------------------
# Claims: the extraction's attributes and relations, resolved and normalised
# ---------------------------------------------------------------------------


@dataclass
class _Claim:
    kind: Kind
    entity_id: str
    key: str
    value: str  # attribute value, or the relation's object entity id
    cardinality: vocab.Cardinality
    negated: bool
    category: str
    confidence: float
    valid_from: datetime
    valid_until: datetime | None = None
    timed: bool = False  # valid_from came from an event-time phrase, not the clock

    @property
    def slot(self) -> tuple[Kind, str, str]:
        return (self.kind, self.entity_id, self.key)


def _same(a: str, b: str) -> bool:
    return normalise_value(a) == normalise_value(b)


def _row_value(row: Fact) -> str:
    return row.value if isinstance(row, Attribute) else row.object


@dataclass(frozen=True)
class Slots:
    """What reconciliation needs loaded: current attributes per (entity, key) and current
    relations per (subject, label)."""

    attributes: frozenset[tuple[str, str]]
    relations: frozenset[tuple[str, str]]
    entity_ids: frozenset[str]


def slots(extraction: ExtractionOutput, resolver: EntityResolver) -> Slots:
    """The slots an extraction touches, resolved with the same resolver ``reconcile`` uses."""
    _register_entities(extraction, resolver)
    attrs, rels, ents = set(), set(), set()
    for a in extraction.attributes:
        eid = resolver.resolve(a.entity, a.entity_type)
        if eid and a.key.strip() and key_fits(vocab.normalise_key(a.key)):
            attrs.add((eid, vocab.normalise_key(a.key)))
            ents.add(eid)
    for r in extraction.relations:
        subject, obj = resolver.resolve(r.subject, r.subject_type), resolver.resolve(r.object, r.object_type)
        if subject and obj and r.label.strip() and key_fits(vocab.normalise_label(r.label)):
            rels.add((subject, vocab.normalise_label(r.label)))
            ents.update((subject, obj))
    return Slots(frozenset(attrs), frozenset(rels), frozenset(ents))


def _register_entities(extraction: ExtractionOutput, resolver: EntityResolver) -> None:
    for e in extraction.entities:
        resolver.resolve(e.name, e.type)


# ---------------------------------------------------------------------------
# The plan builder
# ---------------------------------------------------------------------------


class _Planner:
    def __init__(self, write: _Write, resolver: EntityResolver, current: Iterable[Fact]):
        self.w = write
        self.resolver = resolver
        self.plan = ReconcilePlan()
        self.rows: dict[tuple[Kind, str, str], list[Fact]] = {}
        for row in current:
            kind: Kind = "attribute" if isinstance(row, Attribute) else "relation"
            if isinstance(row, Attribute):
                slot = (kind, row.entity_id, vocab.normalise_key(row.key))
            else:
                slot = (kind, row.subject, vocab.normalise_label(row.label))
            self.rows.setdefault(slot, []).append(row)

    # -- lookups ------------------------------------------------------------------

    def current(self, claim: _Claim) -> list[Fact]:
        return [r for r in self.rows.get(claim.slot, [])
                if r.is_current and normalise_dnf(r.scopes) == self.w.scopes]

    def replace(self, claim: _Claim, row: Fact) -> None:
        rows = self.rows[claim.slot]
        rows[:] = [row if r.id == row.id else r for r in rows]

    def name(self, eid: str) -> str:
        return self.resolver.names.get(eid) or split_entity_id(eid)[1]

    def shown(self, claim: _Claim, value: str) -> str:
        return self.name(value) if claim.kind == "relation" else value

    # -- row factories ----------------------------------------------------------------

    def new_row(self, claim: _Claim) -> Fact:
        w = self.w
        common = dict(
            context_id=w.context_id, category=claim.category, importance=vocab.initial_importance(claim.category),
            confidence=claim.confidence, valid_from=timeutil.iso(claim.valid_from),
            valid_until=timeutil.iso(claim.valid_until) if claim.valid_until else None,
            source=dataclasses.replace(w.source), scopes=[list(c) for c in w.scopes], labels=list(w.labels),
            created_at=w.now, created_by=w.created_by, last_seen_at=w.now, said_at=timeutil.iso(w.observed),
        )
        if claim.kind == "attribute":
            row: Fact = Attribute(id=new_id("attr"), entity_id=claim.entity_id, key=claim.key, value=claim.value,
                                  **common)
        else:
            row = Relation(id=new_id("rel"), subject=claim.entity_id, label=claim.key, object=claim.value, **common)
        self.plan.created[claim.kind].append(row)
        return row

    def uncertainty(self, claim: _Claim, reason: str) -> None:
        words = claim.key.replace("_", " ")
        value = self.shown(claim, claim.value) or "(any value)"
        about = f"Whether {self.name(claim.entity_id)}'s {words} {'is no longer' if claim.negated else 'is'} {value}."
        self.plan.uncertainties.append(Uncertainty(
            id=new_id("unc"), context_id=self.w.context_id, about=about, reason=reason, entity_id=claim.entity_id,
            key=claim.key, proposed_value=claim.value, source=dataclasses.replace(self.w.source),
            scopes=[list(c) for c in self.w.scopes], labels=list(self.w.labels), created_at=self.w.now,
            created_by=self.w.created_by))

    def correction(self, claim: _Claim, old: Fact, new_value: str) -> None:
        self.plan.corrections.append(CorrectionSummary(
            entity_id=claim.entity_id, key=claim.key, old_value=_row_value(old), new_value=new_value))

    # -- the rules --------------------------------------------------------------------

    def protected(self, claim: _Claim, rows: Sequence[Fact]) -> bool:
        """A turn may not replace authoritative rows; record the claim as an uncertainty."""
        locked = [r for r in rows if r.source.authoritative] if not self.w.source.authoritative else []
        if locked:
            old = locked[0]
            self.uncertainty(claim, f"A conversation {'denied' if claim.negated else 'said'} "
                                    f"{self.shown(claim, claim.value)!r}, but the {old.source.kind} record says "
                                    f"{self.shown(claim, _row_value(old))!r}; the recorded value is kept.")
        return bool(locked)

    def apply(self, claim: _Claim) -> None:
        if claim.confidence < self.w.settings.confidence_floor:
            self.uncertainty(claim, f"Stated with low confidence ({claim.confidence:.2f}, below "
                                    f"{self.w.settings.confidence_floor:.2f}); not stored as a current value.")
            return
        rows = self.current(claim)
        if claim.negated:
            self.negate(claim, rows)
        elif claim.valid_until is not None:
            self.ended(claim, rows)
        else:
            self.state(claim, rows)

    def chain(self, claim: _Claim) -> list[Fact]:
        """Every live row of the claim's slot in the write's scope, history included, in
        event-time order (ties in the order they were written)."""
        rows = [r for r in self.rows.get(claim.slot, [])
                if not r.deleted and normalise_dnf(r.scopes) == self.w.scopes]
        return sorted(rows, key=lambda r: (r.valid_from or "", r.created_at or "", r.id))

    def latest(self, row: Fact) -> Fact:
        return next((r for rows in self.rows.values() for r in rows if r.id == row.id), row)

    def adjust(self, claim: _Claim, row: Fact, **changes: object) -> Fact:
        """Rewrite a row of the slot (its window or links moved)."""
        created = next((r for r in self.plan.created[claim.kind] if r.id == row.id), None)
        if created is not None:  # made by this plan: its insert carries the change
            for name, value in changes.items():
                setattr(created, name, value)
            return created
        updated = dataclasses.replace(self.latest(row), **changes)
        self.plan.adjustments.append(updated)
        self.replace(claim, updated)
        return updated

    def state(self, claim: _Claim, rows: list[Fact]) -> None:
        """A positive claim without its own end, placed by its event time (module docstring)."""
        if claim.cardinality == "multi":
            self.state_multi(claim)
            return
        at = timeutil.iso(claim.valid_from)
        chain = self.chain(claim)
        last = chain[-1] if chain else None
        if last is not None and at < (last.valid_from or "") <= timeutil.iso(self.w.observed):
            if _same(_row_value(last), claim.value):
                self.reinforce(last)
            elif not self.protected(claim, rows):
                self.retroactive(claim, chain, at)
            return
        before = [r for r in chain if (r.valid_from or "") <= at]
        # The row whose window holds ``at``: a retracted row (closed empty, valid_from ==
        # valid_until, when a later statement about an earlier time replaced it) sorts after
        # the value that replaced it but holds nothing.
        holding = [r for r in before if r.valid_until is None or r.valid_until > at]
        prev = holding[-1] if holding else (before[-1] if before else None)
        nxt = next((r for r in chain if (r.valid_from or "") > at), None)
        prev_open = prev is not None and (prev.valid_until is None or prev.valid_until > at)
        restated_later = [t for t in prev.stated_at if t > at] if prev is not None and prev_open else []
        if prev is not None and prev_open and _same(_row_value(prev), claim.value):
            self.reinforce(prev, at)
            return
        if nxt is not None and _same(_row_value(nxt), claim.value) and not restated_later:
            # The same value, known earlier than we had it: its window starts sooner.
            if prev is not None and prev_open:
                self.adjust(claim, prev, valid_until=at, superseded_by=nxt.id)
                self.adjust(claim, nxt, valid_from=at, supersedes=prev.id)
            else:
                self.adjust(claim, nxt, valid_from=at)
            self.reinforce(nxt, nxt.valid_from)  # its old start stays evidence
            return
        if self.protected(claim, rows):
            return
        new = self.new_row(claim)
        if restated_later:
            # Inside a window whose value was stated again after this claim: split it.
            assert prev is not None
            nxt = self.split(claim, prev, restated_later)
            new.valid_until, new.superseded_by = nxt.valid_from, nxt.id
            self.adjust(claim, nxt, supersedes=new.id)
        else:
            ends = [t for t in ((prev.valid_until if prev is not None and prev_open else None),
                                (nxt.valid_from if nxt is not None else None)) if t is not None]
            new.valid_until = min(ends) if ends else None
            if nxt is not None and new.valid_until == nxt.valid_from:
                new.superseded_by = nxt.id
                self.adjust(claim, nxt, supersedes=new.id)
        if prev is not None and prev_open:
            new.supersedes = prev.id
            if prev.valid_until is None and not restated_later:
                self.correction(claim, prev, claim.value)
            updated = self.adjust(claim, prev, valid_until=at, superseded_by=new.id,
                                  stated_at=[t for t in prev.stated_at if t <= at])
            self.plan.supersessions.append(Supersession(prev.id, new.id, at, updated))

    def split(self, claim: _Claim, row: Fact, restated: list[str]) -> Fact:
        """The part of ``row``'s window from its first restatement in ``restated`` on, as a
        new row of the same value that takes over ``row``'s end and successor."""
        row = self.latest(row)
        tail = dataclasses.replace(row, id=new_id("attr" if claim.kind == "attribute" else "rel"),
                                   valid_from=restated[0], stated_at=restated[1:], supersedes=row.id,
                                   created_at=self.w.now, reinforced=0)
        self.plan.created[claim.kind].append(tail)
        self.rows[claim.slot].append(tail)
        if row.superseded_by:
            successor = next((r for r in self.rows[claim.slot] if r.id == row.superseded_by), None)
            if successor is not None:
                self.adjust(claim, successor, supersedes=tail.id)
        return tail

    def retroactive(self, claim: _Claim, chain: list[Fact], at: str) -> None:
        """Said after the latest row began, about a time before it ("I moved to Berlin last
        month"): news, so it becomes current from its event time; rows that began after that
        are retracted (their windows close empty) and the one it falls in is cut there."""
        new = self.new_row(claim)
        last = chain[-1]
        new.supersedes = last.id
        for row in chain:
            if (row.valid_from or "") > at:
                changes: dict[str, object] = {"valid_until": row.valid_from}
                if row.id == last.id:
                    changes["superseded_by"] = new.id
                    if row.is_current:
                        self.correction(claim, row, claim.value)
                updated = self.adjust(claim, row, **changes)
                if row.id == last.id:
                    self.plan.supersessions.append(Supersession(row.id, new.id, updated.valid_until or "", updated))
            elif row.valid_until is None or row.valid_until > at:
                self.adjust(claim, row, valid_until=at)

    def state_multi(self, claim: _Claim) -> None:
        """Each value of a multi-valued slot has its own window: a claim inside one
        reinforces it, one just before it starts it sooner, any other opens a new one."""
        at = timeutil.iso(claim.valid_from)
        same = [r for r in self.chain(claim) if _same(_row_value(r), claim.value)]
        covering = [r for r in same if (r.valid_from or "") <= at and (r.valid_until is None or r.valid_until > at)]
        if covering:
            self.reinforce(covering[-1])
            return
        later = [r for r in same if (r.valid_from or "") > at]
        if later:
            self.adjust(claim, later[0], valid_from=at)
            self.reinforce(later[0], later[0].valid_from)
            return
        self.new_row(claim)

    def negate(self, claim: _Claim, rows: list[Fact]) -> None:
        if claim.value:
            targets = [r for r in rows if _same(_row_value(r), claim.value)]
        else:
            targets = rows if claim.cardinality == "single" else []
        if not targets or self.protected(claim, targets):
            return
        for old in targets:
            self.close(claim, old, claim.valid_from)

    def ended(self, claim: _Claim, rows: list[Fact]) -> None:
        """A claim with its own end ("worked with Carol until 2022")."""
        targets = [r for r in rows if _same(_row_value(r), claim.value)]
        if targets and not self.protected(claim, targets):
            for old in targets:
                self.close(claim, old, claim.valid_until or claim.valid_from)
        elif not targets:
            self.new_row(claim)

    def close(self, claim: _Claim, old: Fact, at: datetime) -> None:
        until = max(timeutil.iso(at), old.valid_from or "")
        updated = dataclasses.replace(old, valid_until=until)
        self.plan.closes.append(Close(old.id, until, updated))
        self.replace(claim, updated)
        self.correction(claim, old, "")

    def reinforce(self, old: Fact, at: str | None = None) -> None:
        """The same value stated again (``at``: the statement's event time, kept as evidence)."""
        old = self.latest(old)
        importance = round(min(1.0, old.importance + self.w.settings.reinforce_step), 6)
        stated = old.stated_at
        if at is not None and at > (old.valid_from or "") and at not in stated:
            stated = sorted([*stated, at])[-MAX_STATED_AT:]
        updated = dataclasses.replace(old, importance=importance, last_seen_at=self.w.now,
                                      reinforced=old.reinforced + 1, stated_at=stated)
        self.plan.reinforcements.append(Reinforcement(old.id, importance, self.w.now, updated))
        for rows in self.rows.values():
            rows[:] = [updated if r.id == old.id else r for r in rows]


def collapse(claims: list[_Claim]) -> list[_Claim]:
    """One outcome per single-valued slot / multi-valued slot value (module docstring).

    A kept claim without an event time borrows one from an earlier claim of the same value
    ("I moved to Berlin last week. I live in Berlin." keeps "last week")."""
    groups: dict[tuple[Kind, str, str], list[int]] = {}
    for i, c in enumerate(claims):
        groups.setdefault(c.slot, []).append(i)
    keep: set[int] = set()
    for indexes in groups.values():
        if claims[indexes[-1]].cardinality == "multi":
            last: dict[str, int] = {normalise_value(claims[i].value): i for i in indexes}
            keep.update(last.values())
            continue
        positives = [i for i in indexes if not claims[i].negated]
        if not positives:
            keep.update({normalise_value(claims[i].value): i for i in indexes}.values())
            continue
        winner = positives[-1]
        cancels = [i for i in indexes if i > winner and claims[i].negated
                   and (not claims[i].value or _same(claims[i].value, claims[winner].value))]
        keep.add(cancels[-1] if cancels else winner)
    return [_borrow_time(claims, i) for i in sorted(keep)]


def _borrow_time(claims: list[_Claim], index: int) -> _Claim:
    claim = claims[index]
    if claim.timed:
        return claim
    for earlier in reversed(claims[:index]):
        if earlier.timed and earlier.slot == claim.slot and earlier.negated == claim.negated \
                and _same(earlier.value, claim.value):
            return dataclasses.replace(claim, valid_from=earlier.valid_from, timed=True)
    return claim


def _claims(extraction: ExtractionOutput, resolver: EntityResolver, write: _Write) -> list[_Claim]:
    out: list[_Claim] = []
    for a in extraction.attributes:
        eid, key, value = resolver.resolve(a.entity, a.entity_type), vocab.normalise_key(a.key), a.value.strip()
        if not eid or not key or not key_fits(key) or (not value and not a.negated):
            continue
        cat = vocab.category(key, a.category)
        until = resolve_event_time(a.valid_until, write.observed) if a.valid_until else None
        out.append(_Claim("attribute", eid, key, value, vocab.cardinality(key, a.cardinality), a.negated, cat,
                          a.confidence, write.event_time(a.valid_from), until, timed=write.timed(a.valid_from)))
    for r in extraction.relations:
        subject, obj = resolver.resolve(r.subject, r.subject_type), resolver.resolve(r.object, r.object_type)
        label = vocab.normalise_label(r.label)
        if not subject or not obj or not label or not key_fits(label):
            continue
        until = resolve_event_time(r.valid_until, write.observed) if r.valid_until else None
        out.append(_Claim("relation", subject, label, obj, vocab.label_cardinality(label), r.negated,
                          vocab.label_category(label, r.category), 1.0, write.event_time(r.valid_from), until,
                          timed=write.timed(r.valid_from)))
    return out


def _entities(extraction: ExtractionOutput, resolver: EntityResolver, plan: ReconcilePlan,
              write: _Write) -> list[EntityTouch]:
    mentioned: dict[str, str | None] = {}  # id -> model category
    for e in extraction.entities:
        eid = resolver.resolve(e.name, e.type)
        if eid:
            mentioned.setdefault(eid, e.category)
    # Then every entity a claim names, kind by kind and field by field (the registry's
    # ``claim_names``: attributes' entity, relations' subject then object, actions' actor).
    refs = [(getattr(claim, name), getattr(claim, f"{name}_type")) for kind in FACT_KINDS
            for name in kind.claim_names for claim in getattr(extraction, kind.field)]
    for name, etype in refs:
        eid = resolver.resolve(name, etype)
        if eid:
            mentioned.setdefault(eid, None)
    learned = {a.entity_id: a.value for a in plan.inserts if a.key == "name" and a.valid_until is None}
    touches = []
    for eid, model_category in mentioned.items():
        name = learned.get(eid) or resolver.names.get(eid) or split_entity_id(eid)[1]
        existing = resolver.existing.get(eid)
        if existing is not None:
            # The entity is visible to whoever may see a fact about it: its scopes gain this
            # write's (the repository writes the row only when that widens them).
            touches.append(EntityTouch(dataclasses.replace(existing, name=name, updated_at=write.now,
                                                           scopes=scope_union(existing.scopes, write.scopes)), False))
            continue
        cat = "identity" if eid == SELF_ENTITY_ID else vocab.known_category(model_category or vocab.DEFAULT_CATEGORY)
        touches.append(EntityTouch(Entity(
            id=eid, context_id=write.context_id, name=name, entity_type=split_entity_id(eid)[0], category=cat,
            importance=vocab.initial_importance(cat), scopes=[list(c) for c in write.scopes],
            labels=list(write.labels), created_at=write.now, updated_at=write.now, created_by=write.created_by),
            True))
    return touches


def reconcile(
    extraction: ExtractionOutput,
    *,
    source: Source,
    current_attributes: Iterable[Attribute] = (),
    current_relations: Iterable[Relation] = (),
    current_instructions: Sequence[Instruction] = (),
    existing_entities: Iterable[Entity] = (),
    resolver: EntityResolver | None = None,
    speaker_name: str | None = None,
    scopes: object = None,
    labels: Sequence[str] = (),
    context_id: str = "",
    created_by: str | None = None,
    observed_at: datetime | None = None,
    now: datetime | None = None,
    settings: ReconcileSettings | None = None,
) -> ReconcilePlan:
    """Plan the changes one extraction makes (see the module docstring for the rules).

    ``resolver`` defaults to an ``EntityResolver`` over ``existing_entities`` and
    ``speaker_name``; pass the one used for ``slots()`` to share its decisions.
    ``current_*`` may contain rows of other slots, scopes or closed rows: they are ignored.
    """
    clock = now or timeutil.now()
    write = _Write(source=source, scopes=normalise_dnf(scopes), labels=sorted(set(labels)), context_id=context_id,
                   created_by=created_by, observed=observed_at or clock, now=timeutil.iso(clock),
                   settings=settings or ReconcileSettings())
    resolver = resolver or EntityResolver(existing_entities, speaker_name=speaker_name)
    _register_entities(extraction, resolver)
    planner = _Planner(write, resolver, [*current_attributes, *current_relations])
    for claim in collapse(_claims(extraction, resolver, write)):
        planner.apply(claim)
    plan = planner.plan
    # The other kinds' own steps, in registry order (after the slot planner's uncertainties).
    inputs = PlanInputs(write, resolver, {"instruction": current_instructions})
    for kind in RECORD_KINDS:
        if kind.plan is not None:
            plan.created[kind.kind].extend(kind.plan(getattr(extraction, kind.field), inputs))
    plan.entities = _entities(extraction, resolver, plan, write)
    return plan

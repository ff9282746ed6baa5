"""Search projection: which stored records become search units, and how. (Running it after
each local write, in the background and from an outbox, is ``projector.py``.)

``units_for`` is a pure mapping from a stored record to the units it projects to. It is
called by the ``projector`` Lambda on each DynamoDB stream record and, locally, by
``ProjectingRecordStore`` after each committed write (the embedded stand-in for streams).
A record's ``version`` is the unit's ``revision``, so a stale stream record never
overwrites a newer unit. Superseded or closed facts stay in the index with their
``valid_until`` (``asOf`` reads find them; "current" searches exclude them); deleted and
forgotten records are removed.

Projection builders register per record ``kind`` (``turn``, ``attribute``, ``chunk``...):
the turn builder with ``@projects`` below; the fact kinds' builders (declared with their
kind in ``fact_kinds``) and the chunk and thread-turn builders (kept next to their own
collections in ``document_units`` / ``thread_units``, which do not import this module)
explicitly at the bottom of this module.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_memory.models.records import Turn
from agent_memory.ports import (
    Record,
    SearchIndex,
    SearchUnit,
)
from agent_memory.rules.questions import asks_only
from agent_memory.services.conversation import thread_units
from agent_memory.services.documents import units as document_units
from agent_memory.services.facts.fact_kinds import FACT_KINDS, with_entities
from agent_memory.services.facts.speakers import turn_speaker

log = logging.getLogger("agent_memory.projection")

UnitBuilder = Callable[[dict[str, Any], int], list[SearchUnit]]
_BUILDERS: dict[str, UnitBuilder] = {}


def projects(kind: str) -> Callable[[UnitBuilder], UnitBuilder]:
    def register(fn: UnitBuilder) -> UnitBuilder:
        _BUILDERS[kind] = fn
        return fn

    return register


def is_projected(data: dict[str, Any] | None) -> bool:
    return bool(data) and data.get("kind") in _BUILDERS


@dataclass
class ProjectionChange:
    upserts: list[SearchUnit] = field(default_factory=list)
    deletes: dict[str, list[str]] = field(default_factory=dict)  # context -> unit ids

    def delete(self, context_id: str, unit_id: str) -> None:
        self.deletes.setdefault(context_id, []).append(unit_id)

    def __bool__(self) -> bool:
        return bool(self.upserts or self.deletes)


def change_for(new: Record | None, old: Record | None) -> ProjectionChange:
    """The index change for one stored record going from ``old`` to ``new`` (None = absent).
    Upserted units carry the record's key, so readers can check them against the store."""
    change = ProjectionChange()
    if new is not None and is_projected(new.data) and not new.data.get("deleted") \
            and new.data.get("active", True):
        for unit in _BUILDERS[new.data["kind"]](new.data, new.version):
            unit.record_key = [new.pk, new.sk]
            change.upserts.append(unit)
        return change
    gone = new if new is not None else old
    if gone is not None and is_projected(gone.data):
        for unit in _BUILDERS[gone.data["kind"]](gone.data, gone.version):
            change.delete(unit.context_id, unit.id)
    return change


def collapse(changes: Sequence[ProjectionChange]) -> ProjectionChange:
    """One change equivalent to applying ``changes`` in order: per (context, unit) only the
    last operation survives. A stream batch holds each item's records in commit order, so
    the last one is the newest revision (a re-created record restarts its version, so order,
    not version, decides), and the batch becomes one index write."""
    last: dict[tuple[str, str], SearchUnit | None] = {}
    for change in changes:
        for unit in change.upserts:
            last.pop((unit.context_id, unit.id), None)
            last[(unit.context_id, unit.id)] = unit
        for context_id, ids in change.deletes.items():
            for unit_id in ids:
                last.pop((context_id, unit_id), None)
                last[(context_id, unit_id)] = None
    out = ProjectionChange()
    for (context_id, unit_id), unit in last.items():
        if unit is None:
            out.delete(context_id, unit_id)
        else:
            out.upserts.append(unit)
    return out


def evidence_partitions(change: ProjectionChange) -> set[tuple[str, str]]:
    """The (context, partition) pairs where ``change`` makes new evidence searchable: any
    upserted unit but an assistant reply or a user turn that only asks (neither is evidence,
    docs/decisions.md). The response cache's write mark moves for these (``runtime``)."""
    return {(u.context_id, u.partition) for u in change.upserts
            if not (u.kind == "turn" and (u.role == "assistant" or asks_only(u.text)))}


def apply(index: SearchIndex, change: ProjectionChange) -> None:
    """Apply ``change``: in one request when the index takes batched writes."""
    if not change:
        return
    write = getattr(index, "write", None)  # a wrapper (the circuit breaker) forwards it
    if callable(write):
        write(change.upserts, change.deletes)
        return
    if change.upserts:
        index.upsert(change.upserts)
    for context_id, ids in change.deletes.items():
        index.delete(context_id, ids)


def build_units(data: dict[str, Any], version: int) -> list[SearchUnit]:
    """The units a stored record's ``data`` projects to (``[]`` for kinds not projected).
    Retrieval renders facts it reads from the store with this, so a fact found by a
    structured read and the same fact found by search look the same."""
    builder = _BUILDERS.get((data or {}).get("kind"))
    return builder(data, version) if builder else []


# Every unit carries the ids of the entities it is about as labels (``fact_kinds.with_entities``).

@projects("turn")
def _turn_units(data: dict[str, Any], version: int) -> list[SearchUnit]:
    """A turn's text is what was said, as written. It is about its speaker, a field of the
    write (``services/facts/speakers.py``); a user turn without one is about the context's user.
    A chat reply that cited no memory (``unsupported``: a refusal) projects to nothing: it is
    not evidence of anything, and indexed it would answer the next question with itself."""
    turn = Turn.from_item(data)
    if turn.unsupported:
        return []
    speaker, entity = turn_speaker(turn)
    metadata: dict[str, Any] = {"seq": turn.seq}
    if speaker:
        metadata["speaker"] = speaker
    return [SearchUnit(
        id=turn.id, context_id=turn.context_id, kind="turn", text=turn.content, revision=version,
        partition=turn.partition, scopes=turn.scopes, labels=with_entities(turn.labels, [entity] if entity else []),
        role=turn.role, session_id=turn.session, entity_ids=[entity] if entity else [],
        # valid from when it was said: a point-in-time read (asOf) never sees what was said later
        occurred_at=turn.observed_at, valid_from=turn.observed_at, metadata=metadata,
    )]


# The fact kinds' builders (``fact_kinds.FACT_KINDS``) and those that live beside their own
# collections, registered here explicitly, so every path that projects (runtime, projector
# function, reindex) knows them all.
for _kind in FACT_KINDS:
    if _kind.project is not None:
        projects(_kind.kind)(_kind.project)
projects("chunk")(document_units.chunk_units)
projects("thread_turn")(thread_units.thread_turn_units)

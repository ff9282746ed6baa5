"""A write's turns in transactions: which turns commit together, and what one transaction's
facts may take.

``plan_turn_transactions`` cuts a batch's turns into appends: a turn with facts alone (so a
later turn reconciles against what an earlier one stored), the turns without between them
together. Inside each append attempt ``TurnPlanner.ops`` plans every turn's facts
(``FactsService.plan_ops``) within what the transaction holds beside the turn rows, keeping the
first half of a model extraction that states more (``extraction.halving``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel.errors import PayloadTooLarge
from agent_memory.kernel.stored_item import TRANSACT_BATCH_BYTES, batches, op_bytes
from agent_memory.models.conversation_records import Session
from agent_memory.models.extraction import ExtractionOutput, ExtractionResult
from agent_memory.models.records import Turn
from agent_memory.ports import MAX_TRANSACT_OPS, WriteOp
from agent_memory.services.conversation.sessions import NewTurn, planned_session_bytes, planned_turn_bytes
from agent_memory.services.facts.extraction.halving import extraction_size, halve
from agent_memory.services.facts.reconcile import ReconcilePlan

#: One turn's facts planned (``FactsService.plan_ops``): the plan and its operations.
PlanTurn = Callable[["PendingTurn", str], tuple[ReconcilePlan, list[WriteOp]]]


@dataclass
class PendingTurn:
    """One turn of a write, with what its extraction produced (before reconciliation)."""

    role: str
    text: str
    observed_at: str | None
    infer: str
    extraction: ExtractionOutput | None
    source_kind: str = "turn"
    speaker: dict[str, str] | None = None  # stored form (services/facts/speakers.py)
    unsupported: bool = False  # a chat reply that cited no memory: stored, never evidence

    def new_turn(self) -> NewTurn:
        """The turn row's content, as ``SessionService.append_turns`` takes it."""
        return NewTurn(self.role, self.text, self.observed_at, self.infer, self.speaker, self.unsupported)


def plan_turn_transactions(ctx: RequestContext, session: Session, pending: Sequence[PendingTurn],
                           scopes: list[list[str]], labels: list[str]) -> list[list[PendingTurn]]:
    """``pending`` in order, cut into the appends of one transaction each: a turn with an
    extraction alone (its facts are planned against what the earlier turns stored), the runs
    of turns without one together, each run within ``MAX_TRANSACT_OPS`` and
    ``TRANSACT_BATCH_BYTES`` with the session row (sizes as ``kernel.stored_item`` counts them)."""
    session_bytes = planned_session_bytes(ctx, session)
    groups: list[list[PendingTurn]] = []
    run: list[PendingTurn] = []

    def size(p: PendingTurn) -> int:
        return planned_turn_bytes(ctx, session, p.new_turn(), scopes, labels)

    for p in pending:
        if p.extraction is not None:
            groups += batches(run, size, max_count=MAX_TRANSACT_OPS - 1,
                              max_bytes=TRANSACT_BATCH_BYTES - session_bytes) + [[p]]
            run = []
        else:
            run.append(p)
    return groups + batches(run, size, max_count=MAX_TRANSACT_OPS - 1, max_bytes=TRANSACT_BATCH_BYTES - session_bytes)


class TurnPlanner:
    """Builds the fact operations for freshly numbered turns (called inside the append
    transaction attempt, so every retry re-plans against current state): ``plan_turn(pending,
    turn_id)`` plans one turn's facts."""

    def __init__(self, pending: Sequence[PendingTurn], plan_turn: PlanTurn,
                 extra: Callable[[list[Turn], list[ExtractionResult | None]], list[WriteOp]] | None = None):
        self.pending, self.plan_turn, self.extra = pending, plan_turn, extra
        self.results: list[ExtractionResult | None] = []

    def ops(self, rows: list[Turn], own: Sequence[WriteOp] = ()) -> list:
        """The fact operations of ``rows`` (``own``: what the append commits with them, the
        session row and the turn rows), within what one transaction holds beside ``own``:
        ``MAX_TRANSACT_OPS`` operations and ``TRANSACT_BATCH_BYTES`` (``kernel.stored_item``)."""
        tail = self.extra(rows, []) if self.extra is not None else []
        ops: list = []
        self.results = []
        used_bytes = sum(op_bytes(op) for op in (*own, *tail))
        for row, p in zip(rows, self.pending, strict=True):
            if p.extraction is None:
                self.results.append(None)
                continue
            budget = MAX_TRANSACT_OPS - len(own) - len(tail) - len(ops)  # the turns, session row, extra
            byte_budget = TRANSACT_BATCH_BYTES - used_bytes
            extraction = p.extraction
            while True:
                plan, turn_ops = self.plan_turn(replace(p, extraction=extraction), row.id)
                turn_bytes = sum(op_bytes(op) for op in turn_ops)
                if len(turn_ops) <= budget and turn_bytes <= byte_budget:
                    break
                if p.source_kind != "turn":
                    raise PayloadTooLarge("these facts need more than one transaction; send fewer triples "
                                          "per request")
                # A model extracted more than one atomic write can hold: keep the first half
                # of its claims (statement order) and the entities they name, and say what
                # was left out. Each halving strictly shrinks the extraction, so this ends.
                smaller = halve(extraction, p.extraction)
                if extraction_size(smaller) >= extraction_size(extraction):
                    raise PayloadTooLarge("this turn needs more than one transaction even without its facts; "
                                          "send fewer turns per request")
                extraction = smaller
            ops.extend(turn_ops)
            used_bytes += turn_bytes
            self.results.append(plan.to_result(row.id))
        if self.extra is not None:  # again, now that what the facts do is known (the same rows)
            tail = self.extra(rows, self.results)
        return ops + tail

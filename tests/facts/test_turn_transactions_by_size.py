"""POST /facts/batch plans its turns into transactions by size as well as count: the turns
without facts between two that have some commit together, as many as one transaction holds
(``MAX_TRANSACT_OPS`` operations and ``TRANSACT_BATCH_BYTES``, DynamoDB's 4 MB less one
item's margin, sizes as ``kernel.stored_item`` counts them). A batch at the budget commits in
one transaction, one byte more and one over 4 MB in more than one; every turn is stored once,
in order. Runs on SQLite and DynamoDB (moto)."""

from __future__ import annotations

import pytest

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.stored_item import TRANSACT_BATCH_BYTES, op_bytes
from agent_memory.models.conversation_records import Session
from agent_memory.models.requests import WriteFactsBatchRequest
from agent_memory.ports import MAX_TRANSACT_BYTES, MAX_TRANSACT_OPS
from agent_memory.services.conversation.sessions import NewTurn, planned_session_bytes, planned_turn_bytes
from agent_memory.services.facts.write import PendingTurn, plan_turn_transactions

pytestmark = pytest.mark.service

RC = RequestContext(context_id="acme", principal="local-admin", admin=True)
BIG = 60_000  # characters a turn (under limits.facts_text_bytes)


@pytest.fixture
def written(runtime, monkeypatch):
    """The session a first write made, and every transaction of the store from then on."""
    sid = runtime.facts.write_batch(RC, WriteFactsBatchRequest(messages=[{"content": "hello"}], infer="none")).session_id
    transactions: list[list] = []
    transact = runtime.store.transact

    def spy(ops):
        transactions.append(list(ops))
        return transact(ops)

    monkeypatch.setattr(runtime.store, "transact", spy)
    session = Session.from_item(runtime.store.get(keys.sessions_pk(RC), sid).data)
    return runtime, session, transactions


def contents_totalling(session: Session, total: int) -> list[str]:
    """Turn texts whose rows and the session row add up to ``total`` bytes as planned."""
    def row(text: str) -> int:
        return planned_turn_bytes(RC, session, NewTurn("user", text, None, "none"), [], [])

    overhead = row("x") - 1
    left = total - planned_session_bytes(RC, session)
    texts = []
    while left > BIG + overhead:
        texts.append(f"{len(texts):04d}" + "x" * (BIG - 4))
        left -= row(texts[-1])
    texts.append(f"{len(texts):04d}" + "y" * (left - overhead - 4))
    assert planned_session_bytes(RC, session) + sum(row(t) for t in texts) == total
    return texts


def write(runtime, session: Session, texts: list[str]) -> list[str]:
    req = WriteFactsBatchRequest(messages=[{"content": t} for t in texts], infer="none", sessionId=session.id)
    return runtime.facts.write_batch(RC, req).turn_ids


def stored_turns(runtime, session_id: str) -> list:
    out, after = [], None
    while True:
        page = runtime.store.query(keys.turns_pk(RC, session_id), after=after, limit=100)
        out += page.records
        if not (after := page.last_key):
            return out


def check_committed(runtime, session: Session, texts: list[str], ids: list[str], transactions: list[list]) -> None:
    rows = stored_turns(runtime, session.id)
    assert [r.data["content"] for r in rows] == ["hello", *texts]  # nothing lost, repeated or reordered
    assert [r.data["seq"] for r in rows] == list(range(1, len(texts) + 2))
    assert [r.data["id"] for r in rows[1:]] == ids
    assert sum(len(t) - 1 for t in transactions) == len(texts)  # each turn in one transaction, once
    for t in transactions:
        assert len(t) <= MAX_TRANSACT_OPS and sum(op_bytes(op) for op in t) <= TRANSACT_BATCH_BYTES < MAX_TRANSACT_BYTES


def test_a_batch_at_the_size_budget_commits_in_one_transaction(written):
    runtime, session, transactions = written
    texts = contents_totalling(session, TRANSACT_BATCH_BYTES)
    ids = write(runtime, session, texts)
    assert len(transactions) == 1
    check_committed(runtime, session, texts, ids, transactions)


def test_one_byte_past_the_budget_commits_in_two(written):
    runtime, session, transactions = written
    texts = contents_totalling(session, TRANSACT_BATCH_BYTES + 1)
    ids = write(runtime, session, texts)
    assert len(transactions) == 2
    check_committed(runtime, session, texts, ids, transactions)


def test_a_batch_over_4_mb_commits_in_transactions_within_it(written):
    runtime, session, transactions = written
    texts = contents_totalling(session, MAX_TRANSACT_BYTES + 64 * 1024)
    assert len(texts) < MAX_TRANSACT_OPS - 1  # by count alone it would be one transaction
    ids = write(runtime, session, texts)
    assert len(transactions) == 2
    check_committed(runtime, session, texts, ids, transactions)


def test_turns_with_facts_commit_alone_and_the_runs_between_them_together():
    session = Session(id="ses_x", context_id="acme", scopes=[], created_at="2026-01-01T00:00:00Z")
    from agent_memory.models.extraction import ExtractionOutput

    def turn(i: int, facts: bool) -> PendingTurn:
        return PendingTurn("user", f"t{i}", None, "full", ExtractionOutput() if facts else None)

    pending = [turn(0, False), turn(1, False), turn(2, True), turn(3, True), turn(4, False)] + [
        turn(i, False) for i in range(5, 5 + 150)]
    groups = plan_turn_transactions(RC, session, pending, [], [])
    assert [len(g) for g in groups] == [2, 1, 1, 99, 52]  # 99 turns and the session row: 100 operations
    assert [p for g in groups for p in g] == pending

"""Typed stored records (models/records.py): the store's dict shape round-trips, unknown keys
survive, and a misspelt or missing field fails loudly."""

from __future__ import annotations

import dataclasses

import pytest

from agent_memory.models.conversation_records import Session, Thread
from agent_memory.models.document_records import Document
from agent_memory.models.records import Chunk, Page, ThreadTurn, Turn

SESSION_ITEM = {"kind": "session", "contextId": "acme", "id": "sess_1", "scopes": [["org", "acme"]],
                "labels": ["support"], "createdAt": "2026-01-01T00:00:00.000Z", "createdBy": "alice",
                "closedAt": None, "turnCount": 2, "partition": "default", "lastTurnAt": "2026-01-01T00:00:01.000Z"}


def test_a_session_item_round_trips_and_reads_as_attributes():
    session = Session.from_item(SESSION_ITEM)
    assert session.turn_count == 2 and session.closed_at is None and not session.deleted
    assert session.to_item() == SESSION_ITEM


def test_keys_a_record_does_not_name_are_written_back():
    item = {**SESSION_ITEM, "futureField": {"x": 1}}
    assert Session.from_item(item).to_item() == item


def test_unset_optional_fields_stay_out_of_the_item():
    turn = Turn(id="turn_1", context_id="acme", session="sess_1", role="user", content="hi", seq=1,
                created_at="t", observed_at="t")
    item = turn.to_item()
    assert "speaker" not in item and "deleted" not in item
    assert item["kind"] == "turn" and item["observedAt"] == "t"
    deleted = dataclasses.replace(turn, deleted=True).to_item()
    assert deleted["deleted"] is True


def test_a_missing_required_key_fails_loudly():
    item = dict(SESSION_ITEM)
    del item["createdAt"]
    with pytest.raises(KeyError, match="createdAt"):
        Session.from_item(item)


def test_a_misspelt_attribute_fails_loudly():
    session = Session.from_item(SESSION_ITEM)
    with pytest.raises(AttributeError):
        session.closedAt  # noqa: B018
    with pytest.raises(dataclasses.FrozenInstanceError):
        session.closed_at = "now"  # type: ignore[misc]


def test_a_split_thread_turn_keeps_its_head_and_part_count():
    turn = ThreadTurn(id="tturn_1", context_id="acme", partition="default", thread_id="t", turn_index=1,
                      created_at="t", text_bytes=10, text_head="abc", text_parts=2)
    item = turn.to_item()
    assert item["textHead"] == "abc" and item["textParts"] == 2 and "text" not in item
    whole = ThreadTurn.from_item({**item, "text": "abc"} | {"textParts": None})
    assert "textParts" not in dataclasses.replace(whole, text_head=None).to_item()


@pytest.mark.parametrize("cls", [Session, Turn, Thread, ThreadTurn, Document, Chunk])
def test_every_record_names_its_kind(cls):
    assert cls.KIND and cls.KIND == cls.KIND.lower()


def test_a_document_without_progress_stays_without_it():
    item = {"kind": "document", "id": "doc_1", "contextId": "acme", "partition": "default", "title": "T",
            "contentHash": "h", "size": 3, "chunkCount": 1, "status": "ready", "format": "text",
            "filename": None, "createdAt": "t", "updatedAt": "t", "createdBy": "alice", "observedAt": "t",
            "scopes": [], "labels": []}
    doc = Document.from_item(item)
    assert doc.chunks_done is None and doc.to_item() == item


def test_a_page_says_whether_more_follow():
    assert not Page([1, 2]).has_more
    assert Page([1], "c").has_more

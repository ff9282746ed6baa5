"""A service is built from the slice of the configuration it reads (``config_slices``, single
limit values, a ``CursorSecret``), not from ``Settings``: no runtime, no settings file."""

import pytest

from agent_memory.access.request_context import RequestContext
from agent_memory.adapters.sqlite_store import SQLiteRecordStore
from agent_memory.kernel.errors import InvalidCursor, PayloadTooLarge
from agent_memory.models.documents import DocumentUpload
from agent_memory.services.conversation.sessions import NewTurn, SessionService
from agent_memory.services.documents.document_service import DocumentService

CTX = RequestContext(context_id="slices", principal="tester", admin=True)


def test_a_session_service_pages_turns_with_only_a_store_and_a_cursor_secret(tmp_path):
    store = SQLiteRecordStore(tmp_path / "records.db")
    reads = []

    def secret() -> bytes:
        reads.append(1)
        return b"one secret"

    sessions = SessionService(store, secret)
    assert reads == []  # building the service reads no secret (Secrets Manager on Lambda)
    session = sessions.resolve_for_write(CTX, None, [], [])
    sessions.append_turns(CTX, session, [NewTurn("user", f"turn {i}") for i in range(3)], [], [])

    first = sessions.list_turns(CTX, session.id, limit=2, page_cursor=None)
    rest = sessions.list_turns(CTX, session.id, limit=2, page_cursor=first.next_cursor)

    assert [t.content for t in first.items + rest.items] == ["turn 0", "turn 1", "turn 2"]
    assert rest.next_cursor is None and reads
    # The cursor is signed with that secret: a service holding another one refuses it.
    with pytest.raises(InvalidCursor):
        SessionService(store, lambda: b"another secret").list_turns(CTX, session.id, limit=2,
                                                                    page_cursor=first.next_cursor)


def test_a_document_service_caps_documents_at_the_limit_it_is_given(tmp_path):
    store = SQLiteRecordStore(tmp_path / "records.db")

    def no_queue():
        raise AssertionError("an over-size document queues nothing")

    documents = DocumentService(store, lambda: b"secret", ingestion_queue=no_queue, upload_store=lambda: None,
                                document_bytes=16, upload_url_ttl_s=60)

    with pytest.raises(PayloadTooLarge, match="16-byte limit"):
        documents.ingest(CTX, DocumentUpload(text="seventeen bytes!!"))

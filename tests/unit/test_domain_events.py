"""The domain-event publisher (services/events.py) and the subscribers the runtime wires."""

import pytest

from agent_memory.access.request_context import RequestContext
from agent_memory.config import load_settings
from agent_memory.runtime import Runtime
from agent_memory.services.events import EventPublisher, FactsChanged, RecordsForgotten

CTX = RequestContext(context_id="events", principal="tester")


def test_every_subscriber_of_the_event_type_gets_it_in_subscription_order():
    events = EventPublisher()
    calls = []
    events.subscribe(RecordsForgotten, lambda e: calls.append(("first", e)))
    events.subscribe(RecordsForgotten, lambda e: calls.append(("second", e)))
    events.subscribe(FactsChanged, lambda e: calls.append(("facts", e)))

    forgotten = RecordsForgotten(CTX, frozenset({"attr_1", "entity:person/ann"}))
    events.publish(forgotten)

    assert calls == [("first", forgotten), ("second", forgotten)]
    changed = FactsChanged(CTX, frozenset({"entity:person/ann"}))
    events.publish(changed)
    assert calls[2:] == [("facts", changed)]


def test_an_event_nobody_subscribed_to_is_dropped():
    EventPublisher().publish(FactsChanged(CTX, frozenset({"entity:person/ann"})))


def test_a_failing_subscriber_stops_the_later_ones_and_reaches_the_publisher():
    events = EventPublisher()
    calls = []

    def fail(event):
        raise RuntimeError("store unavailable")

    events.subscribe(RecordsForgotten, fail)
    events.subscribe(RecordsForgotten, calls.append)

    with pytest.raises(RuntimeError, match="store unavailable"):
        events.publish(RecordsForgotten(CTX, frozenset({"turn_1"})))
    assert calls == []


class _Recorder:
    def __init__(self, calls, name):
        self.calls, self.name = calls, name

    def forget_refs(self, ctx, ids):
        self.calls.append((self.name, "forget_refs", ctx, set(ids)))

    def invalidate(self, ctx, *, entity_ids=(), unit_ids=()):
        self.calls.append((self.name, "invalidate", ctx, set(entity_ids), set(unit_ids)))

    def mark_written(self, context_id, partition):
        self.calls.append((self.name, "mark_written", context_id, partition))


def test_the_runtime_drops_stored_replies_before_cached_responses(tmp_path):
    rt = Runtime(load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path)}))
    calls = []
    # The handlers reach the services through the runtime's cached properties.
    rt.__dict__["idempotency"] = _Recorder(calls, "idempotency")
    rt.__dict__["response_cache"] = _Recorder(calls, "cache")

    rt.events.publish(RecordsForgotten(CTX, frozenset({"attr_1", "entity:person/ann"})))
    rt.events.publish(FactsChanged(CTX, frozenset({"entity:person/bob"})))

    # A facts change also moves the cache's write mark (answers cached before it are outdated).
    assert calls == [
        ("idempotency", "forget_refs", CTX, {"attr_1", "entity:person/ann"}),
        ("cache", "invalidate", CTX, {"entity:person/ann"}, {"attr_1"}),
        ("cache", "mark_written", CTX.context_id, CTX.partition),
        ("cache", "invalidate", CTX, {"entity:person/bob"}, set()),
    ]


def test_deleting_a_session_publishes_its_turns_as_forgotten(tmp_path):
    from agent_memory.adapters.sqlite_store import SQLiteRecordStore
    from agent_memory.services.conversation.sessions import NewTurn, SessionService

    events = EventPublisher()
    published = []
    events.subscribe(RecordsForgotten, published.append)
    sessions = SessionService(SQLiteRecordStore(tmp_path / "records.db"), lambda: b"secret", events)
    session = sessions.resolve_for_write(CTX, None, [], [])
    turns = sessions.append_turns(CTX, session, [NewTurn("user", "one"), NewTurn("user", "two")], [], [])

    sessions.delete(CTX, session.id)

    # what the turns said travels too (traces quoting it are redacted), never stored
    assert published == [RecordsForgotten(CTX, frozenset(t.id for t in turns), frozenset({"one", "two"}))]

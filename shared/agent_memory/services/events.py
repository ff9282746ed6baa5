"""Domain events: what a use case tells the rest of the process after it changed memory.

Copies derived from stored records (the response cache, stored idempotency replies) must
follow writes and removals, in every function (on AWS the write may land in another Lambda
than the chat that cached). The service that changed the records publishes one event; the
composition root (``runtime``) subscribes the handlers that drop the copies, once, so a
service knows nothing of who listens.

- ``FactsChanged``: a write changed these entities' facts (``services/facts/write.py``).
- ``RecordsForgotten``: these records are gone (forget, purge, entity delete, session delete:
  fact, turn, chunk and entity ids).

Handlers run synchronously, in the order they subscribed, in the publishing request; an
exception in one propagates to the publisher and the later handlers do not run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from agent_memory.access.request_context import RequestContext


@dataclass(frozen=True)
class FactsChanged:
    """A write changed the facts of ``entity_ids`` in ``ctx``'s context and partition."""

    ctx: RequestContext
    entity_ids: frozenset[str]


@dataclass(frozen=True)
class RecordsForgotten:
    """The records ``ids`` (facts, turns, chunks, ``entity:`` ids) were removed from ``ctx``'s
    context and partition; ``texts`` is what they said (turn content, chunk text, fact text),
    so that copies quoting it (traces) can be redacted. Never stored."""

    ctx: RequestContext
    ids: frozenset[str]
    texts: frozenset[str] = frozenset()


DomainEvent = FactsChanged | RecordsForgotten
E = TypeVar("E", FactsChanged, RecordsForgotten)


class DomainEvents(Protocol):
    """What a service that emits events is handed: somewhere to publish them."""

    def publish(self, event: DomainEvent) -> None: ...


class EventPublisher:
    """The process's publisher: handlers per event type, called in subscription order."""

    def __init__(self) -> None:
        self._handlers: dict[type, list[Callable]] = {}

    def subscribe(self, event_type: type[E], handler: Callable[[E], None]) -> None:
        self._handlers.setdefault(event_type, []).append(handler)

    def publish(self, event: DomainEvent) -> None:
        for handler in list(self._handlers.get(type(event), ())):
            handler(event)

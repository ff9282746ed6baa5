"""How a stored thread turn becomes a search unit (``kind="thread_turn"``).

Kept apart from ``services/conversation/threads.py`` so the projection registry can import it without
pulling in the service: ``services/operations/projection.py`` imports this module and registers
``thread_turn_units`` for the kind, so every path that projects (the local
``ProjectingRecordStore``, the projector Lambda, reindex) knows it. This module imports
nothing from the projection.

- ``acl_readers`` is the turn's *effective* reader list: its own list when it has one, else
  the thread's list as stamped on the row (``threadAcl``; ``PUT .../acl`` re-stamps turns that
  inherit, which re-projects them). Readers are filtered inside the search with it.
- the turn's entity becomes the label ``thread-entity:<entity id>``, so ``/context`` with
  ``entity_id`` filters semantic matches to that entity inside the search too
  (``SearchFilter.labels``), before the top-k cut.
- the speaker is data the caller gave: the turn's ``metadata.speaker`` (a string) becomes the
  unit's ``metadata.speaker``; the text is never parsed for one.
- a turn too large for one record keeps its text in parts; only the first part (``textHead``,
  up to 256 KiB) is indexed: enough to match on, and the full text is read from the store.
"""

from __future__ import annotations

from typing import Any

from agent_memory.models.records import ThreadTurn
from agent_memory.ports import SearchUnit
from agent_memory.services.conversation.reader_access import effective

ENTITY_LABEL_PREFIX = "thread-entity:"


def entity_label(entity_id: str) -> str:
    return ENTITY_LABEL_PREFIX + entity_id


def thread_turn_units(data: dict[str, Any], version: int) -> list[SearchUnit]:
    turn = ThreadTurn.from_item(data)
    entity = turn.entity_id
    metadata: dict[str, Any] = {"turnIndex": turn.turn_index, "threadId": turn.thread_id}
    speaker = (turn.metadata or {}).get("speaker")
    if isinstance(speaker, str) and speaker.strip():
        metadata["speaker"] = speaker.strip()
    return [SearchUnit(
        id=turn.id, context_id=turn.context_id, kind="thread_turn",
        text=turn.text if turn.text is not None else (turn.text_head or ""), revision=version,
        partition=turn.partition, thread_id=turn.thread_id,
        entity_ids=[entity] if entity else [], labels=[entity_label(entity)] if entity else [],
        acl_readers=effective(turn.acl_readers, turn.thread_acl),
        scopes=[list(c) for c in turn.scopes or []],
        occurred_at=turn.created_at, valid_from=turn.created_at,  # asOf before it: not yet said
        metadata=metadata,
    )]

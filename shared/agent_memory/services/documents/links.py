"""Links between document chunks and the entities they mention.

A chunk *mentions* an entity when the entity's name occurs in the chunk's text as a whole
run of words: both are folded the same way (accents removed, lower case, split on anything
that is not a letter or digit), and the entity's words must appear consecutively in the
chunk's. The speaker's own entity (``entity:person/user``) and names under
``MIN_NAME_CHARS`` characters are never linked. Deterministic: the same text and the same
entities give the same links.

The link record is the chunk row's ``entityIds`` (sorted ids); projection puts them on the
chunk's search unit (``entity_ids``, and as labels, so forget sees an entity a document
still mentions and a search by entity finds its passages). Ingestion links each chunk as it
commits, against the context's entities when the job started plus those its own facts
created; ``POST /documents/recompute-links`` rebuilds every chunk's links against the
entities stored now (entities added, renamed or removed since).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.rules.self_entity import SELF_ENTITY_ID
from agent_memory.services import paging

MIN_NAME_CHARS = 2
MAX_NAME_WORDS = 8  # longer names are not matched (an entity name is a few words)
MAX_ENTITIES = 20_000  # entities read per context to match against (the rest are not linked)


_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> tuple[str, ...]:
    folded = unicodedata.normalize("NFKD", text or "")
    folded = "".join(c for c in folded if not unicodedata.combining(c)).lower()
    return tuple(w for w in _WORD.findall(folded) if w != "_")


class EntityNames:
    """The names to match: word tuple -> entity ids (two entities may share a name)."""

    def __init__(self) -> None:
        self._by_words: dict[tuple[str, ...], set[str]] = {}
        self._lengths: set[int] = set()

    def add(self, entity_id: str, name: str | None) -> None:
        if not entity_id or entity_id == SELF_ENTITY_ID or not name or len(name.strip()) < MIN_NAME_CHARS:
            return
        key = words(name)
        if not key or len(key) > MAX_NAME_WORDS:
            return
        self._by_words.setdefault(key, set()).add(entity_id)
        self._lengths.add(len(key))

    def __len__(self) -> int:
        return len(self._by_words)

    def mentioned(self, text: str) -> list[str]:
        """The ids of the entities ``text`` mentions, sorted."""
        if not self._by_words:
            return []
        seq = words(text)
        found: set[str] = set()
        for n in self._lengths:
            for i in range(len(seq) - n + 1):
                ids = self._by_words.get(seq[i:i + n])
                if ids:
                    found |= ids
        return sorted(found)


def entity_name_of(data: dict[str, Any]) -> str | None:
    name = data.get("name")
    if name:
        return str(name)
    eid = str(data.get("id") or "")
    return eid.rsplit("/", 1)[-1].replace("-", " ") if "/" in eid else None


def load_entity_names(store: Any, ctx: RequestContext, limit: int = MAX_ENTITIES) -> EntityNames:
    """The context's live entities (up to ``limit``), ready to match."""
    names = EntityNames()
    for i, record in enumerate(paging.scan(store, paging.Source(keys.entities_pk(ctx)), batch=500)):
        if i >= limit:
            break
        data = record.data
        if data.get("deleted"):
            continue
        names.add(str(data.get("id") or ""), entity_name_of(data))
    return names


def add_entities(names: EntityNames, entities: Iterable[Any]) -> None:
    """Entities a write just created (``EntitySummary``: ``id``, ``name``)."""
    for entity in entities:
        names.add(getattr(entity, "id", ""), getattr(entity, "name", None))

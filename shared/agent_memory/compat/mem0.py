"""A Mem0-style entry point: ``from agent_memory.compat.mem0 import Memory``.

The method names, signatures and return shapes follow Mem0 2.2.1's ``mem0.Memory`` (its own
code, not its docs), over our HTTP API through the SDK, so a Mem0 program runs against
agent-memory with only its import changed. docs/sdk.md ("Coming from Mem0") lists the
differences.

How Mem0's ids map onto ours:

- ``user_id`` -> the **partition** (``X-Memory-Partition``): each user's memory is separate,
  including its self entity ("User location: Berlin" is that user's). An id that is not a
  valid partition name (``[A-Za-z0-9][A-Za-z0-9._-]{0,63}``) is hashed into one
  (``u-<sha256 prefix>``), so any string works and the same string always maps the same way.
- ``agent_id`` and ``run_id`` -> **labels** on what a write stores (``mem0:agent:<id>``,
  ``mem0:run:<id>``); ``filters`` with them keeps only memories carrying every one. Labels,
  not scopes: scopes are access regions that keys grant, and Mem0's ids are not grants.
- A "memory" is one extracted fact (an attribute or relation; actions and instructions in
  ``get``/``delete`` by id too). ``add`` reports each stored fact as ``ADD``, a correction as
  ``UPDATE`` (with ``previous_memory``), and a negation as ``DELETE``.
- ``metadata`` on ``add``/``update`` is kept as labels (``mem0:meta:<key>=<JSON>``) on what
  the write stores, and ``get``, ``get_all`` and ``search`` return it as Mem0 does.
- ``update(id, text)`` replaces the memory's text as Mem0 does: the new text is extracted
  (previewed in ``EXTRACT_PARTITION``) and written like an ``add``'s (its agent, run and
  metadata labels carried over). A new value of the same entity and key corrects the old one
  (history kept, ``history(id)`` lists it); otherwise the old memory is forgotten and the new
  text's facts take its place. Text with no fact in it is kept verbatim (key ``memory``).
  The id of what now holds the memory is returned as ``id``.
- Every method renders a memory the same way: ``"<entity name> <key words>: <value>"`` with
  the entity's display name (``"User location: Berlin"``), as search's index writes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from typing import Any

from agent_memory.client import AgentMemory, NotFoundError, PermissionDeniedError
from agent_memory.client._calls import fact_collection
from agent_memory.models import wire

DEFAULT_CONTEXT = "mem0"
# The attribute key an imported Mem0 memory is stored under (multi-valued, rules/vocabulary.py),
# on the partition's self entity; its value is the memory's text.
MEMORY_KEY = "memory"
META_PREFIX = "mem0:meta:"
ID_PREFIX = "mem0:id:"
ACTOR_PREFIX = "mem0:actor:"
# A partition only ever previewed in (never written): what a text states, whatever is stored.
EXTRACT_PARTITION = "mem0-extract"
_ROLES = {"user", "assistant", "system", "tool"}
_PARTITION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ENTITY_PARAMS = ("user_id", "agent_id", "run_id")


def partition_for(user_id: str) -> str:
    """The partition a Mem0 ``user_id`` maps to (stable; hashed when not a valid name)."""
    if _PARTITION.match(user_id) and user_id != EXTRACT_PARTITION:  # that one is only previewed in
        return user_id
    return "u-" + hashlib.sha256(user_id.encode()).hexdigest()[:32]


def _labels(agent_id: str | None, run_id: str | None) -> list[str]:
    return ([f"mem0:agent:{agent_id}"] if agent_id else []) + ([f"mem0:run:{run_id}"] if run_id else [])


def _trim(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string")
    return value.strip()


# Entity id -> display name ("entity:person/user" -> "User"), as the service names entities in
# its search index's text (services/facts/fact_kinds.py), so get_all, get, search and history
# render one memory one way. An id missing from it falls back to its name part.
Names = dict[str, str]


def _name(entity_id: str, names: Names | None) -> str:
    return (names or {}).get(entity_id.removeprefix("entity:")) or entity_id.split("/", 1)[-1]


def _attribute_text(a: wire.MemoryAttribute, names: Names | None = None) -> str:
    if a.key == MEMORY_KEY:
        return a.value  # a memory imported from Mem0 (or replaced verbatim): its own text
    return f"{_name(a.entity, names)} {a.key.replace('_', ' ')}: {a.value}"


def _relation_text(r: wire.MemoryRelation, names: Names | None = None) -> str:
    return f"{_name(r.subject, names)} {r.label.replace('_', ' ')}: {_name(r.object, names)}"


class Memory:
    """Mem0's ``Memory`` over an agent-memory service.

    ``Memory()`` reads ``AGENT_MEMORY_URL`` and ``AGENT_MEMORY_API_KEY`` as the SDK does, and
    the context from ``AGENT_MEMORY_CONTEXT`` (default ``mem0``). ``config`` (Mem0's
    ``MemoryConfig``) is accepted and ignored: models and stores are the service's.
    """

    def __init__(self, config: Any = None, *, context: str | None = None, base_url: str | None = None,
                 api_key: str | None = None):
        self.config = config
        self.context = context or os.environ.get("AGENT_MEMORY_CONTEXT") or DEFAULT_CONTEXT
        self._base_url, self._api_key = base_url, api_key
        self._clients: dict[str | None, AgentMemory] = {}
        self._names: dict[str | None, Names] = {}

    @classmethod
    def from_config(cls, config_dict: dict[str, Any]) -> Memory:
        return cls(config_dict)

    def _client(self, user_id: str | None) -> AgentMemory:
        partition = partition_for(user_id) if user_id else None
        if partition not in self._clients:
            self._clients[partition] = AgentMemory(self.context, base_url=self._base_url, api_key=self._api_key,
                                                   partition=partition)
        return self._clients[partition]

    def _names_for(self, client: AgentMemory, entity_ids: Iterable[str]) -> Names:
        """Display names of the partition's entities, listed again when one asked for is new."""
        names = self._names.get(client.partition)
        wanted = {e.removeprefix("entity:") for e in entity_ids if e}
        if names is None or not wanted <= names.keys():
            names = {e.id.removeprefix("entity:"): e.name for e in client.entities.list()}
            self._names[client.partition] = names
        return names

    def _render(self, client: AgentMemory, records: list[Any], filters: dict[str, Any] | None = None
                ) -> list[dict[str, Any]]:
        ids: list[str] = []
        for r in records:
            ids += [r.entity] if isinstance(r, wire.MemoryAttribute) else \
                [r.subject, r.object] if isinstance(r, wire.MemoryRelation) else []
        names = self._names_for(client, ids) if ids else {}
        return [_item(r, client.partition, filters, names) for r in records]

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writes ---------------------------------------------------------------------------

    def add(self, messages: Any, *, user_id: str | None = None, agent_id: str | None = None,
            run_id: str | None = None, metadata: dict[str, Any] | None = None, timestamp: Any = None,
            expiration_date: Any = None, infer: bool = True, memory_type: str | None = None,
            prompt: str | None = None) -> dict[str, Any]:
        """Store ``messages`` (a string, one ``{"role", "content"}`` dict, or a list of them) and
        what they state: ``{"results": [{"id", "memory", "event"}]}``."""
        user_id, agent_id, run_id = (_trim(user_id, "user_id"), _trim(agent_id, "agent_id"),
                                     _trim(run_id, "run_id"))
        if not (user_id or agent_id or run_id):
            raise ValueError("at least one of user_id, agent_id or run_id is required")
        if timestamp is not None:
            raise ValueError("timestamp is not supported; statements take their event time from the text")
        labels = _labels(agent_id, run_id) + metadata_labels(metadata)  # refused before anything is written
        turns = list(_messages(messages))
        if not turns:
            return {"results": []}
        client = self._client(user_id)
        out = client.remember_many(turns, extract="per_message", infer="full" if infer else "none",
                                   labels=labels or None)
        ids = {k: v for k, v in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)) if v}
        results: list[dict[str, Any]] = []
        for extraction in out.extractions:
            if extraction is not None:
                results += self._events(client, extraction, ids, metadata_of(labels))
        return {"results": results}

    def _events(self, client: AgentMemory, extraction: Any, ids: dict[str, str],
                metadata: dict[str, Any] | None) -> list[dict[str, Any]]:
        names = self._names_for(client, [a.entity_id for a in extraction.attributes]
                                + [c.entity_id for c in extraction.corrections])

        def text(entity_id: str, key: str, value: str) -> str:
            return f"{_name(entity_id, names)} {key.replace('_', ' ')}: {value}"

        corrected = {(c.entity_id, c.key): c for c in extraction.corrections}
        events: list[dict[str, Any]] = []
        for a in extraction.attributes:
            c = corrected.pop((a.entity_id, a.key), None)
            event = {"id": a.id, "memory": text(a.entity_id, a.key, a.value), "event": "ADD", "metadata": metadata}
            if c is not None and c.new_value == a.value:
                event |= {"event": "UPDATE", "previous_memory": text(a.entity_id, a.key, c.old_value)}
            events.append({**event, **ids})
        for r in extraction.relations:
            for rel in client.relations.list(src=r.subject.removeprefix("entity:"), label=r.label):
                if rel.object == r.object:
                    events.append({"id": rel.id, "memory": self._render(client, [rel])[0]["memory"],
                                   "event": "ADD", "metadata": metadata, **ids})
                    break
        for c in corrected.values():  # a negation: the value closed, nothing replacing it
            if not c.new_value:
                events.append({"id": None, "memory": text(c.entity_id, c.key, c.old_value), "event": "DELETE",
                               "metadata": metadata, **ids})
        return events

    def update(self, memory_id: str, text: str | None = None, metadata: dict[str, Any] | None = None,
               expiration_date: Any = None, data: str | None = None) -> dict[str, Any]:
        """Replace one memory's text, as Mem0 does: the new text is extracted first (a preview,
        nothing stored; ``_statements``). When it states just a new value of the memory's own entity and key,
        that value corrects it (history kept); otherwise its facts are stored (labels carried
        over) and the old memory is forgotten; text with no fact in it is kept verbatim.
        ``metadata`` replaces the memory's metadata (``None`` keeps it). ``id`` in the answer
        is what now holds the memory."""
        value = text if text is not None else data
        if not isinstance(value, str) or not value.strip():
            raise ValueError("text is required")
        value = value.strip()
        collection = self._collection(memory_id)
        if collection not in ("attributes", "relations"):
            raise ValueError(f"Memory with id {memory_id} cannot be updated; delete it and add the new one")
        client, _ = self._locate(memory_id)
        if client is None:
            raise ValueError(f"Memory with id {memory_id} not found")
        api = client.attributes if collection == "attributes" else client.relations
        old = api.get(memory_id)
        kept = [label for label in old.labels if label.startswith(("mem0:agent:", "mem0:run:", ACTOR_PREFIX))]
        meta = [label for label in old.labels if label.startswith(META_PREFIX)] if metadata is None \
            else metadata_labels(metadata)
        labels = kept + meta
        attributes, relations = self._statements(client, value)
        relabel = metadata is not None and sorted(meta) != sorted(x for x in old.labels if x.startswith(META_PREFIX))
        if (isinstance(old, wire.MemoryAttribute) and not relations and len(attributes) == 1
                and (attributes[0].entity_id, attributes[0].key) == (old.entity, old.key)):
            if attributes[0].value == old.value and not relabel:
                return {"message": "Memory updated successfully!", "id": old.id}
            if attributes[0].value != old.value and not relabel:
                # a new value of its own slot: a correction, the chain keeps the old
                return {"message": "Memory updated successfully!", "id": api.update(memory_id, attributes[0].value).fact.id}
        new_ids: list[str] = []
        forgotten = False
        if attributes or relations:
            client.remember(value, infer="full", labels=labels or None)
            new_ids = self._stored(client, attributes, relations)  # written now, or stored already
        if new_ids == [memory_id] and relabel:
            # The same memory with new metadata: labels are set when a fact is written, so it is
            # forgotten and written again with them (same entity, key and value).
            api.delete(memory_id)
            forgotten, new_ids = True, []
            if isinstance(old, wire.MemoryAttribute) and old.key != MEMORY_KEY:
                etype = old.entity.removeprefix("entity:").partition("/")[0]
                again = client.remember(value, infer="triples", labels=labels or None, triples=[
                    {"entity": {"type": etype, "name": _name(old.entity, self._names_for(client, [old.entity]))},
                     "key": old.key, "value": old.value}])
                new_ids = [a.id for a in again.extraction.attributes] if again.extraction else []
        if not new_ids:  # nothing to extract: the text itself is the memory, as in Mem0
            verbatim = client.remember(value, infer="triples", labels=labels or None,
                                       triples=[{"entity": {"type": "person", "name": "User"}, "key": MEMORY_KEY,
                                                 "value": value}])
            new_ids = [verbatim.extraction.attributes[0].id]  # type: ignore[union-attr]
        if memory_id not in new_ids and not forgotten:
            current = api.get(memory_id)
            if current.superseded_by is None and current.valid_until is None:
                api.delete(memory_id)  # replaced by facts of other slots: forget the old memory

        def own_slot(fact_id: str) -> bool:  # the new value of the memory's own entity and key
            if not isinstance(old, wire.MemoryAttribute) or fact_collection(fact_id) != "attributes":
                return False
            fact = client.attributes.get(fact_id)
            return (fact.entity, fact.key) == (old.entity, old.key)

        return {"message": "Memory updated successfully!", "id": next(filter(own_slot, new_ids), new_ids[0])}

    def _statements(self, client: AgentMemory, text: str) -> tuple[list[Any], list[Any]]:
        """The attributes and relations ``text`` states, nothing stored. A preview answers what
        a write would add, so in the user's partition a statement of what is stored already
        previews as nothing; it is asked in a partition with nothing in it
        (``EXTRACT_PARTITION``, only ever previewed in), which answers everything the text
        states. A key refused that partition previews in its own."""
        try:
            preview = self._client(EXTRACT_PARTITION).remember(text, infer="preview").extraction
        except PermissionDeniedError:
            preview = client.remember(text, infer="preview").extraction
        return (list(preview.attributes), list(preview.relations)) if preview is not None else ([], [])

    @staticmethod
    def _stored(client: AgentMemory, attributes: list[Any], relations: list[Any]) -> list[str]:
        """The ids of the current facts that already state these (entity, key, value) and
        (subject, label, object) claims."""
        ids: list[str] = []
        for a in attributes:
            ids += [row.id for row in client.attributes.list(entity=a.entity_id.removeprefix("entity:"), key=a.key)
                    if row.value == a.value][:1]
        for r in relations:
            ids += [row.id for row in client.relations.list(src=r.subject.removeprefix("entity:"), label=r.label)
                    if row.object == r.object][:1]
        return ids

    def delete(self, memory_id: str) -> dict[str, Any]:
        client, _ = self._locate(memory_id)
        if client is None:
            raise ValueError(f"Memory with id {memory_id} not found")
        getattr(client, self._collection(memory_id)).delete(memory_id)
        return {"message": "Memory deleted successfully!"}

    def delete_all(self, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> dict[str, Any]:
        filters = {k: v for k, v in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)) if v}
        if not filters:
            raise ValueError("At least one filter is required to delete all memories.")
        for item in self._all(filters, top_k=None):
            getattr(self._client(filters.get("user_id")), self._collection(item["id"])).delete(item["id"])
        return {"message": "Memories deleted successfully!"}

    def reset(self) -> None:
        raise NotImplementedError("reset would drop the whole context; delete_all(user_id=...) per user instead")

    # --- reads ----------------------------------------------------------------------------

    def get(self, memory_id: str) -> dict[str, Any] | None:
        client, found = self._locate(memory_id)
        return None if client is None else found

    def get_all(self, *, filters: dict[str, Any] | None = None, top_k: int = 20, show_expired: bool = False,
                **kwargs: Any) -> dict[str, Any]:
        _reject_entity_params(kwargs, "get_all")
        _check_filters(filters)
        if not isinstance(top_k, int) or top_k < 0:
            raise ValueError("top_k must be a non-negative integer")
        return {"results": self._all(filters or {}, top_k=top_k)}

    def search(self, query: str, *, top_k: int = 20, filters: dict[str, Any] | None = None, threshold: float = 0.1,
               rerank: bool = False, explain: bool = False, reference_date: Any = None, show_expired: bool = False,
               **kwargs: Any) -> dict[str, Any]:
        """``{"results": [{"id", "memory", "score", ...}]}``, best first. ``score`` is the
        service's ranking score normalised so the best hit is 1.0; ``threshold`` applies to it."""
        _reject_entity_params(kwargs, "search")
        _check_filters(filters)
        if not isinstance(top_k, int) or top_k < 0:
            raise ValueError("top_k must be a non-negative integer")
        if threshold is not None and not 0 <= threshold <= 1:
            raise ValueError("threshold must be between 0 and 1")
        filters = filters or {}
        if top_k == 0:
            return {"results": []}
        client = self._client(filters.get("user_id"))
        labels = _filter_labels(filters)
        hits = client.query(query, k=min(top_k, 50), include=["facts"], labels=labels or None).hits
        best = max((h.score for h in hits), default=0.0) or 1.0
        kept = [(h, round(h.score / best, 6)) for h in hits]
        kept = [(h, score) for h, score in kept if threshold is None or score >= threshold]
        # Each hit's record (its labels hold the metadata), rendered as get_all renders it.
        records: list[Any] = []
        scores: list[float] = []
        for h, score in kept:
            collection = fact_collection(h.id)
            if collection is None:
                continue
            try:
                records.append(getattr(client, collection).get(h.id))
            except NotFoundError:  # forgotten since the search read it
                continue
            scores.append(score)
        items = self._render(client, records, filters)
        return {"results": [{**item, "score": score} for item, score in zip(items, scores, strict=True)]}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """The memory's chain, oldest first, as Mem0's history rows (``ADD`` then ``UPDATE``s,
        ``DELETE`` for a value that was closed with nothing replacing it)."""
        client, found = self._locate(memory_id)
        if client is None or self._collection(memory_id) != "attributes":
            return [] if client is None else [_history_row(found, None, "ADD")]
        attr = client.attributes.get(memory_id)
        etype, name = attr.entity.removeprefix("entity:").split("/", 1)
        stated = list(client.entities.history(etype, name, attr.key))
        mem0_id = next((label for label in attr.labels if label.startswith(ID_PREFIX)), None)
        if attr.key == MEMORY_KEY and mem0_id is not None:
            # An imported memory's chain is the values that carry its Mem0 id, in the order stated
            # (a multi-valued key's correction closes one value and adds one, unlinked).
            chain = [row for row in stated if mem0_id in row.labels]
            return [_history_row({"id": row.id, "memory": row.value, "created_at": row.created_at},
                                 prev.value if prev else None, "UPDATE" if prev else "ADD")
                    for prev, row in zip([None, *chain[:-1]], chain, strict=True)]
        by_id = {row.id: row for row in stated}
        names = self._names_for(client, [attr.entity])
        # Follow the supersession links both ways from this memory: its own chain only (a
        # multi-valued key's other values have theirs).
        first = by_id.get(memory_id, attr)
        while first.supersedes in by_id:
            first = by_id[first.supersedes]
        rows: list[dict[str, Any]] = []
        previous: wire.MemoryAttribute | None = None
        row: wire.MemoryAttribute | None = first
        while row is not None and len(rows) < len(by_id) + 1:
            rows.append(_history_row({"id": row.id, "memory": _attribute_text(row, names), "created_at": row.created_at},
                                     _attribute_text(previous, names) if previous else None,
                                     "UPDATE" if previous else "ADD"))
            previous, row = row, by_id.get(row.superseded_by or "")
        return rows

    # --- migration --------------------------------------------------------------------------

    def import_memories(self, memories: list[dict[str, Any]], history: dict[str, list[dict[str, Any]]] | None = None,
                        *, progress: Any = None) -> dict[str, int]:
        """Write what Mem0's ``get_all`` returned (``{"results": [...]}``'s items) and, where given,
        each memory's ``history`` rows into this context (docs/export.md, "From Mem0"). Each
        memory becomes a turn and an authoritative fact (key ``memory`` of the user's self
        entity) in the partition of its ``user_id``, labelled with its agent, run, actor, Mem0 id
        and metadata; its history's ADD/UPDATE values become the fact's supersession chain.
        A memory already imported (its Mem0 id found) is left alone."""
        history = history or {}
        done: dict[str | None, set[str]] = {}
        out = {"memories": len(memories), "written": 0, "unchanged": 0, "updates": 0}
        for item in memories:
            user_id = _trim(item.get("user_id"), "user_id")
            client = self._client(user_id)
            if client.partition not in done:
                done[client.partition] = {label.removeprefix(ID_PREFIX) for a in client.attributes.list()
                                          for label in a.labels if label.startswith(ID_PREFIX)}
            if str(item["id"]) in done[client.partition]:
                out["unchanged"] += 1
            else:
                out["updates"] += self._import_one(client, item, history.get(str(item["id"])) or [])
                out["written"] += 1
            if progress is not None:
                progress()
        return out

    @staticmethod
    def _import_one(client: AgentMemory, item: dict[str, Any], rows: list[dict[str, Any]]) -> int:
        steps = [(r["new_memory"], r.get("updated_at") or r.get("created_at")) for r in rows
                 if r.get("event") in ("ADD", "UPDATE") and r.get("new_memory")]
        if not steps or steps[-1][0] != item["memory"]:
            steps.append((item["memory"], item.get("updated_at") or item.get("created_at")))  # where get_all stands
        values = [value for value, _ in steps]
        labels = [*_labels(_trim(item.get("agent_id"), "agent_id"), _trim(item.get("run_id"), "run_id")),
                  f"{ID_PREFIX}{item['id']}", *metadata_labels(item.get("metadata"))]
        if item.get("actor_id"):
            labels.append(f"{ACTOR_PREFIX}{item['actor_id']}")
        role = item.get("role") if item.get("role") in _ROLES else "user"
        first = rows[0].get("created_at") if rows else None
        written = client.remember(values[0], infer="triples", labels=labels, role=role,
                                  observed_at=first or item.get("created_at"),
                                  triples=[{"entity": {"type": "person", "name": "User"}, "key": MEMORY_KEY,
                                            "value": values[0]}])
        fact_id = written.extraction.attributes[0].id  # type: ignore[union-attr]
        for value, at in steps[1:]:
            fact_id = client.attributes.update(fact_id, value, observed_at=at).fact.id
        return len(steps) - 1

    # --- helpers ----------------------------------------------------------------------------

    @staticmethod
    def _collection(memory_id: str) -> str:
        return fact_collection(memory_id) or "attributes"

    def _locate(self, memory_id: str) -> tuple[AgentMemory | None, dict[str, Any] | None]:
        """The client (partition) holding ``memory_id`` and its Mem0 item. Mem0's ``get`` takes
        no user id, so the partitions this object has used are tried, the default first."""
        collection = self._collection(memory_id)
        order = [None, *[p for p in self._clients if p not in (None, EXTRACT_PARTITION)]]
        for partition in order:
            client = self._clients.get(partition) or self._client(None)
            try:
                item = getattr(client, collection).get(memory_id)
            except NotFoundError:
                continue
            return client, self._render(client, [item])[0]
        return None, None

    def _all(self, filters: dict[str, Any], top_k: int | None) -> list[dict[str, Any]]:
        client = self._client(filters.get("user_id"))
        want = set(_filter_labels(filters))
        records: list[Any] = []
        for collection in ("attributes", "relations"):
            for item in getattr(client, collection).list():
                if want and not want <= set(item.labels):
                    continue
                records.append(item)
                if top_k is not None and len(records) >= top_k:
                    return self._render(client, records, filters)
        return self._render(client, records, filters)


def _item(item: Any, partition: str | None, filters: dict[str, Any] | None = None,
          names: Names | None = None) -> dict[str, Any]:
    if isinstance(item, wire.MemoryAttribute):
        text = _attribute_text(item, names)
    elif isinstance(item, wire.MemoryRelation):
        text = _relation_text(item, names)
    else:
        text = getattr(item, "summary", None) or getattr(item, "description", None) or ""
    out: dict[str, Any] = {"id": item.id, "memory": text, "hash": hashlib.md5(text.encode()).hexdigest(),
                           "metadata": metadata_of(getattr(item, "labels", None) or []),
                           "created_at": getattr(item, "created_at", None), "updated_at": None}
    ids = {k: v for k, v in (filters or {}).items() if k in _ENTITY_PARAMS and v}
    if partition and "user_id" not in ids:
        ids["user_id"] = partition
    return {**out, **ids}


def _history_row(item: dict[str, Any] | None, old: str | None, event: str) -> dict[str, Any]:
    item = item or {}
    return {"id": item.get("id"), "memory_id": item.get("id"), "old_memory": old, "new_memory": item.get("memory"),
            "event": event, "created_at": item.get("created_at"), "updated_at": None, "is_deleted": False,
            "actor_id": None, "role": None}


def _messages(messages: Any) -> Iterable[dict[str, str]]:
    if isinstance(messages, str):
        yield {"role": "user", "content": messages}
        return
    if isinstance(messages, dict):
        messages = [messages]
    if not isinstance(messages, list):
        raise ValueError("messages must be a string, a message dict or a list of message dicts")
    for m in messages:
        if not isinstance(m, dict) or "content" not in m:
            raise ValueError("each message needs a content")
        role = m.get("role", "user")
        # Our turns are user and assistant; a system prompt is instructions, not a statement.
        if role == "system" or not str(m["content"]).strip():
            continue
        yield {"role": role if role in ("user", "assistant") else "user", "content": str(m["content"])}


def _reject_entity_params(kwargs: dict[str, Any], method: str) -> None:
    bad = set(_ENTITY_PARAMS) & set(kwargs)
    if bad:
        raise ValueError(f"Top-level entity parameters {bad} are not supported in {method}(). "
                         "Use filters={'user_id': '...'} instead.")
    if kwargs:
        raise TypeError(f"{method}() got unexpected keyword arguments {sorted(kwargs)}")


def _check_filters(filters: dict[str, Any] | None) -> None:
    if not filters or not any(filters.get(k) for k in _ENTITY_PARAMS):
        raise ValueError("filters must contain at least one of: user_id, agent_id, run_id")
    _filter_labels(filters)


def _filter_labels(filters: dict[str, Any]) -> list[str]:
    """The labels a memory must carry to match ``filters``: its agent and run, and each other key
    as a metadata equality (``{"category": "work"}``). Mem0's operators (``AND``/``OR``/``NOT``,
    ``{"gte": ...}`` and the like) are refused rather than ignored."""
    extra = {k: v for k, v in filters.items() if k not in _ENTITY_PARAMS}
    for key, value in extra.items():
        if key in ("AND", "OR", "NOT") or isinstance(value, dict):
            raise ValueError(f"filter {key!r}: operators are not supported; filters match user_id, agent_id, "
                             "run_id and metadata values by equality")
    return _labels(filters.get("agent_id"), filters.get("run_id")) + metadata_labels(extra or None)


def metadata_labels(metadata: Any) -> list[str]:
    """Mem0 metadata as labels, one per key (``mem0:meta:<key>=<JSON value>``): kept with the
    fact, returned by ``get_all``, and filterable like any label."""
    if metadata is None:
        return []
    if not isinstance(metadata, dict):
        raise ValueError("metadata must be an object")
    out = []
    for key, value in sorted(metadata.items()):
        label = f"{META_PREFIX}{key}={json.dumps(value, separators=(',', ':'), ensure_ascii=False)}"
        if len(label) > 128:
            raise ValueError(f"metadata {key!r} is longer than a label holds (128 characters with its prefix)")
        out.append(label)
    return out


def metadata_of(labels: Iterable[str]) -> dict[str, Any] | None:
    """The metadata ``metadata_labels`` stored (``None`` when there is none, as Mem0 answers)."""
    out: dict[str, Any] = {}
    for label in labels:
        if label.startswith(META_PREFIX) and "=" in label:
            key, raw = label[len(META_PREFIX):].split("=", 1)
            try:
                out[key] = json.loads(raw)
            except ValueError:
                out[key] = raw
    return out or None


def read_mem0(text: str) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Parse a Mem0 dump: ``get_all``'s answer (``{"results": [...]}``) or its list, optionally
    with ``"history": {memory_id: [history rows]}``. Each memory needs a string ``id`` and
    ``memory``; a bad one is named by its position."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    history: Any = {}
    if isinstance(data, dict):
        history = data.get("history") or {}
        data = data.get("results")
    if not isinstance(data, list):
        raise ValueError('expected Mem0 get_all output: {"results": [...]} or a list of memories')
    if not isinstance(history, dict) or not all(isinstance(v, list) for v in history.values()):
        raise ValueError('"history" must map memory ids to lists of history rows')
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not isinstance(item.get("memory"), str) \
                or not item["memory"].strip():
            raise ValueError(f"memory {i}: needs a string id and a non-empty string memory")
        metadata_labels(item.get("metadata"))  # refused before anything is written
    return data, history

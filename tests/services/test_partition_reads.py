"""PartitionReads (one read per partition for a write): the entity list answers the write's
entity reads only when it holds the whole partition; a partition longer than the list is
batch-read as before (both stores)."""

from __future__ import annotations

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.ports import Record
from agent_memory.services.facts.repository import MemoryRepository


class _Counting:
    def __init__(self, store):
        self._store, self.calls = store, []

    def __getattr__(self, name):
        attr = getattr(self._store, name)
        if name in ("query", "batch_get", "get"):
            def call(*a, **kw):
                self.calls.append(name)
                return attr(*a, **kw)
            return call
        return attr


def _ctx() -> RequestContext:
    return RequestContext(context_id="acme", principal="k", partition="default")


def _entities(runtime, ctx, names):
    for name in names:
        runtime.store.put(Record(pk=keys.entities_pk(ctx), sk=f"person/{name}",
                                 data={"kind": "entity", "id": f"entity:person/{name}", "type": "person",
                                       "name": name.title(), "scopes": []}, version=3))


def test_a_whole_entity_list_answers_the_entity_reads(runtime):
    ctx = _ctx()
    _entities(runtime, ctx, ["ana", "bo"])
    store = _Counting(runtime.store)
    repo = MemoryRepository(store)
    reads = repo.partition_reads()
    assert sorted(repo.entity_names(ctx, reads=reads)) == ["Ana", "Bo"]
    loaded = repo.load_entities(ctx, ["Ana", "Cy"], reads)
    assert list(loaded.entities) == ["entity:person/ana"] and loaded.versions == {"entity:person/ana": 3}
    assert store.calls == ["query"]  # the list, and no batch read
    assert repo.entity_names(ctx, reads=reads) and store.calls == ["query"]  # read once


def test_a_longer_partition_than_the_list_is_batch_read(runtime):
    ctx = _ctx()
    _entities(runtime, ctx, ["ana", "bo", "cy"])
    store = _Counting(runtime.store)
    repo = MemoryRepository(store)
    reads = repo.partition_reads()
    assert len(repo.entity_names(ctx, limit=2, reads=reads)) == 2
    assert reads.complete(keys.entities_pk(ctx)) is None
    loaded = repo.load_entities(ctx, ["Cy"], reads)
    assert list(loaded.entities) == ["entity:person/cy"]  # beyond the list: found by the batch read
    assert store.calls == ["query", "batch_get"]

"""Background projection, batched: the worker writes every change queued so far as one index
write (the embedder embeds the batch in one call), keeps commit order per unit (a later
delete wins), respects revisions, retries each change of a failed batch alone, runs the
per-change callbacks, and lets a read wait for its own context's pending changes."""

from __future__ import annotations

import threading

import pytest

from agent_memory.adapters.embedded.index import EmbeddedSearchIndex
from agent_memory.adapters.embedders import HashingEmbedder
from agent_memory.adapters.sqlite_store import SQLiteRecordStore
from agent_memory.ports import SearchUnavailable, SearchUnit
from agent_memory.services.operations.projection import ProjectionChange
from agent_memory.services.operations.projector import ProjectingRecordStore, Projector
from tests.services.test_projection_pending import found, turn


def unit(uid: str, revision: int = 1, context: str = "ctx", text: str | None = None) -> SearchUnit:
    return SearchUnit(id=uid, context_id=context, kind="turn", text=text or f"text of {uid}", revision=revision)


def upsert(*units: SearchUnit) -> ProjectionChange:
    return ProjectionChange(upserts=list(units))


def delete(uid: str, context: str = "ctx") -> ProjectionChange:
    return ProjectionChange(deletes={context: [uid]})


class RecordingIndex:
    """Records each index write; refuses a write holding a unit named in ``refuse``; holds
    a write while ``gate`` is clear."""

    def __init__(self) -> None:
        self.writes: list[tuple[list[tuple[str, int]], dict[str, list[str]]]] = []
        self.refuse: set[str] = set()
        self.gate = threading.Event()
        self.gate.set()

    def write(self, upserts, deletes) -> None:
        self.gate.wait(10)
        if self.refuse & {u.id for u in upserts}:
            raise SearchUnavailable("refused")
        self.writes.append(([(u.id, u.revision) for u in upserts], {c: list(ids) for c, ids in deletes.items()}))


class CountingEmbedder(HashingEmbedder):
    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.calls: list[int] = []

    def embed(self, texts):
        self.calls.append(len(texts))
        return super().embed(texts)


def queued(projector: Projector, changes: list[ProjectionChange]) -> list[str]:
    """Submit ``changes`` while the worker is held, then let it run; the callbacks' log."""
    log: list[str] = []
    projector.pause()
    for n, change in enumerate(changes):
        projector.submit(change, on_applied=lambda n=n: log.append(f"applied {n}"),
                         on_failed=lambda n=n: log.append(f"failed {n}"))
    projector.resume()
    assert projector.drain(timeout_s=10)
    return log


def test_everything_queued_becomes_one_write_in_commit_order_and_a_later_delete_wins():
    index = RecordingIndex()
    searchable: list[ProjectionChange] = []
    projector = Projector(index, background=True, on_searchable=searchable.append)
    changes = [upsert(unit("a", 1)), upsert(unit("b", 1)), upsert(unit("a", 2)), delete("b"),
               delete("c"), upsert(unit("c", 4))]
    log = queued(projector, changes)
    # one write: a at its newest revision, b deleted after its upsert, c re-created after its delete
    assert index.writes == [([("a", 2), ("c", 4)], {"ctx": ["b"]})]
    assert log == [f"applied {n}" for n in range(len(changes))]
    assert searchable == changes  # per change, in commit order
    assert projector.pending() == 0


def test_a_batch_is_bounded_in_units():
    index = RecordingIndex()
    projector = Projector(index, background=True, batch_units=3)
    queued(projector, [upsert(unit(f"u{n}")) for n in range(7)])
    assert [len(ups) for ups, _ in index.writes] == [3, 3, 1]


def test_the_embedder_embeds_a_batch_in_one_call_and_revisions_still_hold(tmp_path):
    embedder = CountingEmbedder()
    index = EmbeddedSearchIndex(tmp_path / "search.db", embedder)
    projector = Projector(index, background=True)
    projector.submit(upsert(unit("old", 5, text="the newest words")))
    assert projector.drain(timeout_s=10)
    embedder.calls.clear()
    # a stale revision of "old" in the batch does not overwrite the stored newer one
    queued(projector, [upsert(unit(f"t{n}", text=f"turn number {n}")) for n in range(20)]
           + [upsert(unit("old", 4, text="stale words"))])
    assert embedder.calls == [20]
    assert index.get("ctx", "old").revision == 5 and index.get("ctx", "t19") is not None


def test_a_failed_batch_retries_each_change_alone_and_fails_only_the_bad_one():
    index = RecordingIndex()
    index.refuse = {"bad"}
    searchable: list[ProjectionChange] = []
    projector = Projector(index, background=True, on_searchable=searchable.append)
    changes = [upsert(unit("good1")), upsert(unit("bad")), upsert(unit("good2"))]
    log = queued(projector, changes)
    assert log == ["applied 0", "failed 1", "applied 2"]
    assert index.writes == [([("good1", 1)], {}), ([("good2", 1)], {})]
    assert searchable == [changes[0], changes[2]]  # a change the index refused is not searchable
    assert projector.pending() == 0  # given up on here; the projecting store retries it


def test_a_read_waits_for_its_own_contexts_pending_changes_within_the_bound():
    index = RecordingIndex()
    projector = Projector(index, background=True, settle_s=5.0)
    index.gate.clear()  # the worker is inside the index write
    projector.submit(upsert(unit("mine", context="ctx")))
    assert projector.pending("ctx") == 1
    assert projector.settle("other") is True  # another context has nothing pending
    assert projector.settle("ctx", timeout_s=0.05) is False  # past the bound: what is searchable
    released = threading.Timer(0.1, index.gate.set)
    released.start()
    assert projector.settle("ctx") is True  # the change reached the index within the bound
    assert index.writes == [([("mine", 1)], {})]
    projector.pause()
    projector.submit(upsert(unit("held")))
    assert projector.settle("ctx", timeout_s=5.0) is False  # paused: answered at once, not waited for
    projector.resume()
    assert projector.settle("ctx") is True


def test_a_failed_change_stays_in_the_outbox_and_the_index_catches_up(tmp_path):
    records = SQLiteRecordStore(tmp_path / "records.db")
    inner = EmbeddedSearchIndex(tmp_path / "search.db", HashingEmbedder(64))

    class Flaky:
        down = True

        def __getattr__(self, name):
            return getattr(inner, name)

        def upsert(self, units):
            if self.down and any("bicycle" in u.text for u in units):
                raise SearchUnavailable("refused")
            inner.upsert(units)

    flaky = Flaky()
    projector = Projector(flaky, background=True)
    store = ProjectingRecordStore(records, projector)
    projector.pause()
    store.put(turn(1, "the kettle is blue"))
    store.put(turn(2, "the bicycle is orange"))
    projector.resume()
    assert projector.drain(timeout_s=10)
    assert inner.get("ctx", "turn_1") is not None and inner.get("ctx", "turn_2") is None
    assert store.pending_projections == 1  # only the refused change is pending
    flaky.down = False
    store.catch_up()
    assert inner.get("ctx", "turn_2") is not None and store.pending_projections == 0


def test_pending_outbox_entries_are_replayed_on_the_next_start(tmp_path):
    """A crash with background projection pending: the outbox rows were committed with the
    records, so the next start indexes them before serving."""
    records = SQLiteRecordStore(tmp_path / "records.db")
    index = EmbeddedSearchIndex(tmp_path / "search.db", HashingEmbedder(64))
    projector = Projector(index, background=True)
    store = ProjectingRecordStore(records, projector)
    projector.pause()  # the worker never gets to it: the process "dies" here
    store.put(turn(1, "the lighthouse keeper waves"))
    assert store.pending_projections == 1 and index.get("ctx", "turn_1") is None

    records2 = SQLiteRecordStore(tmp_path / "records.db")
    index2 = EmbeddedSearchIndex(tmp_path / "search.db", HashingEmbedder(64))
    restarted = ProjectingRecordStore(records2, Projector(index2, background=True))
    assert restarted.pending_projections == 0
    assert found(index2, "lighthouse") == {"turn_1"}


@pytest.mark.parametrize("background", [False, True])
def test_drain_leaves_nothing_pending(background):
    index = RecordingIndex()
    projector = Projector(index, background=background)
    for n in range(5):
        projector.submit(upsert(unit(f"u{n}")))
    assert projector.drain(timeout_s=10) and projector.pending() == 0
    assert sorted(uid for ups, _ in index.writes for uid, _ in ups) == [f"u{n}" for n in range(5)]


def test_a_replay_writes_pending_entries_together_and_marks_them_searchable(tmp_path):
    """What the outbox replays (after an outage, at a start) becomes searchable after its
    commit like any projection: the response cache's write mark moves for it too, and the
    entries are embedded together."""
    from tests.services.test_projection_pending import DownIndex

    embedder = CountingEmbedder()
    inner = EmbeddedSearchIndex(tmp_path / "search.db", embedder)
    index = DownIndex(inner)
    searchable: list[ProjectionChange] = []
    store = ProjectingRecordStore(SQLiteRecordStore(tmp_path / "records.db"),
                                  Projector(index, on_searchable=searchable.append))
    for n, text in enumerate(["the kettle is blue", "the bicycle is orange", "the door is red"], start=1):
        store.put(turn(n, text))
    assert store.pending_projections == 3 and searchable == []
    index.down = False
    embedder.calls.clear()
    assert store.catch_up() == 3
    assert embedder.calls == [3]
    assert sorted(u.id for change in searchable for u in change.upserts) == ["turn_1", "turn_2", "turn_3"]
    assert store.pending_projections == 0 and found(inner, "bicycle orange") >= {"turn_2"}


def test_a_replay_batch_the_index_refuses_is_replayed_entry_by_entry(tmp_path):
    inner = EmbeddedSearchIndex(tmp_path / "search.db", HashingEmbedder(64))

    class Refusing:
        refuse = "everything"

        def __getattr__(self, name):
            return getattr(inner, name)

        def upsert(self, units):
            if self.refuse == "everything" or any(self.refuse in u.text for u in units):
                raise SearchUnavailable("refused")
            inner.upsert(units)

    index = Refusing()
    store = ProjectingRecordStore(SQLiteRecordStore(tmp_path / "records.db"), Projector(index))
    for n, text in enumerate(["the kettle is blue", "the bicycle is orange", "the door is red"], start=1):
        store.put(turn(n, text))
    assert store.pending_projections == 3
    index.refuse = "bicycle"  # one poisoned entry among the pending ones
    store.catch_up()
    assert inner.get("ctx", "turn_1") is not None and inner.get("ctx", "turn_2") is None
    assert store.pending_projections == 2  # the refused one and what follows it, for the next try
    index.refuse = "nothing matches this"
    store.catch_up()
    assert store.pending_projections == 0 and inner.get("ctx", "turn_3") is not None

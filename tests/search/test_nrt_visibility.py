"""Eventual visibility: the service over OpenSearch whose writes and deletes show only after a
refresh (``nrt_double``), on the Serverless (``aoss``) and managed-domain (``es``) paths.

Inside one refresh interval the index still shows the previous copy of a unit, or a copy
already deleted. Each scenario checks that no reader sees a stale, duplicate or leaked unit
at any point, before and after the refresh.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from fused_search import fused_search
from nrt_double import NrtCluster

from agent_memory.access.request_context import RequestContext
from agent_memory.adapters.opensearch.index import OpenSearchIndex
from agent_memory.adapters.recent_units import RecentUnits
from agent_memory.config import load_settings
from agent_memory.models.reads import ForgetRequest
from agent_memory.models.requests import WriteFactsRequest
from agent_memory.models.threads import AppendThreadTurnRequest, SetThreadAclRequest
from agent_memory.ports import SearchFilter
from agent_memory.runtime import Runtime
from agent_memory.services.retrieval.live_revisions import StoreRevisions

INDEX = "tenant1-memory"
ADMIN = RequestContext(context_id="acme", principal="p", admin=True)
LOCATION = SearchFilter(context_id="acme", kinds=["attribute"])


class Service:
    def __init__(self, tmp_path: Path, service: str) -> None:
        self.cluster = NrtCluster(service=service, allowed_prefix="tenant1-")
        # inline: what a store with OpenSearch gets (the index is swapped in below)
        settings = load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"),
                                      "AGENT_MEMORY_CURSOR_SECRET": "test", "AWS_REGION": "us-east-1",
                                      "AGENT_MEMORY_PROJECTION": "inline"})
        self.rt = Runtime(settings)
        self.rt.__dict__["search"] = OpenSearchIndex(
            "https://nrt.invalid", INDEX, self.rt.embedder, service=service, client=self.cluster.client(),
            live=StoreRevisions(self.rt.base_store), recent=RecentUnits(self.rt.base_store))

    def stored(self) -> Counter:
        """Stored copies per unit id (what the index holds, searchable or not)."""
        return Counter(d["unit_id"] for d in self.cluster.documents(INDEX))

    def search(self, query: str, flt: SearchFilter, k: int = 10) -> list[str]:
        hits = fused_search(self.rt.search, query, flt, k=k)
        ids = [h.unit.id for h in hits]
        assert not [i for i, n in Counter(ids).items() if n > 1], "duplicate units"
        return [h.unit.text for h in hits]


@pytest.fixture(params=["aoss", "es"])
def svc(request, tmp_path) -> Service:
    return Service(tmp_path, request.param)


def test_a_fact_superseded_within_the_interval_never_shows_as_current(svc):
    svc.rt.facts.write(ADMIN, WriteFactsRequest(text="I live in London.", observed_at="2026-03-01T00:00:00Z"))
    svc.cluster.refresh()
    assert svc.search("location", LOCATION) == ["User location: London"]
    svc.rt.facts.write(ADMIN, WriteFactsRequest(text="I moved to Berlin.", observed_at="2026-05-01T00:00:00Z"))
    # Within the interval the index still shows London's open-ended copy: it is not current.
    assert "User location: London" not in svc.search("location", LOCATION)
    svc.cluster.refresh()
    assert svc.search("location", LOCATION) == ["User location: Berlin"]
    past = SearchFilter(context_id="acme", kinds=["attribute"], as_of="2026-04-01T00:00:00Z")
    assert svc.search("location", past) == ["User location: London"]


def test_two_changes_within_one_interval_leave_one_current_copy(svc):
    svc.rt.facts.write(ADMIN, WriteFactsRequest(text="I live in London.", observed_at="2026-03-01T00:00:00Z"))
    svc.rt.facts.write(ADMIN, WriteFactsRequest(text="I moved to Berlin.", observed_at="2026-05-01T00:00:00Z"))
    # Nothing refreshed yet: the index shows neither; the recent units show the current one only.
    assert svc.search("location", LOCATION) == ["User location: Berlin"]
    svc.cluster.refresh()
    assert svc.search("location", LOCATION) == ["User location: Berlin"]
    # London's first copy (written, then replaced within the interval) was still stored on
    # Serverless, whose writer could not see it; the reader that met it dropped and deleted it.
    everything = SearchFilter(context_id="acme", kinds=["attribute"], as_of="2026-04-01T00:00:00Z")
    assert svc.search("location", everything) == ["User location: London"]
    assert set(svc.stored().values()) == {1}


def test_index_then_delete_within_the_interval_leaves_nothing_visible(svc):
    out = svc.rt.facts.write(ADMIN, WriteFactsRequest(text="My locker code is 4711.", infer="none"))
    session_id = out.session_id
    svc.rt.sessions.delete(ADMIN, session_id)
    svc.cluster.refresh()
    turns = SearchFilter(context_id="acme", kinds=["turn"])
    assert svc.search("locker code", turns) == []
    # Serverless kept the copy its deleter could not see; the reader that met it deleted it.
    assert not [d for d in svc.cluster.documents(INDEX) if d["kind"] == "turn"]


def test_forget_right_after_a_write_removes_the_unit_at_once(svc):
    svc.rt.facts.write(ADMIN, WriteFactsRequest(text="My locker code is 4711.", infer="none"))
    svc.cluster.refresh()
    turns = SearchFilter(context_id="acme", kinds=["turn"])
    assert svc.search("locker code", turns) == ["My locker code is 4711."]
    svc.rt.forget.forget(ADMIN, ForgetRequest(query="My locker code is 4711.", min_score=0.1))
    assert svc.search("locker code", turns) == []  # the index still shows it until the refresh
    svc.cluster.refresh()
    assert svc.search("locker code", turns) == []


def test_forget_within_the_interval_of_the_write_removes_the_unit(svc):
    """The write is not searchable in the index yet; forget still finds it (recent units)."""
    svc.rt.facts.write(ADMIN, WriteFactsRequest(text="My locker code is 4711.", infer="none"))
    out = svc.rt.forget.forget(ADMIN, ForgetRequest(query="My locker code is 4711.", min_score=0.1))
    assert [i.text for i in out.items] == ["My locker code is 4711."]
    turns = SearchFilter(context_id="acme", kinds=["turn"])
    assert svc.search("locker code", turns) == []
    svc.cluster.refresh()  # the index now shows the copy the forget could not see
    assert svc.search("locker code", turns) == []
    svc.cluster.refresh()  # the reader that met the dead copy deleted it (Serverless) or it was gone
    assert not [d for d in svc.cluster.documents(INDEX, live=False) if d["kind"] == "turn"]


def test_recent_units_obey_the_filter_and_never_outlive_their_record(svc):
    """Units noted for the interval are filtered like index hits and checked like them."""
    for text in ("the patient's blood pressure is high", "the patient's next visit is Monday"):
        svc.rt.threads.append(ADMIN, "care", AppendThreadTurnRequest(text=text))
    svc.rt.threads.set_acl(ADMIN, "care", SetThreadAclRequest(acl_readers=["group:care-team"]))
    outsider = SearchFilter(context_id="acme", kinds=["thread_turn"], principals=["bob"])
    member = SearchFilter(context_id="acme", kinds=["thread_turn"], principals=["group:care-team"])
    assert svc.rt.search.search("patient", outsider, mode="vector") == []  # nothing refreshed, nothing leaks
    assert len(svc.rt.search.search("patient", member, mode="vector")) == 2  # the narrowed copies, at once
    assert svc.rt.search.search("patient", SearchFilter(context_id="other", kinds=["thread_turn"], admin=True),
                                mode="vector") == []


def test_a_narrowed_reader_list_never_leaks_the_older_open_copy(svc):
    for text in ("the patient's blood pressure is high", "the patient's next visit is Monday"):
        svc.rt.threads.append(ADMIN, "care", AppendThreadTurnRequest(text=text))
    svc.cluster.refresh()
    outsider = SearchFilter(context_id="acme", kinds=["thread_turn"], principals=["bob"])
    assert len(svc.search("patient", outsider)) == 2
    svc.rt.threads.set_acl(ADMIN, "care", SetThreadAclRequest(acl_readers=["group:care-team"]))
    assert svc.search("patient", outsider) == []  # the open copies are still what the index shows
    svc.cluster.refresh()
    assert svc.search("patient", outsider) == []
    member = SearchFilter(context_id="acme", kinds=["thread_turn"], principals=["group:care-team"])
    assert len(svc.search("patient", member)) == 2


def test_every_request_stays_inside_the_tenants_indexes(svc):
    svc.rt.facts.write(ADMIN, WriteFactsRequest(text="I live in London.", observed_at="2026-03-01T00:00:00Z"))
    svc.search("location", LOCATION)
    svc.rt.search.get("acme", "nope")
    svc.rt.search.delete_context("acme")
    paths = svc.cluster.paths()
    assert paths and all(p.split(" ", 1)[1].startswith(f"/{INDEX}") for p in paths), paths
    assert any(p == f"POST /{INDEX}/_bulk" for p in paths)


class CurrentRevisions:
    """``LiveRevisions`` over a dict of each unit's current revision (the store's answer)."""

    def __init__(self) -> None:
        self.current: dict[str, int] = {}

    def live(self, units):
        return [self.current.get(u.id) == u.revision for u in units]


def test_a_stale_copy_takes_no_knn_slot_on_serverless(embedder):
    """Serverless: a copy replaced within the 60 s refresh interval stays behind (its writer
    could not see it) and is searchable after the refresh. A k-NN leg whose k hits hold it asks
    once more without it, so it still returns k live units, and the stale copy is deleted."""
    from agent_memory.ports import SearchUnit

    cluster = NrtCluster(service="aoss", allowed_prefix="tenant1-")
    live = CurrentRevisions()
    index = OpenSearchIndex("https://nrt.invalid", INDEX, embedder, service="aoss", client=cluster.client(), live=live)

    def put(uid: str, text: str, revision: int) -> None:
        live.current[uid] = revision
        index.upsert([SearchUnit(id=uid, context_id="acme", kind="turn", text=text, revision=revision)])

    put("u-a", "garden roses bloom red", 1)
    put("u-a", "garden roses bloom red today", 2)  # within the interval: revision 1's copy stays behind
    put("u-b", "garden roses need water", 1)
    cluster.refresh()
    assert sorted(d["revision"] for d in cluster.documents(INDEX) if d["unit_id"] == "u-a") == [1, 2]
    flt = SearchFilter(context_id="acme", kinds=["turn"])
    hits = index.search("garden roses bloom red", flt, k=2, mode="vector")
    assert [(h.unit.id, h.unit.revision) for h in hits] == [("u-a", 2), ("u-b", 1)]
    knn = [json_body for m, p, json_body in _searches(cluster) if "knn" in json_body.get("query", {})]
    assert len(knn) == 2, "one k-NN request, then one that excludes the stale copy"
    assert "ids" in str(knn[1]["query"]["knn"]["embedding"]["filter"]["bool"]["must_not"])
    assert sorted(d["revision"] for d in cluster.documents(INDEX) if d["unit_id"] == "u-a") == [2]
    # A leg that was not full lost no slot to the stale copy: no second request.
    cluster.refresh()
    put("u-b", "garden roses need water daily", 2)
    put("u-b", "garden roses need water daily now", 3)
    cluster.refresh()
    before = len(_searches(cluster))
    hits = index.search("garden roses need water", flt, k=5, mode="vector")
    assert sorted((h.unit.id, h.unit.revision) for h in hits) == [("u-a", 2), ("u-b", 3)]
    assert len(_searches(cluster)) - before == 1


def _searches(cluster: NrtCluster) -> list:
    return [(m, p, b) for m, p, b in cluster.bodies if p.endswith("/_search")]

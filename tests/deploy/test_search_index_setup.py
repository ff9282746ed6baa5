"""The deploy step that makes the search index (functions/search_index, the custom resource
``SearchIndexSetup``) against the loopback search stub, with CloudFormation's side played by
a loopback server that receives the response document; and ``agent-memory reindex
--rebuild``, which fills a changed configuration's index beside the serving one and switches
the alias. No OpenSearch server runs here."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest
from cfn_response import CloudFormationSide
from search_stub import SearchCluster

from agent_memory.adapters.opensearch.admin import provision, versioned_name
from agent_memory.adapters.opensearch.client import make_client
from agent_memory.adapters.opensearch.index import OpenSearchIndex
from agent_memory.adapters.opensearch.mapping import index_body
from agent_memory.runtime import set_runtime

REPO = Path(__file__).resolve().parents[2]
ALIAS = "agent-memory-acme"




@pytest.fixture
def cluster() -> Iterator[SearchCluster]:
    c = SearchCluster()
    yield c
    c.close()


@pytest.fixture
def cfn() -> Iterator[CloudFormationSide]:
    side = CloudFormationSide()
    yield side
    side.server.shutdown()
    side.server.server_close()


def handler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str, dimensions: int = 64):
    """functions/search_index/app.py with the environment template.yaml gives it."""
    return handler_module(monkeypatch, tmp_path, url, dimensions).lambda_handler


def handler_module(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str, dimensions: int = 64):
    for key, value in {"AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"), "AGENT_MEMORY_CURSOR_SECRET": "s",
                       "AGENT_MEMORY_SEARCH": "opensearch", "AGENT_MEMORY_OPENSEARCH_URL": url,
                       "AGENT_MEMORY_OPENSEARCH_SERVICE": "es", "AGENT_MEMORY_OPENSEARCH_INDEX": ALIAS,
                       "AGENT_MEMORY_OPENSEARCH_ENGINE": "lucene", "AGENT_MEMORY_MODELS_EMBEDDING": "hashing/v1",
                       "AGENT_MEMORY_EMBEDDING_DIMENSIONS": str(dimensions), "AWS_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    set_runtime(None)
    spec = importlib.util.spec_from_file_location("search_index_app", REPO / "functions" / "search_index" / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_create_makes_the_versioned_index_and_the_alias_and_answers_cloudformation(monkeypatch, tmp_path, cluster,
                                                                                  cfn):
    url = cluster.listen("SearchIndexFunction")
    run = handler(monkeypatch, tmp_path, url)
    run(cfn.event("Create"), None)
    (answer,) = cfn.responses
    expected = versioned_name(ALIAS, index_body("hashing/v1", 64, "lucene"))
    assert answer["Status"] == "SUCCESS" and answer["PhysicalResourceId"] == expected
    assert answer["Data"] == {"Alias": ALIAS, "IndexName": expected, "Serving": expected, "Created": "true",
                              "NeedsRebuild": "false"}
    assert set(cluster.indices) == {expected} and cluster.aliases == {ALIAS: {expected}}
    assert cluster.indices[expected]["mappings"]["_meta"]["embedder_dimension"] == 64
    # A function that may not create indexes finds the index through the alias at once.
    function = OpenSearchIndex(cluster.listen("FactsFunction"), ALIAS, _embedder(64), service="es",
                               create_index=False)
    function.ensure_index()
    assert [(m, p.split("?")[0]) for m, p, _ in cluster.requests["FactsFunction"]] == [("GET", f"/{ALIAS}/_mapping")]
    # The same configuration again (an update that changed nothing relevant): nothing new.
    run(cfn.event("Update", expected), None)
    assert cfn.responses[-1]["Data"]["Created"] == "false" and set(cluster.indices) == {expected}
    set_runtime(None)


def test_a_changed_embedder_gets_its_index_beside_the_serving_one_until_the_rebuild_switches(
        monkeypatch, tmp_path, cluster, cfn, capsys):
    url = cluster.listen("SearchIndexFunction")
    handler(monkeypatch, tmp_path, url, dimensions=64)(cfn.event("Create"), None)
    old = cfn.responses[-1]["PhysicalResourceId"]
    handler(monkeypatch, tmp_path, url, dimensions=128)(cfn.event("Update", old), None)
    answer = cfn.responses[-1]
    new = versioned_name(ALIAS, index_body("hashing/v1", 128, "lucene"))
    assert answer["Status"] == "SUCCESS" and answer["PhysicalResourceId"] == new != old
    assert answer["Data"]["NeedsRebuild"] == "true" and answer["Data"]["Serving"] == old
    assert set(cluster.indices) == {old, new} and cluster.aliases == {ALIAS: {old}}, "the old index keeps serving"
    # Until the rebuild, a function with the new embedder refuses to mix vectors: a search
    # outage (reads fall back to the table), not a failed request.
    from agent_memory.ports import SearchUnavailable

    with pytest.raises(SearchUnavailable) as refused:
        OpenSearchIndex(url, ALIAS, _embedder(128), service="es", create_index=False).ensure_index()
    assert refused.value.reason == "embedder-mismatch"
    # Delete (the stack replaced the resource, or went away): the index is kept.
    handler(monkeypatch, tmp_path, url, dimensions=128)(cfn.event("Delete", old), None)
    assert cfn.responses[-1]["Status"] == "SUCCESS" and old in cluster.indices

    # The operator's rebuild: records of two contexts, into the new index, then the switch.
    from agent_memory.interfaces import cli
    from agent_memory.runtime import Runtime

    _write_records(Runtime(_settings(tmp_path, url, 128)))
    assert cli.main(["reindex", "--rebuild", "--data-dir", str(tmp_path / "data")]) == 0
    out = capsys.readouterr().out
    assert f"alias {ALIAS} -> {new} (was {old}" in out and "ctx-a" in out and "ctx-b" in out
    assert cluster.aliases == {ALIAS: {new}} and old in cluster.indices
    bulk_paths = {p.split("?")[0] for m, p, _ in cluster.requests["SearchIndexFunction"] if p.endswith("/_bulk")}
    assert bulk_paths == {f"/{new}/_bulk"}, "the rebuild writes only the new index"
    OpenSearchIndex(url, ALIAS, _embedder(128), service="es", create_index=False).ensure_index()
    set_runtime(None)


def test_a_lazily_created_index_under_the_alias_name_is_reported_and_replaced_by_the_rebuild(cluster):
    url = cluster.listen("operator")
    client = make_client(url, service="es")
    OpenSearchIndex(url, ALIAS, _embedder(64), service="es", client=client).ensure_index()  # the old lazy way
    assert ALIAS in cluster.indices
    result = provision(client, ALIAS, "hashing/v1", 64, "lucene")
    assert result.legacy and result.needs_rebuild and result.serving is None
    from agent_memory.adapters.opensearch.admin import switch

    switch(client, ALIAS, result.index)
    assert ALIAS not in cluster.indices and cluster.aliases == {ALIAS: {result.index}}


def test_an_unreachable_search_endpoint_answers_failed_not_a_hung_deploy(monkeypatch, tmp_path, cfn):
    run = handler(monkeypatch, tmp_path, "http://127.0.0.1:9")
    run(cfn.event("Create"), None)
    answer = cfn.responses[-1]
    assert answer["Status"] == "FAILED" and answer["Reason"] and answer["PhysicalResourceId"]
    set_runtime(None)


class FakeTime:
    """The index step's clock and sleep: sleeping moves the clock, nothing waits."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class Context:
    """A Lambda context with the function's timeout (template.yaml) left."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def get_remaining_time_in_millis(self) -> int:
        return int(self.seconds * 1000)


def _timed_handler(monkeypatch, tmp_path, url, fake: FakeTime):
    module = handler_module(monkeypatch, tmp_path, url)
    module._sleep, module._clock = fake.sleep, fake.clock
    return module.lambda_handler


def _timeout() -> int:
    from agent_memory.cfn_template import load_template

    return int(load_template(REPO / "template.yaml")["Resources"]["SearchIndexFunction"]["Properties"]["Timeout"])


def test_a_collection_that_refuses_while_its_policy_propagates_is_retried_until_it_accepts(
        monkeypatch, tmp_path, cluster, cfn):
    """403 for the first 70 s (AWS: "about a minute" before a data access policy is enforced),
    then the same step succeeds, within the function's timeout, with backoff between tries."""
    fake = FakeTime()
    cluster.refuse = lambda method, path: 403 if fake.now < 70 else None
    run = _timed_handler(monkeypatch, tmp_path, cluster.listen("SearchIndexFunction"), fake)
    run(cfn.event("Create"), Context(_timeout()))
    (answer,) = cfn.responses
    expected = versioned_name(ALIAS, index_body("hashing/v1", 64, "lucene"))
    assert answer["Status"] == "SUCCESS", answer
    assert answer["Data"]["IndexName"] == expected and answer["Data"]["Created"] == "true"
    assert cluster.aliases == {ALIAS: {expected}}
    assert fake.sleeps == [2, 4, 8, 16, 30, 30], "exponential backoff, capped at 30 s"
    set_runtime(None)


def test_a_refused_alias_step_is_retried_without_making_the_index_twice(monkeypatch, tmp_path, cluster, cfn):
    """The index is made, then moving the alias is refused (a policy's collection rule lagging
    its index rule): the retry finds the index, points the alias, and still says Created."""
    fake = FakeTime()
    cluster.refuse = lambda method, path: 403 if fake.now < 5 and "_alias" in path else None
    run = _timed_handler(monkeypatch, tmp_path, cluster.listen("SearchIndexFunction"), fake)
    run(cfn.event("Create"), Context(_timeout()))
    answer = cfn.responses[-1]
    assert answer["Status"] == "SUCCESS" and answer["Data"]["Created"] == "true", answer
    puts = [p for m, p, _ in cluster.requests["SearchIndexFunction"] if m == "PUT"]
    assert len(puts) == 1 and cluster.aliases == {ALIAS: {answer["Data"]["IndexName"]}}
    # ... and an update afterwards (nothing changed) makes nothing new.
    run(cfn.event("Update", answer["PhysicalResourceId"]), Context(_timeout()))
    assert cfn.responses[-1]["Status"] == "SUCCESS" and cfn.responses[-1]["Data"]["Created"] == "false"
    assert len([p for m, p, _ in cluster.requests["SearchIndexFunction"] if m == "PUT"]) == 1
    set_runtime(None)


def test_a_collection_that_never_accepts_fails_the_step_with_a_reason_before_its_timeout(
        monkeypatch, tmp_path, cluster, cfn):
    fake = FakeTime()
    cluster.refuse = lambda method, path: 403
    run = _timed_handler(monkeypatch, tmp_path, cluster.listen("SearchIndexFunction"), fake)
    run(cfn.event("Create"), Context(_timeout()))
    (answer,) = cfn.responses
    assert answer["Status"] == "FAILED"
    reason = answer["Reason"]
    assert "ProvisionRefused" in reason and "403" in reason and "SearchDataAccessPolicy" in reason, reason
    # It gave up with time left to answer CloudFormation, having tried past AWS's 5 minutes.
    margin = run.__wrapped__.__globals__["RESPONSE_MARGIN_S"]
    assert 300 < fake.now <= _timeout() - margin
    assert cluster.indices == {} and cluster.aliases == {}
    set_runtime(None)


def test_a_refusal_other_than_403_or_404_fails_at_once(monkeypatch, tmp_path, cluster, cfn):
    fake = FakeTime()
    cluster.refuse = lambda method, path: 400
    run = _timed_handler(monkeypatch, tmp_path, cluster.listen("SearchIndexFunction"), fake)
    run(cfn.event("Create"), Context(_timeout()))
    assert cfn.responses[-1]["Status"] == "FAILED" and fake.sleeps == []
    set_runtime(None)


def _embedder(dimension: int):
    from agent_memory.adapters.embedders import HashingEmbedder

    return HashingEmbedder(dimension=dimension)


def _settings(tmp_path: Path, url: str, dimensions: int):
    from agent_memory.config import load_settings

    return load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"), "AGENT_MEMORY_CURSOR_SECRET": "s",
                              "AGENT_MEMORY_SEARCH": "opensearch", "AGENT_MEMORY_OPENSEARCH_URL": url,
                              "AGENT_MEMORY_OPENSEARCH_SERVICE": "es", "AGENT_MEMORY_OPENSEARCH_INDEX": ALIAS,
                              "AGENT_MEMORY_OPENSEARCH_ENGINE": "lucene", "AGENT_MEMORY_MODELS_EMBEDDING": "hashing/v1",
                              "AGENT_MEMORY_EMBEDDING_DIMENSIONS": str(dimensions),
                              "AGENT_MEMORY_PROJECTION": "stream"})


def _write_records(rt) -> None:
    from agent_memory.access.request_context import RequestContext
    from agent_memory.models.requests import WriteFactsRequest

    for ctx_id in ("ctx-a", "ctx-b"):
        rt.facts.write(RequestContext(context_id=ctx_id, principal="ops", admin=True),
                       WriteFactsRequest(text="I live in Lisbon.", infer="none"))

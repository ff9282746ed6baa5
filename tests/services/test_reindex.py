"""reindex rebuilds a context's units from records, identical to projection, on both stores."""

from __future__ import annotations

import subprocess
import sys

from fused_search import fused_search

from agent_memory.access.request_context import RequestContext
from agent_memory.models.requests import WriteFactsRequest
from agent_memory.ports import SearchFilter
from agent_memory.services.operations.reindex import reindex_context


def _units(runtime, query="London Berlin sushi"):
    hits = fused_search(runtime.search, query, SearchFilter(context_id="acme", as_of="2026-04-01T00:00:00Z"), k=50)
    return sorted((h.unit.id, h.unit.kind, h.unit.text, h.unit.valid_until) for h in hits)


def test_reindex_rebuilds_exactly_what_projection_built(runtime):
    ctx = RequestContext(context_id="acme", principal="p", admin=True)
    runtime.facts.write(ctx, WriteFactsRequest(text="I live in London.", observed_at="2026-03-01T00:00:00Z"))
    runtime.facts.write(ctx, WriteFactsRequest(text="I moved to Berlin. I like sushi.",
                                               observed_at="2026-05-01T00:00:00Z"))
    other = RequestContext(context_id="other", principal="p", admin=True)
    runtime.facts.write(other, WriteFactsRequest(text="I live in Paris."))
    projected = _units(runtime)
    assert projected
    runtime.search.delete_context("acme")
    assert _units(runtime) == []
    stats = reindex_context(runtime.base_store, runtime.search, "acme")
    assert stats.units >= len(projected)
    assert _units(runtime) == projected
    # the other context was not touched
    assert fused_search(runtime.search, "Paris", SearchFilter(context_id="other"), k=5)


def test_reindex_cli_after_embedder_change(tmp_path):
    data = tmp_path / "d"
    env = {"AGENT_MEMORY_DATA_DIR": str(data), "PATH": "", "HOME": str(tmp_path)}
    write = ("from agent_memory.runtime import get_runtime;"
             "from agent_memory.models.requests import WriteFactsRequest as W;"
             "from agent_memory.access.request_context import RequestContext as R;"
             "get_runtime().facts.write(R(context_id='acme', principal='p', admin=True), W(text='I live in Oslo.'))")
    subprocess.run([sys.executable, "-c", write], env=env, check=True, cwd=tmp_path)
    changed = {**env, "AGENT_MEMORY_EMBEDDING_DIMENSIONS": "128"}
    run = [sys.executable, "-m", "agent_memory.interfaces.cli", "reindex", "--context", "acme"]
    refused = subprocess.run(run, env=changed, capture_output=True, text=True, cwd=tmp_path)
    assert refused.returncode != 0 and "embedder" in (refused.stderr + refused.stdout).lower()
    ok = subprocess.run([*run, "--fresh"], env=changed, capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "acme:" in ok.stdout and "hashing/v1" in ok.stdout

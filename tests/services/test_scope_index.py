"""The scope index (services/operations/scope_index.py): ``POST /scopes/forget`` finds a scope's
records by key, never by a scan, on both record stores; the backfill of a table written before
the index (resumable after a crash); and the continuation of a forget cut by the deadline."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from agent_memory.kernel import deadline
from agent_memory.ports import Record
from agent_memory.services.operations import scope_index as si
from agent_memory.services.operations import scope_registry as scopes_module

CTX = "/api/v1/acme"
SCOPES = ["team/a", "team/b", "team/c"]
PER_SCOPE = 6


class CountingStore:
    """Counts what the service reads from the store below it (and refuses any scan)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.fetched: list[tuple[str, str]] = []
        self.queried: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def batch_get(self, keys: Any) -> Any:
        self.fetched.extend(keys)
        return self.inner.batch_get(keys)

    def query(self, pk: str, **kw: Any) -> Any:
        self.queried[pk] += 1
        return self.inner.query(pk, **kw)

    def scan(self, pk_prefix: str) -> Any:
        raise AssertionError("scope forget scanned the table")

    def scan_page(self, pk_prefix: str, **kw: Any) -> Any:
        raise AssertionError("scope forget scanned the table")


def _triple(scope: str, n: int) -> dict[str, Any]:
    return {"entity": {"type": "person", "name": f"{scope.replace('/', '-')}-{n}"}, "key": "job_title",
            "value": f"role {n}"}


def _write(api: Any, scope: str, count: int = PER_SCOPE) -> None:
    for start in range(0, count, 16):  # a write takes at most 16 triples
        r = api.post(f"{CTX}/facts", {"text": "import", "infer": "triples", "scopes": scope,
                                      "triples": [_triple(scope, n) for n in range(start, min(count, start + 16))]})
        assert r.status == 200, r.text


def _base_records(runtime: Any) -> list[Record]:
    return [r for r in _scan_all(runtime.base_store) if r.pk.startswith("c#acme#")]


def _scan_all(store: Any) -> list[Record]:
    out, after = [], None
    while True:
        page = store.scan_page("c#", after=after, limit=200)
        out += page.records
        after = page.last_key
        if after is None:
            return out


def _under(record: Record, path: str) -> bool:
    return any(p == path or p.startswith(path + "/") for p in si.paths_of(record.data))


def _member_rows(runtime: Any) -> set[tuple[str, str]]:
    return {(r.pk, r.sk) for r in _base_records(runtime) if "#scope-members#" in r.pk}


def _forget_index_state(runtime: Any) -> None:
    """Make the table what one written before the index is: records, no membership rows, no
    backfill progress."""
    store = runtime.base_store
    for pk, sk in _member_rows(runtime):
        store.delete(pk, sk)
    store.delete(si.STATE_PK, si.STATE_SK)


def test_every_indexed_record_has_its_membership_rows_and_a_busy_scope_spreads_over_shards(api, runtime):
    _write(api, "org/acme", 40)
    records = [r for r in _base_records(runtime) if si.indexed(r)]
    assert len(records) >= 40
    expected = {k for r in records for k in si.member_keys(r)}
    assert expected == _member_rows(runtime)
    shards = Counter(pk.rsplit("#", 1)[1] for pk, _ in expected)
    assert len(shards) >= 8 and max(shards.values()) <= len(expected) // 2  # not one hot key


def test_forgetting_a_scope_reads_only_that_scopes_records(api, runtime, store_kind):
    for scope in SCOPES:
        _write(api, scope)
    assert runtime.scope_index.backfill().complete  # a new table: done at once
    counting = CountingStore(runtime.scope_registry.store)
    runtime.scope_registry.store = counting
    runtime.scope_index.store = counting
    before = {(r.pk, r.sk): r for r in _base_records(runtime)}
    r = api.post(f"{CTX}/scopes/forget", {"path": "team/b"})
    assert r.status == 200, r.text
    body = r.json()
    assert body["complete"] is True and body["receipt"]["action"] == "scope.forget"
    assert set(body) == {"forgotten", "complete", "receipt"}  # no continuation when done
    fetched = set(counting.fetched)
    # The records read by key are exactly team/b's (facts under it), nothing of another scope.
    assert fetched and all(_under(before[k], "team/b") for k in fetched if k in before)
    assert {k for k, rec in before.items() if si.indexed(rec) and _under(rec, "team/b")} <= fetched
    member_queries = [pk for pk in counting.queried if "#scope-members#" in pk]
    assert len(member_queries) == si.SHARDS
    after = _base_records(runtime)
    assert not [x for x in after if si.indexed(x) and _under(x, "team/b")]
    assert len([x for x in after if si.indexed(x) and _under(x, "team/a")]) >= PER_SCOPE
    assert not [k for k in _member_rows(runtime) if k[1].startswith("team/b/")]
    assert api.post(f"{CTX}/scopes/forget", {"path": "team/b"}).json()["forgotten"] == 0


def test_a_forget_cut_by_the_deadline_answers_a_continuation_that_finishes_it(api, runtime, monkeypatch):
    _write(api, "team/a", 12)
    _write(api, "team/b", 3)
    total = len([r for r in _base_records(runtime) if si.indexed(r) and _under(r, "team/a")])
    monkeypatch.setattr(scopes_module, "_BATCH", 4)
    monkeypatch.setattr(deadline, "remaining", lambda: 1.0)  # always short: one batch a call
    answers, body = [], {"path": "team/a"}
    while True:
        r = api.post(f"{CTX}/scopes/forget", body)
        assert r.status == 200, r.text
        answers.append(r.json())
        if r.json()["complete"]:
            break
        body = {"path": "team/a", "continuation": r.json()["continuation"]}
        assert len(answers) < 50
    assert len(answers) > 2 and all(a["complete"] is False for a in answers[:-1])
    assert "continuation" not in answers[-1]
    assert sum(a["forgotten"] for a in answers) == total
    monkeypatch.undo()
    left = _base_records(runtime)
    assert not [x for x in left if si.indexed(x) and _under(x, "team/a")]
    assert [x for x in left if si.indexed(x) and _under(x, "team/b")]


def test_a_continuation_is_bound_to_its_path_and_context(api, runtime, monkeypatch):
    _write(api, "team/a", 8)
    monkeypatch.setattr(scopes_module, "_BATCH", 2)
    monkeypatch.setattr(deadline, "remaining", lambda: 1.0)
    token = api.post(f"{CTX}/scopes/forget", {"path": "team/a"}).json()["continuation"]
    assert api.post(f"{CTX}/scopes/forget", {"path": "team/b", "continuation": token}).status == 400
    assert api.post(f"{CTX}/scopes/forget", {"path": "team/a", "continuation": token[:-3] + "xyz"}).status == 400
    assert api.post(f"{CTX}/scopes/forget", {"path": "team/a", "continuation": token}).status == 200


def test_membership_rows_of_a_record_gone_another_way_are_cleaned_up(api, runtime):
    _write(api, "team/a", 3)
    records = [r for r in _base_records(runtime) if si.indexed(r) and _under(r, "team/a")]
    runtime.base_store.delete(records[0].pk, records[0].sk)  # as a purge would, leaving its rows
    stale = set(si.member_keys(records[0]))
    assert stale <= _member_rows(runtime)
    index = runtime.scope_index
    member = runtime.base_store.get(*sorted(stale)[0])
    assert not index.stale(member, None, "team/a")  # young: may precede its transaction
    member.data["at"] -= si.STALE_AFTER_S + 1
    assert index.stale(member, None, "team/a")
    r = api.post(f"{CTX}/scopes/forget", {"path": "team/a"})
    assert r.json()["forgotten"] == len(records) - 1


# --- the backfill ------------------------------------------------------------------------


def test_a_table_written_before_the_index_is_backfilled_then_forgotten_by_key(api, runtime):
    for scope in SCOPES:
        _write(api, scope)
    expected = _member_rows(runtime)
    _forget_index_state(runtime)
    assert not _member_rows(runtime)
    state = runtime.scope_index.backfill()
    assert state.complete and state.indexed == len(expected) and state.scanned > 0
    assert _member_rows(runtime) == expected
    assert runtime.scope_index.backfill().indexed == len(expected)  # done: a no-op
    assert api.post(f"{CTX}/scopes/forget", {"path": "team/c"}).json()["forgotten"] >= PER_SCOPE


def test_forget_refuses_while_the_backfill_has_not_finished_and_each_call_moves_it_on(api, runtime, monkeypatch):
    for scope in SCOPES:
        _write(api, scope)
    _forget_index_state(runtime)
    runtime.scope_index.page = 5
    monkeypatch.setattr(deadline, "remaining", lambda: 1.0)  # one page per request
    refusals = []
    while True:
        r = api.post(f"{CTX}/scopes/forget", {"path": "team/a"})
        if r.status != 503:
            break
        refusals.append(r.json())
        assert r.headers["retry-after"] and r.json()["code"] == "scope_index_backfilling"
        assert len(refusals) < 400
    assert r.status == 200 and r.json()["forgotten"] >= PER_SCOPE
    assert len(refusals) >= 2
    scanned = [x["backfill"]["scanned"] for x in refusals]
    assert scanned == sorted(scanned) and scanned[0] < scanned[-1] and not refusals[-1]["backfill"]["complete"]


class Crash(Exception):
    pass


class CrashingStore:
    """Fails the ``at``-th transaction: a process killed halfway through the backfill."""

    def __init__(self, inner: Any, at: int):
        self.inner, self.at, self.calls = inner, at, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def transact(self, ops: Any) -> None:
        self.calls += 1
        if self.calls == self.at:
            raise Crash("killed")
        self.inner.transact(ops)


def test_a_backfill_that_crashes_halfway_resumes_where_it_stood_and_completes(api, runtime):
    for scope in SCOPES:
        _write(api, scope)
    expected = _member_rows(runtime)
    _forget_index_state(runtime)
    total = len(_scan_all(runtime.base_store))
    crashing = si.ScopeIndex(CrashingStore(runtime.base_store, at=4), page=7)
    with pytest.raises(Crash):
        crashing.backfill()
    halfway = si.ScopeIndex(runtime.base_store, page=7).state()
    assert not halfway.complete and halfway.after is not None and 0 < halfway.scanned < total
    assert 0 < len(_member_rows(runtime)) < len(expected)
    pages: list[int] = []
    state = si.ScopeIndex(runtime.base_store, page=7).backfill(progress=lambda s: pages.append(s.scanned))
    assert state.complete and state.finished_at
    assert _member_rows(runtime) == expected
    assert pages[0] > halfway.scanned  # resumed, not restarted
    assert state.scanned < 2 * total


def test_the_cli_backfills_a_local_store_and_reports_progress(api, runtime, store_kind, capsys, tmp_path):
    if store_kind != "sqlite":
        pytest.skip("the command runs against the local data directory here")
    from agent_memory.interfaces.cli import main

    for scope in SCOPES:
        _write(api, scope)
    expected = _member_rows(runtime)
    _forget_index_state(runtime)
    assert main(["scopes", "status", "--data-dir", str(tmp_path / "data")]) == 0
    assert "in progress; 0 items read" in capsys.readouterr().out
    assert main(["scopes", "backfill", "--pages", "1", "--page-size", "20", "--data-dir", str(tmp_path / "data")]) == 0
    assert "in progress" in capsys.readouterr().out
    assert main(["scopes", "backfill", "--data-dir", str(tmp_path / "data")]) == 0
    out = capsys.readouterr().out
    assert "complete; " in out and f"{len(expected)} membership rows written" in out
    assert _member_rows(runtime) == expected


def test_the_stacks_schedule_runs_the_backfill_in_the_administration_function(api, runtime):
    """template.yaml's ``ScopeIndexBackfillSchedule``: its event into the administration
    function's handler moves the backfill on within the invocation's time."""
    import importlib.util
    from pathlib import Path

    from agent_memory.cfn_template import load_template
    from agent_memory.http.gateway import LocalLambdaContext

    repo = Path(__file__).resolve().parents[2]
    rule = load_template(repo / "template.yaml")["Resources"]["ScopeIndexBackfillSchedule"]["Properties"]
    assert rule["Targets"][0]["Arn"] == {"Fn::GetAtt": ["AdministrationFunction", "Arn"]}
    event = json.loads(rule["Targets"][0]["Input"])
    spec = importlib.util.spec_from_file_location("administration_app", repo / "functions/administration/app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for scope in SCOPES:
        _write(api, scope)
    expected = _member_rows(runtime)
    _forget_index_state(runtime)
    run = module.lambda_handler(event, LocalLambdaContext("AdministrationFunction"))
    assert run["complete"] is True and run["indexed"] == len(expected), run
    assert _member_rows(runtime) == expected
    again = module.lambda_handler(event, LocalLambdaContext("AdministrationFunction"))
    assert again == run  # complete: nothing more to do


def test_two_backfills_at_once_never_move_the_progress_back(api, runtime):
    for scope in SCOPES:
        _write(api, scope)
    expected = _member_rows(runtime)
    _forget_index_state(runtime)
    slow, fast = si.ScopeIndex(runtime.base_store, page=5), si.ScopeIndex(runtime.base_store, page=5)
    slow.backfill(pages=1)
    behind = slow.state()  # read, then another run moves on
    fast.backfill(pages=4)
    ahead = fast.state()
    slow_state = si.BackfillState(**{**behind.__dict__})
    slow._save(slow_state)
    assert slow_state.scanned == ahead.scanned and slow.state().scanned == ahead.scanned  # adopted, not regressed
    assert slow.backfill().complete and _member_rows(runtime) == expected

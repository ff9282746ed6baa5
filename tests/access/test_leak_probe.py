"""A randomised leak probe: random principals (groups, read/write regions with wildcards,
bound partitions, delegate rights), random writes (facts with scopes, thread turns with
reader lists), then every caller reads through /state, /query (the embedded index) and the
thread routes, directly and on behalf of others. Each read is checked against a small
reference model of who may see what: 0 leaks, 0 wrongful 403s. Both record stores; a fixed
seed and one that rotates daily (printed, so a failure can be replayed with PROBE_SEED)."""

from __future__ import annotations

import dataclasses
import os
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agent_memory import scopes as scope_lib
from agent_memory.config import parse_principals
from agent_memory.runtime import Runtime, set_runtime

PATHS = ["org/acme/user/u0", "org/acme/user/u1", "org/acme/user/u2", "org/acme/team/t0", "org/acme/shared"]
REGION_CHOICES = PATHS + ["org/acme/user/*", "org/acme/*", "org/acme/team"]
PARTITIONS = ["p0", "p1"]
ADMIN_KEY = "probe-admin-key-000000"
SEEDS = [20261201, int(os.environ.get("PROBE_SEED") or time.time() // 86400)]


@dataclass
class Principal:
    name: str
    key: str
    groups: list[str]
    read: list[str] | None
    write: list[str] | None
    partitions: list[str] | None
    delegate: bool

    def config(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"key": self.key, "principal": self.name, "groups": self.groups,
                                 "verbs": ["memory:read", "memory:write", "memory:forget"]
                                 + (["delegate"] if self.delegate else [])}
        for name, value in (("read_region", self.read), ("write_region", self.write),
                            ("partitions", self.partitions)):
            if value is not None:
                entry[name] = value
        return entry


def make_principals(rng: random.Random) -> list[Principal]:
    out = []
    for i in range(6):
        def region() -> list[str] | None:
            return None if rng.random() < 0.15 else rng.sample(REGION_CHOICES, rng.randint(1, 3))
        out.append(Principal(name=f"p{i}", key=f"probe-key-{i:02d}-0000000000", groups=rng.sample(["g0", "g1"],
                             rng.randint(0, 1)), read=region(), write=region(),
                             partitions=None if rng.random() < 0.5 else rng.sample(PARTITIONS, 1),
                             delegate=rng.random() < 0.5))
    return out


@pytest.fixture(params=SEEDS, ids=["fixed-seed", "rotating-seed"])
def probe(request, runtime: Runtime) -> Iterator[tuple[random.Random, list[Principal]]]:
    rng = random.Random(request.param)
    print(f"leak probe seed {request.param}")
    principals = make_principals(rng)
    rt = Runtime(dataclasses.replace(runtime.settings,
                                     principals=parse_principals(None, [p.config() for p in principals] + [
                                         {"key": ADMIN_KEY, "principal": "probe-admin", "admin": True}])))
    set_runtime(rt)
    yield rng, principals
    set_runtime(runtime)


def effective(caller: Principal, target: Principal | None) -> tuple[list[str] | None, list[str] | None, Principal]:
    if target is None:
        return caller.read, caller.write, caller
    inter = scope_lib.intersect_regions
    read, write = inter(caller.read, target.read), inter(caller.write, target.write)
    return (None if read is None else list(read)), (None if write is None else list(write)), target


def allowed_partition(p: Principal, partition: str) -> bool:
    return p.partitions is None or partition in p.partitions


def test_leak_probe(api, probe):
    rng, principals = probe
    ctx = "/api/v1/acme"
    facts: list[tuple[str, str, list[list[str]]]] = []  # (token, partition, scopes)
    turns: list[tuple[str, str, str, list[str] | None]] = []  # (token, partition, thread, readers)
    checks = leaks = wrongful = 0

    def headers(p: Principal, partition: str, on_behalf: Principal | None = None) -> dict[str, str]:
        h = {"authorization": f"Bearer {p.key}", "x-memory-partition": partition}
        if on_behalf is not None:
            h["x-spectron-on-behalf-of"] = on_behalf.name
        return h

    # --- writes: facts in random scopes (some outside the writer's region), thread turns ---
    for _ in range(36):
        writer, partition = rng.choice(principals), rng.choice(PARTITIONS)
        token = "Tok" + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(7))
        scopes = [rng.sample(PATHS, rng.randint(1, 2)) for _ in range(rng.randint(1, 2))]
        r = api.request("POST", f"{ctx}/facts", {"text": f"I like {token}.", "scopes": scopes},
                        headers=headers(writer, partition))
        may_write = allowed_partition(writer, partition) and not scope_lib.writable(scopes, writer.write)
        checks += 1
        if may_write:
            wrongful += r.status == 403
            assert r.status == 200, r.text
            facts.append((token, partition, [sorted(c) for c in scopes]))
        else:
            leaks += r.status != 403
    threads = {f"t{i}": rng.choice([None, ["p0"], ["p1", "group:g0"], []]) for i in range(3)}
    for thread, readers in threads.items():
        for partition in PARTITIONS:
            r = api.request("PUT", f"{ctx}/threads/{thread}/acl", {"acl_readers": readers},
                            headers={"authorization": f"Bearer {ADMIN_KEY}", "x-memory-partition": partition})
            assert r.status == 200, r.text
    for _ in range(18):
        writer, partition = rng.choice(principals), rng.choice(PARTITIONS)
        thread = rng.choice(sorted(threads))
        if not allowed_partition(writer, partition):
            continue
        token = "Tt" + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(7))
        readers = rng.choice([None, [writer.name], ["group:g1"], [rng.choice(principals).name]])
        body = {"text": f"note {token}", **({"acl_readers": readers} if readers is not None else {})}
        r = api.request("POST", f"{ctx}/threads/{thread}/turns", body, headers=headers(writer, partition))
        if r.status == 201:
            turns.append((token, partition, thread, readers))

    def can_read_turn(p: Principal, readers: list[str] | None) -> bool:
        names = {p.name, *(f"group:{g}" for g in p.groups)}
        return readers is None or bool(names & set(readers))

    # --- reads: every caller, directly and on behalf of every other, both partitions ---
    pairs = [(c, None) for c in principals] + [(c, t) for c in principals for t in principals if c is not t]
    for caller, target in pairs:
        for partition in PARTITIONS:
            read, _, who = effective(caller, target)
            bound = allowed_partition(caller, partition) and (target is None or (
                caller.delegate and allowed_partition(target, partition)))
            h = headers(caller, partition, target)
            state = api.request("GET", f"{ctx}/state", headers=h)
            query = api.request("POST", f"{ctx}/query", {"query": "likes", "k": 50, "mode": "bm25"}, headers=h)
            if not bound:
                checks += 2
                leaks += (state.status != 403) + (query.status != 403)
                continue
            wrongful += (state.status == 403) + (query.status == 403)
            assert state.status == 200 and query.status == 200, (state.text, query.text)
            for token, fact_partition, scopes in facts:
                visible = fact_partition == partition and scope_lib.visible(scopes, read)
                for text in (state.text, query.text):
                    checks += 1
                    if token in text and not visible:
                        leaks += 1
                checks += 1
                if visible and token not in state.text:
                    wrongful += 1  # /state must show everything readable (small data: under its limit)
            for thread, thread_readers in threads.items():
                r = api.request("GET", f"{ctx}/threads/{thread}/turns?limit=100", headers=h)
                thread_visible = can_read_turn(who, thread_readers)
                checks += 1
                if r.status != 200:
                    continue  # 404: missing or not visible, both fine unless it should be visible
                if not thread_visible:
                    leaks += 1
                for token, turn_partition, turn_thread, readers in turns:
                    if turn_thread != thread:
                        continue
                    checks += 1
                    own = readers if readers is not None else thread_readers
                    if token in r.text and not (turn_partition == partition and can_read_turn(who, own)):
                        leaks += 1
    print(f"leak probe: {checks} checks, {leaks} leaks, {wrongful} wrongful 403s or omissions")
    assert checks > 1000
    assert leaks == 0 and wrongful == 0

"""A randomised leak probe: random principals (groups, read/write regions with wildcards,
bound partitions, delegate rights), random writes through every write route (facts, triples
that make entities, relations and actions, instructions, uncertainties, /facts/batch,
sessions, chat, documents; some outside the writer's region, which must be 403), thread turns
with reader lists; then every caller reads every read route (/state, /profile, /query on the
embedded index, /entities, /attributes, /relations, /actions, /instructions, /uncertainty,
entity reads and history, sessions, documents and chunks, traces, threads), directly and on
behalf of others. Each read is checked against a small
reference model of who may see what: 0 leaks, 0 wrongful 403s. Both record stores; a fixed
seed and one that rotates daily (printed, so a failure can be replayed with PROBE_SEED)."""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from typing import Any

import pytest

from agent_memory.access import scopes as scope_lib
from agent_memory.runtime import get_runtime

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
def probe(request) -> tuple[random.Random, list[Principal]]:
    rng = random.Random(request.param)
    print(f"leak probe seed {request.param}")
    return rng, make_principals(rng)


@pytest.fixture
def principals_setting(probe: tuple[random.Random, list[Principal]]) -> list[dict[str, Any]]:
    return [p.config() for p in probe[1]] + [{"key": ADMIN_KEY, "principal": "probe-admin", "admin": True}]


def effective(caller: Principal, target: Principal | None) -> tuple[list[str] | None, list[str] | None, Principal]:
    if target is None:
        return caller.read, caller.write, caller
    inter = scope_lib.intersect_regions
    read, write = inter(caller.read, target.read), inter(caller.write, target.write)
    return (None if read is None else list(read)), (None if write is None else list(write)), target


def may_act_for(caller: Principal, target: Principal) -> bool:
    """The delegation rule (docs/decisions.md, "Administration"): the target reads nothing the
    caller may not (no principal here is an admin)."""
    if caller.read is None:
        return True
    return target.read is not None and all(scope_lib.path_covered(p, caller.read) for p in target.read)


def allowed_partition(p: Principal, partition: str) -> bool:
    return p.partitions is None or partition in p.partitions


def _token(rng: random.Random, prefix: str) -> str:
    return prefix + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(7))


@dataclass
class Written:
    """What the reference model knows of one write: where it landed and who may see it."""

    token: str
    partition: str
    scopes: list[list[str]]
    kind: str  # fact, entity, instruction, uncertainty, session, chat, document
    ref: str = ""  # the id or name to read it back by (entity name, session/document id)


@pytest.mark.timeout(300)  # moto under a loaded machine; typically well under a minute
def test_leak_probe(api, probe):
    rng, principals = probe
    ctx = "/api/v1/acme"
    written: list[Written] = []
    forbidden: list[str] = []  # tokens of writes that were refused: visible to nobody, ever
    traces: list[tuple[str, str, Principal]] = []  # (trace id, partition, writer)
    turns: list[tuple[str, str, str, list[str] | None]] = []  # (token, partition, thread, readers)
    checks = leaks = wrongful = 0
    started = time.perf_counter()
    found: list[str] = []  # the first few leaks, described

    def leak(what: str) -> int:
        if len(found) < 20:
            found.append(what)
        return 1

    def headers(p: Principal, partition: str, on_behalf: Principal | None = None) -> dict[str, str]:
        h = {"authorization": f"Bearer {p.key}", "x-memory-partition": partition}
        if on_behalf is not None:
            h["x-spectron-on-behalf-of"] = on_behalf.name
        return h

    def scoped_write(kind: str, path: str, body: dict[str, Any], token: str, *, single: bool = False,
                     created: tuple[int, ...] = (200, 201, 202)) -> Any:
        """One write through ``path`` by a random principal in a random partition with random
        scopes (some outside its region): allowed ones must succeed, the rest 403."""
        nonlocal checks, leaks, wrongful
        writer, partition = rng.choice(principals), rng.choice(PARTITIONS)
        if writer.partitions and rng.random() < 0.8:
            partition = rng.choice(writer.partitions)
        inside = [p for p in PATHS if scope_lib.path_covered(p, writer.write)]
        pool = inside if inside and rng.random() < 0.6 else PATHS  # mostly allowed, some refused
        if single:  # chat: one path, so what it retrieves is inside what it stores
            scopes = [[rng.choice(pool)]]
        else:
            scopes = [rng.sample(pool, rng.randint(1, min(2, len(pool)))) for _ in range(rng.randint(1, 2))]
        r = api.request("POST", f"{ctx}{path}", {**body, "scopes": scopes}, headers=headers(writer, partition))
        may_write = allowed_partition(writer, partition) and not scope_lib.writable(scopes, writer.write)
        checks += 1
        if not may_write:
            if r.status != 403:
                leaks += leak(f"write {path} {scopes} in {partition} by {writer.name} -> {r.status}")
            forbidden.append(token)
            return None
        wrongful += r.status == 403
        assert r.status in created, (path, r.status, r.text)
        data = r.json()
        ref = data.get("id") or data.get("sessionId") or ""
        written.append(Written(token, partition, [sorted(c) for c in scopes], kind, ref))
        if kind == "chat":
            traces.append((data["traceId"], partition, writer))
        return data

    slow_store = get_runtime().settings.store == "dynamodb"  # moto answers slowly: sample more thinly

    def n(count: int) -> int:
        return max(2, count // 3) if slow_store else count

    # --- writes through every write route (facts, triples, sessions, chat, documents) ---
    for _ in range(n(20)):
        token = _token(rng, "Tok")
        scoped_write("fact", "/facts", {"text": f"I like {token}."}, token)
    for _ in range(n(8)):
        token, name = _token(rng, "Val"), _token(rng, "Ent")
        triples = [{"entity": {"type": "person", "name": name}, "key": "city", "value": token},
                   {"entity": {"type": "person", "name": name}, "verb": "visited", "object": token + "x"},
                   {"entity": {"type": "person", "name": name}, "key": "employer",
                    "target": {"type": "organization", "name": token + "org"}}]
        if scoped_write("entity", "/facts", {"text": f"{name} lives in {token}.", "infer": "triples",
                                             "triples": triples}, token) is not None:
            written[-1].ref = name
    for _ in range(n(5)):
        token = _token(rng, "Ins")
        scoped_write("instruction", "/facts", {"text": f"Always mention topic {token}."}, token)
    for _ in range(n(5)):
        token = _token(rng, "Unc")
        scoped_write("uncertainty", "/facts", {"text": f"I think I live in {token}."}, token)
    for _ in range(n(3)):
        token = _token(rng, "Bat")
        scoped_write("fact", "/facts/batch", {"messages": [{"role": "user", "content": f"I like {token}."}]}, token)
    for _ in range(n(5)):
        token = _token(rng, "Ses")
        scoped_write("session", "/sessions", {"labels": [token]}, token, created=(201,))
    for _ in range(n(4)):
        token = _token(rng, "Cha")
        scoped_write("chat", "/chat", {"message": f"I like {token}.", "bypassCache": True}, token, single=True)
    for _ in range(n(3)):
        token = _token(rng, "Doc")
        scoped_write("document", "/documents", {"title": f"Notes {token}", "text": f"# {token}\n\nI like {token}."},
                     token)

    threads = {f"t{i}": rng.choice([None, ["p0"], ["p1", "group:g0"], []]) for i in range(3)}
    for thread, readers in threads.items():
        for partition in PARTITIONS:
            r = api.request("PUT", f"{ctx}/threads/{thread}/acl", {"acl_readers": readers},
                            headers={"authorization": f"Bearer {ADMIN_KEY}", "x-memory-partition": partition})
            assert r.status == 200, r.text
    for _ in range(n(18)):
        writer, partition = rng.choice(principals), rng.choice(PARTITIONS)
        thread = rng.choice(sorted(threads))
        if not allowed_partition(writer, partition):
            continue
        token = _token(rng, "Tt")
        readers = rng.choice([None, [writer.name], ["group:g1"], [rng.choice(principals).name]])
        body = {"text": f"note {token}", **({"acl_readers": readers} if readers is not None else {})}
        r = api.request("POST", f"{ctx}/threads/{thread}/turns", body, headers=headers(writer, partition))
        if r.status == 201:
            turns.append((token, partition, thread, readers))

    def can_read_turn(p: Principal, readers: list[str] | None) -> bool:
        names = {p.name, *(f"group:{g}" for g in p.groups)}
        return readers is None or bool(names & set(readers))

    def trace_readable(who: Principal, read: list[str] | None, writer: Principal) -> bool:
        if who.name != writer.name:
            return False
        return read is None or (writer.read is not None
                                and all(scope_lib.path_covered(p, read) for p in writer.read))

    lists = ["/state", "/profile", "/entities?limit=500", "/attributes?limit=500", "/relations?limit=500",
             "/actions?limit=500", "/instructions?limit=500", "/uncertainty?limit=500"]
    # --- reads: every caller, directly and on behalf of every other, both partitions ---
    delegations = [(c, t) for c in principals for t in principals if c is not t]
    if slow_store:  # mostly delegations that are allowed (they read), a few that must be 403
        allowed = [(c, t) for c, t in delegations if c.delegate and may_act_for(c, t)]
        refused = [d for d in delegations if d not in allowed]
        delegations = rng.sample(allowed, min(5, len(allowed))) + rng.sample(refused, min(2, len(refused)))
    pairs = [(c, None) for c in principals] + delegations
    # Reads of single items (by id) for every direct caller and some delegations.
    by_id = {(c.name, None) for c in principals} | {
        (c.name, t.name) for c, t in rng.sample(delegations, 3 if slow_store else 12)}
    for caller, target in pairs:
        for partition in PARTITIONS:
            read, _, who = effective(caller, target)
            bound = allowed_partition(caller, partition) and (target is None or (
                caller.delegate and may_act_for(caller, target) and allowed_partition(target, partition)))
            h = headers(caller, partition, target)
            responses = [api.request("GET", f"{ctx}{path}", headers=h) for path in lists]
            responses.append(api.request("POST", f"{ctx}/query", {"query": "likes", "k": 50, "mode": "bm25"},
                                         headers=h))
            if not bound:
                checks += len(responses)
                for r in responses:
                    if r.status != 403:
                        leaks += leak(f"unbound {caller.name}/{target and target.name} {partition} -> {r.status}")
                continue
            wrongful += sum(r.status == 403 for r in responses)
            assert all(r.status == 200 for r in responses), [(r.status, r.text[:200]) for r in responses]
            texts = [r.text for r in responses]
            for w in written:
                visible = w.partition == partition and scope_lib.visible(w.scopes, read)
                for path, text in zip([*lists, "/query"], texts, strict=True):
                    checks += 1
                    if w.token in text and not visible:
                        leaks += leak(f"{w.kind} {w.token} {w.scopes} in {partition}{path} for "
                                      f"{caller.name}/{target and target.name} read={read}")
                if w.kind == "fact" and w.token.startswith("Tok"):
                    checks += 1
                    if visible and w.token not in texts[0]:
                        wrongful += 1  # /state must show everything readable (small data: under its limit)
            for token in forbidden:
                for path, text in zip([*lists, "/query"], texts, strict=True):
                    checks += 1
                    if token in text:
                        leaks += leak(f"refused {token} in {path}")
            if (caller.name, target.name if target else None) in by_id:
                for w in written:
                    visible = w.partition == partition and scope_lib.visible(w.scopes, read)
                    paths = {"entity": [f"/entities/person/{w.ref}", f"/entities/person/{w.ref}/history/city",
                                        f"/attributes?entity=person/{w.ref}"],
                             "session": [f"/sessions/{w.ref}/turns"], "chat": [f"/sessions/{w.ref}/turns"],
                             "document": [f"/documents/{w.ref}", f"/documents/{w.ref}/chunks"]}.get(w.kind, [])
                    for path in paths:
                        r = api.request("GET", f"{ctx}{path}", headers=h)
                        checks += 1
                        if path.startswith("/attributes"):  # a filtered list: 200, the token decides
                            if w.token in r.text and not visible:
                                leaks += leak(f"{w.kind} {w.scopes} {partition}{path} for {caller.name}")
                            wrongful += visible and w.token not in r.text
                        elif r.status == 200 and not visible:
                            leaks += leak(f"{w.kind} {w.scopes} {partition}{path} for {caller.name}/"
                                          f"{target and target.name} read={read}")
                        elif r.status != 200 and visible:
                            wrongful += 1
                for trace_id, trace_partition, writer in traces:
                    r = api.request("GET", f"{ctx}/traces/{trace_id}", headers=h)
                    ok = trace_partition == partition and trace_readable(who, read, writer)
                    checks += 1
                    if r.status == 200 and not ok:
                        leaks += leak(f"trace of {writer.name} for {caller.name}/{target and target.name}")
                    wrongful += r.status != 200 and ok
            for thread, thread_readers in threads.items():
                r = api.request("GET", f"{ctx}/threads/{thread}/turns?limit=100", headers=h)
                # A turn's own reader list wins over the thread's: a reader of one turn sees the
                # thread (with that turn only).
                thread_visible = can_read_turn(who, thread_readers) or any(
                    tt == thread and tp == partition and readers is not None and can_read_turn(who, readers)
                    for _, tp, tt, readers in turns)
                checks += 1
                if r.status != 200:
                    continue  # 404: missing or not visible, both fine unless it should be visible
                if not thread_visible:
                    leaks += leak(f"thread {thread} for {who.name} {who.groups} readers={thread_readers} {partition} via {caller.name}: {r.text[:300]}")
                for token, turn_partition, turn_thread, readers in turns:
                    if turn_thread != thread:
                        continue
                    checks += 1
                    own = readers if readers is not None else thread_readers
                    if token in r.text and not (turn_partition == partition and can_read_turn(who, own)):
                        leaks += leak(f"thread turn {token} for {who.name}")
    kinds = sorted({w.kind for w in written})
    print(f"leak probe: {checks} checks over {len(written)} writes ({', '.join(kinds)}), {len(forbidden)} refused; "
          f"{leaks} leaks, {wrongful} wrongful 403s or omissions; {time.perf_counter() - started:.1f} s")
    assert checks > 2000, checks
    assert leaks == 0 and wrongful == 0, "\n".join(found)


def test_leak_probe_of_the_administration_routes(api, probe):
    """The same random principals on the administration routes: ``/me`` tells each exactly
    what the reference model gives it (directly and on behalf of others, or 403); the scopes
    registry lists only paths a caller's region covers; none of them (no ``grant:manage``)
    reaches keys or principals, and none can register or forget outside its write region."""
    rng, principals = probe
    ctx = "/api/v1/acme"
    admin = {"authorization": f"Bearer {ADMIN_KEY}", "x-memory-partition": PARTITIONS[0]}
    for path in PATHS:
        assert api.request("POST", f"{ctx}/scopes", {"path": path}, headers=admin).status == 201
    problems: list[str] = []
    checks = 0
    for caller in principals:
        for target in [None, *principals]:
            if target is caller:
                continue
            h = {"authorization": f"Bearer {caller.key}", "x-memory-partition": PARTITIONS[0]}
            if target is not None:
                h["x-spectron-on-behalf-of"] = target.name
            bound = allowed_partition(caller, PARTITIONS[0]) and (target is None or (
                caller.delegate and may_act_for(caller, target) and allowed_partition(target, PARTITIONS[0])))
            me = api.request("GET", f"{ctx}/me", headers=h)
            scopes = api.request("GET", f"{ctx}/scopes", headers=h)
            checks += 2
            if not bound:
                if (me.status, scopes.status) != (403, 403):
                    problems.append(f"{caller.name} for {target and target.name}: {me.status}/{scopes.status}, not 403")
                continue
            read, write, _ = effective(caller, target)
            grants = me.json()["effectiveGrants"]
            if grants.get("memory:read") != (["/"] if read is None else sorted(read)):
                problems.append(f"/me of {caller.name} for {target and target.name}: read {grants.get('memory:read')}")
            if grants.get("memory:write") != (["/"] if write is None else sorted(write)):
                problems.append(f"/me of {caller.name} for {target and target.name}: write {grants.get('memory:write')}")
            if me.json()["delegatedPrincipalId"] != (target.name if target else None):
                problems.append(f"/me of {caller.name} for {target and target.name}: delegation")
            listed = [n["path"] for n in scopes.json()]
            if listed != [p for p in sorted(PATHS) if scope_lib.path_covered(p, read)]:
                problems.append(f"/scopes of {caller.name} for {target and target.name}: {listed}")
        h = {"authorization": f"Bearer {caller.key}", "x-memory-partition": PARTITIONS[0]}
        if not allowed_partition(caller, PARTITIONS[0]):
            continue
        for method, path, body in (("POST", "/keys", {}), ("GET", "/keys", None), ("GET", "/principals", None),
                                   ("POST", f"/principals/{caller.name}/grants", {"path": "/", "verbs": ["admin"]})):
            checks += 1
            if (got := api.request(method, f"{ctx}{path}", body, headers=h).status) != 403:
                problems.append(f"{caller.name} {method} {path}: {got}, not 403")
        outside = next((p for p in PATHS if not scope_lib.path_covered(p, caller.write)), None)
        if outside is not None:
            checks += 2
            for path, body in (("/scopes", {"path": outside}), ("/scopes/forget", {"path": outside})):
                if (got := api.request("POST", f"{ctx}{path}", body, headers=h).status) != 403:
                    problems.append(f"{caller.name} POST {path} {outside}: {got}, not 403")
    print(f"administration leak probe: {checks} checks; {len(problems)} problems")
    assert checks > 50 and problems == [], "\n".join(problems[:20])

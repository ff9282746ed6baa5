"""A randomised leak probe: random principals (groups, read/write regions with wildcards,
bound partitions, delegate rights), random writes through every write route (facts, triples
that make entities, relations and actions, instructions, uncertainties, /facts/batch,
sessions, chat, documents; some outside the writer's region, which must be 403), thread turns
with reader lists; then every caller reads every read route (/state, /profile, /query on the
embedded index, /entities, /attributes, /relations, /actions, /instructions, /uncertainty,
entity reads and history, inspect by reference, sessions, documents and chunks, traces listed and
by id, trace stats, threads), directly and on
behalf of others. Each read is checked against a small
reference model of who may see what: 0 leaks, 0 wrongful 403s. Both record stores; a fixed
seed and one that rotates daily (printed, so a failure can be replayed with PROBE_SEED)."""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent_memory.access import scopes as scope_lib
from agent_memory.runtime import get_runtime

PATHS = ["org/acme/user/u0", "org/acme/user/u1", "org/acme/user/u2", "org/acme/team/t0", "org/acme/shared"]
REGION_CHOICES = PATHS + ["org/acme/user/*", "org/acme/*", "org/acme/team"]
PARTITIONS = ["p0", "p1"]
ADMIN_KEY = "probe-admin-key-000000"
SPEC_PATHS = yaml.safe_load((Path(__file__).resolve().parents[2] / "openapi.yaml").read_text())["paths"]
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
    # (token, partition, thread, readers, scopes: the writer's write region, threads being under read regions)
    turns: list[tuple[str, str, str, list[str] | None, list[list[str]]]] = []
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
            turns.append((token, partition, thread, readers, [[p] for p in writer.write or ()]))

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
                                        f"/attributes?entity=person/{w.ref}", f"/inspect?ref=entity:person/{w.ref}",
                                        f"/inspect?ref=attribute:person/{w.ref}/city"],
                             "session": [f"/sessions/{w.ref}/turns"], "chat": [f"/sessions/{w.ref}/turns"],
                             "document": [f"/documents/{w.ref}", f"/documents/{w.ref}/chunks"]}.get(w.kind, [])
                    for path in paths:
                        r = api.request("GET", f"{ctx}{path}", headers=h)
                        checks += 1
                        if path.startswith(("/attributes", "/inspect")):  # 200 or 404: the token decides
                            if w.token in r.text and not visible:
                                leaks += leak(f"{w.kind} {w.scopes} {partition}{path} for {caller.name}")
                            wrongful += visible and w.token not in r.text
                        elif r.status == 200 and not visible:
                            leaks += leak(f"{w.kind} {w.scopes} {partition}{path} for {caller.name}/"
                                          f"{target and target.name} read={read}")
                        elif r.status != 200 and visible:
                            wrongful += 1
                    if w.kind == "entity":  # the relation to the employer, by reference
                        r = api.request("GET", f"{ctx}/inspect?ref=relation:person/{w.ref}/employer/"
                                               f"organisation/{w.token}org", headers=h)
                        checks += 1
                        shown = r.status == 200 and bool(r.json()["relations"])
                        if shown and not visible:
                            leaks += leak(f"relation {w.scopes} {partition} by reference for {caller.name}")
                        wrongful += visible and not shown
                for trace_id, trace_partition, writer in traces:
                    ok = trace_partition == partition and trace_readable(who, read, writer)
                    for path in (f"/traces/{trace_id}", f"/inspect?ref=trace:{trace_id}"):
                        r = api.request("GET", f"{ctx}{path}", headers=h)
                        checks += 1
                        if r.status == 200 and not ok:
                            leaks += leak(f"trace of {writer.name} via {path} for {caller.name}/{target and target.name}")
                        wrongful += r.status != 200 and ok
                # GET /traces lists exactly the traces GET /traces/{id} answers; stats count them
                listed = api.request("GET", f"{ctx}/traces?limit=500", headers=h)
                stats = api.request("GET", f"{ctx}/traces/stats", headers=h)
                assert listed.status == 200 and stats.status == 200, (listed.text, stats.text)
                ids = {t["id"] for t in listed.json()["traces"]}
                mine = {t for t, tp, wr in traces if tp == partition and trace_readable(who, read, wr)}
                for trace_id, _, writer in traces:
                    checks += 1
                    if trace_id in ids and trace_id not in mine:
                        leaks += leak(f"listed trace of {writer.name} for {caller.name}/{target and target.name}")
                    wrongful += trace_id in mine and trace_id not in ids
                checks += 1
                if stats.json()["totalQueries"] != len(mine):
                    leaks += leak(f"trace stats for {caller.name}/{target and target.name}: "
                                  f"{stats.json()['totalQueries']} queries, {len(mine)} readable")
            for thread, thread_readers in threads.items():
                r = api.request("GET", f"{ctx}/threads/{thread}/turns?limit=100", headers=h)
                # A turn's own reader list wins over the thread's: a reader of one turn sees the
                # thread (with that turn only).
                thread_visible = can_read_turn(who, thread_readers) or any(
                    tt == thread and tp == partition and readers is not None and can_read_turn(who, readers)
                    for _, tp, tt, readers, _ in turns)
                checks += 1
                if r.status != 200:
                    continue  # 404: missing or not visible, both fine unless it should be visible
                if not thread_visible:
                    leaks += leak(f"thread {thread} for {who.name} {who.groups} readers={thread_readers} {partition} via {caller.name}: {r.text[:300]}")
                for token, turn_partition, turn_thread, readers, turn_scopes in turns:
                    if turn_thread != thread:
                        continue
                    checks += 1
                    own = readers if readers is not None else thread_readers
                    if token in r.text and not (turn_partition == partition and can_read_turn(who, own)
                                                and scope_lib.visible(turn_scopes, read)):
                        leaks += leak(f"thread turn {token} {turn_scopes} for {who.name} read={read}")
    for partition in PARTITIONS:  # an admin lists every principal's traces
        admin = {"authorization": f"Bearer {ADMIN_KEY}", "x-memory-partition": partition}
        listed = {t["id"] for t in api.request("GET", f"{ctx}/traces?limit=500", headers=admin).json()["traces"]}
        checks += 1
        wrongful += listed != {t for t, tp, _ in traces if tp == partition}
    kinds = sorted({w.kind for w in written})
    print(f"leak probe: {checks} checks over {len(written)} writes ({', '.join(kinds)}), {len(forbidden)} refused; "
          f"{leaks} leaks, {wrongful} wrongful 403s or omissions; {time.perf_counter() - started:.1f} s")
    assert checks > 2000, checks
    assert leaks == 0 and wrongful == 0, "\n".join(found)


# --- the four gaps an independent probe found (issue 33), with two region-limited teams -----

TEAM_KEYS = {"a": "probe-team-a-key-000000", "b": "probe-team-b-key-000000", "ab": "probe-team-ab-key-00000",
             "admin": ADMIN_KEY}
TEAM_A, TEAM_B = "org/acme/team/a", "org/acme/team/b"
TEAMS = [
    {"key": TEAM_KEYS["a"], "principal": "team-a", "read_region": [TEAM_A], "write_region": [TEAM_A]},
    {"key": TEAM_KEYS["b"], "principal": "team-b", "read_region": [TEAM_B], "write_region": [TEAM_B]},
    # reads both teams, writes only team a's
    {"key": TEAM_KEYS["ab"], "principal": "team-ab", "read_region": [TEAM_A, TEAM_B], "write_region": [TEAM_A]},
    {"key": ADMIN_KEY, "principal": "probe-admin", "admin": True},
]
teams = pytest.mark.parametrize("principals_setting", [TEAMS], ids=["teams"])


def _team(api, who: str):
    from tests.support.callers import As

    return As(api, TEAM_KEYS[who])


def _cursor_bytes(value: str) -> bytes:
    import base64

    raw = value.encode()
    for part in value.split("."):
        try:
            raw += base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        except ValueError:
            pass
    return raw


def _walk(caller, path: str, key: str, limit: int = 1) -> tuple[list[str], list[str], list[str]]:
    """Every page of ``path`` as ``caller``: (ids in order, cursors handed out, starved pages)."""
    ids: list[str] = []
    cursors: list[str] = []
    starved: list[str] = []
    cursor: str | None = None
    for _ in range(100):
        sep = "&" if "?" in path else "?"
        r = caller.get(f"{path}{sep}limit={limit}" + (f"&cursor={cursor}" if cursor else ""))
        assert r.status == 200, r.text
        body = r.json()
        page = body["page"] if isinstance(body.get("page"), dict) else body
        rows = body[key]
        ids += [row.get("id") or row["threadId"] for row in rows]
        if page["hasMore"] and not rows:
            starved.append(page["nextCursor"])
        cursor = page["nextCursor"]
        assert page["hasMore"] == (cursor is not None)
        if cursor is None:
            return ids, cursors, starved
        cursors.append(cursor)
    raise AssertionError(f"{path} did not end")


@teams
@pytest.mark.timeout(300)
def test_pages_of_documents_sessions_and_threads_neither_starve_nor_name_hidden_rows(api):
    """Gaps 2 and 3: a region-limited reader pages /documents, /sessions and /threads one row a
    page past many rows it may not read: every page before the last holds a row, the rows are
    exactly its own, and no cursor carries the id of a hidden row (nor any readable key)."""
    a, b, admin = _team(api, "a"), _team(api, "b"), _team(api, "admin")
    own: dict[str, list[str]] = {"documents": [], "sessions": [], "threads": []}
    hidden: dict[str, list[str]] = {"documents": [], "sessions": [], "threads": []}

    def document(caller, scope: str, n: int) -> str:
        r = caller.post("/documents", {"title": f"notes {n}", "text": f"# notes {n}\n\nitem {n} of the list.",
                                       "scopes": [[scope]]})
        assert r.status in (200, 202), r.text
        return r.json()["id"]

    def session(caller, scope: str) -> str:
        r = caller.post("/sessions", {"scopes": [[scope]]})
        assert r.status == 201, r.text
        return r.json()["id"]

    own["documents"].append(document(a, TEAM_A, 0))
    own["sessions"].append(session(a, TEAM_A))
    for n in range(1, 7):
        hidden["documents"].append(document(b, TEAM_B, n))
        hidden["sessions"].append(session(b, TEAM_B))
    own["documents"].append(document(a, TEAM_A, 7))
    own["sessions"].append(session(a, TEAM_A))
    # Thread ids order the list: a readable one, then team b's and a quarantined one, then another.
    for thread, readers in [("t0-a", ["team-a"]), *((f"t{n}-b", ["team-b"]) for n in range(1, 6)),
                            ("t6-quarantined", []), ("t7-a", ["team-a", "team-ab"])]:
        assert admin.put(f"/threads/{thread}/acl", {"acl_readers": readers}).status == 200
        (own if "team-a" in readers else hidden)["threads"].append(thread)
    for collection, key in (("documents", "documents"), ("sessions", "items"), ("threads", "items")):
        ids, cursors, starved = _walk(a, f"/{collection}", key)
        assert ids == own[collection], (collection, ids)
        assert not starved, f"/{collection}: empty pages with hasMore"
        for value in cursors:
            raw = _cursor_bytes(value)
            for row_id in hidden[collection] + own[collection]:
                assert row_id.encode() not in raw, f"/{collection} cursor names {row_id}"
            assert b"team/b" not in raw and b"acme" not in raw
        # Team b sees its own and only those, with no empty page either.
        ids, _, starved = _walk(b, f"/{collection}", key, limit=2)
        assert set(ids) == {i for i in hidden[collection] if i != "t6-quarantined"} and not starved
    # A cursor altered by one character, or replayed on another list, is a 400.
    _, cursors, _ = _walk(a, "/threads", "items")
    for at in (0, len(cursors[0]) // 2, len(cursors[0]) - 1):
        forged = cursors[0][:at] + ("A" if cursors[0][at] != "A" else "B") + cursors[0][at + 1:]
        assert a.get(f"/threads?cursor={forged}").status == 400, at
    assert a.get(f"/sessions?cursor={cursors[0]}").status == 400


@teams
def test_thread_context_of_an_unreadable_thread_is_404_like_a_missing_one(api):
    """Gap 4: README, openapi.yaml and the handler agree: 404, exactly as a missing thread."""
    a, b, admin = _team(api, "a"), _team(api, "b"), _team(api, "admin")
    assert admin.put("/threads/t-b/acl", {"acl_readers": ["team-b"]}).status == 200
    assert b.post("/threads/t-b/turns", {"text": "team b's secret plan"}).status == 201
    assert admin.put("/threads/t-q/acl", {"acl_readers": []}).status == 200
    assert admin.post("/threads/t-q/turns", {"text": "quarantined words"}).status == 201
    body = {"query": "plan", "last_n_turns": 5}
    assert [i["text"] for i in b.post("/threads/t-b/context", body).json()["items"]] == ["team b's secret plan"]
    answers = [a.post(f"/threads/{t}/context", body) for t in ("t-b", "t-q", "t-missing")]
    assert [r.status for r in answers] == [404, 404, 404]
    assert len({r.json()["title"] for r in answers}) == 1
    assert all("secret" not in r.text and "quarantined" not in r.text for r in answers)
    documented = SPEC_PATHS["/api/v1/{context_id}/threads/{thread_id}/context"]["post"]["responses"]
    assert "404" in documented


def _triples(caller, scope: str, subject: str, *rows: dict[str, Any]) -> None:
    triples = [{"entity": {"type": "person", "name": subject}, **row} for row in rows]
    r = caller.post("/facts", {"text": f"facts about {subject}", "infer": "triples", "triples": triples,
                               "scopes": [[scope]]})
    assert r.status == 200, r.text


def _about(caller, name: str) -> dict[str, Any]:
    """What ``caller`` reads about ``person/<name>``: entity status, attribute values, its
    relations out and in, its actions."""
    r = caller.get(f"/entities/person/{name}")
    entity = r.json() if r.status == 200 else None
    items = lambda path: caller.get(path).json()["items"]  # noqa: E731
    return {"status": r.status,
            "attributes": sorted(a["value"] for a in (entity or {}).get("attributes", [])),
            "listed": f"entity:person/{name}" in {e["id"] for e in caller.get("/entities").json()["entities"]},
            "out": sorted(x["object"].rpartition("/")[2] for x in items(f"/relations?src=person/{name}")),
            "in": sorted(x["subject"].rpartition("/")[2] for x in items(f"/relations?dst=person/{name}")),
            "actions": sorted(x["object"] for x in items(f"/actions?actor=person/{name}"))}


@teams
def test_an_entity_delete_stays_in_the_region_and_the_entity_is_everyones_who_holds_facts(api, runtime):
    """Gap 1: team a deletes ``person/user``; team b's facts about it (attributes, relations
    from it and to it, actions) stay, and team b reads the entity though team a wrote first."""
    a, b, ab, admin = _team(api, "a"), _team(api, "b"), _team(api, "ab"), _team(api, "admin")
    _triples(a, TEAM_A, "user", {"key": "city", "value": "Paris"}, {"verb": "visited", "object": "Lyon"},
             {"key": "employer", "target": {"type": "organization", "name": "alphacorp"}})
    _triples(a, TEAM_A, "anna", {"key": "colleague", "target": {"type": "person", "name": "user"}})
    _triples(b, TEAM_B, "user", {"key": "city", "value": "Berlin"}, {"verb": "visited", "object": "Bonn"},
             {"key": "employer", "target": {"type": "organization", "name": "betacorp"}})
    _triples(b, TEAM_B, "bert", {"key": "colleague", "target": {"type": "person", "name": "user"}})
    before_b = _about(b, "user")
    assert before_b == {"status": 200, "attributes": ["Berlin"], "listed": True, "out": ["betacorp"],
                        "in": ["bert"], "actions": ["Bonn"]}
    assert _about(a, "user")["attributes"] == ["Paris"]
    assert _about(ab, "user")["attributes"] == ["Berlin", "Paris"]
    # Team a reads nothing of team b's and writes none of it.
    assert "Berlin" not in a.get("/entities/person/user").text

    # Team ab reads both but writes only team a's: its delete takes team a's, and only those.
    r = ab.request("DELETE", "/entities/person/user")
    assert r.status == 204, r.text
    assert _about(b, "user") == before_b
    assert _about(a, "user") == {"status": 404, "attributes": [], "listed": False, "out": [], "in": [], "actions": []}
    assert _about(ab, "user") == before_b
    assert _about(admin, "user")["attributes"] == ["Berlin"]
    # What is left team ab may read but not write: 403, and nothing changes.
    snapshot = sorted((r.pk, r.sk, r.version) for r in runtime.store.scan("c#acme#"))
    r = ab.request("DELETE", "/entities/person/user")
    assert r.status == 403, r.text
    assert sorted((r.pk, r.sk, r.version) for r in runtime.store.scan("c#acme#")) == snapshot
    # Team a cannot see the entity any more: 404, and nothing changes either.
    assert a.request("DELETE", "/entities/person/user").status == 404
    assert sorted((r.pk, r.sk, r.version) for r in runtime.store.scan("c#acme#")) == snapshot

    # Team b's own delete removes the rest, and the entity with it.
    assert b.request("DELETE", "/entities/person/user").status == 204
    for caller in (a, b, ab, admin):
        assert _about(caller, "user") == {"status": 404, "attributes": [], "listed": False, "out": [], "in": [],
                                          "actions": []}
    # The entities on the other side of the relations are untouched.
    assert _about(a, "anna")["status"] == _about(b, "bert")["status"] == 200
    # Mentioning the entity again (team a) makes it afresh, team a's alone.
    _triples(a, TEAM_A, "user", {"key": "city", "value": "Nice"})
    assert _about(a, "user")["attributes"] == ["Nice"] and _about(b, "user")["status"] == 404


@teams
def test_an_entity_delete_reads_only_the_entitys_own_rows(api, runtime, monkeypatch):
    """Gap 1: the delete queries the entity's own partitions (attributes, relations, its
    reference rows), never every entity's relations, the actions or the uncertainties."""
    a = _team(api, "a")
    for n in range(6):
        _triples(a, TEAM_A, f"other{n}", {"key": "city", "value": f"Town{n}"},
                 {"key": "friend", "target": {"type": "person", "name": f"other{(n + 1) % 6}"}},
                 {"verb": "visited", "object": f"Place{n}"})
    _triples(a, TEAM_A, "user", {"key": "city", "value": "Paris"}, {"verb": "visited", "object": "Lyon"})
    _triples(a, TEAM_A, "other0", {"key": "sibling", "target": {"type": "person", "name": "user"}})
    entity = a.get("/entities/person/user").json()
    ids = {x["id"] for x in entity["attributes"] + entity["relations"]} | {
        x["id"] for path in ("/actions?actor=person/user", "/relations?dst=person/user")
        for x in a.get(path).json()["items"]}
    assert len(ids) == 3, ids
    queried: list[str] = []
    query = runtime.store.query

    def counting(pk, *args, **kw):
        queried.append(pk)
        return query(pk, *args, **kw)

    monkeypatch.setattr(runtime.store, "query", counting)
    assert a.request("DELETE", "/entities/person/user").status == 204
    monkeypatch.setattr(runtime.store, "query", query)
    own = {f"c#acme#default#{part}#entity:person/user" for part in ("attrs", "rels", "refs")}
    # Besides them only the derived copies of what it removed (cached replies naming those rows),
    # and the context's traces, read to redact any that quote the removed facts (issue 70).
    derived = [pk for pk in queried if pk not in own and pk != "c#acme#default#traces"]
    assert all("#cache-refs#" in pk and pk.rpartition("#")[2] in ids | {"entity:person/user"} for pk in derived), \
        sorted(set(derived))
    assert not [x for x in a.get("/relations?dst=person/user").json()["items"]]
    assert [x["object"] for x in a.get("/relations?src=person/other0").json()["items"]] == ["entity:person/other1"]
    assert len(a.get("/actions").json()["items"]) == 6


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

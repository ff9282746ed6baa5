"""The administration routes' probe, of the kind the leak probe is for the memory routes: 15
stored keys of random grants, regions, admin bits and expiries (a fixed seed), each trying
every escalation of issue 60 on every other key and principal, checked against a reference
model written here from the rules in docs/access.md ("Key and grant authority"), on both
record stores, in process and through the local server.

What must be refused is refused and changes nothing: deleting or rotating a key that outranks
the caller (an admin key, wider grants, a later expiry) or another principal's, minting a key
wider than the caller, changing an admin's grants or those of a principal wider than the
caller; what a key mints never outlives it; a listing shows only what the model says the
caller may see. Afterwards every admin key still works and the service still refuses
anonymous callers."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from agent_memory.access import scopes as scope_lib
from tests.support.callers import As

SEED = 60
PATHS = ["org/acme", "org/acme/team", "org/acme/user/alice", "org/acme/user/bob", "org/acme/user/*"]
MANAGED = ["memory:read", "memory:write", "memory:forget", "delegate", "grant:manage"]
ALL_VERBS = frozenset([*MANAGED, "admin"])


@dataclass
class Key:
    name: str
    principal: str
    admin: bool
    verbs: frozenset[str]
    read: list[str] | None
    write: list[str] | None
    ttl: int | None
    secret: str = ""
    valid_until: str | None = None

    @property
    def held(self) -> frozenset[str]:
        return ALL_VERBS if self.admin else self.verbs

    def region(self, verb: str) -> list[str] | None:
        return self.read if verb == "memory:read" else self.write


def region_within(inner: list[str] | None, outer: list[str] | None) -> bool:
    if outer is None:
        return True
    return inner is not None and all(scope_lib.path_covered(p, outer) for p in inner)


def covers(caller: Key, verbs: frozenset[str], regions: dict[str, list[str] | None]) -> bool:
    """Whether ``caller`` holds ``verbs`` with ``regions`` (the model of ``authority.within``)."""
    if not verbs <= caller.held:
        return False
    return all(region_within(regions[v], caller.region(v)) for v in ("memory:read", "memory:write") if v in verbs)


def outranked_by(target: Key, caller: Key) -> bool:
    """Whether ``target`` holds more than ``caller`` (admin bit, grants, expiry)."""
    if caller.admin:
        return False
    if target.admin or not covers(caller, target.held, {"memory:read": target.read, "memory:write": target.write}):
        return True
    return caller.valid_until is not None and (target.valid_until is None or target.valid_until > caller.valid_until)


def make_keys(rng: random.Random) -> list[Key]:
    keys = []
    for i in range(15):
        admin = i == 0 or rng.random() < 0.1
        verbs = frozenset(v for v in MANAGED if rng.random() < (0.8 if v == "grant:manage" else 0.5))
        verbs = verbs or frozenset(["memory:read"])
        keys.append(Key(f"k{i}", "root" if i == 0 else f"p{rng.randrange(5)}", admin, verbs,
                        None if rng.random() < 0.3 else sorted(rng.sample(PATHS, rng.randint(1, 2))),
                        None if rng.random() < 0.3 else sorted(rng.sample(PATHS, rng.randint(1, 2))),
                        rng.choice([None, None, 600, 3600, 86400])))
    return keys


def test_no_key_or_grant_manager_escalates_through_the_administration_routes(any_api: Any, runtime: Any):
    rng = random.Random(SEED)
    keys = make_keys(rng)
    for k in keys:
        k.secret, stored = runtime.administration.operator_create_key(
            k.principal, admin=k.admin, name=k.name, contexts=["acme"], ttl_seconds=k.ttl,
            verbs=sorted(k.verbs), read_region=k.read, write_region=k.write)
        k.valid_until = stored.valid_until
    by_name = {k.name: k for k in keys}
    root = As(any_api, keys[0].secret)
    problems: list[str] = []
    checks = 0

    def alive(k: Key) -> bool:
        return As(any_api, k.secret).get("/me").status == 200

    # --- keys: delete and rotate what outranks the caller; mint past the caller ------------
    for caller in keys:
        me = As(any_api, caller.secret)
        manages = "grant:manage" in caller.held
        for target in keys:
            if target is caller:
                continue
            refused = not manages or outranked_by(target, caller) or (
                not caller.admin and target.principal != caller.principal)
            if not refused:
                continue  # allowed changes are the other tests' (they would change this probe's keys)
            for method, path in (("DELETE", f"/keys/{target.name}"), ("POST", f"/keys/{target.name}/rotate")):
                checks += 1
                r = me.request(method, path)
                if r.status not in (403, 404):
                    problems.append(f"{caller.name} {method} {path}: {r.status} {r.text[:160]}")
            checks += 1
            if not alive(target):
                problems.append(f"{target.name} stopped working after {caller.name}'s refused changes")
        if not manages:
            continue
        for target in keys:  # a key with another key's grants, and without expiry
            grants = {v: (["/"] if target.region(v) is None else target.region(v))
                      if v in ("memory:read", "memory:write") else ["/"] for v in target.held}
            wanted = {"memory:read": None if "/" in grants.get("memory:read", ["/"]) else grants["memory:read"],
                      "memory:write": None if "/" in grants.get("memory:write", ["/"]) else grants["memory:write"]}
            allowed = covers(caller, frozenset(grants), wanted)
            r = me.post("/keys", {"name": f"m-{caller.name}-{target.name}", "grants": grants})
            checks += 1
            if not allowed:
                if r.status != 403:
                    problems.append(f"{caller.name} minted {target.name}'s grants: {r.status} {r.text[:160]}")
                continue
            if r.status != 201:
                problems.append(f"{caller.name} could not mint {grants}: {r.status} {r.text[:160]}")
                continue
            until = r.json()["validUntil"]
            checks += 1
            if caller.valid_until is not None and (until is None or until > caller.valid_until):
                problems.append(f"{caller.name} (until {caller.valid_until}) minted a key until {until}")
            assert root.request("DELETE", f"/keys/m-{caller.name}-{target.name}").status == 204

    # --- principals: an admin's grants, a wider principal's; what a listing shows -------------
    principals = sorted({k.principal for k in keys})

    def merged(name: str) -> Key:
        mine = [k for k in keys if k.principal == name]
        union = lambda regions: None if any(r is None for r in regions) else sorted({p for r in regions for p in r})  # noqa: E731
        return Key(name, name, any(k.admin for k in mine), frozenset().union(*(k.held for k in mine)),
                   union([k.read for k in mine if "memory:read" in k.held] or [[]]),
                   union([k.write for k in mine if "memory:write" in k.held] or [[]]), None)

    for caller in keys:
        if "grant:manage" not in caller.held or caller.admin:
            continue
        me = As(any_api, caller.secret)
        for name in principals:
            target = merged(name)
            if not (target.admin or not covers(caller, target.held,
                                               {"memory:read": target.read, "memory:write": target.write})):
                continue
            for method, change in (("DELETE", {"path": "/", "verbs": ["memory:read"]}),
                                   ("POST", {"path": "/", "verbs": ["memory:read"]})):
                checks += 1
                r = me.request(method, f"/principals/{name}/grants", change)
                if r.status != 403:
                    problems.append(f"{caller.name} {method} grants of {name}: {r.status} {r.text[:160]}")
        listed = me.get("/principals")
        checks += 1
        if listed.status != 200:
            problems.append(f"{caller.name} GET /principals: {listed.status}")
            continue
        for view in listed.json():
            target = merged(view["id"])
            paths = [p for v in ("memory:read", "memory:write") for p in view["grants"].get(v, [])]
            region = caller.read if "memory:read" in caller.held else []
            may = view["id"] == caller.principal or (
                "memory:read" in caller.held and (region is None or (
                    "admin" not in view["grants"] and all(p != "/" and scope_lib.path_covered(p, region)
                                                          for p in paths))))
            checks += 1
            if not may:
                problems.append(f"{caller.name} (read {region}) sees {view['id']}: {view['grants']}")

    for k in keys:
        if k.admin:
            checks += 1
            me = As(any_api, k.secret).get("/me")
            if me.status != 200 or me.json()["effectiveGrants"].get("admin") != ["/"]:
                problems.append(f"admin {k.name} lost admin: {me.status} {me.text[:160]}")
    assert As(any_api, None).get("/me").status == 401
    assert by_name["k0"].admin
    print(f"administration probe: {checks} checks; {len(problems)} problems")
    assert checks > 150 and problems == [], "\n".join(problems[:30])

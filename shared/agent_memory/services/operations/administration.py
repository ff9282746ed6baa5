"""Administration: who am I (``GET /me``), keys (``/keys``), principals and their grants
(``/principals``). The only writer of key records (``t#api-keys``) and of principals' grant
versions (``t#principals``); ``agent-memory keys`` calls this service too.

Authority (docs/decisions.md, "Administration"):

- A caller's authority in a context is its key's grants, narrowed by its principal's grants
  there (``access.authority.bounded``), and on a delegated call by the target's.
- Minting a key or changing a grant needs ``grant:manage`` and never goes beyond that
  authority (403 ``beyond_authority``, nothing written). A key minted under a context is
  bound to it (an admin may name other contexts); it keeps the minter's partitions.
- Keys are listed, rotated and deleted by their own principal; another principal's only by
  an admin (403 ``not_your_key``). No key is managed on a delegated call (403).
- A principal's grants are versioned (``access.principal_grants``); the first change starts
  from what its keys allowed in the context. Each change is copied onto the principal's key
  records (``principal_grants``), so authenticating stays one key lookup.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from agent_memory.access import authority as auth
from agent_memory.access import grants
from agent_memory.access import scopes as scope_lib
from agent_memory.access.api_keys import ApiKeyStore, StoredKey
from agent_memory.access.key_use import KeyUse
from agent_memory.access.principal_grants import PrincipalGrants
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import Conflict, Forbidden, InvalidRequest, NotFound

KEY_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_TTL_S = 10 * 365 * 86_400
EVERYTHING = auth.Authority(frozenset(grants.VERBS))


@dataclass(frozen=True)
class WhoAmI:
    principal_id: str
    display_name: str
    kind: str  # local (no keys: single-user mode), bootstrap (the stack's admin key), key
    enforce: bool
    grants: dict[str, list[str]]
    effective_grants: dict[str, list[str]]
    token_grants: dict[str, list[str]] | None
    delegated_principal_id: str | None


@dataclass(frozen=True)
class KeyView:
    id: str
    name: str
    principal: str
    created_at: str
    grants: dict[str, list[str]]
    contexts: list[str] | None
    valid_until: str | None
    last_used_at: str | None = None


@dataclass(frozen=True)
class MintedKey:
    id: str
    key: str
    valid_until: str | None
    name: str


@dataclass(frozen=True)
class PrincipalView:
    id: str
    display_name: str
    kind: str
    grants: dict[str, list[str]]


@dataclass(frozen=True)
class Effective:
    path: str
    verbs: list[str]
    as_of: str | None


class Administration:
    def __init__(self, keys: ApiKeyStore, principals: PrincipalGrants, *, enforced: Callable[[], bool],
                 bootstrap_principal: str = "bootstrap-admin", static: Sequence[Any] = (),
                 key_use: KeyUse | None = None):
        """``static``: the configured keys (``StaticPrincipal``); they are listed with their
        principals, but their grants are the configuration's (only stored keys are bounded by
        a principal's recorded grants)."""
        self.keys = keys
        self.principals = principals
        self.static = tuple(static)
        self._enforced = enforced
        self._bootstrap = bootstrap_principal
        self.key_use = key_use

    # --- who am I ---------------------------------------------------------------------------

    def authority(self, ctx: RequestContext) -> auth.Authority:
        """What this request may do in its context (the bound key, met with a delegation target)."""
        if ctx.key is None:
            return EVERYTHING
        found = auth.of(auth.bounded(ctx.key, ctx.context_id))
        return auth.intersect(found, auth.of(ctx.target)) if ctx.target is not None else found

    def whoami(self, ctx: RequestContext) -> WhoAmI:
        caller = ctx.delegated_by or ctx.principal
        effective = auth.to_wire(self.authority(ctx))
        if ctx.key is None:
            return WhoAmI(caller, caller, "local", self._enforced(), effective, effective, None, None)
        token = auth.to_wire(auth.of(ctx.key))
        current = self.principals.current(ctx.context_id, caller)
        kind = "local" if not self._enforced() else "bootstrap" if caller == self._bootstrap and ctx.key.admin else "key"
        return WhoAmI(caller, (current.display_name if current else None) or caller, kind, self._enforced(),
                      current.grants if current else token, effective, token,
                      ctx.principal if ctx.delegated_by is not None else None)

    # --- keys -------------------------------------------------------------------------------

    def _not_delegated(self, ctx: RequestContext, what: str) -> None:
        if ctx.delegated_by is not None:
            raise Forbidden(f"{what} is not done on another principal's behalf; call with your own key",
                            code="delegated_administration")

    def _usable_here(self, ctx: RequestContext) -> list[StoredKey]:
        now = timeutil.now_iso()
        return [k for k in self.keys.list() if not k.expired(now)
                and (k.grant.get("contexts") is None or ctx.context_id in k.grant["contexts"])]

    def list_keys(self, ctx: RequestContext) -> list[KeyView]:
        self._not_delegated(ctx, "listing keys")
        mine = [k for k in self._usable_here(ctx) if ctx.admin or k.principal == ctx.principal]
        used = self.key_use.last_used() if self.key_use is not None and mine else {}
        return [replace(_key_view(k), last_used_at=used.get(k.key_id)) for k in mine]

    def _named_key(self, ctx: RequestContext, name: str) -> StoredKey:
        found = [k for k in self._usable_here(ctx) if (k.name or k.key_id) == name]
        if not found:
            raise NotFound(f"no key named {name!r} in this context")
        key = found[0]
        if key.principal != ctx.principal and not ctx.admin:
            raise Forbidden(f"key {name!r} belongs to another principal; only an admin manages it",
                            code="not_your_key")
        return key

    def create_key(self, ctx: RequestContext, *, name: str | None, grant_map: dict[str, Any] | None,
                   ttl_seconds: int | None, contexts: Sequence[str] | None = None) -> MintedKey:
        self._not_delegated(ctx, "minting a key")
        if not self._enforced():
            # A key minted here would be refused by the service that minted it (keys are not
            # required, a start-up decision) and would close the service at its next start.
            raise Conflict("this service started without keys required (single-user mode), so it does not mint "
                           "keys over HTTP. Create one with `agent-memory keys create --principal <name> --admin "
                           "--data-dir <dir>` and restart the service, or start it with "
                           "AGENT_MEMORY_REQUIRE_KEYS=1", code="keys_not_required")
        if name is not None and not KEY_NAME_RE.match(name):
            raise InvalidRequest("name: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
                                 field="name")
        held = self.authority(ctx)
        try:
            wanted = held if grant_map is None else auth.from_wire(grant_map)
        except ValueError as exc:
            raise InvalidRequest(str(exc), field="grants") from exc
        beyond = auth.within(wanted, held)
        if beyond:
            raise Forbidden(f"a key cannot hold more than its minter: {', '.join(beyond)}",
                            code="beyond_authority", beyond=beyond)
        if contexts is not None and not ctx.admin:
            raise Forbidden("only an admin mints a key for other contexts", code="beyond_authority")
        bound = sorted({ctx.context_id, *(contexts or ())})
        name = name or _default_name()
        if any(k.name == name for k in self._usable_here(ctx)):
            raise Conflict(f"a key named {name!r} already exists in this context; rotate or delete it",
                           code="key_name_taken")
        fields = auth.key_fields(wanted)
        caller_key = ctx.key
        if caller_key is not None and caller_key.partitions is not None:
            fields["partitions"] = list(caller_key.partitions)
        scope = caller_key.default_write_scope if caller_key is not None else None
        if scope is not None and auth.effective_at(wanted, scope).count(grants.WRITE):
            fields["default_write_scope"] = scope
        current = self.principals.current(ctx.context_id, ctx.principal)
        raw, stored = self.keys.create(ctx.principal, groups=ctx.groups, name=name,
                                       valid_until=_capped(_until(ttl_seconds), ctx), contexts=bound,
                                       principal_grants={ctx.context_id: current.grants} if current else None,
                                       **fields)
        return MintedKey(stored.key_id, raw, stored.valid_until, name)

    def rotate_key(self, ctx: RequestContext, name: str, *, ttl_seconds: int | None,
                   overlap_seconds: int = 0) -> MintedKey:
        """A new secret for key ``name`` (same grants); the old one stops now, or after
        ``overlap_seconds``."""
        self._not_delegated(ctx, "rotating a key")
        old = self._named_key(ctx, name)
        self._check_outranks(ctx, old, "rotate")
        until = _until(ttl_seconds) if ttl_seconds is not None else old.valid_until
        raw, stored = self.keys.create(old.principal, groups=old.groups, admin=old.admin, label=old.label,
                                       name=old.name or name, valid_until=_capped(until, ctx),
                                       principal_grants=old.principal_grants or None,
                                       **{k: list(v) if isinstance(v, tuple) else v for k, v in old.grant.items()})
        if overlap_seconds > 0:
            ends = timeutil.iso(timeutil.now() + timedelta(seconds=overlap_seconds))
            self.keys.replace(replace(old, name=None, label=f"rotated from {name}",
                                      valid_until=min(ends, old.valid_until or ends)))
        else:
            self.keys.remove(old)
        return MintedKey(stored.key_id, raw, stored.valid_until, stored.name or name)

    def delete_key(self, ctx: RequestContext, name: str) -> None:
        self._not_delegated(ctx, "deleting a key")
        key = self._named_key(ctx, name)
        self._check_outranks(ctx, key, "delete")
        self.keys.remove(key)

    def _check_outranks(self, ctx: RequestContext, key: StoredKey, what: str) -> None:
        """403 unless the caller's authority covers ``key``: its grants, its admin bit and its
        lifetime (a key never rotates or deletes one that outranks it; an admin manages any)."""
        if ctx.admin:
            return
        beyond = ["admin"] if key.admin else []
        beyond += [b for b in auth.within(auth.of(auth.bounded(key.as_principal(""), ctx.context_id)),
                                          self.authority(ctx)) if b not in beyond]
        caller_until = ctx.key.valid_until if ctx.key is not None else None
        if caller_until is not None and (key.valid_until is None or key.valid_until > caller_until):
            beyond.append("validUntil")
        if beyond:
            raise Forbidden(f"key {key.name or key.key_id!r} holds more than this key does ({', '.join(beyond)}); "
                            f"only a key whose authority covers it may {what} it", code="beyond_authority",
                            beyond=beyond)

    # --- the operator's keys (``agent-memory keys``: the operator's own credentials) ------------

    def operator_create_key(self, principal: str, *, groups: Sequence[str] = (), admin: bool = False,
                            label: str | None = None, name: str | None = None, ttl_seconds: int | None = None,
                            **grant: Any) -> tuple[str, StoredKey]:
        """A key made with the operator's authority (any grants, unbound unless ``contexts``);
        ``ValueError`` for bad grants, as the CLI reports them."""
        if name is not None and not KEY_NAME_RE.match(name):
            raise ValueError("name: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
        try:
            until = _until(ttl_seconds)
        except InvalidRequest as exc:
            raise ValueError(exc.detail) from exc
        # Bounded by the principal's recorded grants where it has any, as every key of it is.
        bounds = self.principals.of_principal(principal.strip())
        return self.keys.create(principal, groups=groups, admin=admin, label=label, name=name, valid_until=until,
                                principal_grants=bounds or None, **grant)

    def operator_keys(self) -> list[StoredKey]:
        return self.keys.list()

    def operator_revoke_key(self, key_id: str) -> bool:
        return self.keys.revoke(key_id)

    # --- principals and grants --------------------------------------------------------------

    def _keys_of(self, ctx: RequestContext, principal: str, before: str | None = None) -> list[StoredKey]:
        return [k for k in self._usable_here(ctx) if k.principal == principal
                and (before is None or k.created_at <= before)]

    def _ceiling(self, ctx: RequestContext, principal: str, before: str | None = None) -> auth.Authority | None:
        """What a principal's keys usable here allow (stored ones unbounded by its grants, and
        configured ones), merged; ``None``: no key."""
        from agent_memory.access.authentication import merged_grant

        found = [k.as_principal("") for k in self._keys_of(ctx, principal, before)]
        found += [p for p in self.static if p.principal == principal
                  and (p.contexts is None or ctx.context_id in p.contexts)]
        merged = merged_grant(found)
        return auth.of(merged) if merged is not None else None

    def _principal_view(self, ctx: RequestContext, principal: str) -> PrincipalView | None:
        current = self.principals.current(ctx.context_id, principal)
        if current is not None:
            return PrincipalView(principal, current.display_name or principal, "principal", current.grants)
        ceiling = self._ceiling(ctx, principal)
        if ceiling is None:
            return None
        return PrincipalView(principal, principal, "principal", auth.to_wire(ceiling))

    def _visible(self, ctx: RequestContext, view: PrincipalView) -> bool:
        """Whether the caller may see this principal and its grants: an admin sees all, a
        caller itself; anyone else only a principal whose read and write paths lie inside the
        caller's read region ('/', the whole context, only inside an unrestricted one), and an
        admin only with an unrestricted read region."""
        if ctx.admin or view.id == (ctx.delegated_by or ctx.principal):
            return True
        held = self.authority(ctx)
        if grants.READ not in held.verbs:
            return False
        region = held.read_region
        if region is None:
            return True
        return grants.ADMIN not in view.grants and all(
            p != auth.ROOT and scope_lib.path_covered(p, region)
            for verb in auth.REGION_VERBS for p in view.grants.get(verb, ()))

    def list_principals(self, ctx: RequestContext) -> list[PrincipalView]:
        names = {k.principal for k in self._usable_here(ctx)} | set(self.principals.principals(ctx.context_id)) \
            | {p.principal for p in self.static if p.contexts is None or ctx.context_id in p.contexts}
        views = [self._principal_view(ctx, n) for n in sorted(names)]
        return [v for v in views if v is not None and self._visible(ctx, v)]

    def get_principal(self, ctx: RequestContext, principal: str) -> PrincipalView:
        view = self._principal_view(ctx, principal)
        if view is None or not self._visible(ctx, view):
            raise NotFound(f"no principal {principal!r} in this context")
        return view

    def _admin_principals(self, ctx: RequestContext) -> set[str]:
        """The principals that are admins here: an admin key usable in this context (stored or
        configured), unless the principal's recorded grants here leave admin out."""
        names = {k.principal for k in self._usable_here(ctx) if grants.is_admin(k.as_principal(""))}
        names |= {p.principal for p in self.static if grants.is_admin(p)
                  and (p.contexts is None or ctx.context_id in p.contexts)}
        out = set()
        for name in names:
            current = self.principals.current(ctx.context_id, name)
            if current is None or grants.ADMIN in current.grants:
                out.add(name)
        return out

    def change_grant(self, ctx: RequestContext, principal: str, path: Any, verbs: Any, *,
                     revoke: bool) -> PrincipalView:
        self._not_delegated(ctx, "changing grants")
        if not isinstance(principal, str) or not principal.strip() or principal.startswith("group:"):
            raise InvalidRequest("principal: a non-empty name not starting with 'group:'", field="principal")
        try:
            path, chosen = auth.change(path, verbs)
        except ValueError as exc:
            raise InvalidRequest(str(exc), field="verbs" if "verb" in str(exc) else "path") from exc
        beyond = auth.within(auth.as_authority(path, chosen), self.authority(ctx))
        if beyond:
            what = "revoke" if revoke else "grant"
            raise Forbidden(f"you can {what} only within your own authority: {', '.join(beyond)}",
                            code="beyond_authority", beyond=beyond)
        current = self.principals.current(ctx.context_id, principal)
        if current is not None:
            base = auth.from_wire(current.grants)
        else:
            base = self._ceiling(ctx, principal) or auth.Authority(frozenset())
        admins = self._admin_principals(ctx)
        if not ctx.admin:
            # Only an admin changes an admin; anyone else only a principal it wholly covers.
            if principal in admins:
                raise Forbidden(f"{principal} is an admin; only an admin changes its grants",
                                code="beyond_authority", beyond=["admin"])
            held = auth.within(base, self.authority(ctx))
            if held:
                raise Forbidden(f"{principal} holds more than you do ({', '.join(held)}); only a caller whose "
                                "authority covers its grants changes them", code="beyond_authority", beyond=held)
        try:
            changed = auth.revoked(base, path, chosen) if revoke else auth.granted(base, path, chosen)
        except ValueError as exc:
            raise InvalidRequest(str(exc), field="path") from exc
        if principal in admins and grants.ADMIN not in changed.verbs and admins == {principal}:
            raise Conflict(f"{principal} is the last admin of this context; make another admin first",
                           code="last_admin")
        wire = auth.to_wire(changed)
        version = self.principals.record(ctx.context_id, principal, wire, ctx.principal,
                                         current.display_name if current else None)
        for key in self._keys_of(ctx, principal):
            self.keys.replace(replace(key, principal_grants={**key.principal_grants, ctx.context_id: wire}))
        return PrincipalView(principal, version.display_name or principal, "principal", wire)

    def effective(self, ctx: RequestContext, principal: str, path: Any, as_of: str | None) -> Effective:
        self.get_principal(ctx, principal)  # 404 for one the caller may not see
        # A path ending in '/' asks about what lies directly under it (``org/acme/``: its
        # children, which a grant on ``org/acme/*`` covers), as ``org/acme/*`` does.
        children = isinstance(path, str) and path.strip().endswith("/") and path.strip() != auth.ROOT
        try:
            asked = auth.change(path, [grants.READ])[0]
            path = auth.change(path.strip() + "*", [grants.READ])[0] if children else asked
        except ValueError as exc:
            raise InvalidRequest(str(exc), field="path") from exc
        version = self.principals.as_of(ctx.context_id, principal, as_of) if as_of else \
            self.principals.current(ctx.context_id, principal)
        ceiling = self._ceiling(ctx, principal, before=as_of)
        if version is None and ceiling is None:
            if self._principal_view(ctx, principal) is None:
                raise NotFound(f"no principal {principal!r} in this context")
            return Effective(asked, [], as_of)
        held = auth.from_wire(version.grants) if version is not None else ceiling
        assert held is not None
        if version is not None and ceiling is not None:
            held = auth.intersect(held, ceiling)
        return Effective(asked, auth.effective_at(held, path), as_of)


def _key_view(k: StoredKey) -> KeyView:
    contexts = k.grant.get("contexts")
    return KeyView(k.key_id, k.name or k.key_id, k.principal, k.created_at, auth.to_wire(auth.of(k.as_principal(""))),
                   list(contexts) if contexts is not None else None, k.valid_until)


def _until(ttl_seconds: int | None) -> str | None:
    if ttl_seconds is None:
        return None
    if not 1 <= ttl_seconds <= MAX_TTL_S:
        raise InvalidRequest(f"ttlSeconds must be between 1 and {MAX_TTL_S}", field="ttlSeconds")
    return timeutil.iso(timeutil.now() + timedelta(seconds=ttl_seconds))


def _capped(until: str | None, ctx: RequestContext) -> str | None:
    """A minted or rotated key's expiry: never past the expiry of the key that made it."""
    caller_until = ctx.key.valid_until if ctx.key is not None else None
    if caller_until is None:
        return until
    return caller_until if until is None else min(until, caller_until)


def _default_name() -> str:
    from agent_memory.kernel.ids import new_ulid

    return f"key-{new_ulid()[-10:].lower()}"

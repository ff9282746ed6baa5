"""``agent-memory keys create|list|revoke``: the API keys stored in the record store (a local
data dir, or the tenant table with --table and the operator's AWS credentials), through the
administration service that also serves ``/keys`` over HTTP."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from agent_memory.interfaces.cli._settings import settings_for


def add_parser(sub) -> None:
    keys = sub.add_parser("keys", help="create, list and revoke API keys (stored as digests)")
    keys_sub = keys.add_subparsers(dest="keys", required=True, title="commands", metavar="COMMAND")
    create = keys_sub.add_parser("create", help="create a key; it is printed once")
    create.add_argument("--principal", required=True, help="who the key acts as, e.g. alice")
    create.add_argument("--group", action="append", help="group membership (repeatable)")
    create.add_argument("--admin", action="store_true", help="grant every verb, admin included")
    create.add_argument("--label", default=None, help="a note for `keys list`")
    create.add_argument("--name", default=None, help="the key's name (DELETE /keys/{name} over HTTP)")
    create.add_argument("--ttl-seconds", type=int, default=None, dest="ttl_seconds",
                        help="the key stops working this many seconds from now")
    create.add_argument("--context", action="append", dest="contexts",
                        help="a context the key may use (repeatable; default: any)")
    create.add_argument("--partition", action="append", dest="partitions",
                        help="a partition the key may use (repeatable; default: any)")
    create.add_argument("--read", action="append", dest="read_region",
                        help="a scope path of the read region, '*' for one segment (repeatable; default: all)")
    create.add_argument("--write", action="append", dest="write_region",
                        help="a scope path of the write region (repeatable; default: all)")
    create.add_argument("--default-scope", default=None, dest="default_write_scope",
                        help="the scope a write that names none is given")
    create.add_argument("--verb", action="append", dest="verbs",
                        help="memory:read, memory:write, memory:forget, delegate, grant:manage or admin "
                             "(repeatable; default: read, write, forget)")
    keys_sub.add_parser("list", help="list keys (never the keys themselves)")
    revoke = keys_sub.add_parser("revoke", help="delete a key by its id")
    revoke.add_argument("key_id", help="the key's id, as keys list prints it")
    for p in keys_sub.choices.values():
        p.add_argument("--json", action="store_true",
                       help="print JSON (create: one object with the key; list: an array; revoke: {keyId, revoked})")
        p.add_argument("--data-dir", default=None, help="local store (AGENT_MEMORY_DATA_DIR)")
        p.add_argument("--table", default=None, help="the tenant's DynamoDB table (stack output TableName)")
    keys.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agent_memory.access.static_principals import GRANT_FIELDS
    from agent_memory.runtime import Runtime

    if args.table:
        os.environ["AGENT_MEMORY_STORE"] = "dynamodb"
        os.environ["AGENT_MEMORY_TABLE"] = args.table
    settings = settings_for(args)
    if settings is None:
        return 2
    admin = Runtime(settings).administration
    if args.keys == "create":
        grant = {name: getattr(args, name) for name in GRANT_FIELDS if getattr(args, name) is not None}
        try:
            raw, stored = admin.operator_create_key(args.principal, groups=args.group or (), admin=args.admin,
                                                    label=args.label, name=args.name, ttl_seconds=args.ttl_seconds,
                                                    **grant)
        except ValueError as exc:
            print(f"agent-memory: {exc}", file=sys.stderr)
            return 2
        if args.json:
            print(json.dumps({**key_json(stored), "key": raw}, indent=2))
        else:
            _print_created(stored, raw)
        if settings.store == "sqlite":
            # Keys required is decided when a service starts (docs/access.md): say when this one counts.
            print("agent-memory: a service on this data directory requires keys from its next start; one "
                  "running without keys keeps running open until restarted", file=sys.stderr)
        return 0
    if args.keys == "list":
        if args.json:
            print(json.dumps([key_json(k) for k in admin.operator_keys()], indent=2))
            return 0
        for k in admin.operator_keys():
            groups = ",".join(k.groups) or "-"
            grant = "".join(f"  {name}={','.join(v) if isinstance(v, tuple) else v}" for name, v in k.grant.items())
            print(f"{k.key_id}  {k.principal}  groups={groups}  admin={str(k.admin).lower()}  "
                  f"created={k.created_at}" + (f"  name={k.name}" if k.name else "")
                  + (f"  valid_until={k.valid_until}" if k.valid_until else "")
                  + (f"  label={k.label}" if k.label else "") + grant)
        return 0
    revoked = admin.operator_revoke_key(args.key_id)
    if args.json:
        print(json.dumps({"keyId": args.key_id, "revoked": revoked}))
    elif revoked:
        print(f"revoked {args.key_id}")
    if revoked:
        return 0
    print(f"agent-memory: no key {args.key_id}", file=sys.stderr)
    return 1


def key_json(stored: Any) -> dict[str, Any]:
    """A stored key for scripts (never the key or its digest): camelCase, as the HTTP API."""
    return {"keyId": stored.key_id, "principal": stored.principal, "groups": list(stored.groups),
            "admin": stored.admin, "name": stored.name, "label": stored.label, "createdAt": stored.created_at,
            "validUntil": stored.valid_until,
            "grant": {name: list(v) if isinstance(v, tuple) else v for name, v in stored.grant.items()}}


def _print_created(stored: Any, raw: str) -> None:
    print(f"key id: {stored.key_id}\nprincipal: {stored.principal}\nadmin: {str(stored.admin).lower()}")
    for label, value in (("name", stored.name), ("valid until", stored.valid_until)):
        if value:
            print(f"{label}: {value}")
    for name, value in stored.grant.items():
        print(f"{name}: {','.join(value) if isinstance(value, tuple) else value}")
    print(f"key (shown once, store it now): {raw}")

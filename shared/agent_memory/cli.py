"""``agent-memory``: the command line (serve, reindex, keys, fake-model, bench; chat, remember,
recall, state and history talk to a running service through the SDK, ``cli_client``)."""

from __future__ import annotations

import argparse
import logging
import os
import sys


def _settings(args: argparse.Namespace):
    """Settings for a command, with its flags applied; ``None`` after printing a clear
    configuration error (the command then exits 2)."""
    from agent_memory.config import load_settings
    from agent_memory.errors import ConfigurationError

    if getattr(args, "data_dir", None):
        os.environ["AGENT_MEMORY_DATA_DIR"] = args.data_dir
    if getattr(args, "store", None):
        os.environ["AGENT_MEMORY_STORE"] = args.store
    try:
        return load_settings()
    except ConfigurationError as exc:
        print(f"agent-memory: configuration error: {exc}", file=sys.stderr)
        return None


def _serve(args: argparse.Namespace) -> int:
    from agent_memory.local_server import make_server
    from agent_memory.runtime import Runtime, set_runtime

    settings = _settings(args)
    if settings is None:
        return 2
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    runtime = Runtime(settings)
    set_runtime(runtime)
    if settings.store == "dynamodb" and args.create_table:
        from agent_memory.adapters.dynamodb_table import ensure_table

        ensure_table(settings)
    from agent_memory.ports import EmbedderMismatch

    try:
        _ = runtime.search  # open the index now: an embedder mismatch is a startup error
        _ = runtime.store  # and replay the projection outbox an earlier crash left
    except EmbedderMismatch as exc:
        print(f"agent-memory: {exc}; run `agent-memory reindex --fresh --context ...`", file=sys.stderr)
        return 2
    refusal = open_mode_refusal(args.host, runtime)
    if refusal:
        print(f"agent-memory: {refusal}", file=sys.stderr)
        return 2
    server = make_server(args.host, args.port)
    logging.getLogger("agent_memory").info("agent-memory listening on http://%s:%d (%s, data in %s)",
                                           args.host, server.server_port, settings.describe(), settings.data_dir)
    logging.getLogger("agent_memory").info("memory inspector: http://%s:%d/inspector/", args.host, server.server_port)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def is_loopback(host: str) -> bool:
    import ipaddress

    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name that may resolve anywhere


def open_mode_refusal(host: str, runtime) -> str | None:
    """Why serving on ``host`` must not start: without keys every caller is an admin, which
    is only acceptable when nobody but this machine can connect."""
    if is_loopback(host) or runtime.authenticator.keys_required():
        return None
    return (f"refusing to serve on {host} without API keys: every caller would be an admin. "
            "Create one with `agent-memory keys create --principal <name> --admin --data-dir <dir>` "
            "(or configure principals), or bind a loopback address (--host 127.0.0.1)")


def _keys(args: argparse.Namespace) -> int:
    """Manage the API keys stored in the record store (a local data dir, or the tenant table
    with --table and the operator's AWS credentials)."""
    from agent_memory.config import GRANT_FIELDS
    from agent_memory.runtime import Runtime

    if args.table:
        os.environ["AGENT_MEMORY_STORE"] = "dynamodb"
        os.environ["AGENT_MEMORY_TABLE"] = args.table
    settings = _settings(args)
    if settings is None:
        return 2
    keys = Runtime(settings).api_keys
    if args.keys == "create":
        grant = {name: getattr(args, name) for name in GRANT_FIELDS if getattr(args, name) is not None}
        try:
            raw, stored = keys.create(args.principal, groups=args.group or (), admin=args.admin, label=args.label,
                                      **grant)
        except ValueError as exc:
            print(f"agent-memory: {exc}", file=sys.stderr)
            return 2
        print(f"key id: {stored.key_id}\nprincipal: {stored.principal}\nadmin: {str(stored.admin).lower()}")
        for name, value in stored.grant.items():
            print(f"{name}: {','.join(value) if isinstance(value, tuple) else value}")
        print(f"key (shown once, store it now): {raw}")
        return 0
    if args.keys == "list":
        for k in keys.list():
            groups = ",".join(k.groups) or "-"
            grant = "".join(f"  {name}={','.join(v) if isinstance(v, tuple) else v}" for name, v in k.grant.items())
            print(f"{k.key_id}  {k.principal}  groups={groups}  admin={str(k.admin).lower()}  "
                  f"created={k.created_at}" + (f"  label={k.label}" if k.label else "") + grant)
        return 0
    if keys.revoke(args.key_id):
        print(f"revoked {args.key_id}")
        return 0
    print(f"agent-memory: no key {args.key_id}", file=sys.stderr)
    return 1


def _reindex(args: argparse.Namespace) -> int:
    from agent_memory.runtime import Runtime
    from agent_memory.services.reindex import reindex_context

    settings = _settings(args)
    if settings is None:
        return 2
    if args.fresh and settings.search == "embedded":
        # A new embedder cannot write into an index built by another: start a new file,
        # keeping the old one beside it until the rebuild has succeeded.
        old = settings.search_path
        if old.exists():
            old.replace(old.with_suffix(".db.old"))
    runtime = Runtime(settings)
    if runtime.search is None:
        print("agent-memory: search is disabled (storage.search: none); nothing to reindex", file=sys.stderr)
        return 2
    from agent_memory.ports import EmbedderMismatch
    from agent_memory.progress import ProgressBar

    for context_id in args.context:
        try:
            with ProgressBar(f"reindex {context_id}", unit="records") as bar:
                stats = reindex_context(runtime.base_store, runtime.search, context_id, progress=bar.advance)
        except EmbedderMismatch as exc:
            print(f"agent-memory: {exc}; rerun with --fresh to rebuild into a new index", file=sys.stderr)
            return 2
        print(f"{context_id}: {stats.records} records -> {stats.units} units ({runtime.embedder.name})")
    return 0


def _redrive(args: argparse.Namespace) -> int:
    from agent_memory.adapters.stream_dead_letters import StreamDeadLetters
    from agent_memory.runtime import Runtime
    from agent_memory.services.redrive import redrive

    settings = _settings(args)
    if settings is None:
        return 2
    runtime = Runtime(settings)
    if runtime.search is None:
        print("agent-memory: search is disabled (storage.search: none); nothing to redrive", file=sys.stderr)
        return 2
    source = StreamDeadLetters(args.queue_url, region=settings.aws_region)
    from agent_memory.progress import Phases

    with Phases() as progress:
        stats = redrive(source, runtime.base_store, runtime.search, contexts=args.context or (), progress=progress)
    print(f"{stats.letters} dead letters: {stats.replayed_records} records re-projected from the stream; "
          f"{len(stats.reindexed_contexts)} contexts reindexed")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-memory", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the local service (the deployed API, in-process)")
    serve.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8080")))
    serve.add_argument("--data-dir", default=None, help="embedded storage directory (AGENT_MEMORY_DATA_DIR)")
    serve.add_argument("--store", choices=["sqlite", "dynamodb"], default=None)
    serve.add_argument("--create-table", action="store_true",
                       help="with --store dynamodb: create the table from template.yaml if missing")
    serve.set_defaults(func=_serve)

    reindex = sub.add_parser("reindex", help="rebuild contexts' search units from the record store")
    reindex.add_argument("--context", action="append", required=True, help="context id (repeatable)")
    reindex.add_argument("--data-dir", default=None)
    reindex.add_argument("--fresh", action="store_true",
                         help="embedded index: start a new index file (after an embedder change)")
    reindex.set_defaults(func=_reindex)

    keys = sub.add_parser("keys", help="create, list and revoke API keys (stored as digests)")
    keys_sub = keys.add_subparsers(dest="keys", required=True)
    create = keys_sub.add_parser("create", help="create a key; it is printed once")
    create.add_argument("--principal", required=True)
    create.add_argument("--group", action="append", help="group membership (repeatable)")
    create.add_argument("--admin", action="store_true")
    create.add_argument("--label", default=None, help="a note for `keys list`")
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
                        help="memory:read, memory:write, memory:forget, delegate or admin "
                             "(repeatable; default: read, write, forget)")
    keys_sub.add_parser("list", help="list keys (never the keys themselves)")
    revoke = keys_sub.add_parser("revoke", help="delete a key by its id")
    revoke.add_argument("key_id")
    for p in keys_sub.choices.values():
        p.add_argument("--data-dir", default=None, help="local store (AGENT_MEMORY_DATA_DIR)")
        p.add_argument("--table", default=None, help="the tenant's DynamoDB table (stack output TableName)")
    keys.set_defaults(func=_keys)

    redrive = sub.add_parser("redrive", help="repair the search index for the projector's dead-lettered batches")
    redrive.add_argument("--queue-url", required=True, help="the projector's dead-letter queue (stack resource)")
    redrive.add_argument("--context", action="append", default=[],
                         help="contexts to reindex for batches the stream no longer holds (default: all)")
    redrive.add_argument("--data-dir", default=None)
    redrive.set_defaults(func=_redrive)

    from agent_memory.cli_client import add_commands

    add_commands(sub)  # chat, remember, recall, state, history: through the SDK

    from agent_memory.mcp_server import add_command as add_mcp

    add_mcp(sub)  # agent-memory mcp: the MCP server (the mcp extra), through the SDK

    fake = sub.add_parser("fake-model", help="a local OpenAI-compatible model with realistic latency (tests, "
                          "benchmarks): point OPENAI_BASE_URL at it")
    fake.add_argument("--host", default="127.0.0.1")
    fake.add_argument("--port", type=int, default=8199)
    fake.add_argument("--latency-ms", type=float, default=800.0, help="delay before each answer")
    fake.add_argument("--jitter-ms", type=float, default=0.0, help="uniform +/- spread around the latency")
    fake.add_argument("--failure-rate", type=float, default=0.0, help="share of requests answered HTTP 500")
    fake.add_argument("--hang-rate", type=float, default=0.0, help="share of requests never answered")
    fake.add_argument("--stream-chunk-ms", type=float, default=0.0, help="pause between streamed chunks")
    fake.add_argument("--seed", type=int, default=None)
    fake.set_defaults(func=_fake_model)

    bench = sub.add_parser("bench", help="benchmarks (from a checkout: they live in bench/)")
    bench_sub = bench.add_subparsers(dest="bench", required=True)
    locomo = bench_sub.add_parser("locomo", help="LoCoMo evidence recall@k: product vs BM25, dense, RRF")
    locomo.add_argument("directory", help="directory of LoCoMo conversation files (*.json)")
    locomo.add_argument("--embedder", choices=["hashing", "minilm"], default="hashing")
    locomo.add_argument("--out", default=None, help="JSON results (default: bench/results/...)")
    locomo.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    locomo.set_defaults(func=_bench_locomo)
    return parser


def _fake_model(args: argparse.Namespace) -> int:
    from agent_memory.testing.fake_openai import run

    return run(args)


def _bench_locomo(args: argparse.Namespace) -> int:
    """Loads ``bench/locomo.py`` of the checkout only when asked: benchmarks are not part of
    the package a Lambda function imports."""
    import importlib.util
    from pathlib import Path

    from agent_memory.cfn_template import repo_root

    path = repo_root() / "bench" / "locomo.py"
    if not path.exists():
        print(f"agent-memory: {path} not found; run from a checkout of the repository", file=sys.stderr)
        return 2
    spec = importlib.util.spec_from_file_location("agent_memory_bench_locomo", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    args.directory = Path(args.directory)
    args.out = Path(args.out) if args.out else None
    return module.run_command(args)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "INFO"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # one INFO line per HTTP request would drown the chat and operator commands' output
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

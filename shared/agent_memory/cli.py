"""``agent-memory``: the command line (serve, reindex, chat, bench)."""

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
    except EmbedderMismatch as exc:
        print(f"agent-memory: {exc}; run `agent-memory reindex --fresh --context ...`", file=sys.stderr)
        return 2
    server = make_server(args.host, args.port)
    logging.getLogger("agent_memory").info("agent-memory listening on http://%s:%d (%s, data in %s)",
                                           args.host, server.server_port, settings.describe(), settings.data_dir)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


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

    for context_id in args.context:
        try:
            stats = reindex_context(runtime.base_store, runtime.search, context_id)
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
    stats = redrive(source, runtime.base_store, runtime.search, contexts=args.context or ())
    print(f"{stats.letters} dead letters: {stats.replayed_records} records re-projected from the stream; "
          f"{len(stats.reindexed_contexts)} contexts reindexed")
    return 0


def _chat(args: argparse.Namespace) -> int:
    import httpx

    from agent_memory.repl import run_repl

    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    if args.partition:
        headers["X-Memory-Partition"] = args.partition
    with httpx.Client(base_url=args.url, headers=headers, timeout=120) as client:
        try:
            run_repl(client, args.context, args.session)
        except httpx.HTTPError as exc:
            print(f"agent-memory: cannot reach {args.url}: {exc}", file=sys.stderr)
            return 2
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

    redrive = sub.add_parser("redrive", help="repair the search index for the projector's dead-lettered batches")
    redrive.add_argument("--queue-url", required=True, help="the projector's dead-letter queue (stack resource)")
    redrive.add_argument("--context", action="append", default=[],
                         help="contexts to reindex for batches the stream no longer holds (default: all)")
    redrive.add_argument("--data-dir", default=None)
    redrive.set_defaults(func=_redrive)

    chat = sub.add_parser("chat", help="chat in the terminal with a running service")
    chat.add_argument("--context", required=True)
    chat.add_argument("--session", default=None, help="resume a session")
    chat.add_argument("--url", default=os.environ.get("AGENT_MEMORY_URL", "http://127.0.0.1:8080"))
    chat.add_argument("--api-key", default=os.environ.get("AGENT_MEMORY_API_KEY"))
    chat.add_argument("--partition", default=None)
    chat.set_defaults(func=_chat)

    bench = sub.add_parser("bench", help="benchmarks (from a checkout: they live in bench/)")
    bench_sub = bench.add_subparsers(dest="bench", required=True)
    locomo = bench_sub.add_parser("locomo", help="LoCoMo evidence recall@k: product vs BM25, dense, RRF")
    locomo.add_argument("directory", help="directory of LoCoMo conversation files (*.json)")
    locomo.add_argument("--embedder", choices=["hashing", "minilm"], default="hashing")
    locomo.add_argument("--out", default=None, help="JSON results (default: bench/results/...)")
    locomo.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    locomo.set_defaults(func=_bench_locomo)
    return parser


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
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

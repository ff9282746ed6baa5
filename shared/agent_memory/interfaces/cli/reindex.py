"""``agent-memory reindex``: rebuild contexts' search units from the record store."""

from __future__ import annotations

import argparse
import sys

from agent_memory.interfaces.cli._settings import settings_for


def add_parser(sub) -> None:
    reindex = sub.add_parser("reindex", help="rebuild contexts' search units from the record store")
    reindex.add_argument("--context", action="append", required=True, help="context id (repeatable)")
    reindex.add_argument("--data-dir", default=None)
    reindex.add_argument("--fresh", action="store_true",
                         help="embedded index: start a new index file (after an embedder change)")
    reindex.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agent_memory.runtime import Runtime
    from agent_memory.services.operations.reindex import reindex_context

    settings = settings_for(args)
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
    from agent_memory.interfaces.progress import ProgressBar
    from agent_memory.ports import EmbedderMismatch

    for context_id in args.context:
        try:
            with ProgressBar(f"reindex {context_id}", unit="records") as bar:
                stats = reindex_context(runtime.base_store, runtime.search, context_id, progress=bar.advance)
        except EmbedderMismatch as exc:
            print(f"agent-memory: {exc}; rerun with --fresh to rebuild into a new index", file=sys.stderr)
            return 2
        print(f"{context_id}: {stats.records} records -> {stats.units} units ({runtime.embedder.name})")
    return 0

"""``agent-memory reindex``: rebuild contexts' search units from the record store."""

from __future__ import annotations

import argparse
import sys

from agent_memory.interfaces.cli._settings import settings_for


def add_parser(sub) -> None:
    reindex = sub.add_parser("reindex", help="rebuild contexts' search units from the record store")
    reindex.add_argument("--context", action="append", default=[],
                         help="context id (repeatable; required unless --rebuild, which defaults to all)")
    reindex.add_argument("--data-dir", default=None, help="embedded storage directory (AGENT_MEMORY_DATA_DIR)")
    reindex.add_argument("--fresh", action="store_true",
                         help="embedded index: start a new index file (after an embedder change)")
    reindex.add_argument("--rebuild", action="store_true",
                         help="OpenSearch: build the current embedder's and mapping's index beside the one the "
                              "alias serves, fill it from the table, then switch the alias to it")
    reindex.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agent_memory.runtime import Runtime
    from agent_memory.services.operations.reindex import reindex_context

    settings = settings_for(args)
    if settings is None:
        return 2
    if args.rebuild:
        if settings.search != "opensearch":
            print("agent-memory: --rebuild is for OpenSearch (the embedded index uses --fresh)", file=sys.stderr)
            return 2
        return rebuild(settings, args.context)
    if not args.context:
        print("agent-memory: reindex needs --context (or --rebuild on OpenSearch)", file=sys.stderr)
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


def rebuild(settings, contexts: list[str]) -> int:
    """The OpenSearch rebuild (docs/opensearch.md, "Changing the embedder or mapping"): the
    alias keeps serving the old index while the new one fills; every context is written
    twice (before and after the switch, revision-ordered, so nothing written meanwhile is
    lost); the old index is kept for the operator to delete."""
    from agent_memory.adapters.opensearch.admin import provision, switch
    from agent_memory.adapters.opensearch.client import make_client
    from agent_memory.adapters.opensearch.index import OpenSearchIndex
    from agent_memory.interfaces.progress import ProgressBar
    from agent_memory.runtime import Runtime
    from agent_memory.services.operations.reindex import context_ids, reindex_context

    runtime = Runtime(settings)
    client = make_client(settings.opensearch_url, service=settings.opensearch_service, region=settings.aws_region)
    alias = settings.opensearch_index
    result = provision(client, alias, runtime.embedder.name, int(runtime.embedder.dimension),
                       settings.opensearch_engine or "faiss", switch_if_unset=False)
    target = OpenSearchIndex(settings.opensearch_url, result.index, runtime.embedder, service=settings.opensearch_service,
                             region=settings.aws_region, engine=settings.opensearch_engine, client=client,
                             create_index=False)
    contexts = contexts or context_ids(runtime.base_store)
    for context_id in contexts:
        with ProgressBar(f"rebuild {context_id}", unit="records") as bar:
            stats = reindex_context(runtime.base_store, target, context_id, clear=False, progress=bar.advance)
        print(f"{context_id}: {stats.records} records -> {stats.units} units in {result.index}")
    old = result.serving
    switch(client, alias, result.index)
    for context_id in contexts:  # what the projector wrote to the old index while this ran
        reindex_context(runtime.base_store, target, context_id, clear=False)
    print(f"alias {alias} -> {result.index}" + (f" (was {old}; delete it when satisfied)" if old and old != result.index
                                                else " (a legacy index of that name was replaced)" if result.legacy
                                                else ""))
    return 0

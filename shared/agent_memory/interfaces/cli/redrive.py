"""``agent-memory redrive``: repair the search index for the projector's dead-lettered batches."""

from __future__ import annotations

import argparse
import sys

from agent_memory.interfaces.cli._settings import settings_for


def add_parser(sub) -> None:
    redrive = sub.add_parser("redrive", help="repair the search index for the projector's dead-lettered batches")
    redrive.add_argument("--queue-url", required=True, help="the projector's dead-letter queue (stack resource)")
    redrive.add_argument("--context", action="append", default=[],
                         help="contexts to reindex for batches the stream no longer holds (default: all)")
    redrive.add_argument("--data-dir", default=None, help="embedded storage directory (AGENT_MEMORY_DATA_DIR)")
    redrive.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agent_memory.adapters.stream_dead_letters import StreamDeadLetters
    from agent_memory.runtime import Runtime
    from agent_memory.services.operations.redrive import redrive

    settings = settings_for(args)
    if settings is None:
        return 2
    runtime = Runtime(settings)
    if runtime.search is None:
        print("agent-memory: search is disabled (storage.search: none); nothing to redrive", file=sys.stderr)
        return 2
    source = StreamDeadLetters(args.queue_url, region=settings.aws_region)
    from agent_memory.interfaces.progress import Phases

    with Phases() as progress:
        stats = redrive(source, runtime.base_store, runtime.search, contexts=args.context or (), progress=progress)
    print(f"{stats.letters} dead letters: {stats.replayed_records} records re-projected from the stream; "
          f"{len(stats.reindexed_contexts)} contexts reindexed")
    return 0

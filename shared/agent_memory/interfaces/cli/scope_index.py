"""``agent-memory scopes backfill``: build the scope index for records written before it.

Scope forget finds a scope's records through membership rows written with each record
(``services/operations/scope_index.py``); a table written before them needs this once. The
job is idempotent and resumable: it keeps its progress in the table, so a run stopped
halfway (or a crash) goes on where it stood, and a finished one does nothing.
"""

from __future__ import annotations

import argparse
import json

from agent_memory.interfaces.cli._settings import settings_for


def add_parser(sub) -> None:
    scopes = sub.add_parser("scopes", help="the scope index that scope forget reads (backfill, status)")
    actions = scopes.add_subparsers(dest="action", required=True)
    for name, helptext in (("backfill", "index the records written before the scope index (resumable)"),
                           ("status", "how far the scope index's backfill is")):
        action = actions.add_parser(name, help=helptext, description=helptext)
        action.add_argument("--data-dir", default=None, help="embedded storage directory (AGENT_MEMORY_DATA_DIR)")
        action.add_argument("--store", choices=("sqlite", "dynamodb"), default=None,
                            help="record store (AGENT_MEMORY_STORE)")
        action.add_argument("--json", action="store_true",
                            help="print the backfill's state as one JSON object (backfill: when it stops)")
        if name == "backfill":
            action.add_argument("--pages", type=int, default=None,
                                help="stop after this many pages (default: run to the end)")
            action.add_argument("--page-size", type=int, default=None,
                                help="items read per page (default 500); progress is saved after each")
        action.set_defaults(func=run)


def _line(state) -> str:
    done = "complete" if state.complete else "in progress"
    return (f"scope index backfill: {done}; {state.scanned} items read, {state.indexed} membership rows "
            f"written" + (f", finished {state.finished_at}" if state.finished_at else ""))


def _json(state) -> str:
    return json.dumps({"complete": state.complete, "scanned": state.scanned, "indexed": state.indexed,
                       "startedAt": state.started_at, "finishedAt": state.finished_at})


def run(args: argparse.Namespace) -> int:
    from agent_memory.runtime import Runtime

    settings = settings_for(args)
    if settings is None:
        return 2
    index = Runtime(settings).scope_index
    if getattr(args, "page_size", None):
        index.page = max(1, args.page_size)
    show = _json if args.json else _line
    if args.action == "status":
        print(show(index.state()))
        return 0
    quiet = args.json  # one object for scripts, no progress lines before it
    state = index.backfill(pages=args.pages,
                           progress=lambda s: s.complete or quiet or print(_line(s), flush=True))
    print(show(state))
    return 0

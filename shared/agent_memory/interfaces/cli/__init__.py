"""``agent-memory``: the command line (serve, reindex, keys, fake-model, bench; chat, remember,
recall, state and history talk to a running service through the SDK, ``cli_client``).

One module per subcommand, each with ``add_parser(sub)`` (its flags, ``set_defaults(func=run)``)
and ``run(args) -> int``; ``build_parser`` below lists them. To add a command, add a module
here and one line to ``_COMMANDS``.
"""

from __future__ import annotations

import argparse
import logging
import os

from agent_memory.interfaces.cli import bench, fake_model, keys, redrive, reindex, serve
from agent_memory.interfaces.cli.serve import is_loopback, open_mode_refusal

__all__ = ["build_parser", "is_loopback", "main", "open_mode_refusal"]


def _client_commands(sub) -> None:
    from agent_memory.interfaces.cli_client import add_commands

    add_commands(sub)  # chat, remember, recall, state, history: through the SDK


def _mcp(sub) -> None:
    from agent_memory.interfaces.mcp_server import add_command

    add_command(sub)  # agent-memory mcp: the MCP server (the mcp extra), through the SDK


# In the order `agent-memory --help` lists them.
_COMMANDS = (serve.add_parser, reindex.add_parser, keys.add_parser, redrive.add_parser, _client_commands, _mcp,
             fake_model.add_parser, bench.add_parser)


_VERBOSE_HELP = "show the log lines of the service and its libraries (INFO and up; LOG_LEVEL sets another level)"


def _add_verbose(parser: argparse.ArgumentParser) -> None:
    """``--verbose`` on ``parser`` and on every subcommand below it, wherever it is typed."""
    if not any("--verbose" in a.option_strings for a in parser._actions):
        parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=_VERBOSE_HELP)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _add_verbose(child)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-memory", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for add in _COMMANDS:
        add(sub)
    _add_verbose(parser)
    return parser


def configure_logging(verbose: bool, announce: bool = False) -> None:
    """Warnings and errors only, unless ``--verbose`` (INFO) or ``LOG_LEVEL`` says otherwise:
    libraries' INFO lines (faiss' loader, the MCP SDK's one line per request, httpx's one per
    call) would drown a command's own output. ``announce``: the command's own INFO lines
    (serve's "listening on") still show."""
    level = os.environ.get("LOG_LEVEL") or ("INFO" if verbose else "WARNING")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger().setLevel(level)
    if not verbose and not os.environ.get("LOG_LEVEL"):
        logging.getLogger("agent_memory").setLevel(logging.INFO if announce else logging.NOTSET)
    if not verbose:
        # one INFO line per HTTP request would drown the chat and operator commands' output
        logging.getLogger("httpx").setLevel(logging.WARNING)
        logging.getLogger("httpcore").setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(getattr(args, "verbose", False), announce=getattr(args, "announce", False))
    return args.func(args)

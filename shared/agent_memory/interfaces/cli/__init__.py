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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-memory", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for add in _COMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "INFO"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # one INFO line per HTTP request would drown the chat and operator commands' output
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)
    args = build_parser().parse_args(argv)
    return args.func(args)

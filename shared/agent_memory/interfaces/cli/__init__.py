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
import sys

from agent_memory.interfaces.cli import bench, fake_model, keys, redrive, reindex, scope_index, serve
from agent_memory.interfaces.cli.serve import is_loopback, open_mode_refusal
from agent_memory.kernel.errors import ConfigurationError

__all__ = ["build_parser", "is_loopback", "main", "open_mode_refusal"]


def _client_commands(sub) -> None:
    from agent_memory.interfaces.cli_client import add_commands

    add_commands(sub)  # chat, remember, recall, state, history: through the SDK


def _mcp(sub) -> None:
    from agent_memory.interfaces.mcp.command import add_command

    add_command(sub)  # agent-memory mcp: the MCP server (the mcp extra), through the SDK


# In the order `agent-memory --help` lists them.
_COMMANDS = (serve.add_parser, reindex.add_parser, keys.add_parser, redrive.add_parser, scope_index.add_parser,
             _client_commands, _mcp,
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


DESCRIPTION = ("A memory service for LLM agents: run it locally (serve), talk to a running one (chat, "
               "remember, recall, state, history, fact, documents), serve it to MCP hosts (mcp), and operate it "
               "(reindex, keys, redrive, scopes). Run a command with --help for its options.")


def _describe_subcommands(parser: argparse.ArgumentParser) -> None:
    """A subcommand without its own description gets its one-line help as one, so that
    ``agent-memory <command> --help`` says what the command does."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help for a in action._choices_actions}
        for name, child in action.choices.items():
            text = helps.get(name) or ""
            if not child.description and text:
                child.description = text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")
            _describe_subcommands(child)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-memory", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    for add in _COMMANDS:
        add(sub)
    _describe_subcommands(parser)
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


# The extra (pyproject.toml) that brings each optional top-level module a command may import.
EXTRA_OF_MODULE = {
    **dict.fromkeys(("uvicorn", "boto3", "botocore", "yaml", "numpy", "tenacity", "openai", "opensearchpy",
                     "aws_lambda_powertools", "aws_xray_sdk"), "server"),
    **dict.fromkeys(("mcp", "anyio", "starlette"), "mcp"),
    "rich": "cli", "faiss": "ann",
    **dict.fromkeys(("onnxruntime", "tokenizers"), "semantic"),
}


def missing_extra_message(exc: ModuleNotFoundError) -> str:
    """One line naming the extra a missing module belongs to and an install line that works."""
    module = (exc.name or "").split(".")[0]
    extra = EXTRA_OF_MODULE.get(module)
    if extra is None:
        return f"agent-memory: a module it needs is not installed: {module or exc}"
    return (f"agent-memory: this command needs the {extra} extra (module {module} is not installed): "
            f"`make install` in a checkout, or pip install '.[{extra}]' there")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    verbose = getattr(args, "verbose", False)
    configure_logging(verbose, announce=getattr(args, "announce", False))
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print(file=sys.stderr)  # the ^C stays on its own line
        return 130
    except ModuleNotFoundError as exc:
        if verbose:
            raise
        print(missing_extra_message(exc), file=sys.stderr)
        return 2
    except ConfigurationError as exc:
        if verbose:
            raise
        print(f"agent-memory: configuration error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a command's failure is one line; --verbose shows the traceback
        if verbose:
            raise
        print(f"agent-memory: {type(exc).__name__}: {' '.join(str(exc).split())} (--verbose shows where)",
              file=sys.stderr)
        return 1

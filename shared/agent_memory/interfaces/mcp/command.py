"""``agent-memory mcp`` (serve) and ``agent-memory mcp-config`` (the host registration block)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from agent_memory.interfaces.mcp.server import SERVER_NAME
from agent_memory.interfaces.mcp.transports import serve_http, serve_stdio


def registration(context: str, url: str | None = None, api_key: str | None = None) -> dict[str, Any]:
    """The ``mcpServers`` block that starts this installation's MCP server over stdio: the
    ``agent-memory`` script beside this interpreter by its absolute path (a host does not
    search a venv's bin/), or this interpreter running the CLI module when there is none."""
    from pathlib import Path

    python = Path(sys.executable).absolute()
    script = python.with_name("agent-memory")
    args = ["mcp", "--context", context]
    if script.is_file():
        entry: dict[str, Any] = {"command": str(script), "args": args}
    else:
        entry = {"command": str(python), "args": ["-m", "agent_memory.interfaces.cli", *args]}
    env = {"AGENT_MEMORY_URL": url or os.environ.get("AGENT_MEMORY_URL") or "http://127.0.0.1:8080"}
    key = api_key or os.environ.get("AGENT_MEMORY_API_KEY")
    if key:
        env["AGENT_MEMORY_API_KEY"] = key
    entry["env"] = env
    return {"mcpServers": {SERVER_NAME: entry}}


def _print_registration(args: argparse.Namespace) -> int:
    print(json.dumps(registration(args.context, args.url, args.api_key), indent=2))
    return 0


def add_command(sub: Any) -> None:
    mcp = sub.add_parser("mcp", help="serve memory to MCP hosts (stdio or streamable HTTP), through the SDK")
    mcp.add_argument("--context", required=True, help="the context the tools read and write")
    mcp.add_argument("--url", default=None, help="service URL (AGENT_MEMORY_URL, default http://127.0.0.1:8080)")
    mcp.add_argument("--api-key", default=None, help="bearer key (AGENT_MEMORY_API_KEY)")
    mcp.add_argument("--partition", default=None, help="a partition within the context (the x-memory-partition header; default: none)")
    mcp.add_argument("--on-behalf-of", default=None, dest="on_behalf_of",
                     help="act for this principal (the key needs 'delegate')")
    mcp.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                     help="stdio (an MCP host starts the process) or streamable HTTP")
    mcp.add_argument("--host", default="127.0.0.1", help="with --transport http")
    mcp.add_argument("--port", type=int, default=8765, help="with --transport http")
    mcp.add_argument("--path", default="/mcp", help="with --transport http: the endpoint's path")
    mcp.add_argument("--allow-remote", action="store_true",
                     help="with --transport http: bind a non-loopback address (anyone who reaches it acts "
                          "with this server's API key)")
    mcp.set_defaults(func=run_command)

    config = sub.add_parser(
        "mcp-config", help="print the mcpServers block that registers this installation's MCP server in a host",
        description="Print the JSON block an MCP host (Claude Desktop, an IDE agent) needs to start "
                    "`agent-memory mcp` over stdio, with this installation's command by its absolute path.")
    config.add_argument("--context", required=True, help="the context the tools read and write, e.g. acme")
    config.add_argument("--url", default=None,
                        help="service URL the server calls (AGENT_MEMORY_URL, default http://127.0.0.1:8080)")
    config.add_argument("--api-key", default=None,
                        help="bearer key to put in the block (AGENT_MEMORY_API_KEY; omitted when unset)")
    config.set_defaults(func=_print_registration)


def run_command(args: argparse.Namespace) -> int:
    try:
        import anyio
        import mcp  # noqa: F401
    except ImportError:
        print("agent-memory: the MCP server needs the mcp extra: `make install` in a checkout, or "
              "pip install 'mcp>=1.25,<2'", file=sys.stderr)
        return 2
    if args.transport == "http":
        from agent_memory.interfaces.netaddr import is_loopback

        if not is_loopback(args.host) and not args.allow_remote:
            print(f"agent-memory: refusing to serve MCP on {args.host}: every caller would act with this "
                  "server's API key; bind a loopback address or pass --allow-remote", file=sys.stderr)
            return 2
        anyio.run(serve_http, args)
    else:
        anyio.run(serve_stdio, args)
    return 0

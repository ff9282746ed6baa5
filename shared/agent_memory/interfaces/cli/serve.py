"""``agent-memory serve``: the local service (the deployed API, in-process)."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys

from agent_memory.interfaces.cli._settings import settings_for
from agent_memory.interfaces.netaddr import is_loopback


def add_parser(sub) -> None:
    serve = sub.add_parser("serve", help="run the local service (the deployed API, in-process)")
    serve.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"),
                       help="address to bind (HOST, default 127.0.0.1; another needs API keys)")
    serve.add_argument("--port", type=int, default=None,
                       help="port to listen on (PORT, default 8080; 0 picks a free one)")
    serve.add_argument("--data-dir", default=None, help="embedded storage directory (AGENT_MEMORY_DATA_DIR)")
    serve.add_argument("--store", choices=["sqlite", "dynamodb"], default=None,
                       help="record store: sqlite in the data directory (default) or dynamodb (AGENT_MEMORY_STORE)")
    serve.add_argument("--create-table", action="store_true",
                       help="with --store dynamodb: create the table from template.yaml if missing")
    serve.set_defaults(func=run, announce=True)


def run(args: argparse.Namespace) -> int:
    from agent_memory.http.local_server import make_server
    from agent_memory.runtime import Runtime, set_runtime

    try:
        args.port, port_setting = resolve_port(args.port, os.environ)
    except ValueError as exc:
        print(f"agent-memory: {exc}", file=sys.stderr)
        return 2
    settings = settings_for(args)
    if settings is None:
        return 2
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    runtime = Runtime(settings)
    set_runtime(runtime)
    if settings.store == "dynamodb" and args.create_table:
        from agent_memory.adapters.dynamodb_table import ensure_table

        ensure_table(settings.table_name, region=settings.aws_region, endpoint_url=settings.dynamodb_endpoint)
    from agent_memory.kernel.errors import ConfigurationError
    from agent_memory.ports import EmbedderMismatch

    try:
        _ = runtime.search  # open the index now: an embedder mismatch is a startup error
        _ = runtime.store  # and replay the projection outbox an earlier crash left
        _ = runtime.reranker  # a configured reranker loads now: a missing extra stops startup
    except EmbedderMismatch as exc:
        print(f"agent-memory: {exc}; run `agent-memory reindex --fresh --context ...`", file=sys.stderr)
        return 2
    except ConfigurationError as exc:
        print(f"agent-memory: {exc}", file=sys.stderr)
        return 2
    keys_required, why = runtime.authenticator.mode()  # decided now, fixed from here on
    refusal = open_mode_refusal(args.host, runtime)
    if refusal:
        print(f"agent-memory: {refusal}", file=sys.stderr)
        return 2
    try:
        server = make_server(args.host, args.port)
    except OSError as exc:
        reason = f"the address is already in use (another agent-memory serve?); pick another with {port_setting}" \
            if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        print(f"agent-memory: cannot listen on {args.host}:{args.port}: {reason}", file=sys.stderr)
        return 2
    # Ctrl-C (SIGINT) stops the service at any moment, even when it was started with SIGINT
    # ignored (a shell's background job): otherwise one sent before uvicorn takes the signal
    # over is lost and the service keeps running.
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        # The first chat after a start costs what later ones do: the model clients' imports
        # are paid here, beside the server's own start, not inside the first request.
        runtime.warm_up()
        logging.getLogger("agent_memory").info(
            "agent-memory listening on http://%s:%d (%s, data in %s; API keys %s: %s)", args.host,
            server.server_port, settings.describe(), settings.data_dir,
            "required" if keys_required else "not required", why)
        logging.getLogger("agent_memory").info("memory inspector: http://%s:%d/inspector/", args.host,
                                               server.server_port)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def resolve_port(flag: int | None, env) -> tuple[int, str]:
    """The port and how the user sets it, for messages: ``--port`` when given, else the
    ``PORT`` variable, which is make's setting when the Makefile's serve recipe says so
    (``AGENT_MEMORY_PORT_SETTING=make``; not MAKELEVEL, which every process under any make
    inherits), else the default 8080 (changed with ``--port``)."""
    if flag is not None:
        return flag, "--port"
    raw = env.get("PORT")
    if raw is None or not raw.strip():
        return 8080, "--port"
    setting = ("PORT= (PORT=8081 make serve)" if env.get("AGENT_MEMORY_PORT_SETTING") == "make"
               else "PORT= or --port")
    try:
        return int(raw), setting
    except ValueError:
        raise ValueError(f"PORT={raw!r} is not a port number; set {setting.split(' (')[0]} to one, e.g. 8081") from None


def open_mode_refusal(host: str, runtime) -> str | None:
    """Why serving on ``host`` must not start: without keys every caller is an admin, which
    is only acceptable when nobody but this machine can connect."""
    if is_loopback(host) or runtime.authenticator.keys_required():
        return None
    return (f"refusing to serve on {host} without API keys: every caller would be an admin. "
            "Create one with `agent-memory keys create --principal <name> --admin --data-dir <dir>` "
            "(or configure principals), or bind a loopback address (--host 127.0.0.1)")

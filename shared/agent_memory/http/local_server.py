"""Local server: the deployed API on one machine, no Docker, no AWS account.

It reads template.yaml (which function serves which route) and openapi.yaml (the routes
that exist), turns each HTTP request into an API Gateway HTTP API payload 2.0 event, calls
that function's ``lambda_handler`` in-process, and writes its response back.

HTTP is uvicorn's (``agent_memory.http.asgi`` is the small ASGI app that does the
translation): a listen backlog, keep-alive, chunked request bodies, incremental SSE,
HEAD/OPTIONS, a body-read timeout and a body-size cap. Handlers are synchronous, as in
Lambda, and run on a thread pool, concurrently, as Lambda would run concurrent instances.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path
from typing import Any

from agent_memory.http.gateway import (  # noqa: F401 - re-exported: the local server's public names
    MAX_BODY_BYTES,
    LocalGateway,
    LocalLambdaContext,
    Route,
    _problem,
    build_event,
    load_routes,
)

#: How long a stop waits for the stores to close (see LocalServer.server_close).
CLOSE_WAIT_S = 10.0


class LocalServer:
    """uvicorn serving the gateway on a socket bound (and listening) at construction, so
    ``server_port`` is known and early connections queue instead of being refused. The
    interface is ``socketserver``'s (``serve_forever``, ``shutdown``, ``server_close``)."""

    def __init__(self, app: Any, host: str, port: int, *, backlog: int = 2048, keep_alive_s: float = 5.0):
        import uvicorn

        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose ``proto`` says
        # TCP, and accepted sockets copy it; with proto 0, Nagle holds each response's body
        # behind its headers for a delayed ACK (~40 ms per request).
        self.socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind((host, port))
        self.socket.listen(backlog)
        self.server_address = self.socket.getsockname()[:2]
        self.server_port = self.server_address[1]
        self.app = app
        config = uvicorn.Config(app, lifespan="off", backlog=backlog, timeout_keep_alive=keep_alive_s,
                                log_config=None, access_log=False, timeout_graceful_shutdown=5,
                                h11_max_incomplete_event_size=64 * 1024)
        self._server = uvicorn.Server(config)
        self._stopped = threading.Event()
        # The event loop is made here, before `serve` says it listens: a Ctrl-C that arrives as
        # soon as it has said so then stops a loop that exists, instead of interrupting the
        # loop's own construction (which left a half-made loop whose finaliser printed a
        # traceback).
        self._loop = config.get_loop_factory()() if config.get_loop_factory() else asyncio.new_event_loop()

    def serve_forever(self) -> None:
        self._stopped.clear()
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._server.serve(sockets=[self.socket]))
        finally:
            try:  # what asyncio.run does on the way out: no task or generator left half-run
                pending = [t for t in asyncio.all_tasks(self._loop) if not t.done()]
                for task in pending:
                    task.cancel()
                if pending:
                    self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            finally:
                asyncio.set_event_loop(None)
                self._stopped.set()

    def shutdown(self) -> None:
        self._server.should_exit = True
        self._stopped.wait(timeout=15)

    def server_close(self) -> None:
        self.socket.close()
        if not self._loop.is_running() and not self._loop.is_closed():
            self._loop.close()
        # A stop must stop: a close still busy after CLOSE_WAIT_S (a store or index flush stuck
        # behind a slow disk) is left to the next start, which recovers as after a crash
        # (SQLite's journal, the persisted views' change log).
        closing = threading.Thread(target=self.app.close, name="closing", daemon=True)
        closing.start()
        closing.join(CLOSE_WAIT_S)
        if closing.is_alive():
            import logging

            logging.getLogger("agent_memory").warning(
                "closing the stores took over %.0f s; stopping without waiting (the next start recovers)",
                CLOSE_WAIT_S)


def make_server(host: str = "127.0.0.1", port: int = 8080, root: Path | None = None, *,
                body_timeout_s: float = 10.0, max_body_bytes: int = MAX_BODY_BYTES,
                backlog: int = 2048) -> LocalServer:
    """The local server for the runtime installed with ``set_runtime`` (its limits size the
    thread pool and the deadline watchdog)."""
    from agent_memory.http.asgi import AsgiGateway
    from agent_memory.runtime import get_runtime

    limits = get_runtime().settings.limits
    app = AsgiGateway(LocalGateway(root), max_body_bytes=max_body_bytes, body_timeout_s=body_timeout_s,
                      request_deadline_s=limits.request_deadline_s,
                      threads=limits.inflight_cap + 32)
    return LocalServer(app, host, port, backlog=backlog)



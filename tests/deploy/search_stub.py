"""Loopback stand-in for OpenSearch (no OpenSearch server can run in the checks): one shared
state of indexes (their bodies) and aliases, served on one port per caller, so every request
is attributed to the function that sent it. It answers the calls the adapters make:

- ``HEAD``/``PUT /<index>``, ``GET /<index>/_mapping`` (alias-resolved), ``GET /_alias/<a>``,
  ``POST /_aliases`` (``add``, ``remove``, ``remove_index``);
- ``_bulk`` (recorded; indexed documents are kept), ``GET /<index>/_doc/<id>`` from them,
  ``_msearch``, ``_search``, ``_delete_by_query``, ``_count`` with no hits;
- any document request to an index or alias that does not exist is 404, as OpenSearch
  answers it (so a function that relied on creating its index itself would fail here).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class SearchCluster:
    def __init__(self) -> None:
        self.indices: dict[str, dict[str, Any]] = {}
        self.aliases: dict[str, set[str]] = {}
        self.bulk_bodies: list[str] = []
        self.documents: dict[str, dict[str, Any]] = {}  # index -> _id -> _source (what _bulk indexed)
        self.requests: dict[str, list[tuple[str, str, str]]] = {}  # caller -> (method, path, body)
        self._servers: dict[str, ThreadingHTTPServer] = {}
        self._lock = threading.Lock()
        self.down = False  # answer every request 503, as an overloaded or failing cluster does
        # (method, path) -> a status to answer instead, or None: a collection whose data access
        # policy is not in force yet answers 403 (tests of the index step's retry)
        self.refuse: Callable[[str, str], int | None] | None = None

    # -- state -------------------------------------------------------------------------

    def resolve(self, name: str) -> list[str]:
        if name in self.indices:
            return [name]
        return sorted(self.aliases.get(name, ()))

    def handle(self, method: str, path: str, body: str) -> tuple[int, Any]:
        parts = [p for p in path.split("?")[0].split("/") if p]
        if self.down:
            return 503, {"error": "service_unavailable"}
        refused = self.refuse(method, path) if self.refuse is not None else None
        if refused:
            return refused, {"status": refused, "error": {"type": "security_exception", "reason": "Forbidden"}}
        with self._lock:
            if not parts:
                return 200, {"version": {"number": "2.19.0"}}
            if parts == ["_aliases"] and method == "POST":
                for action in json.loads(body or "{}").get("actions", []):
                    (kind, spec), = action.items()
                    if kind == "add":
                        if spec["index"] not in self.indices:
                            return 404, {"error": "index_not_found_exception"}
                        self.aliases.setdefault(spec["alias"], set()).add(spec["index"])
                    elif kind == "remove":
                        self.aliases.get(spec["alias"], set()).discard(spec["index"])
                    elif kind == "remove_index":
                        self.indices.pop(spec["index"], None)
                self.aliases = {a: t for a, t in self.aliases.items() if t}
                return 200, {"acknowledged": True}
            if parts[0] == "_alias" and len(parts) == 2 and method == "GET":
                targets = self.aliases.get(parts[1])
                if not targets:
                    return 404, {"error": f"alias [{parts[1]}] missing", "status": 404}
                return 200, {t: {"aliases": {parts[1]: {}}} for t in sorted(targets)}
            name, rest = parts[0], parts[1:]
            targets = self.resolve(name)
            if not rest:
                if method == "HEAD":
                    return (200 if targets else 404), None
                if method == "PUT":
                    if targets or name in self.aliases:
                        return 400, {"error": {"type": "resource_already_exists_exception"}, "status": 400}
                    self.indices[name] = json.loads(body or "{}")
                    return 200, {"acknowledged": True, "index": name}
                return 405, {"error": f"{method} /{name} is not served by the stub"}
            if not targets:
                return 404, {"error": {"type": "index_not_found_exception", "index": name}, "status": 404}
            op = rest[0]
            if op in ("_mapping", "_mappings") and method == "GET":
                return 200, {t: {"mappings": self.indices[t].get("mappings", {})} for t in targets}
            if op == "_bulk":
                self.bulk_bodies.append(body)
                actions = [json.loads(line) for line in body.splitlines() if line.strip()]
                stored = self.documents.setdefault(targets[0], {})
                for i, action in enumerate(actions):
                    kind, meta = next(iter(action.items()))
                    if kind == "index" and "_id" in meta and i + 1 < len(actions):
                        stored[meta["_id"]] = actions[i + 1]
                    elif kind == "delete":
                        stored.pop(meta.get("_id"), None)
                items = [{next(iter(a)): {"status": 200}} for a in actions
                         if next(iter(a)) in ("index", "create", "update", "delete")]
                return 200, {"took": 1, "errors": False, "items": items}
            if op == "_msearch":
                n = sum(1 for line in body.splitlines() if line.strip()) // 2
                return 200, {"responses": [{"hits": {"hits": []}}] * n}
            if op in ("_search", "_delete_by_query", "_count"):
                return 200, {"hits": {"hits": [], "total": {"value": 0}}, "deleted": 0, "count": 0}
            if op == "_doc" and method == "GET" and len(rest) == 2:
                from urllib.parse import unquote

                doc_id = unquote(rest[1])
                source = self.documents.get(targets[0], {}).get(doc_id)
                if source is None:
                    return 404, {"_index": targets[0], "_id": doc_id, "found": False}
                return 200, {"_index": targets[0], "_id": doc_id, "_version": 1, "found": True, "_source": source}
            return 405, {"error": f"{method} {path} is not served by the stub"}

    # -- listeners -----------------------------------------------------------------------

    def listen(self, caller: str) -> str:
        """A port for ``caller`` (a function name); its URL."""
        if caller in self._servers:
            return f"http://127.0.0.1:{self._servers[caller].server_port}"
        cluster = self
        log = self.requests.setdefault(caller, [])

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                log.append((self.command, self.path, body))
                status, answer = cluster.handle(self.command, self.path, body)
                data = json.dumps(answer if answer is not None else {}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._servers[caller] = server
        return f"http://127.0.0.1:{server.server_port}"

    def close(self) -> None:
        for server in self._servers.values():
            server.shutdown()
            server.server_close()

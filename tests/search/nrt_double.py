"""A near-real-time OpenSearch double behind the real ``opensearchpy`` client.

``NrtCluster`` answers the REST endpoints ``OpenSearchIndex`` uses, wired in as the client's
connection class, so requests go through opensearch-py's own serialisation (paths, query
parameters, NDJSON bodies). It models what makes production differ from a test cluster with
``refresh=wait_for``:

- near-real-time visibility: writes and deletes change the live documents, but searches see
  the documents as of the last ``refresh()`` (a simulated refresh interval); ``GET _doc`` is
  real-time, as in OpenSearch;
- Serverless (``service="aoss"``, a vector collection): no client ``_id`` on index actions,
  no ``version``/``version_type``, no refresh API or ``refresh`` parameter; ids are generated;
- managed domain (``es``): ``external_gte`` versioning (a lower version is a 409 item);
- tenant-scoped access: every request path must start with ``/<allowed prefix>`` (IAM on
  ``domain/NAME/<tenant>*`` or a Serverless ``index/<collection>/<tenant>-*`` rule), and a
  bulk action line may not name an index (``rest.action.multi.allow_explicit_index=false``).
  Anything else is a 403 / 400, as the real service would answer.
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from typing import Any
from urllib.parse import unquote

import numpy as np
from opensearchpy import Connection, OpenSearch
from query_dsl import cjk_words, matches, words


class _Index:
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.live: dict[str, dict[str, Any]] = {}
        self.versions: dict[str, int] = {}
        self.visible: dict[str, dict[str, Any]] = {}


class NrtCluster:
    def __init__(self, service: str = "aoss", allowed_prefix: str = "", *, auto_refresh: bool = False) -> None:
        self.service = service
        self.auto_refresh = auto_refresh  # refresh after every write (a contract run, not an NRT test)
        self.allowed_prefix = allowed_prefix
        self.indexes: dict[str, _Index] = {}
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        self.bodies: list[tuple[str, str, Any]] = []  # (method, path, body: JSON, NDJSON lines or None)
        self.aliases: dict[str, set[str]] = {}  # alias -> indexes (GET _alias/<a>, POST _aliases)
        self._lock = threading.Lock()  # one request at a time, as a shard applies them

    # -- test controls -------------------------------------------------------------

    def refresh(self) -> None:
        """One refresh interval elapses: searches now see every write and delete so far."""
        for idx in self.indexes.values():
            idx.visible = copy.deepcopy(idx.live)

    def client(self) -> OpenSearch:
        cluster = self

        class _Conn(Connection):
            def perform_request(self, method, url, params=None, body=None, timeout=None, ignore=(), headers=None):
                params = {k: v.decode() if isinstance(v, bytes) else v for k, v in (params or {}).items()}
                status, data = cluster.handle(method, url, params, body)
                raw = json.dumps(data)
                if not (200 <= status < 300) and status not in ignore:
                    self._raise_error(status, raw, "application/json")
                return status, {"content-type": "application/json"}, raw

        return OpenSearch(hosts=[{"host": "nrt.invalid", "port": 443}], connection_class=_Conn)

    def documents(self, index: str, *, live: bool = True) -> list[dict[str, Any]]:
        idx = self.indexes[index]
        return list((idx.live if live else idx.visible).values())

    def paths(self) -> list[str]:
        return [f"{m} {p}" for m, p, _ in self.requests]

    # -- REST --------------------------------------------------------------------------

    def handle(self, method: str, url: str, params: dict[str, Any], body: Any) -> tuple[int, dict[str, Any]]:
        with self._lock:
            return self._handle(method, url, params, body)

    def _handle(self, method: str, url: str, params: dict[str, Any], body: Any) -> tuple[int, dict[str, Any]]:
        path = url.split("?")[0]
        self.requests.append((method, path, params))
        if not path.startswith("/" + self.allowed_prefix) or path == "/":
            return 403, {"error": {"type": "security_exception", "reason": f"no permission for {method} {path}"}}
        parts = [unquote(p) for p in path.strip("/").split("/")]
        name, rest = parts[0], parts[1:]
        if isinstance(body, bytes):
            body = body.decode()
        self.bodies.append((method, path, _recorded(body)))
        if name == "_alias" and method == "GET" and len(rest) == 1:
            targets = self.aliases.get(rest[0])
            if not targets:
                return 404, {"error": f"alias [{rest[0]}] missing", "status": 404}
            return 200, {t: {"aliases": {rest[0]: {}}} for t in sorted(targets)}
        if name == "_aliases" and method == "POST" and not rest:
            for action in _json(body).get("actions", []):
                (kind, spec), = action.items()
                if kind == "add":
                    self.aliases.setdefault(spec["alias"], set()).add(spec["index"])
                elif kind == "remove":
                    self.aliases.get(spec["alias"], set()).discard(spec["index"])
            return 200, {"acknowledged": True}
        if name in self.aliases and len(self.aliases[name]) == 1:  # an alias of one index reads as it
            name = next(iter(self.aliases[name]))
        if method == "HEAD" and not rest:
            return (200 if name in self.indexes else 404), {}
        if method == "PUT" and not rest:
            if name in self.indexes:
                return 400, {"error": {"type": "resource_already_exists_exception"}}
            self.indexes[name] = _Index(json.loads(body))
            return 200, {"acknowledged": True}
        idx = self.indexes.get(name)
        if idx is None:
            return 404, {"error": {"type": "index_not_found_exception", "index": name}}
        if rest == ["_mapping"]:
            return 200, {name: {"mappings": idx.body["mappings"]}}
        if rest == ["_refresh"]:
            if self.service == "aoss":
                return 404, {"error": {"type": "unsupported_operation", "reason": "no refresh on Serverless"}}
            self.refresh()
            return 200, {}
        if "refresh" in params and self.service == "aoss":
            return 400, {"error": {"type": "illegal_argument_exception", "reason": "refresh is not supported"}}
        if rest == ["_bulk"]:
            return self._bulk(idx, body, params)
        if rest == ["_search"]:
            return 200, self._search(idx, _json(body))
        if rest == ["_msearch"]:
            lines = [json.loads(line) for line in body.splitlines() if line.strip()]
            return 200, {"responses": [self._search(idx, q) for q in lines[1::2]]}
        if rest[:1] == ["_doc"] and method == "GET":
            doc = idx.live.get(rest[1])
            if doc is None:
                return 404, {"found": False}
            return 200, {"found": True, "_id": rest[1], "_source": _source(doc, params.get("_source_includes"))}
        if rest == ["_delete_by_query"] and self.service != "aoss":
            query = _json(body)["query"]
            doomed = [d for d, doc in idx.visible.items() if matches(query, doc)]
            for d in doomed:
                idx.live.pop(d, None)
            if str(params.get("refresh", "")).lower() == "true":
                self.refresh()
            return 200, {"deleted": len(doomed)}
        return 400, {"error": {"type": "unsupported", "reason": f"{method} {path}"}}

    def _bulk(self, idx: _Index, body: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        items: list[dict[str, Any]] = []
        i = 0
        while i < len(lines):
            (op, meta), = lines[i].items()
            if "_index" in meta:
                return 400, {"error": {"type": "illegal_argument_exception",
                                       "reason": "explicit index in bulk is not allowed"}}
            if op == "index":
                items.append({"index": self._index_doc(idx, meta, lines[i + 1])})
                i += 2
            elif op == "delete":
                items.append({"delete": self._delete_doc(idx, meta)})
                i += 1
            else:
                return 400, {"error": {"type": "illegal_argument_exception", "reason": f"op {op}"}}
        if self.auto_refresh or params.get("refresh") in ("wait_for", "true", True):
            self.refresh()
        return 200, {"errors": any(v["status"] >= 300 for item in items for v in item.values()), "items": items}

    def _index_doc(self, idx: _Index, meta: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
        if self.service == "aoss":
            if "_id" in meta or "version" in meta or "version_type" in meta:
                return {"status": 400, "error": {"type": "illegal_argument_exception",
                                                 "reason": "custom ids and versions are not supported"}}
            doc_id = uuid.uuid4().hex
        else:
            doc_id = meta.get("_id") or uuid.uuid4().hex
            if meta.get("version_type") == "external_gte" and meta["version"] < idx.versions.get(doc_id, -1):
                return {"_id": doc_id, "status": 409, "error": {"type": "version_conflict_engine_exception"}}
            idx.versions[doc_id] = meta.get("version", 1)
        idx.live[doc_id] = {**source, "_id": doc_id}
        return {"_id": doc_id, "status": 201}

    def _delete_doc(self, idx: _Index, meta: dict[str, Any]) -> dict[str, Any]:
        if idx.live.pop(meta["_id"], None) is None:
            return {"_id": meta["_id"], "status": 404}
        return {"_id": meta["_id"], "status": 200}

    def _search(self, idx: _Index, body: dict[str, Any]) -> dict[str, Any]:
        query = body.get("query", {"match_all": {}})
        docs = list(idx.visible.values())
        if "knn" in query:
            spec = query["knn"]["embedding"]
            q = np.asarray(spec["vector"], dtype=np.float64)
            scored = []
            for doc in docs:
                if "embedding" not in doc or ("filter" in spec and not matches(spec["filter"], doc)):
                    continue
                v = np.asarray(doc["embedding"], dtype=np.float64)
                cos = float(q @ v / (np.linalg.norm(q) * np.linalg.norm(v)))
                scored.append(((1 + cos) / 2, doc))
            scored.sort(key=lambda s: -s[0])
            scored = scored[: spec["k"]]
        else:
            terms = set()
            cjk = set()
            for clause in [*query.get("bool", {}).get("must", []), *query.get("bool", {}).get("should", [])]:
                if "match" in clause:
                    (field, spec), = clause["match"].items()
                    if field == "text.cjk":
                        cjk |= cjk_words(spec["query"])
                    else:
                        terms |= words(spec["query"])
            scored = [(float(len(terms & words(doc.get("text", ""))) + len(cjk & cjk_words(doc.get("text", ""))))
                       or 1.0, doc)
                      for doc in docs if "match_all" in query or matches(query, doc)]
            scored.sort(key=lambda s: -s[0])
        for spec in reversed(body.get("sort", [])):
            (field, order), = spec.items()
            scored.sort(key=lambda s: s[1].get(field), reverse=order == "desc")
        if "search_after" in body:
            (field, _), = body["sort"][0].items()
            scored = [s for s in scored if s[1].get(field) > body["search_after"][0]]
        hits = []
        for score, doc in scored[: body.get("size", 10)]:
            hit = {"_id": doc["_id"], "_score": None if body.get("sort") else score,
                   "_source": _source(doc, body.get("_source", True))}
            if body.get("sort"):
                hit["sort"] = [doc.get(next(iter(s))) for s in body["sort"]]
            hits.append(hit)
        return {"hits": {"total": {"value": len(scored)}, "hits": hits}}


def _recorded(body: Any) -> Any:
    """A request body as sent: a JSON document, NDJSON as a list of documents, or None."""
    if body is None or isinstance(body, dict):
        return body
    lines = [json.loads(line) for line in str(body).splitlines() if line.strip()]
    return lines[0] if len(lines) == 1 and not str(body).endswith("\n") else lines


def _json(body: Any) -> dict[str, Any]:
    return json.loads(body) if isinstance(body, str) else (body or {})


def _source(doc: dict[str, Any], spec: Any) -> dict[str, Any]:
    clean = {k: v for k, v in doc.items() if k != "_id"}
    if spec is False:
        return {}
    if spec is True or spec is None:
        return clean
    fields = [spec] if isinstance(spec, str) else list(spec)
    fields = [f for field in fields for f in field.split(",")]
    return {k: v for k, v in clean.items() if k in fields}

"""An API seen as one caller: the headers a caller with a static API key sends."""

from __future__ import annotations

from typing import Any

CTX = "/api/v1/acme"


class As:
    """An API (in-process or HTTP) called with ``key`` (``None``: no key), optionally in one
    partition and on behalf of another principal; paths are relative to ``context``."""

    def __init__(self, api: Any, key: str | None, *, partition: str | None = None,
                 on_behalf_of: str | None = None, context: str = CTX):
        self.api, self.context = api, context
        self.headers: dict[str, str] = {}
        if key is not None:
            self.headers["authorization"] = f"Bearer {key}"
        if partition is not None:
            self.headers["x-memory-partition"] = partition
        if on_behalf_of is not None:
            self.headers["x-spectron-on-behalf-of"] = on_behalf_of

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None, **kw: Any):
        return self.api.request(method, self.context + path, body, headers={**self.headers, **(headers or {})}, **kw)

    def get(self, path: str, **kw: Any):
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any):
        return self.request("POST", path, body, **kw)

    def put(self, path: str, body: Any = None, **kw: Any):
        return self.request("PUT", path, body, **kw)

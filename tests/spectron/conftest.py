"""The official Spectron client against our service: ``memory`` (``Spectron``) in process
(each request an API Gateway v2 event into the handlers, on SQLite and on DynamoDB under moto)
and over HTTP to the local server; the async client (``AsyncSpectron``, aiohttp) runs over HTTP in its test."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

from tests.conftest import InProcessApi

CONTEXT = "acme-prod"
API_KEY = "sk-spectron-test"  # no keys configured: the local admin, whatever the bearer


class InProcessAdapter(BaseAdapter):
    """A ``requests`` adapter that hands each request to the local gateway in process."""

    def __init__(self, api: InProcessApi):
        super().__init__()
        self.gateway = api.gateway

    def send(self, request: requests.PreparedRequest, **_: Any) -> requests.Response:
        from urllib.parse import urlsplit

        parts = urlsplit(request.url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode()
        elif not isinstance(body, bytes):
            body = b"".join(body)
        headers = {k.lower(): v for k, v in request.headers.items()}
        answer = self.gateway.invoke(request.method, target, headers, body)
        raw = (answer.get("body") or "") + "".join(answer.get("stream") or [])
        content = base64.b64decode(raw) if answer.get("isBase64Encoded") else raw.encode()
        response = requests.Response()
        response.status_code = answer["statusCode"]
        response.headers = CaseInsensitiveDict(answer.get("headers") or {})
        response._content = content
        response.url = request.url
        response.request = request
        response.encoding = "utf-8"
        response.raw = _Raw(content)
        return response

    def close(self) -> None:
        pass


class _Raw:
    """Enough of urllib3's response for ``Response.iter_lines`` on a stream=True request."""

    def __init__(self, content: bytes):
        self._content = content

    def stream(self, chunk_size: int, decode_content: bool = True) -> Iterator[bytes]:
        yield self._content

    def release_conn(self) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
def audit_usage_setting() -> str:
    return "store"  # the client reads the audit's cost rows (test_state_profile_forget_audit_and_health)


@pytest.fixture(params=["open", "keys"])
def service_mode(request: pytest.FixtureRequest) -> str:
    """How the service under the client was started: ``open`` (no keys: every caller is the
    local admin) or ``keys`` (AGENT_MEMORY_REQUIRE_KEYS=1, the client holding an admin key the
    operator minted). The whole surface runs in both. ``keys-bare`` (keys required, none minted
    yet) is for the test of minting the first one."""
    return request.param


@pytest.fixture
def require_keys_setting(service_mode: str) -> bool:
    return service_mode != "open"


@pytest.fixture
def api_key(service_mode: str, runtime: Any) -> str:
    """The bearer the client sends: an admin key minted by the operator on a service that
    requires keys, else any string (an open service takes every caller as its local admin)."""
    if service_mode == "keys":
        key, _ = runtime.administration.operator_create_key("ops", admin=True, name="ops")
        return key
    return API_KEY


@pytest.fixture
def memory(any_api: Any, api_key: str) -> Iterator[Any]:
    from surrealdb.spectron import Spectron
    from surrealdb.spectron._transport import BlockingTransport

    if hasattr(any_api, "client"):  # HttpApi (tests/conftest.py may load twice: no isinstance)
        endpoint, session = str(any_api.client.base_url).rstrip("/"), None
    else:
        endpoint, session = "http://in-process.invalid", requests.Session()
        session.mount("http://", InProcessAdapter(any_api))
    transport = BlockingTransport(endpoint=endpoint, api_key=api_key, max_retries=0, session=session)
    with Spectron(CONTEXT, transport=transport) as client:
        yield client
    transport.close()

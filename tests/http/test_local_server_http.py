"""The local server's HTTP behaviour: what a careful operator would throw at it.

Half-sent bodies, a burst of simultaneous connections, chunked request bodies, HEAD and
OPTIONS, bodies over the cap and malformed framing. Each runs against a real server on
loopback (uvicorn + ``agent_memory.http.asgi``)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from agent_memory.http.local_server import make_server
from tests.conftest import REPO

CTX = "/api/v1/ctx-http"


@pytest.fixture
def store_kind() -> str:
    return "sqlite"  # the HTTP layer is the same over either store


def _start(**kw) -> tuple[object, str]:
    srv = make_server("127.0.0.1", 0, REPO, **kw)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_port}"


@pytest.fixture
def fast_timeout_server(runtime) -> Iterator[tuple[str, int]]:
    srv, url = _start(body_timeout_s=1.0, max_body_bytes=64 * 1024)
    try:
        yield url, srv.server_port
    finally:
        srv.shutdown()
        srv.server_close()


def _read_response(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except TimeoutError:
        pass
    return data


def test_half_sent_bodies_time_out_and_do_not_block_other_requests(fast_timeout_server):
    url, port = fast_timeout_server
    stalled = []
    for _ in range(200):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(f"POST {CTX}/facts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  f"Content-Length: 1000\r\n\r\n{{\"text\": \"half".encode())
        stalled.append(s)
    try:
        started = time.monotonic()
        r = httpx.get(f"{url}/api/v1/health", timeout=10)  # answered while all 200 are stalled
        assert r.status_code == 200
        assert time.monotonic() - started < 5
        answers = [_read_response(s, 10) for s in stalled]
    finally:
        for s in stalled:
            s.close()
    statuses = [a.split(b"\r\n", 1)[0] for a in answers]
    assert statuses == [b"HTTP/1.1 408 Request Timeout"] * 200
    assert b"request-timeout" in answers[0]
    assert httpx.get(f"{url}/api/v1/health", timeout=10).status_code == 200


def test_150_simultaneous_appends_are_all_answered_without_resets(server, runtime, monkeypatch):
    monkeypatch.setattr(runtime.inflight, "cap", 200)  # this test is about connections, not shedding
    port = int(server.rsplit(":", 1)[1])
    barrier = threading.Barrier(150)
    results: list[bytes | BaseException] = [b""] * 150

    def append(i: int) -> None:
        body = json.dumps({"text": f"turn {i}"}).encode()
        request = (f"POST {CTX}/threads/burst/turns HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
        try:
            barrier.wait(30)
            with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
                s.sendall(request)
                results[i] = _read_response(s, 60)
        except BaseException as exc:  # noqa: BLE001 - a reset is what this test looks for
            results[i] = exc

    threads = [threading.Thread(target=append, args=(i,)) for i in range(150)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert errors == []
    statuses = sorted({r.split(b"\r\n", 1)[0] for r in results})
    assert statuses in ([b"HTTP/1.1 200 OK"], [b"HTTP/1.1 201 Created"])
    indexes = sorted(json.loads(r.split(b"\r\n\r\n", 1)[1])["turnIndex"] for r in results)
    assert len(set(indexes)) == 150


def test_chunked_request_body_is_read_as_the_body(server):
    def chunks():
        yield b'{"text": "chunked '
        yield b'body"}'

    with httpx.Client(base_url=server, timeout=30) as c:
        r = c.post(f"{CTX}/threads/chunky/turns", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code in (200, 201), r.text
        # the same keep-alive connection still parses the next request correctly
        turns = c.get(f"{CTX}/threads/chunky/turns")
    assert turns.status_code == 200
    assert [t["text"] for t in turns.json()["items"]] == ["chunked body"]


def test_head_and_options(server):
    with httpx.Client(base_url=server, timeout=30) as c:
        got = c.get("/api/v1/health")
        head = c.head("/api/v1/health")
        assert head.status_code == 200 and head.content == b""
        assert head.headers["content-length"] == str(len(got.content))
        options = c.options(f"{CTX}/facts")
        assert options.status_code == 204
        assert {m.strip() for m in options.headers["allow"].split(",")} == {"POST", "OPTIONS"}
        health = c.options("/api/v1/health")
        assert {m.strip() for m in health.headers["allow"].split(",")} == {"GET", "HEAD", "OPTIONS"}
        assert c.options("/api/v1/nothing/here/at/all").status_code == 404


def test_allow_is_each_paths_own_methods_in_openapi(server):
    """Literal paths beside a parameterised sibling (``/documents/keywords`` beside
    ``/documents/{document_id}``) answer their own methods, as openapi.yaml lists them; a
    sibling's method is 405 there, not that sibling's route."""
    import re

    import yaml

    spec = yaml.safe_load((REPO / "openapi.yaml").read_text(encoding="utf-8"))
    with httpx.Client(base_url=server, timeout=30) as c:
        for path, item in spec["paths"].items():
            methods = {m.upper() for m in item if m in ("get", "post", "put", "patch", "delete")}
            url = re.sub(r"\{context_id\}", "ctx-http", path)
            url = re.sub(r"\{\w+\}", "x1", url)
            allow = c.options(url).headers.get("allow", "")
            expected = methods | {"OPTIONS"} | ({"HEAD"} if "GET" in methods else set())
            assert {m.strip() for m in allow.split(",")} == expected, path
        assert c.delete(f"{CTX}/documents/keywords").status_code == 405


def test_wrong_method_on_a_known_route_is_405_with_allow(server):
    with httpx.Client(base_url=server, timeout=30) as c:
        wrong = c.get(f"{CTX}/facts")
        assert wrong.status_code == 405
        assert wrong.headers["content-type"] == "application/problem+json"
        assert {m.strip() for m in wrong.headers["allow"].split(",")} == {"POST", "OPTIONS"}
        assert wrong.json()["status"] == 405 and "POST" in wrong.json()["detail"]
        assert c.delete("/api/v1/health").headers["allow"] == c.options("/api/v1/health").headers["allow"]
        # a refused write stores nothing, and an unknown path stays 404
        before = c.get(f"{CTX}/state").json()
        assert c.put(f"{CTX}/facts", json={"text": "I work at Globex."}).status_code == 405
        assert c.get(f"{CTX}/state").json() == before
        assert c.get("/api/v1/nothing/here/at/all").status_code == 404


def test_body_over_the_cap_is_413_declared_or_chunked(fast_timeout_server):
    url, port = fast_timeout_server
    big = b'{"text": "' + b"x" * (70 * 1024) + b'"}'
    with httpx.Client(base_url=url, timeout=30) as c:
        declared = c.post(f"{CTX}/facts", content=big, headers={"content-type": "application/json"})
        assert declared.status_code == 413
        assert declared.headers["content-type"] == "application/problem+json"

        def chunks():
            for i in range(0, len(big), 8192):
                yield big[i:i + 8192]

        streamed = c.post(f"{CTX}/facts", content=chunks(), headers={"content-type": "application/json"})
        assert streamed.status_code == 413


def test_malformed_content_length_is_a_400_not_a_dropped_connection(server):
    port = int(server.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"POST {CTX}/facts HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{{}}".encode())
        answer = _read_response(s, 10)
    assert answer.startswith(b"HTTP/1.1 400")

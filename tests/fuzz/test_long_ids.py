"""Long and odd ids on every route that takes one, on both record stores, in process and
through the local server: each answers 4xx, never 500.

Every path parameter of every operation in openapi.yaml (but the context id, which has its
own rule) gets ids of 1 KiB, 4 KiB and 64 KiB, and ids with a control character or a lone
surrogate's bytes; the ids that name something in a body (a session id, a scope path, a
principal) too. DynamoDB's key limits (a sort key is at most 1,024 bytes) made several of them
answer 500 before the ids were validated once, in the HTTP layer
(``agent_memory.http.api.check_path_ids``)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest

from tests.openapi_schemas import spec
from tests.support.callers import As

LENGTHS = (1024, 4096, 65536)
ODD = ("a\x00b", "a\x7fb", "a\x1bb", "%ED%A0%80")  # NUL, DEL, ESC; the UTF-8 bytes of a surrogate
SAMPLE = {"turn_index": "1", "type": "person"}
BODIES: dict[tuple[str, str], Any] = {
    ("post", "/api/v1/{context_id}/principals/{principal_id}/grants"): {"path": "org/acme", "verbs": ["memory:read"]},
    ("delete", "/api/v1/{context_id}/principals/{principal_id}/grants"): {"path": "org/acme", "verbs": ["memory:read"]},
    ("put", "/api/v1/{context_id}/documents/{document_id}"): {"text": "new text", "title": "t"},
    ("post", "/api/v1/{context_id}/sessions/{session_id}/turns"): {"role": "user", "content": "hi"},
    ("post", "/api/v1/{context_id}/threads/{thread_id}/turns"): {"role": "user", "content": "hi"},
    ("post", "/api/v1/{context_id}/sessions/{session_id}/context"): {"query": "hi"},
    ("post", "/api/v1/{context_id}/threads/{thread_id}/context"): {"query": "hi"},
    ("put", "/api/v1/{context_id}/threads/{thread_id}/acl"): {"readers": ["alice"]},
    ("post", "/api/v1/{context_id}/uncertainty/{uncertainty_id}/resolve"): {"value": "x"},
}


def routes() -> list[tuple[str, str, str]]:
    """(method, path template, parameter) for each path parameter of each operation."""
    out = []
    for template, item in spec()["paths"].items():
        for name in re.findall(r"{(\w+)}", template):
            if name == "context_id":
                continue
            for method in ("get", "post", "put", "patch", "delete"):
                if method in item:
                    out.append((method, template, name))
    return out


ROUTES = routes()


def path_for(template: str, name: str, value: str) -> str:
    def fill(m: re.Match[str]) -> str:
        key = m.group(1)
        if key == "context_id":
            return "acme"
        return value if key == name else SAMPLE.get(key, "x1")
    return re.sub(r"{(\w+)}", fill, template)


def test_the_probe_covers_the_routes_of_the_issue():
    covered = {(m, t) for m, t, _ in ROUTES}
    for method, template in (("get", "/api/v1/{context_id}/documents/{document_id}/raw"),
                             ("delete", "/api/v1/{context_id}/sessions/{session_id}"),
                             ("get", "/api/v1/{context_id}/instructions/{fact_id}"),
                             ("post", "/api/v1/{context_id}/principals/{principal_id}/grants")):
        assert (method, template) in covered
    assert len(ROUTES) > 40


@pytest.mark.timeout(600)
def test_long_and_odd_path_ids_answer_4xx(any_api, runtime):
    caller = As(any_api, None, context="")
    problems = []
    over_http = hasattr(any_api, "client")  # httpx sends no URL over 64 KiB: the longest id is a little less
    values = ["i" * (min(n, 60_000) if over_http else n) for n in LENGTHS] + [quote(v, safe="%") if "%" not in v else v for v in ODD]
    values += ["é" * 600]  # 600 characters, 1,200 bytes
    for method, template, name in ROUTES:
        body = BODIES.get((method, template), {} if method in ("post", "put") else None)
        for value in values:
            encoded = value if value.startswith("%") or "%" in value else quote(value, safe="")
            r = caller.request(method.upper(), path_for(template, name, encoded), body)
            if not 400 <= r.status < 500:
                problems.append(f"{method.upper()} {template} {name}={value[:12]!r}..({len(value)}): {r.status} "
                                f"{r.text[:200]}")
    assert problems == [], "\n".join(problems[:80])


def test_long_ids_in_bodies_answer_4xx(any_api, runtime):
    caller = As(any_api, None, context="/api/v1/acme")
    long = "s" * 2048
    for path, body in (("/scopes", {"path": long}), ("/scopes", {"path": "/".join(["a" * 200] * 10)}),
                       ("/facts", {"text": "I live in Oslo.", "sessionId": long}),
                       ("/principals/" + "p" * 2048 + "/grants", {"path": "org/acme", "verbs": ["memory:read"]})):
        r = caller.post(path, body)
        assert 400 <= r.status < 500, (path, r.status, r.text[:300])


@pytest.mark.parametrize("session_id", ["sess:abc", "user-123", "0b5cdb52-7a53-4c0e-9f5b-0a4a4c1b2e3f",
                                        "s" * 128, "org.acme_user:bob-42"])
def test_caller_named_session_ids_pass_the_id_rule(api, runtime, session_id):
    """The ids the official client and the framework integrations name sessions with are
    valid ids: a missing one is 404, never 400."""
    caller = As(api, None, context="/api/v1/acme")
    for method, path in (("GET", "/turns"), ("POST", "/close"), ("DELETE", "")):
        r = caller.request(method, f"/sessions/{quote(session_id, safe='')}{path}")
        assert r.status == 404, (method, path, r.text)

"""Every 401 and 403 openapi.yaml documents is one the handlers give, and every 401/403 a
handler gives is documented: each operation is called without a key (401 exactly where
documented), with a key not bound to the context (403 exactly where documented), and with a
key lacking the operation's verb (403, documented)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SPEC = yaml.safe_load((ROOT / "openapi.yaml").read_text())
PARAMS = {"context_id": "acme", "session_id": "sess_01HV0000000000000000000000", "thread_id": "t1",
          "turn_index": "1", "trace_id": "trace_01HV0000000000000000000000",
          "document_id": "doc_01HV0000000000000000000000", "type": "person", "name": "alice", "key": "city",
          "uncertainty_id": "unc_01HV0000000000000000000000", "fact_id": "attr_01HV0000000000000000000000",
          "key_name": "key-1", "principal_id": "alice", "normalised": "refund",
          "receipt_id": "rcpt_01HV0000000000000000000000", "job_id": "job_01HV0000000000000000000000"}
KEYS = {"bound-elsewhere": "key-elsewhere-000000", "no-verbs": "key-noverbs-00000000"}
OPERATIONS = sorted((method.upper(), path, op) for path, item in SPEC["paths"].items()
                    for method, op in item.items() if method in ("get", "post", "put", "delete", "patch"))


def _documented(op: dict) -> set[str]:
    return {str(code) for code in op.get("responses", {})}


def _url(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: PARAMS[m.group(1)], path)


@pytest.fixture(params=["sqlite"])
def store_kind(request) -> str:  # the statuses do not depend on the record store
    return request.param


@pytest.fixture
def principals_setting() -> list[dict[str, Any]]:
    return [{"key": KEYS["bound-elsewhere"], "principal": "elsewhere", "contexts": ["other"]},
            {"key": KEYS["no-verbs"], "principal": "noverbs", "verbs": []}]


def test_documented_401s_and_403s_are_what_the_handlers_answer(api) -> None:
    problems = []
    for method, path, op in OPERATIONS:
        documented = _documented(op)
        url = _url(path)
        body = {} if method in ("POST", "PUT", "PATCH") else None
        anonymous = api.request(method, url, body)
        if ("401" in documented) != (anonymous.status == 401):
            problems.append(f"{method} {path}: no key -> {anonymous.status}, documented {sorted(documented)}")
        if "{context_id}" not in path:
            continue
        unbound = api.request(method, url, body, headers={"authorization": f"Bearer {KEYS['bound-elsewhere']}"})
        if ("403" in documented) != (unbound.status == 403):
            problems.append(f"{method} {path}: unbound context -> {unbound.status}, documented {sorted(documented)}")
        no_verbs = api.request(method, url, body, headers={"authorization": f"Bearer {KEYS['no-verbs']}"})
        if no_verbs.status == 403 and "403" not in documented:
            problems.append(f"{method} {path}: a key without the verb -> 403, not documented")
        if no_verbs.status != 403:
            problems.append(f"{method} {path}: a key holding no verb -> {no_verbs.status}, not 403")
    assert not problems, "\n".join(problems)


def test_every_operation_but_health_declares_the_bearer_scheme() -> None:
    # health is the one route a caller without a key may call (a probe's), so it declares none
    default = SPEC.get("security")
    for method, path, op in OPERATIONS:
        security = op.get("security", default)
        if path == "/api/v1/health":
            assert security == [], "health declares no security"
            continue
        assert security and any("bearerAuth" in s for s in security), f"{method} {path}"

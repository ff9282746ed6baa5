"""Fail closed: in Lambda every request needs a valid key, whatever the configuration;
keys live as digests in the record store (``agent-memory keys``); the bootstrap admin key
comes from Secrets Manager; locally, the open mode is for loopback only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_memory.access.api_keys import KEYS_PK, ApiKeyStore, digest
from agent_memory.access.authentication import BOOTSTRAP_PRINCIPAL, Authenticator
from agent_memory.config import load_settings
from agent_memory.http.local_server import LocalGateway
from agent_memory.interfaces import cli
from agent_memory.kernel.errors import Unauthorized
from agent_memory.runtime import Runtime, set_runtime

REPO = Path(__file__).resolve().parents[2]


def local_settings(tmp_path: Path, **env: str):
    return load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path / "data"), "AGENT_MEMORY_CURSOR_SECRET": "s",
                              **env})


@pytest.fixture
def runtime(tmp_path: Path):
    rt = Runtime(local_settings(tmp_path))
    set_runtime(rt)
    yield rt
    set_runtime(None)


def call(path: str, key: str | None = None) -> tuple[int, dict]:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    resp = LocalGateway(REPO).invoke("GET", path, headers, b"")
    return resp["statusCode"], json.loads(resp["body"] or "{}")


def test_in_lambda_a_request_without_a_key_gets_401_even_with_no_keys_configured(runtime, monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "SessionsFunction")
    for path in ("/api/v1/contexts", "/api/v1/ctx/entities", "/api/v1/ctx/state"):
        status, body = call(path)
        assert status == 401, path
        assert body["status"] == 401 and "API key" in body["detail"]
    assert call("/api/v1/ctx/state", key="amk_not-a-key")[0] == 401


def test_in_lambda_health_answers_a_probe_without_a_key_and_names_no_tenant(runtime, monkeypatch):
    # openapi.yaml declares no security on health: a load balancer's probe holds no key
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "SessionsFunction")
    runtime.api_keys.create("alice", groups=["care"], label="laptop")
    for key in (None, "amk_not-a-key"):
        status, body = call("/api/v1/health", key=key)
        assert status == 200, key
        assert set(body) <= {"status", "store", "search"} and body["status"] == "ok"


def test_locally_without_keys_every_caller_is_the_default_admin(runtime):
    assert call("/api/v1/health")[0] == 200
    assert call("/api/v1/ctx/entities")[0] == 200


def test_a_stored_key_admits_its_principal_until_revoked(runtime):
    raw, stored = runtime.api_keys.create("alice", groups=["care"], label="laptop")
    assert call("/api/v1/ctx/entities")[0] == 401, "a stored key closes the open local mode"
    assert call("/api/v1/ctx/entities", key=raw)[0] == 200
    record = runtime.base_store.get(KEYS_PK, digest(raw))
    assert raw not in json.dumps(record.data) and record.data["principal"] == "alice"
    other, _ = runtime.api_keys.create("bob")
    assert runtime.api_keys.revoke(stored.key_id)
    assert call("/api/v1/ctx/entities", key=raw)[0] == 401
    assert call("/api/v1/ctx/entities", key=other)[0] == 200


def test_the_bootstrap_key_is_an_admin_and_follows_rotation(tmp_path):
    secret = {"value": "first-bootstrap-key-0123456789"}
    now = {"t": 0.0}
    keys = ApiKeyStore(Runtime(local_settings(tmp_path)).base_store)
    auth = Authenticator((), keys, lambda: secret["value"], deployed=True, clock=lambda: now["t"])
    caller = auth.authenticate("Bearer first-bootstrap-key-0123456789")
    assert caller.principal == BOOTSTRAP_PRINCIPAL and caller.admin
    secret["value"] = "second-bootstrap-key-0123456789"
    now["t"] += 301
    with pytest.raises(Unauthorized):
        auth.authenticate("Bearer first-bootstrap-key-0123456789")
    assert auth.authenticate("Bearer second-bootstrap-key-0123456789").admin


def test_revocation_reaches_other_instances_within_the_cache_time(tmp_path):
    store = Runtime(local_settings(tmp_path)).base_store
    now = {"t": 0.0}
    reader = ApiKeyStore(store, clock=lambda: now["t"])
    raw, stored = ApiKeyStore(store).create("bob")
    assert reader.find(digest(raw)).principal == "bob"
    ApiKeyStore(store).revoke(stored.key_id)
    assert reader.find(digest(raw)) is not None  # cached
    now["t"] += 61
    assert reader.find(digest(raw)) is None


def test_keys_cli_creates_lists_and_revokes_in_a_data_dir(tmp_path, capsys):
    data = str(tmp_path / "data")
    assert cli.main(["keys", "create", "--principal", "ops", "--admin", "--group", "oncall", "--data-dir", data]) == 0
    out = capsys.readouterr().out
    raw = out.split("store it now): ")[1].strip()
    key_id = out.split("key id: ")[1].split()[0]
    assert raw.startswith("amk_")
    assert cli.main(["keys", "list", "--data-dir", data]) == 0
    listed = capsys.readouterr().out
    assert key_id in listed and "ops" in listed and "admin=true" in listed and raw not in listed
    assert cli.main(["keys", "revoke", key_id, "--data-dir", data]) == 0
    assert cli.main(["keys", "revoke", key_id, "--data-dir", data]) == 1
    capsys.readouterr()
    assert cli.main(["keys", "list", "--data-dir", data]) == 0
    assert key_id not in capsys.readouterr().out


def test_keys_cli_names_a_key_with_a_ttl_and_the_service_it_shares_with_http_sees_it(tmp_path, capsys):
    data = str(tmp_path / "data")
    assert cli.main(["keys", "create", "--principal", "ci", "--name", "deploy", "--ttl-seconds", "600",
                     "--context", "acme", "--verb", "memory:read", "--data-dir", data]) == 0
    out = capsys.readouterr().out
    assert "name: deploy" in out and "valid until: " in out
    assert cli.main(["keys", "create", "--principal", "ci", "--ttl-seconds", "0", "--data-dir", data]) == 2
    capsys.readouterr()
    rt = Runtime(local_settings(tmp_path))
    (stored,) = rt.administration.operator_keys()
    assert stored.name == "deploy" and stored.valid_until is not None and stored.grant["contexts"] == ("acme",)


def test_serve_refuses_a_public_address_without_keys_and_says_why(tmp_path, capsys):
    rc = cli.main(["serve", "--host", "0.0.0.0", "--port", "0", "--data-dir", str(tmp_path / "data")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "refusing to serve on 0.0.0.0 without API keys" in err and "keys create" in err


def test_open_mode_is_allowed_on_loopback_and_a_public_address_with_keys(tmp_path):
    rt = Runtime(local_settings(tmp_path))
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        assert cli.open_mode_refusal(host, rt) is None
    assert cli.open_mode_refusal("0.0.0.0", rt) and cli.open_mode_refusal("example.org", rt)
    rt.api_keys.create("ops", admin=True)
    assert cli.open_mode_refusal("0.0.0.0", Runtime(rt.settings)) is None


def test_in_lambda_no_settings_file_is_read(tmp_path, monkeypatch):
    (tmp_path / "agent-memory.yaml").write_text("storage:\n  records: sqlite\ntenant: from-file\n")
    monkeypatch.chdir(tmp_path)
    assert load_settings(env={}).tenant == "from-file"
    assert load_settings(env={"AWS_LAMBDA_FUNCTION_NAME": "f"}).tenant == "local"

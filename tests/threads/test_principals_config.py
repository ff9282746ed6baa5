"""Static API keys: the ``principals`` setting (yaml / AGENT_MEMORY_PRINCIPALS_JSON) and how
``request_context.resolve`` turns a bearer key into a caller."""

from __future__ import annotations

import hashlib
import json

import pytest

from agent_memory.access.request_context import resolve
from agent_memory.access.static_principals import StaticPrincipal, parse_principals
from agent_memory.config import ConfigurationError, load_settings
from agent_memory.kernel.errors import Unauthorized

KEY = "k-0123456789abcdef"


def test_yaml_principals_keep_only_key_digests(tmp_path):
    cfg = tmp_path / "agent-memory.yaml"
    cfg.write_text(f"""
principals:
  - key: {KEY}
    principal: dr-lee
    groups: [care-team-7, "group:clinic-a"]
  - key_sha256: {hashlib.sha256(b"other-key-0123456789").hexdigest()}
    principal: ops
    admin: true
""")
    settings = load_settings(env={}, config_path=cfg)
    first, second = settings.principals
    assert first == StaticPrincipal(hashlib.sha256(KEY.encode()).hexdigest(), "dr-lee",
                                    ("care-team-7", "clinic-a"), False)
    assert second.admin and second.principal == "ops"
    assert KEY not in repr(settings)


def test_env_json_wins_over_yaml(tmp_path):
    cfg = tmp_path / "agent-memory.yaml"
    cfg.write_text(f"principals: [{{key: {KEY}, principal: from-yaml}}]\n")
    env = {"AGENT_MEMORY_PRINCIPALS_JSON": json.dumps([{"key": KEY, "principal": "from-env"}])}
    assert load_settings(env=env, config_path=cfg).principals[0].principal == "from-env"
    cfg.unlink()
    assert load_settings(env={}).principals == ()


@pytest.mark.parametrize("raw, message", [
    ("not json", "invalid JSON"),
    ('{"key": "x"}', "expected a list"),
    ('[{"principal": "a"}]', "exactly one of key or key_sha256"),
    ('[{"key": "short", "principal": "a"}]', "at least 16"),
    ('[{"key_sha256": "abc", "principal": "a"}]', "64 lower-case hex"),
    (f'[{{"key": "{KEY}"}}]', "principal"),
    (f'[{{"key": "{KEY}", "principal": "group:x"}}]', "principal"),
    (f'[{{"key": "{KEY}", "principal": "a", "groups": "g"}}]', "groups"),
    (f'[{{"key": "{KEY}", "principal": "a", "admin": "yes"}}]', "admin"),
    (f'[{{"key": "{KEY}", "principal": "a", "role": "x"}}]', "expected keys"),
    (f'[{{"key": "{KEY}", "principal": "a"}}, {{"key": "{KEY}", "principal": "b"}}]', "twice"),
])
def test_bad_principals_are_one_clear_configuration_error(raw, message):
    with pytest.raises(ConfigurationError, match=message):
        parse_principals(raw, None)


def test_resolve_maps_bearer_keys_to_callers():
    principals = parse_principals(None, [{"key": KEY, "principal": "dr-lee", "groups": ["care-team-7"]},
                                         {"key": "admin-key-0123456789", "principal": "ops", "admin": True}])
    ctx = resolve("acme", {"Authorization": f"Bearer {KEY}", "X-Memory-Partition": "clinic-a"},
                  default_principal="local-admin", principals=principals)
    assert (ctx.principal, ctx.admin, ctx.partition) == ("dr-lee", False, "clinic-a")
    assert ctx.principals == ["dr-lee", "group:care-team-7"]
    assert resolve("acme", {"authorization": "bearer admin-key-0123456789"}, default_principal="x",
                   principals=principals).admin
    for headers in ({}, {"authorization": "Bearer "}, {"authorization": "Bearer nope"},
                    {"authorization": f"Basic {KEY}"}):
        with pytest.raises(Unauthorized):
            resolve("acme", headers, default_principal="local-admin", principals=principals)


def test_without_keys_every_caller_is_the_default_admin():
    ctx = resolve("acme", {"authorization": "Bearer whatever"}, default_principal="local-admin")
    assert ctx.principal == "local-admin" and ctx.admin

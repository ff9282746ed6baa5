"""One configuration object: defaults, file, environment, and clear startup errors."""

from __future__ import annotations

import pytest

from agent_memory.config import load_settings
from agent_memory.kernel.errors import ConfigurationError


def test_defaults_are_offline_without_keys(tmp_path):
    s = load_settings(env={})
    assert str(s.models.extraction) == "offline/deterministic"
    assert str(s.models.embedding) == "hashing/v1"
    # SQLite records + the embedded index: projection after the commit, batched (the outbox
    # keeps it across a crash), reads of a context waiting up to 2 s for its pending writes.
    assert s.store == "sqlite" and s.search == "embedded" and s.projection == "background"
    assert s.projection_wait_s == 2.0
    assert "offline" in s.describe()


def test_projection_is_inline_where_there_is_no_outbox_and_configurable_everywhere(tmp_path):
    assert load_settings(env={"AGENT_MEMORY_STORE": "dynamodb"}).projection == "inline"
    assert load_settings(env={"AGENT_MEMORY_SEARCH": "opensearch",
                              "AGENT_MEMORY_OPENSEARCH_URL": "http://localhost:9200"}).projection == "inline"
    assert load_settings(env={"AGENT_MEMORY_PROJECTION": "inline"}).projection == "inline"
    cfg = tmp_path / "agent-memory.yaml"
    cfg.write_text("storage:\n  projection: inline\n  projection_wait_s: 0.5\n")
    s = load_settings(env={}, config_path=cfg)
    assert (s.projection, s.projection_wait_s) == ("inline", 0.5)
    assert load_settings(env={"AGENT_MEMORY_PROJECTION_WAIT_S": "0"}).projection_wait_s == 0.0
    for bad in ("-1", "31", "soon"):
        with pytest.raises(ConfigurationError, match="storage.projection_wait_s"):
            load_settings(env={"AGENT_MEMORY_PROJECTION_WAIT_S": bad})


def test_openai_key_switches_defaults():
    s = load_settings(env={"OPENAI_API_KEY": "sk-test"})
    assert s.models.response.provider == "openai"
    assert str(s.models.embedding) == "openai/text-embedding-3-small"


def test_file_then_env_precedence(tmp_path):
    cfg = tmp_path / "agent-memory.yaml"
    cfg.write_text("models:\n  extraction: bedrock/anthropic.claude-3-haiku\n  response: offline/x\n"
                   "  allowed: [offline/y]\nstorage:\n  records: dynamodb\n  table: t1\nlimits:\n  page_max: 200\n")
    s = load_settings(env={"AWS_REGION": "eu-west-1", "AGENT_MEMORY_TABLE": "t2"}, config_path=cfg)
    assert str(s.models.extraction) == "bedrock/anthropic.claude-3-haiku"
    assert s.models.allowed == ("offline/y",)
    assert s.store == "dynamodb" and s.table_name == "t2"
    assert s.limits.page_max == 200
    assert s.models.is_allowed("offline/y") and not s.models.is_allowed("openai/gpt-4o")


@pytest.mark.parametrize("env,message", [
    ({"AGENT_MEMORY_MODELS_RESPONSE": "acme/model"}, "unknown provider 'acme'"),
    ({"AGENT_MEMORY_MODELS_EMBEDDING": "offline/x"}, "unknown provider 'offline'"),
    ({"AGENT_MEMORY_MODELS_RESPONSE": "gpt-4o"}, "expected 'provider/model'"),
    ({"AGENT_MEMORY_MODELS_RESPONSE": "openai/gpt-4o"}, "OPENAI_API_KEY is not set"),
    ({"AGENT_MEMORY_MODELS_EXTRACTION": "bedrock/claude"}, "no AWS region"),
    ({"AGENT_MEMORY_STORE": "postgres"}, "expected sqlite or dynamodb"),
    ({"AGENT_MEMORY_SEARCH": "opensearch"}, "no OpenSearch endpoint"),
    ({"AGENT_MEMORY_LIMITS_PAGE_MAX": "lots"}, "expected an integer"),
])
def test_bad_configuration_is_one_clear_error(env, message):
    with pytest.raises(ConfigurationError, match=message):
        load_settings(env=env)


def test_unknown_limit_in_file_is_rejected(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("limits:\n  bogus: 1\n")
    with pytest.raises(ConfigurationError, match="limits.bogus"):
        load_settings(env={}, config_path=cfg)


def test_cursor_secret_is_generated_once_into_data_dir(tmp_path):
    from agent_memory.runtime import resolve_cursor_secret

    s = load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path / "d")})
    first = resolve_cursor_secret(s)
    assert len(first) == 64 and (tmp_path / "d" / "cursor-secret").exists()
    assert resolve_cursor_secret(load_settings(env={"AGENT_MEMORY_DATA_DIR": str(tmp_path / "d")})) == first


def test_the_search_breaker_and_projection_retry_are_configured_within_bounds(tmp_path):
    from agent_memory.runtime import Runtime

    env = {"AGENT_MEMORY_DATA_DIR": str(tmp_path)}
    s = load_settings(env=env)
    assert (s.search_breaker_failures, s.search_breaker_cool_down_s, s.projection_retry_s) == (3, 30.0, 30.0)
    (tmp_path / "conf").mkdir()
    cfg = tmp_path / "conf" / "agent-memory.yaml"
    cfg.write_text("storage:\n  search_breaker: {failures: 5, cool_down_s: 12}\n  projection_retry_s: 4\n")
    s = load_settings(env=env, config_path=cfg)
    assert (s.search_breaker_failures, s.search_breaker_cool_down_s, s.projection_retry_s) == (5, 12.0, 4.0)
    s = load_settings(env={**env, "AGENT_MEMORY_SEARCH_BREAKER_COOL_DOWN_S": "90"}, config_path=cfg)
    assert s.search_breaker_cool_down_s == 90.0
    for bad in ({"AGENT_MEMORY_SEARCH_BREAKER_FAILURES": "0"}, {"AGENT_MEMORY_SEARCH_BREAKER_COOL_DOWN_S": "0.1"},
                {"AGENT_MEMORY_SEARCH_BREAKER_COOL_DOWN_S": "7200"}, {"AGENT_MEMORY_PROJECTION_RETRY_S": "x"}):
        with pytest.raises(ConfigurationError, match="search_breaker|projection_retry_s"):
            load_settings(env={**env, **bad})
    cfg.write_text("storage:\n  search_breaker: {failures: 2, timeout: 3}\n")
    with pytest.raises(ConfigurationError, match="storage.search_breaker"):
        load_settings(env=env, config_path=cfg)
    # the runtime's breaker takes them
    opensearch = load_settings(env={**env, "AGENT_MEMORY_SEARCH": "opensearch", "AGENT_MEMORY_OPENSEARCH_URL":
                                    "http://127.0.0.1:9", "AGENT_MEMORY_SEARCH_BREAKER_FAILURES": "7",
                                    "AGENT_MEMORY_CURSOR_SECRET": "s"})
    breaker = Runtime(opensearch).search
    assert (breaker.failures_to_open, breaker.cool_down_s) == (7, 30.0)


def test_the_openai_client_is_the_library_locally_and_the_thin_one_on_the_stack(tmp_path):
    from agent_memory.cfn_template import load_template, repo_root

    template = load_template(repo_root() / "template.yaml")
    assert load_settings(env={}).models.openai_client == "library"
    assert load_settings(env={"AGENT_MEMORY_OPENAI_CLIENT": "HTTP"}).models.openai_client == "http"
    # every function of the stack: importing openai would cost each container's first model call
    assert template["Globals"]["Function"]["Environment"]["Variables"]["AGENT_MEMORY_OPENAI_CLIENT"] == "http"
    with pytest.raises(ConfigurationError, match="models.openai_client"):
        load_settings(env={"AGENT_MEMORY_OPENAI_CLIENT": "requests"})


"""The language model registry (``adapters/models/registry.py``): one entry per provider, the
same providers the configuration accepts, each built through its module's ``build`` with only
the options it needs (the OpenAI key, which may be a secret read, only for OpenAI)."""

from __future__ import annotations

import pytest

from agent_memory.adapters.models import registry
from agent_memory.adapters.models.bedrock_converse import BedrockConverseModel
from agent_memory.adapters.models.offline import OfflineLanguageModel
from agent_memory.adapters.models.openai_chat import OpenAIChatModel
from agent_memory.config import LANGUAGE_PROVIDERS
from agent_memory.kernel.errors import ConfigurationError
from agent_memory.models.extraction import ExtractionOutput


def test_the_registry_holds_the_providers_the_configuration_accepts():
    assert set(registry.PROVIDERS) == LANGUAGE_PROVIDERS


def test_each_provider_is_built_by_its_own_module(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    asked: list[str] = []

    def key() -> str:
        asked.append("key")
        return "sk-test"

    options = registry.ProviderOptions(name="x/y", timeout=7.0, openai_api_key=key, aws_region="eu-west-1")
    offline = registry.build_language_model("offline", "deterministic",
                                            registry.ProviderOptions(name="offline/deterministic", timeout=7.0,
                                                                     openai_api_key=key))
    assert isinstance(offline, OfflineLanguageModel) and offline.name == "offline/deterministic"
    assert ExtractionOutput in offline._handlers  # noqa: SLF001 - the offline extractor is registered
    bedrock = registry.build_language_model("bedrock", "anthropic.claude-3-haiku", options)
    assert isinstance(bedrock, BedrockConverseModel) and bedrock.name == "bedrock/anthropic.claude-3-haiku"
    assert bedrock.timeout == 7.0
    assert asked == []  # neither offline nor Bedrock reads the OpenAI key
    openai = registry.build_language_model("openai", "gpt-4o-mini", options)
    assert isinstance(openai, OpenAIChatModel) and openai.name == "openai/gpt-4o-mini" and openai.timeout == 7.0
    assert asked == ["key"]


def test_an_unknown_provider_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="unknown language model provider 'nope'"):
        registry.build_language_model("nope", "m", registry.ProviderOptions(name="nope/m", timeout=1.0))

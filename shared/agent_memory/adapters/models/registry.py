"""The language model providers, one module each, one entry each in ``PROVIDERS`` (provider
name -> the module whose ``build(model, options)`` makes the model). The composition root
(``runtime.build_language_model``) asks for a model by its ``provider/model`` name and never
names a provider class. A provider's module is imported only when a model of it is built, so
naming this registry costs no SDK (and no other provider's code).

Adding a provider: a module here with a ``LanguageModel`` and its ``build``, a line in
``PROVIDERS``, and its name in ``config.LANGUAGE_PROVIDERS`` (a unit test holds the two equal).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable

from agent_memory.kernel.errors import ConfigurationError
from agent_memory.ports import LanguageModel

PROVIDERS: dict[str, str] = {
    "openai": "agent_memory.adapters.models.openai_chat",
    "bedrock": "agent_memory.adapters.models.bedrock_converse",
    # the model is models/offline.py's; the offline package teaches it its answers
    "offline": "agent_memory.adapters.offline.register",
}


def _no_key() -> str | None:
    return None


@dataclasses.dataclass(frozen=True)
class ProviderOptions:
    """What a provider may need from the configuration; each takes only its own."""

    name: str  # the model's full name as configured (``offline/deterministic``)
    timeout: float  # seconds per model call
    # Called only by the provider that needs a key (it may read a secret: no other pays for it).
    openai_api_key: Callable[[], str | None] = _no_key
    openai_base_url: str | None = None
    openai_http_client: str = "library"  # ``openai_client.OPENAI_HTTP_CLIENTS``
    aws_region: str | None = None


def build_language_model(provider: str, model: str, options: ProviderOptions) -> LanguageModel:
    """The ``provider``'s model ``model``, made by its module's ``build``."""
    module = PROVIDERS.get(provider)
    if module is None:
        raise ConfigurationError(f"unknown language model provider {provider!r}: one of {', '.join(sorted(PROVIDERS))}")
    return importlib.import_module(module).build(model, options)

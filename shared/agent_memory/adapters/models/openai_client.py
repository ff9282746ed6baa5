"""The OpenAI client both OpenAI-compatible adapters use (chat here, embeddings in
``adapters.embedders``): the ``openai`` library or the thin urllib3 one (``adapters.openai_http``),
SDK retries off (ours apply), and which of its errors are transient and what they mean
(``ModelTimeout``, ``ModelError``). ``openai`` is imported only when a client is made."""

from __future__ import annotations

import os
from typing import Any

from agent_memory.kernel.errors import ConfigurationError
from agent_memory.ports import ModelError, ModelTimeout

OPENAI_HTTP_CLIENTS = ("library", "http")


def openai_client(api_key: str | None, base_url: str | None, timeout: float, http_client: str = "library") -> Any:
    if http_client not in OPENAI_HTTP_CLIENTS:
        raise ConfigurationError(f"unknown OpenAI client {http_client!r}: one of {', '.join(OPENAI_HTTP_CLIENTS)}")
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        if not base_url:
            raise ConfigurationError("OpenAI model configured but no API key: set OPENAI_API_KEY")
        key = "unused"
    if http_client == "http":
        from agent_memory.adapters.openai_http import OpenAIHTTPClient

        return OpenAIHTTPClient(api_key=key, base_url=base_url, timeout=timeout)
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - openai is a core dependency
        raise ConfigurationError("the OpenAI provider needs the 'openai' package") from exc
    # max_retries=0: retries are ours (call_with_retries), not doubled by the SDK.
    return openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=0)


def error_families() -> list[Any]:
    """The error modules of the OpenAI clients in use: the thin client's, and the library's
    only once something imported it (an error of it cannot exist before), so classifying an
    error never pays ``import openai``. Both name their classes alike."""
    import sys

    from agent_memory.adapters import openai_http

    library = sys.modules.get("openai")
    return [openai_http] if library is None else [openai_http, library]


def is_openai_error(exc: BaseException) -> bool:
    import sys

    from agent_memory.adapters.openai_http import APIError

    library = sys.modules.get("openai")
    return isinstance(exc, APIError) or (library is not None and isinstance(exc, library.OpenAIError))


def openai_transient(exc: BaseException) -> bool:
    for family in error_families():
        if isinstance(exc, family.APITimeoutError):
            return False
        if isinstance(exc, family.APIConnectionError):
            return True
        if isinstance(exc, family.APIStatusError):
            return exc.status_code == 429 or exc.status_code >= 500
    return False


def translate_openai(exc: Exception) -> ModelError:
    for family in error_families():
        if isinstance(exc, family.APITimeoutError):
            return ModelTimeout(f"model call timed out: {exc}")
        if isinstance(exc, family.APIStatusError):
            return ModelError(f"model call failed with HTTP {exc.status_code}: {exc.message}")
    return ModelError(f"model call failed: {exc}")

"""The ``openai`` provider: chat completions against OpenAI or any server speaking its API."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from agent_memory.adapters.models.openai_client import (
    is_openai_error,
    openai_client,
    openai_transient,
    translate_openai,
)
from agent_memory.adapters.models.retries import call_with_retries, model_call_timeout
from agent_memory.adapters.models.schemas import schema_name, strict_json_schema, validate_output
from agent_memory.ports import ChatMessage, Completion, LanguageModel, ModelOutputInvalid

if TYPE_CHECKING:
    from agent_memory.adapters.models.registry import ProviderOptions

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class OpenAIChatModel:
    """Chat completions against OpenAI or any server speaking its API (vLLM, Ollama, ...).

    ``base_url`` selects the server; without it the OpenAI API is used and an API key is
    required (``api_key`` or ``OPENAI_API_KEY``). With it a missing key is replaced by a
    placeholder, since local servers usually ignore it. ``max_tokens`` is sent as
    ``max_completion_tokens`` to OpenAI (its newer models reject ``max_tokens``) and as
    ``max_tokens`` to other servers (which do not all know the newer field).
    ``client`` injects a ready ``openai.OpenAI`` instance (tests, wrappers). ``http_client``
    picks the client: ``"library"``, the ``openai`` package (the local service), or ``"http"``,
    the thin one on urllib3 (``adapters.openai_http``: the Lambda functions, where ``import
    openai`` would cost every new container's first model call 0.4-0.6 s of CPU).
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        name_prefix: str = "openai",
        backoff: float = 0.5,
        client: Any = None,
        http_client: str = "library",
    ):
        self.model = model
        self.name = f"{name_prefix}/{model}"
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self._max_tokens_field = "max_tokens" if base_url else "max_completion_tokens"
        self._client = client if client is not None else openai_client(api_key, base_url, timeout, http_client)

    # -- LanguageModel -----------------------------------------------------

    def structured(self, *, system: str, user: str, schema: type[M]) -> M:
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": schema_name(schema), "schema": strict_json_schema(schema), "strict": True},
        }
        messages = [ChatMessage("system", system), ChatMessage("user", user)]
        resp = self._call(lambda: self._client.chat.completions.create(
            model=self.model, messages=_openai_messages(messages), response_format=response_format,
            timeout=model_call_timeout(self.timeout)))
        message = resp.choices[0].message if resp.choices else None
        content = getattr(message, "content", None)
        if not content:
            refusal = getattr(message, "refusal", None)
            raise ModelOutputInvalid(f"model returned no content for {schema.__name__}"
                                     + (f" (refusal: {refusal})" if refusal else ""))
        return validate_output(schema, content)

    def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> Completion:
        resp = self._call(lambda: self._client.chat.completions.create(
            model=self.model, messages=_openai_messages(messages), timeout=model_call_timeout(self.timeout),
            **self._limit(max_tokens)))
        text = (resp.choices[0].message.content or "") if resp.choices else ""
        usage = getattr(resp, "usage", None)
        return Completion(
            text=text,
            model=self.name,
            prompt_tokens=getattr(usage, "prompt_tokens", None) or 0,
            completion_tokens=getattr(usage, "completion_tokens", None) or 0,
        )

    def stream(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> Iterator[str]:
        # Only opening the stream is retried: once deltas have been yielded a retry
        # would repeat text the caller has already forwarded.
        stream = self._call(lambda: self._client.chat.completions.create(
            model=self.model, messages=_openai_messages(messages), stream=True,
            timeout=model_call_timeout(self.timeout), **self._limit(max_tokens)))
        return self._deltas(stream)

    # -- internals ---------------------------------------------------------

    def _deltas(self, stream: Any) -> Iterator[str]:
        reported = None
        try:
            for chunk in stream:
                reported = getattr(chunk, "usage", None) or reported  # servers that report it
                for choice in chunk.choices or ():
                    text = getattr(choice.delta, "content", None)
                    if text:
                        yield text
        except Exception as exc:
            if not is_openai_error(exc):
                raise
            raise translate_openai(exc) from exc
        finally:
            close = getattr(stream, "close", None)
            if close:
                close()
        if reported is not None:  # the stream's value: its tokens (ports.LanguageModel.stream)
            return (getattr(reported, "prompt_tokens", 0) or 0, getattr(reported, "completion_tokens", 0) or 0)
        return None

    def _limit(self, max_tokens: int | None) -> dict[str, int]:
        return {self._max_tokens_field: max_tokens} if max_tokens else {}

    def _call(self, fn: Callable[[], T]) -> T:
        try:
            return call_with_retries(fn, is_transient=openai_transient, max_retries=self.max_retries,
                                     backoff=self.backoff)
        except Exception as exc:
            if not is_openai_error(exc):
                raise
            raise translate_openai(exc) from exc


def _openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def build(model: str, options: ProviderOptions) -> LanguageModel:
    """The registry's entry (``registry.PROVIDERS``)."""
    return OpenAIChatModel(model, api_key=options.openai_api_key(), base_url=options.openai_base_url,
                           timeout=options.timeout, http_client=options.openai_http_client)

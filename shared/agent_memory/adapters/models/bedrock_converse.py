"""The ``bedrock`` provider: any Bedrock chat model through the model-agnostic Converse API."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from agent_memory.adapters.models.bedrock_client import (
    bedrock_call,
    bedrock_runtime_client,
    translate_bedrock,
)
from agent_memory.adapters.models.schemas import inline_refs, schema_name, validate_output
from agent_memory.ports import ChatMessage, Completion, LanguageModel, ModelError, ModelOutputInvalid

if TYPE_CHECKING:
    from agent_memory.adapters.models.registry import ProviderOptions

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class BedrockConverseModel:
    """Any Bedrock chat model through the model-agnostic Converse API.

    Structured output goes through tool use: one tool whose input schema is the pydantic
    schema, forced with ``toolChoice``, so the model's answer arrives as a parsed JSON
    object (``toolUse.input``) instead of free text to be scraped. Forcing a specific
    tool is supported by Anthropic, Mistral Large and Amazon Nova models; others reject
    ``toolChoice.tool`` with a ValidationException (surfaced as ``ModelError``).
    ``client`` injects a ready ``bedrock-runtime`` client (tests, wrappers).
    """

    def __init__(
        self,
        model_id: str,
        *,
        region: str | None = None,
        client: Any = None,
        timeout: float = 30.0,
        max_retries: int = 2,
        backoff: float = 0.5,
    ):
        self.model_id = model_id
        self.name = f"bedrock/{model_id}"
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self._client = client if client is not None else bedrock_runtime_client(region, timeout)

    # -- LanguageModel -----------------------------------------------------

    def structured(self, *, system: str, user: str, schema: type[M]) -> M:
        tool = schema_name(schema)
        tool_config = {
            "tools": [{"toolSpec": {
                "name": tool,
                "description": f"Record the result as a {schema.__name__} object.",
                "inputSchema": {"json": inline_refs(schema.model_json_schema())},
            }}],
            "toolChoice": {"tool": {"name": tool}},
        }
        resp = self._call(lambda: self._client.converse(
            **self._request([ChatMessage("system", system), ChatMessage("user", user)], None),
            toolConfig=tool_config))
        blocks = resp.get("output", {}).get("message", {}).get("content", [])
        for block in blocks:
            use = block.get("toolUse")
            if use and use.get("name") == tool:
                return validate_output(schema, use.get("input"))
        text = " ".join(b["text"] for b in blocks if "text" in b)[:200]
        raise ModelOutputInvalid(f"model did not call the {tool} tool" + (f"; it said: {text}" if text else ""))

    def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> Completion:
        resp = self._call(lambda: self._client.converse(**self._request(messages, max_tokens)))
        blocks = resp.get("output", {}).get("message", {}).get("content", [])
        usage = resp.get("usage", {})
        return Completion(
            text="".join(b["text"] for b in blocks if "text" in b),
            model=self.name,
            prompt_tokens=usage.get("inputTokens", 0),
            completion_tokens=usage.get("outputTokens", 0),
        )

    def stream(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> Iterator[str]:
        resp = self._call(lambda: self._client.converse_stream(**self._request(messages, max_tokens)))
        return self._deltas(resp["stream"])

    # -- internals ---------------------------------------------------------

    def _request(self, messages: Sequence[ChatMessage], max_tokens: int | None) -> dict[str, Any]:
        req: dict[str, Any] = {"modelId": self.model_id, "messages": _converse_messages(messages)}
        system = [{"text": m.content} for m in messages if m.role == "system" and m.content]
        if system:
            req["system"] = system
        if max_tokens:
            req["inferenceConfig"] = {"maxTokens": max_tokens}
        return req

    def _deltas(self, events: Any) -> Iterator[str]:
        from botocore.exceptions import BotoCoreError, ClientError

        reported = None
        try:
            for event in events:
                if "contentBlockDelta" in event:
                    text = event["contentBlockDelta"].get("delta", {}).get("text")
                    if text:
                        yield text
                    continue
                if "metadata" in event:  # the stream's last event: its token usage
                    reported = event["metadata"].get("usage") or reported
                for key, body in event.items():
                    if key.endswith("Exception"):
                        raise ModelError(f"model stream failed: {key}: {body.get('message', '')}")
        except (BotoCoreError, ClientError) as exc:
            raise translate_bedrock(exc) from exc
        if reported is not None:  # the stream's value: its tokens (ports.LanguageModel.stream)
            return (reported.get("inputTokens", 0) or 0, reported.get("outputTokens", 0) or 0)
        return None

    def _call(self, fn: Callable[[], T]) -> T:
        return bedrock_call(fn, max_retries=self.max_retries, backoff=self.backoff)


def _converse_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Chat messages in Converse form.

    Converse wants the conversation to start with a user turn and roles to alternate, and
    rejects blank text blocks. A transcript window cut by length can start with an
    assistant reply or hold two user turns in a row, so consecutive turns of one role are
    merged into one message and a leading assistant turn gets a placeholder user turn.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system" or not m.content.strip():
            continue
        if out and out[-1]["role"] == m.role:
            out[-1]["content"].append({"text": m.content})
        else:
            out.append({"role": m.role, "content": [{"text": m.content}]})
    if out and out[0]["role"] == "assistant":
        out.insert(0, {"role": "user", "content": [{"text": "(continuing an earlier conversation)"}]})
    return out


def build(model: str, options: ProviderOptions) -> LanguageModel:
    """The registry's entry (``registry.PROVIDERS``)."""
    return BedrockConverseModel(model, region=options.aws_region, timeout=options.timeout)

"""Language model adapters: OpenAI-compatible chat, Bedrock Converse, and an offline model.

All three implement ``agent_memory.ports.LanguageModel``. Provider SDKs (``openai``,
``boto3``/``botocore``) are imported inside constructors and methods, never at module
level, so that importing this module (as every Lambda and the local server does) costs
nothing when a provider is not used and works where an SDK is not installed.

Error policy, shared by the providers:

- transient failures (connection errors, HTTP 429, 5xx, Bedrock throttling) are retried
  at most ``max_retries`` times with exponential backoff and full jitter; the SDK's own
  retries are switched off so attempts are not multiplied;
- timeouts are *not* retried: a model that did not answer within ``timeout`` will most
  likely not answer in the next window either, and retrying would push the request past
  the API Gateway limit (29 s). They surface as ``ModelTimeout`` (HTTP 504);
- anything else surfaces as ``ModelError`` (HTTP 502);
- output that does not validate against the requested schema raises
  ``ModelOutputInvalid`` at once; the caller owns the one retry the design allows.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from tenacity import Retrying, retry_if_exception, stop_after_attempt, stop_any, wait_random_exponential

from agent_memory.kernel import deadline
from agent_memory.kernel.errors import ConfigurationError
from agent_memory.lexicon import ANSWER_WORD_HINTS, OVERLAP_STOP_WORDS
from agent_memory.ports import ChatMessage, Completion, ModelError, ModelOutputInvalid, ModelTimeout
from agent_memory.rules.questions import (
    about_conversation,
    asked_slots,
    asks_only,
    profile_subject,
    question_parts,
)

__all__ = [
    "BedrockConverseModel",
    "OfflineLanguageModel",
    "OpenAIChatModel",
    "call_with_retries",
    "default_offline_responder",
    "inline_refs",
    "strict_json_schema",
]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


# ---------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------


def call_with_retries(
    fn: Callable[[], T],
    *,
    is_transient: Callable[[BaseException], bool],
    max_retries: int,
    backoff: float = 0.5,
) -> T:
    """Call ``fn``, retrying transient failures ``max_retries`` times (so at most
    ``max_retries + 1`` attempts) with full-jitter exponential backoff.

    Jitter spreads the retries of many concurrent Lambdas hit by the same throttling
    burst. The last exception is re-raised unchanged so the caller can translate it.
    """
    backoff_wait = wait_random_exponential(multiplier=backoff, max=max(backoff * 16, backoff))

    def no_time_for_another(_: Any) -> bool:
        left = deadline.remaining()
        return left is not None and left - deadline.CALL_MARGIN_S < 2 * deadline.MIN_CALL_S

    def wait_within_deadline(state: Any) -> float:
        # A retry's back-off never sleeps past the request deadline.
        pause = backoff_wait(state)
        left = deadline.remaining()
        return pause if left is None else max(0.0, min(pause, left - deadline.CALL_MARGIN_S - deadline.MIN_CALL_S))

    retrying = Retrying(
        stop=stop_any(stop_after_attempt(max(0, max_retries) + 1), no_time_for_another),
        wait=wait_within_deadline,
        retry=retry_if_exception(is_transient),
        reraise=True,
    )
    return retrying(fn)


def model_call_timeout(configured: float) -> float:
    """A model or embeddings call's timeout: the configured one, cut to the request deadline
    (``ModelTimeout``, so HTTP 504, when no time is left to start it)."""
    return deadline.timeout_for(configured, on_expired=ModelTimeout, what="model call")


def inline_refs(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of a JSON schema with every local ``$ref`` replaced by its definition.

    Providers differ in how well they follow ``$defs`` (some tool-use implementations
    ignore them), and inlining removes the question. Sibling keys of a ``$ref`` (pydantic
    puts ``description`` there) override the referenced definition. A recursive model
    cannot be inlined: the recursive ``$ref`` is kept together with ``$defs``.
    """
    root = copy.deepcopy(dict(schema))
    defs = root.get("$defs", {})
    recursive = False

    def resolve(node: Any, stack: tuple[str, ...]) -> Any:
        nonlocal recursive
        if isinstance(node, list):
            return [resolve(item, stack) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref[len("#/$defs/"):]
            if name in stack or name not in defs:
                recursive = recursive or name in stack
                return {key: resolve(value, stack) for key, value in node.items()}
            merged = {**resolve(defs[name], (*stack, name)),
                      **{k: resolve(v, stack) for k, v in node.items() if k != "$ref"}}
            return merged
        return {key: resolve(value, stack) for key, value in node.items() if key != "$defs"}

    out = resolve(root, ())
    if recursive:
        out["$defs"] = {name: resolve(d, (name,)) for name, d in defs.items()}
    return out


def strict_json_schema(schema: type[BaseModel] | Mapping[str, Any]) -> dict[str, Any]:
    """Make a pydantic model's JSON schema acceptable to OpenAI structured outputs (strict mode).

    Strict mode requires every property to be listed in ``required`` and every object to
    set ``additionalProperties: false``; optional fields stay optional through their
    ``null`` variant, which pydantic already emits for ``X | None``. ``default`` is
    dropped (the model must emit every field, so it carries no meaning and some servers
    reject it), ``oneOf`` becomes ``anyOf`` (strict mode has no ``oneOf``) and refs are
    inlined. Free-form dict fields (``additionalProperties: {schema}``) are left alone:
    strict mode cannot express them, so such models should not be used with it.
    """
    raw = schema.model_json_schema() if isinstance(schema, type) else dict(schema)

    def fix(node: Any) -> Any:
        if isinstance(node, list):
            return [fix(item) for item in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("default", "discriminator"):
                continue
            if key in ("properties", "$defs") and isinstance(value, dict):  # maps of names, not keywords
                out[key] = {name: fix(sub) for name, sub in value.items()}
            else:
                out[key] = fix(value)
        node = out
        if "oneOf" in node:
            node["anyOf"] = node.pop("oneOf")
        if node.get("type") == "object" or "properties" in node:
            props = node.get("properties", {})
            node["required"] = list(props)
            node.setdefault("additionalProperties", False)
        return node

    return fix(inline_refs(raw))


def _schema_name(schema: type[BaseModel]) -> str:
    """A name valid for OpenAI json_schema and Bedrock tool names: ``[a-zA-Z0-9_-]{1,64}``."""
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64]
    return name or "result"


def _validate(schema: type[M], data: Any) -> M:
    """Validate provider output (a JSON string or a parsed object) into ``schema``."""
    try:
        if isinstance(data, str | bytes):
            return schema.model_validate_json(data)
        return schema.model_validate(data)
    except ValidationError as exc:
        raise ModelOutputInvalid(f"model output does not match {schema.__name__}: {exc}") from exc


def _approx_tokens(text: str) -> int:
    """Rough token count (4 characters per token) where a provider reports none."""
    return len(text) // 4


# ---------------------------------------------------------------------------
# OpenAI-compatible chat completions
# ---------------------------------------------------------------------------


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
        self._client = client if client is not None else _openai_client(api_key, base_url, timeout, http_client)

    # -- LanguageModel -----------------------------------------------------

    def structured(self, *, system: str, user: str, schema: type[M]) -> M:
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": _schema_name(schema), "schema": strict_json_schema(schema), "strict": True},
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
        return _validate(schema, content)

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
            if not _is_openai_error(exc):
                raise
            raise _translate_openai(exc) from exc
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
            return call_with_retries(fn, is_transient=_openai_transient, max_retries=self.max_retries,
                                     backoff=self.backoff)
        except Exception as exc:
            if not _is_openai_error(exc):
                raise
            raise _translate_openai(exc) from exc


OPENAI_HTTP_CLIENTS = ("library", "http")


def _openai_client(api_key: str | None, base_url: str | None, timeout: float, http_client: str = "library") -> Any:
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


def _openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def _error_families() -> list[Any]:
    """The error modules of the OpenAI clients in use: the thin client's, and the library's
    only once something imported it (an error of it cannot exist before), so classifying an
    error never pays ``import openai``. Both name their classes alike."""
    import sys

    from agent_memory.adapters import openai_http

    library = sys.modules.get("openai")
    return [openai_http] if library is None else [openai_http, library]


def _is_openai_error(exc: BaseException) -> bool:
    import sys

    from agent_memory.adapters.openai_http import APIError

    library = sys.modules.get("openai")
    return isinstance(exc, APIError) or (library is not None and isinstance(exc, library.OpenAIError))


def _openai_transient(exc: BaseException) -> bool:
    for family in _error_families():
        if isinstance(exc, family.APITimeoutError):
            return False
        if isinstance(exc, family.APIConnectionError):
            return True
        if isinstance(exc, family.APIStatusError):
            return exc.status_code == 429 or exc.status_code >= 500
    return False


def _translate_openai(exc: Exception) -> ModelError:
    for family in _error_families():
        if isinstance(exc, family.APITimeoutError):
            return ModelTimeout(f"model call timed out: {exc}")
        if isinstance(exc, family.APIStatusError):
            return ModelError(f"model call failed with HTTP {exc.status_code}: {exc.message}")
    return ModelError(f"model call failed: {exc}")


# ---------------------------------------------------------------------------
# Bedrock Converse
# ---------------------------------------------------------------------------

_BEDROCK_TRANSIENT = {
    "ThrottlingException",
    "ServiceUnavailableException",
    "InternalServerException",
    "ModelNotReadyException",
    "TooManyRequestsException",
}


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
        tool = _schema_name(schema)
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
                return _validate(schema, use.get("input"))
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
            raise _translate_bedrock(exc) from exc
        if reported is not None:  # the stream's value: its tokens (ports.LanguageModel.stream)
            return (reported.get("inputTokens", 0) or 0, reported.get("outputTokens", 0) or 0)
        return None

    def _call(self, fn: Callable[[], T]) -> T:
        return _bedrock_call(fn, max_retries=self.max_retries, backoff=self.backoff)


def bedrock_runtime_client(region: str | None, timeout: float, max_pool_connections: int = 10) -> Any:
    """A ``bedrock-runtime`` client whose own retries are off (ours apply) and whose
    read timeout is ``timeout`` (botocore's default of 60 s exceeds what an API request can
    wait)."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:  # pragma: no cover - boto3 is a core dependency
        raise ConfigurationError("the Bedrock provider needs the 'boto3' package") from exc
    config = Config(
        read_timeout=timeout,
        connect_timeout=min(timeout, 10),
        retries={"total_max_attempts": 1, "mode": "standard"},
        max_pool_connections=max_pool_connections,
    )
    return boto3.client("bedrock-runtime", region_name=region, config=config)


def _bedrock_call(fn: Callable[[], T], *, max_retries: int, backoff: float) -> T:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return call_with_retries(fn, is_transient=_bedrock_transient, max_retries=max_retries, backoff=backoff)
    except (BotoCoreError, ClientError) as exc:
        raise _translate_bedrock(exc) from exc


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


def _bedrock_transient(exc: BaseException) -> bool:
    from botocore.exceptions import (
        ClientError,
        ConnectionClosedError,
        ConnectTimeoutError,
        EndpointConnectionError,
        ReadTimeoutError,
    )

    if isinstance(exc, ReadTimeoutError | ConnectTimeoutError):
        return False
    if isinstance(exc, EndpointConnectionError | ConnectionClosedError):
        return True
    if isinstance(exc, ClientError):
        return exc.response.get("Error", {}).get("Code") in _BEDROCK_TRANSIENT
    return False


def _translate_bedrock(exc: Exception) -> ModelError:
    from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError

    if isinstance(exc, ReadTimeoutError | ConnectTimeoutError):
        return ModelTimeout(f"model call timed out: {exc}")
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = error.get("Code", "")
        if code == "ModelTimeoutException":
            return ModelTimeout(f"model call timed out: {error.get('Message', '')}")
        return ModelError(f"model call failed: {code}: {error.get('Message', '')}")
    return ModelError(f"model call failed: {exc}")


# ---------------------------------------------------------------------------
# Offline model
# ---------------------------------------------------------------------------

StructuredHandler = Callable[[str, str], Any]
Responder = Callable[[Sequence[ChatMessage]], str]

_MARKER_LINE = re.compile(r"^\s*(?:[-*]\s*)?\[(S\d+)\]\s*(.*)")  # "[S1] ...", "- [S1] ..."
_MARKER = re.compile(r"\[S\d+\]")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = OVERLAP_STOP_WORDS
NO_MEMORY_REPLY = "I don't have anything in memory about that."


def _content_words(text: str) -> set[str]:
    """Lower-cased words minus stop words, with a plural 's' folded so 'dogs' meets 'dog'."""
    words = set()
    for w in _WORD.findall(text.lower()):
        if w in _STOP:
            continue
        w = w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        # "returned"/"returning" meet "return" (a light stem: the word must keep 4 letters)
        w = w[:-2] if len(w) > 5 and w.endswith("ed") else w[:-3] if len(w) > 6 and w.endswith("ing") else w
        words.add(w)
    return words


def _question_words(question: str) -> set[str]:
    """The question's content words plus the words its facts are stored under: those of the
    keys and labels it asks for as a whole phrase ("where do I work" -> employer), else the
    per-word hints ("where" -> location)."""
    words = _content_words(question)
    asked = asked_slots(question).slots
    if asked:
        return words | _content_words(" ".join(slot.replace("_", " ") for slot in asked))
    for w in _WORD.findall(question.lower()):
        words |= ANSWER_WORD_HINTS.get(w, frozenset())
    return words


_DESCRIPTOR = re.compile(r"^\([^()]*\)\s*")


def _memory_lines(messages: Sequence[ChatMessage]) -> list[tuple[str, str, str]]:
    """``(marker, descriptor, snippet)`` of each retrieved-memory line of the prompt, in rank
    order (markers inside instructions such as "cite like [S1]" do not count: a line must
    start with one)."""
    out = []
    for m in messages:
        if m.role == "assistant":
            continue
        for line in m.content.splitlines():
            found = _MARKER_LINE.match(line)
            if not found:
                continue
            marker, snippet = found.group(1), _MARKER.sub("", found.group(2)).strip()
            descriptor = _DESCRIPTOR.match(snippet)
            out.append((marker, descriptor.group(0).strip() if descriptor else "", _DESCRIPTOR.sub("", snippet)))
    return out


def _best_line(question: str, lines: Sequence[tuple[str, str, str]]) -> tuple[int, str, str] | None:
    """The line sharing the most content words with ``question`` (ties: the earlier, which
    retrieval ranked higher); never an assistant turn (the model's own earlier output), an
    earlier turn that only asked (a question is not its answer) nor the question itself."""
    asked = _question_words(question)
    best: tuple[int, str, str] | None = None
    for marker, descriptor, snippet in lines:
        if descriptor.startswith("(turn, assistant"):
            continue  # its own earlier reply is not memory of what was said
        if descriptor.startswith("(turn") and asks_only(snippet):
            continue  # "Where do I live?" asked before does not answer "Remind me where I live?"
        if not snippet or snippet.strip().lower() == question.strip().lower():
            continue
        score = len(asked & _content_words(snippet))
        if score and (best is None or score > best[0]):
            best = (score, marker, snippet)
    return best


def _quote(snippet: str, limit: int = 200) -> str:
    return snippet[:limit].rsplit(" ", 1)[0] + "..." if len(snippet) > limit else snippet


def _profile_reply(lines: Sequence[tuple[str, str, str]]) -> str | None:
    """A profile question's answer: the facts retrieval put first (the profiled entity's
    current attributes and relations, by section), each cited; ``None`` when none leads."""
    facts = []
    for marker, descriptor, snippet in lines:
        if not descriptor.startswith(("(attribute", "(relation")):
            break  # the profile leads the block; what follows is not about it as a whole
        facts.append((marker, snippet))
    if not facts:
        return None
    facts = facts[:PROFILE_FACTS]
    # "Dana name: Dana", "Dana employer: Initech": the subject they share is said once.
    heads = [snippet.split(":", 1)[0].split() for _, snippet in facts]
    shared = 0
    while all(len(h) > shared + 1 for h in heads) and len({tuple(h[:shared + 1]) for h in heads}) == 1:
        shared += 1
    subject = " ".join(heads[0][:shared])
    parts = [f"{' '.join(snippet.split()[shared:]) if shared else snippet} [{marker}]" for marker, snippet in facts]
    about = f" about {subject}" if subject and subject.lower() != "user" else ""
    return f"From memory{about}: " + "; ".join(parts) + "."


PROFILE_FACTS = 12
TRANSCRIPT_HEADING = "# Conversation so far"  # context_format's heading of the chat window
_TRANSCRIPT_END = re.compile(r"^(?:# |MEMORY [0-9a-f]+>>>)")
_TRANSCRIPT_LINE = re.compile(r"^(?P<role>user|assistant): (?P<text>.*)$")


def _transcript(messages: Sequence[ChatMessage]) -> list[tuple[str, str]]:
    """``(role, text)`` of the transcript window in the prompt (``# Conversation so far``)."""
    out: list[tuple[str, str]] = []
    for m in messages:
        if m.role != "system":
            continue
        inside = False
        for line in m.content.splitlines():
            if line.strip() == TRANSCRIPT_HEADING:
                inside = True
                continue
            if inside and _TRANSCRIPT_END.match(line):
                inside = False
            found = _TRANSCRIPT_LINE.match(line) if inside else None
            if found:
                out.append((found.group("role"), found.group("text").strip()))
    return out


def _conversation_reply(which: str, transcript: Sequence[tuple[str, str]]) -> str:
    """What the user said in this conversation, from the window: its start, the last thing,
    or everything so far (at most five lines); a plain refusal when the window is empty."""
    said = [text for role, text in transcript if role == "user" and text]
    if not said:
        return NO_MEMORY_REPLY
    if which == "first":
        return f'At the start of this conversation you said: "{_quote(said[0])}"'
    if which == "last":
        return f'You last said: "{_quote(said[-1])}"'
    return "So far in this conversation you said: " + "; ".join(f'"{_quote(t, 120)}"' for t in said[-5:])


def _parts_reply(parts: Sequence[str], lines: Sequence[tuple[str, str, str]]) -> str:
    """Each part of a multi-part question answered by its own best line, cited; a part
    memory has nothing for says so. A line answers one part only."""
    answers, used = [], set()
    for n, part in enumerate(parts, start=1):
        best = _best_line(part, [line for line in lines if line[0] not in used])
        if best is None:
            answers.append(f"({n}) I don't have anything in memory about that.")
            continue
        used.add(best[1])
        answers.append(f"({n}) {_quote(best[2])} [{best[1]}]")
    if not used:
        return NO_MEMORY_REPLY
    return "From memory: " + " ".join(answers)


def default_offline_responder(messages: Sequence[ChatMessage]) -> str:
    """Answer from the context in the prompt, citing it.

    Looks at lines of the system and user messages that start with an ``[Sn]`` marker
    (the retrieved context; a leading ``-``/``*`` bullet is allowed, and markers inside
    instructions such as "cite like [S1]" do not count), picks the one sharing the most content words with the last user
    message (question words also match the words facts are stored under: "where" meets
    "location") and quotes it with its marker. It never cites a marker that is not in the
    prompt, and says it knows nothing when no line shares a word with the question (quoting
    an unrelated line would be a confident wrong answer). Ties go to the earlier line,
    which retrieval ranked higher. A line describing an assistant turn (``(turn, assistant,
    ...)``) is never quoted: an earlier reply is the model's own output, not memory.

    A question about someone as a whole ("What do you know about me?", "Who am I?",
    ``rules.questions.profile_subject``) is answered with the facts retrieval put first
    (the profile), each cited. A question about the conversation itself ("What did I tell
    you at the start of this conversation?", ``rules.questions.about_conversation``) is
    answered from the transcript window. A question in several parts
    (``rules.questions.question_parts``) gets one cited line per part.
    """
    question = next((m.content for m in reversed(messages) if m.role == "user"), "")
    question = question.removeprefix("# Question").strip()
    which = about_conversation(question)
    if which is not None:
        return _conversation_reply(which, _transcript(messages))
    lines = _memory_lines(messages)
    parts = question_parts(question)
    if len(parts) > 1:
        return _parts_reply(parts, lines)
    if profile_subject(question):
        profile = _profile_reply(lines)
        if profile is not None:
            return profile
    best = _best_line(question, lines)
    if best is None:
        return NO_MEMORY_REPLY
    _, marker, snippet = best
    return f"From memory: {_quote(snippet)} [{marker}]"


class OfflineLanguageModel:
    """A deterministic model with no network, for tests, CI and keyless local runs.

    It cannot think, so it dispatches. ``structured`` calls the handler registered for
    the requested schema class (or its nearest registered base class); ``complete`` and
    ``stream`` call the responder (by default ``default_offline_responder``). Token
    counts are approximate: 4 characters per token. ``max_tokens`` is ignored: offline
    answers are one short sentence.
    """

    def __init__(
        self,
        name: str = "offline/deterministic",
        *,
        handlers: Mapping[type[BaseModel], StructuredHandler] | None = None,
        responder: Responder | None = None,
    ):
        self.name = name
        self._handlers: dict[type[BaseModel], StructuredHandler] = dict(handlers or {})
        self._responder: Responder = responder or default_offline_responder

    def register_structured(self, schema_cls: type[BaseModel], fn: StructuredHandler) -> None:
        """Route ``structured(schema=schema_cls)`` to ``fn(system, user) -> instance | dict``."""
        self._handlers[schema_cls] = fn

    def register_responder(self, fn: Responder) -> None:
        """Route ``complete``/``stream`` to ``fn(messages) -> str``."""
        self._responder = fn

    def structured(self, *, system: str, user: str, schema: type[M]) -> M:
        handler = next((self._handlers[c] for c in schema.__mro__ if c in self._handlers), None)
        if handler is None:
            raise ModelError(f"offline model has no handler for {schema.__name__}")
        result = handler(system, user)
        if isinstance(result, schema):
            return result
        if isinstance(result, BaseModel):
            result = result.model_dump()
        return _validate(schema, result)

    def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> Completion:
        text = self._responder(messages)
        return Completion(
            text=text,
            model=self.name,
            prompt_tokens=sum(_approx_tokens(m.content) for m in messages),
            completion_tokens=_approx_tokens(text),
        )

    def stream(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> Iterator[str]:
        """Yield the completion in about four chunks split at word boundaries, so
        consumers exercise their incremental paths; the chunks concatenate to ``complete``."""
        completion = self.complete(messages, max_tokens=max_tokens)
        words = re.findall(r"\S+\s*|\s+", completion.text)
        size = max(1, -(-len(words) // 4))
        for i in range(0, len(words), size):
            yield "".join(words[i:i + size])
        return (completion.prompt_tokens, completion.completion_tokens)  # as complete reports them


"""Language model adapters: OpenAI through both its clients (the ``openai`` library and the thin
one on urllib3 the functions use) against a local endpoint, Bedrock Converse through botocore
stubs, the offline model, and the schema helpers."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, Literal

import pytest
from botocore.exceptions import ReadTimeoutError
from botocore.stub import Stubber
from pydantic import BaseModel, Field

from agent_memory.adapters.models.bedrock_converse import BedrockConverseModel
from agent_memory.adapters.models.offline import (
    NO_MEMORY_REPLY,
    OfflineLanguageModel,
    default_offline_responder,
)
from agent_memory.adapters.models.openai_chat import OpenAIChatModel
from agent_memory.adapters.models.schemas import inline_refs, strict_json_schema
from agent_memory.kernel.errors import ConfigurationError
from agent_memory.ports import ChatMessage, LanguageModel, ModelError, ModelOutputInvalid, ModelTimeout

CHAT_PATH = "/v1/chat/completions"

# ---------------------------------------------------------------------------
# Schemas used across tests
# ---------------------------------------------------------------------------


class Address(BaseModel):
    city: str
    country: str | None = None


class Person(BaseModel):
    name: str
    age: int | None = None
    home: Address = Field(description="where they live")
    tags: list[str] = []
    kind: Literal["human", "agent"] = "human"


class Node(BaseModel):
    label: str
    children: list[Node] = []


PERSON = {"name": "Alice", "age": 31, "home": {"city": "Berlin", "country": None}, "tags": ["x"], "kind": "human"}


def _objects(schema: Any) -> list[dict[str, Any]]:
    """Every object schema inside a JSON schema."""
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            found.append(schema)
        for value in schema.values():
            found.extend(_objects(value))
    elif isinstance(schema, list):
        for item in schema:
            found.extend(_objects(item))
    return found


# ---------------------------------------------------------------------------
# Schema helpers
# ---------------------------------------------------------------------------


def test_strict_json_schema_requires_everything_and_closes_objects():
    schema = strict_json_schema(Person)
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    assert '"default"' not in text
    objects = _objects(schema)
    assert len(objects) == 2  # Person and the inlined Address
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    home = schema["properties"]["home"]
    assert home["description"] == "where they live"  # sibling of the $ref survives inlining
    assert home["properties"]["city"] == {"title": "City", "type": "string"}
    # an optional field stays optional through its null variant
    assert {"type": "null"} in schema["properties"]["age"]["anyOf"]


def test_strict_json_schema_output_still_validates_with_pydantic():
    # The model must now send every field; pydantic accepts such a complete object.
    assert Person.model_validate(PERSON).home.city == "Berlin"


def test_strict_json_schema_keeps_fields_named_like_keywords():
    class Setting(BaseModel):
        default: str
        discriminator: int = 0

    schema = strict_json_schema(Setting)
    assert list(schema["properties"]) == ["default", "discriminator"] == schema["required"]
    assert "default" not in schema["properties"]["discriminator"]


def test_inline_refs_keeps_defs_for_recursive_models():
    schema = inline_refs(Node.model_json_schema())
    assert "$defs" in schema and "Node" in schema["$defs"]
    assert schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}


# ---------------------------------------------------------------------------
# OpenAI-compatible chat, real client against a local endpoint
# ---------------------------------------------------------------------------


def _openai(server, http_client, **kw) -> OpenAIChatModel:
    kw.setdefault("backoff", 0.01)
    return OpenAIChatModel("gpt-test", api_key="sk-test", base_url=server.url, http_client=http_client, **kw)


def _answer(server, content, *, delay=0.0, **usage):
    """A scripted 200 chat completion carrying ``content``."""
    return server.Reply(body=server.completion(content, **usage), delay=delay)


def _failure(server, status, message="failed", type_="server_error"):
    """A scripted error reply in the API's error format."""
    return server.Reply(status=status, body=server.error(message, type_))


def test_openai_structured_sends_strict_json_schema(openai_server, http_client):
    openai_server.enqueue(CHAT_PATH, _answer(openai_server, json.dumps(PERSON)))
    model = _openai(openai_server, http_client)
    assert isinstance(model, LanguageModel)
    assert model.name == "openai/gpt-test"

    person = model.structured(system="Extract the person.", user="Alice, 31, lives in Berlin.", schema=Person)

    assert person == Person.model_validate(PERSON)
    (body,) = openai_server.bodies(CHAT_PATH)
    assert body["model"] == "gpt-test"
    assert body["messages"] == [
        {"role": "system", "content": "Extract the person."},
        {"role": "user", "content": "Alice, 31, lives in Berlin."},
    ]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Person", "schema": strict_json_schema(Person), "strict": True},
    }


@pytest.mark.parametrize("content", ["not json {", json.dumps({"name": "Alice"}), None])
def test_openai_structured_invalid_output_is_not_retried(openai_server, content, http_client):
    openai_server.enqueue(CHAT_PATH, _answer(openai_server, content))
    with pytest.raises(ModelOutputInvalid):
        _openai(openai_server, http_client).structured(system="s", user="u", schema=Person)
    assert len(openai_server.bodies(CHAT_PATH)) == 1


def test_openai_complete_reports_usage(openai_server, http_client):
    openai_server.enqueue(CHAT_PATH, _answer(openai_server, "Hi!", prompt_tokens=42, completion_tokens=7))
    messages = [ChatMessage("system", "Be brief."), ChatMessage("user", "Hello")]

    completion = _openai(openai_server, http_client).complete(messages, max_tokens=50)

    assert (completion.text, completion.model) == ("Hi!", "openai/gpt-test")
    assert (completion.prompt_tokens, completion.completion_tokens) == (42, 7)
    (body,) = openai_server.bodies(CHAT_PATH)
    assert body["max_tokens"] == 50  # a custom base_url gets the widely supported field
    assert "response_format" not in body and not body.get("stream")


def test_openai_max_tokens_field_for_the_openai_api(openai_server):
    class FakeCompletions:
        def create(self, **kw):
            self.kw = kw
            from openai.types.chat import ChatCompletion

            return ChatCompletion.model_validate(openai_server.completion("ok"))

    class FakeClient:
        def __init__(self):
            self.chat = type("Chat", (), {"completions": FakeCompletions()})()

    client = FakeClient()
    OpenAIChatModel("gpt-test", client=client).complete([ChatMessage("user", "hi")], max_tokens=9)
    assert client.chat.completions.kw["max_completion_tokens"] == 9


def test_openai_stream_yields_deltas(openai_server, http_client):
    openai_server.chat_content = "Streaming works, one piece at a time."
    chunks = list(_openai(openai_server, http_client).stream([ChatMessage("user", "go")]))
    assert len(chunks) > 1
    assert "".join(chunks) == openai_server.chat_content
    (body,) = openai_server.bodies(CHAT_PATH)
    assert body["stream"] is True


@pytest.mark.parametrize("status", [500, 503, 429])
def test_openai_transient_error_then_success_is_retried(openai_server, status, http_client):
    openai_server.enqueue(CHAT_PATH, _failure(openai_server, status, "try again"))
    completion = _openai(openai_server, http_client).complete([ChatMessage("user", "hi")])
    assert completion.text == openai_server.chat_content
    assert len(openai_server.bodies(CHAT_PATH)) == 2


def test_openai_stream_that_stalls_raises_model_timeout(openai_server, http_client):
    openai_server.stream_stall = 1.5
    stream = _openai(openai_server, http_client, timeout=0.3).stream([ChatMessage("user", "go")])
    with pytest.raises(ModelTimeout):
        list(stream)


def test_openai_stream_open_is_retried(openai_server, http_client):
    openai_server.enqueue(CHAT_PATH, _failure(openai_server, 502, "bad gateway"))
    model = _openai(openai_server, http_client)
    assert "".join(model.stream([ChatMessage("user", "go")])) == openai_server.chat_content
    assert len(openai_server.bodies(CHAT_PATH)) == 2


def test_openai_persistent_server_error_gives_up_after_max_retries(openai_server, http_client):
    openai_server.enqueue(CHAT_PATH, *[_failure(openai_server, 500, "boom")] * 5)
    with pytest.raises(ModelError) as info:
        _openai(openai_server, http_client, max_retries=2).complete([ChatMessage("user", "hi")])
    assert not isinstance(info.value, ModelTimeout)
    assert "500" in str(info.value)
    assert len(openai_server.bodies(CHAT_PATH)) == 3


def test_openai_client_error_is_not_retried(openai_server, http_client):
    openai_server.enqueue(CHAT_PATH, _failure(openai_server, 400, "bad model", "invalid_request_error"))
    with pytest.raises(ModelError, match="400"):
        _openai(openai_server, http_client).complete([ChatMessage("user", "hi")])
    assert len(openai_server.bodies(CHAT_PATH)) == 1


def test_openai_timeout_raises_model_timeout_without_retry(openai_server, http_client):
    openai_server.enqueue(CHAT_PATH, _answer(openai_server, "late", delay=1.5))
    model = _openai(openai_server, http_client, timeout=0.3, max_retries=2)
    with pytest.raises(ModelTimeout):  # the answer would come, so only the client timeout raises
        model.complete([ChatMessage("user", "hi")])
    assert len(openai_server.bodies(CHAT_PATH)) == 1  # and a timeout is not retried


def test_openai_needs_a_key_only_for_the_openai_api(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAIChatModel("gpt-test")
    OpenAIChatModel("llama", base_url="http://127.0.0.1:9/v1", name_prefix="vllm")  # no key needed


# ---------------------------------------------------------------------------
# Bedrock Converse through botocore stubs
# ---------------------------------------------------------------------------

MODEL_ID = "anthropic.claude-3-haiku-20240307-v1:0"


def _converse_response(content: list[dict[str, Any]], stop: str = "end_turn", usage=(25, 9)) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": usage[0], "outputTokens": usage[1], "totalTokens": sum(usage)},
        "metrics": {"latencyMs": 321},
    }


def _bedrock(client, **kw) -> BedrockConverseModel:
    kw.setdefault("backoff", 0.01)
    return BedrockConverseModel(MODEL_ID, client=client, **kw)


def test_bedrock_structured_uses_a_forced_tool(bedrock_client):
    expected = {
        "modelId": MODEL_ID,
        "messages": [{"role": "user", "content": [{"text": "Alice, 31, lives in Berlin."}]}],
        "system": [{"text": "Extract the person."}],
        "toolConfig": {
            "tools": [{"toolSpec": {
                "name": "Person",
                "description": "Record the result as a Person object.",
                "inputSchema": {"json": inline_refs(Person.model_json_schema())},
            }}],
            "toolChoice": {"tool": {"name": "Person"}},
        },
    }
    response = _converse_response(
        [{"toolUse": {"toolUseId": "tooluse_1", "name": "Person", "input": PERSON}}], stop="tool_use")
    with Stubber(bedrock_client) as stub:
        stub.add_response("converse", response, expected)
        model = _bedrock(bedrock_client)
        person = model.structured(system="Extract the person.", user="Alice, 31, lives in Berlin.", schema=Person)
        stub.assert_no_pending_responses()
    assert person == Person.model_validate(PERSON)
    assert model.name == f"bedrock/{MODEL_ID}"
    assert isinstance(model, LanguageModel)


@pytest.mark.parametrize("content", [
    [{"text": "I would rather not."}],
    [{"toolUse": {"toolUseId": "t", "name": "Person", "input": {"name": "Alice"}}}],
])
def test_bedrock_structured_invalid_output(bedrock_client, content):
    with Stubber(bedrock_client) as stub:
        stub.add_response("converse", _converse_response(content))
        with pytest.raises(ModelOutputInvalid):
            _bedrock(bedrock_client).structured(system="s", user="u", schema=Person)


def test_bedrock_complete_maps_messages_and_usage(bedrock_client):
    messages = [
        ChatMessage("system", "Answer from memory."),
        ChatMessage("assistant", "Earlier reply."),
        ChatMessage("user", "First."),
        ChatMessage("user", "Second."),
    ]
    expected = {
        "modelId": MODEL_ID,
        "messages": [
            {"role": "user", "content": [{"text": "(continuing an earlier conversation)"}]},
            {"role": "assistant", "content": [{"text": "Earlier reply."}]},
            {"role": "user", "content": [{"text": "First."}, {"text": "Second."}]},
        ],
        "system": [{"text": "Answer from memory."}],
        "inferenceConfig": {"maxTokens": 64},
    }
    with Stubber(bedrock_client) as stub:
        stub.add_response("converse", _converse_response([{"text": "Berlin."}], usage=(120, 3)), expected)
        completion = _bedrock(bedrock_client).complete(messages, max_tokens=64)
    assert (completion.text, completion.model) == ("Berlin.", f"bedrock/{MODEL_ID}")
    assert (completion.prompt_tokens, completion.completion_tokens) == (120, 3)


def test_bedrock_throttling_then_success_is_retried(bedrock_client):
    with Stubber(bedrock_client) as stub:
        stub.add_client_error("converse", "ThrottlingException", "Too many requests", http_status_code=429)
        stub.add_client_error("converse", "ServiceUnavailableException", "Busy", http_status_code=503)
        stub.add_response("converse", _converse_response([{"text": "ok"}]))
        assert _bedrock(bedrock_client, max_retries=2).complete([ChatMessage("user", "hi")]).text == "ok"
        stub.assert_no_pending_responses()


def test_bedrock_persistent_throttling_gives_up(bedrock_client):
    with Stubber(bedrock_client) as stub:
        for _ in range(3):
            stub.add_client_error("converse", "ThrottlingException", "Too many requests", http_status_code=429)
        with pytest.raises(ModelError, match="ThrottlingException"):
            _bedrock(bedrock_client, max_retries=2).complete([ChatMessage("user", "hi")])
        stub.assert_no_pending_responses()


def test_bedrock_client_error_is_not_retried(bedrock_client):
    with Stubber(bedrock_client) as stub:
        stub.add_client_error("converse", "AccessDeniedException", "no access", http_status_code=403)
        with pytest.raises(ModelError, match="AccessDeniedException") as info:
            _bedrock(bedrock_client).complete([ChatMessage("user", "hi")])
        assert not isinstance(info.value, ModelTimeout)


def test_bedrock_model_timeout_exception_is_a_timeout(bedrock_client):
    with Stubber(bedrock_client) as stub:
        stub.add_client_error("converse", "ModelTimeoutException", "took too long", http_status_code=408)
        with pytest.raises(ModelTimeout):
            _bedrock(bedrock_client).complete([ChatMessage("user", "hi")])


class _FakeBedrock:
    """Duck-typed client for what Stubber cannot express: transport timeouts and event streams."""

    def __init__(self, events=None, error=None):
        self.events, self.error, self.calls = events or [], error, 0

    def converse(self, **kw):
        self.calls += 1
        raise self.error

    def converse_stream(self, **kw):
        self.calls += 1
        self.kw = kw
        return {"stream": iter(self.events)}


def test_bedrock_read_timeout_is_a_timeout_and_not_retried():
    client = _FakeBedrock(error=ReadTimeoutError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com"))
    with pytest.raises(ModelTimeout):
        _bedrock(client, max_retries=2).complete([ChatMessage("user", "hi")])
    assert client.calls == 1


def test_bedrock_stream_yields_text_deltas():
    events = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "Ber"}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": "lin."}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
        {"metadata": {"usage": {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}, "metrics": {"latencyMs": 1}}},
    ]
    client = _FakeBedrock(events=events)
    chunks = list(_bedrock(client).stream([ChatMessage("system", "sys"), ChatMessage("user", "Where?")]))
    assert chunks == ["Ber", "lin."]
    assert client.kw["system"] == [{"text": "sys"}]


def test_bedrock_stream_error_event_raises_model_error():
    events = [{"contentBlockDelta": {"delta": {"text": "Ber"}, "contentBlockIndex": 0}},
              {"throttlingException": {"message": "slow down"}}]
    stream = _bedrock(_FakeBedrock(events=events)).stream([ChatMessage("user", "Where?")])
    assert next(stream) == "Ber"
    with pytest.raises(ModelError, match="throttlingException"):
        next(stream)


# ---------------------------------------------------------------------------
# Offline model
# ---------------------------------------------------------------------------


class Extraction(BaseModel):
    facts: list[str]


class DetailedExtraction(Extraction):
    source: str = "offline"


def test_offline_structured_dispatches_to_the_registered_handler():
    model = OfflineLanguageModel()
    assert isinstance(model, LanguageModel)
    model.register_structured(Extraction, lambda system, user: Extraction(facts=[user.upper()]))
    assert model.structured(system="s", user="alice", schema=Extraction) == Extraction(facts=["ALICE"])
    # a handler for a base class serves subclasses; a dict result is validated
    model.register_structured(Extraction, lambda system, user: {"facts": [system]})
    assert model.structured(system="s", user="u", schema=DetailedExtraction) == DetailedExtraction(facts=["s"])


def test_offline_structured_without_handler_and_with_bad_output():
    model = OfflineLanguageModel(handlers={Extraction: lambda s, u: {"facts": "not a list"}})
    with pytest.raises(ModelError, match="no handler for Person"):
        model.structured(system="s", user="u", schema=Person)
    with pytest.raises(ModelOutputInvalid):
        model.structured(system="s", user="u", schema=Extraction)


def _prompt(question: str) -> list[ChatMessage]:
    context = "\n".join([
        "Relevant memory:",
        "[S1] (turn) Bob likes pizza and hiking.",
        "[S2] (fact) Alice lives in Berlin since 2021.",
        "[S3] (turn) The weather was nice.",
    ])
    return [ChatMessage("system", f"Answer about Alice and Bob; cite like [S1].\n{context}"),
            ChatMessage("assistant", "[S9] an older reply that quotes Alice lives in Berlin"),
            ChatMessage("user", question)]


def test_offline_default_responder_quotes_and_cites_the_best_line():
    completion = OfflineLanguageModel().complete(_prompt("Where does Alice live?"))
    assert completion.text == "From memory: Alice lives in Berlin since 2021. [S2]"
    assert completion.model == "offline/deterministic"
    assert completion.completion_tokens == len(completion.text) // 4 > 0
    assert completion.prompt_tokens == sum(len(m.content) // 4 for m in _prompt("Where does Alice live?"))


def test_offline_default_responder_never_quotes_an_assistant_reply_as_memory():
    """Its own earlier reply matches the question best word for word; the statement answers."""
    context = "\n".join([
        "[S1] (turn, assistant, 2026-05-21) From memory: I moved to Berlin last month. (S3)",
        "[S2] (turn, user, 2026-05-20) I moved to Berlin last month.",
    ])
    messages = [ChatMessage("system", context), ChatMessage("user", "Where did I move to last month?")]
    assert default_offline_responder(messages) == "From memory: I moved to Berlin last month. [S2]"
    only_echo = [ChatMessage("system", context.splitlines()[0]), ChatMessage("user", "Where did I move?")]
    assert default_offline_responder(only_echo) == NO_MEMORY_REPLY


def test_offline_default_responder_matches_the_key_the_question_asks_for():
    """"Where do I work?" asks for the employer: the location line shares the word "where"'s
    old hint (location), not what is asked."""
    context = "\n".join(["[S1] (attribute, 2026-05-01) User location: Madrid",
                         "[S2] (attribute, 2026-04-01) User employer: Globex"])
    messages = [ChatMessage("system", context), ChatMessage("user", "Where do I work?")]
    assert default_offline_responder(messages) == "From memory: User employer: Globex [S2]"


def test_offline_default_responder_answers_a_profile_question_with_the_leading_facts():
    context = "\n".join(["[S1] (attribute, 2026-05-01) Dana name: Dana",
                         "[S2] (attribute, 2026-05-01) Dana employer: Initech",
                         "[S3] (relation, 2026-05-01) Dana manager: Priya",
                         "[S4] (turn, user, 2026-05-01) I like the sea.",
                         "[S5] (attribute, 2026-05-01) Priya location: Pune"])
    for question in ("What do you know about me?", "Who am I?"):
        messages = [ChatMessage("system", context), ChatMessage("user", question)]
        assert default_offline_responder(messages) == \
            "From memory about Dana: name: Dana [S1]; employer: Initech [S2]; manager: Priya [S3]."
    # nothing leads (no fact first): the usual best line, or a plain refusal
    turns_only = [ChatMessage("system", "[S1] (turn, user, 2026-05-01) I like the sea."),
                  ChatMessage("user", "Who am I?")]
    assert default_offline_responder(turns_only) == NO_MEMORY_REPLY


def test_offline_default_responder_never_quotes_an_earlier_question():
    context = "\n".join(["[S1] (turn, user, 2026-05-01) Where do I live?",
                         "[S2] (turn, user, 2026-05-02) I live in a flat in Porto."])
    messages = [ChatMessage("system", context), ChatMessage("user", "Remind me where I live?")]
    assert default_offline_responder(messages) == "From memory: I live in a flat in Porto. [S2]"
    only_questions = [ChatMessage("system", context.splitlines()[0]), ChatMessage("user", "Remind me where I live?")]
    assert default_offline_responder(only_questions) == NO_MEMORY_REPLY


def test_offline_default_responder_answers_each_part_of_a_two_part_question():
    context = "\n".join(["[S1] (chunk, \"Policy\" 10%) Items may be returned within 30 days.",
                         "[S2] (chunk, \"Policy\" 60%) Orders ship from our warehouse in Leeds."])
    ask = "How long do I have to return items, and where do orders ship from?"
    messages = [ChatMessage("system", context), ChatMessage("user", ask)]
    assert default_offline_responder(messages) == (
        "From memory: (1) Items may be returned within 30 days. [S1] "
        "(2) Orders ship from our warehouse in Leeds. [S2]")
    none = [ChatMessage("system", context), ChatMessage("user", "Who is my dentist? What is my blood type?")]
    assert default_offline_responder(none) == NO_MEMORY_REPLY


def test_offline_default_responder_answers_a_conversation_question_from_the_window():
    block = "\n".join(["<<<MEMORY 1", "# Retrieved memory", "(nothing relevant found)", "# Conversation so far",
                       "user: I am planning a trip to Kyoto.", "assistant: Noted.",
                       "user: Which temples should I see?", "assistant: I don't know.", "MEMORY 1>>>"])
    def ask(question):
        return default_offline_responder([ChatMessage("system", block), ChatMessage("user", f"# Question\n{question}")])

    assert ask("What did I tell you at the start of this conversation?") == \
        'At the start of this conversation you said: "I am planning a trip to Kyoto."'
    assert ask("What did I just ask?") == 'You last said: "Which temples should I see?"'
    assert ask("What have we talked about so far?").startswith("So far in this conversation you said:")
    empty = [ChatMessage("system", "(nothing relevant found)"), ChatMessage("user", "What did I just say?")]
    assert default_offline_responder(empty) == NO_MEMORY_REPLY


@pytest.mark.parametrize("messages", [
    _prompt("What is my favourite colour?"),  # context present, nothing relevant
    [ChatMessage("user", "Where does Alice live?")],  # no context at all
    [ChatMessage("assistant", "[S1] Alice lives in Berlin"), ChatMessage("user", "Where does Alice live?")],
    [ChatMessage("system", "Use [S1] style markers when you talk about Alice."),
     ChatMessage("user", "Where does Alice live?")],  # a marker inside instructions is no source
])
def test_offline_default_responder_never_invents_a_citation(messages):
    assert default_offline_responder(messages) == NO_MEMORY_REPLY


def test_offline_stream_concatenates_to_complete():
    model = OfflineLanguageModel()
    for question in ("Where does Alice live?", "Which food does Bob like?", "Unknown?"):
        chunks = list(model.stream(_prompt(question)))
        assert len(chunks) > 1
        assert "".join(chunks) == model.complete(_prompt(question)).text


def test_offline_custom_responder():
    model = OfflineLanguageModel(name="offline/test")
    model.register_responder(lambda messages: f"echo: {messages[-1].content}")
    assert model.complete([ChatMessage("user", "hi")]).text == "echo: hi"
    assert model.name == "offline/test"


# ---------------------------------------------------------------------------
# Import hygiene
# ---------------------------------------------------------------------------


def test_importing_adapters_does_not_import_provider_sdks():
    code = (
        "import sys\n"
        "import agent_memory.adapters.embedders, agent_memory.adapters.models.registry\n"
        "import agent_memory.adapters.models.openai_chat, agent_memory.adapters.models.bedrock_converse\n"
        "import agent_memory.adapters.models.offline\n"
        "print(sorted(m for m in ('openai', 'boto3', 'botocore', 'sentence_transformers', 'torch')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

"""The extraction prompt and its round trip through the offline model handler (which reads
the prompt's JSON payload, rules/turn_data.py)."""

from datetime import UTC, datetime

import pytest

from agent_memory.adapters.models.offline import OfflineLanguageModel
from agent_memory.adapters.offline import extraction_handler, offline_extract, register_offline_extractor
from agent_memory.models.extraction import ExtractionOutput
from agent_memory.rules.turn_data import read_turn
from agent_memory.services.prompts.extraction import build_extraction_prompt

pytestmark = pytest.mark.service

OBSERVED = datetime(2026, 5, 12, 16, 24, tzinfo=UTC)


def test_round_trip_recovers_text_speaker_entities_and_time():
    text = 'I moved to Berlin last month.\nMy manager is "Bob" ```not a fence``` and {json: true}'
    _, user = build_extraction_prompt(text, speaker_name="Alice", known_entities=["Bob", "Acme"],
                                      observed_at=OBSERVED)
    data = read_turn(user)
    assert data.text == text
    assert data.speaker_name == "Alice"
    assert data.known_entities == ["Bob", "Acme"]
    assert data.observed_at == "2026-05-12T16:24:00.000Z"


def test_backticks_cannot_close_the_fence():
    _, user = build_extraction_prompt("a ``` b", speaker_name=None, known_entities=[], observed_at=None)
    assert user.count("```") == 2


def test_unknown_speaker_round_trips_as_none():
    _, user = build_extraction_prompt("hello", speaker_name=None, known_entities=[], observed_at="2026-01-01T00:00:00Z")
    data = read_turn(user)
    assert data.speaker_name is None and data.observed_at == "2026-01-01T00:00:00Z"
    assert "not known yet" in user


def test_parse_rejects_a_message_without_data():
    with pytest.raises(ValueError):
        read_turn("just text")


def test_system_prompt_states_the_conventions():
    system, _ = build_extraction_prompt("x", speaker_name=None, known_entities=[], observed_at=None)
    for needle in ('"User"', "EXACTLY as listed", "negated=true", "valid_from", "identity", "knowledge", "context",
                   "location", "likes", "sister", "manager", "empty lists"):
        assert needle in system


def test_handler_extracts_what_offline_extract_would():
    text = "I work with carol. Alice lives in Paris."
    system, user = build_extraction_prompt(text, speaker_name="Alice", known_entities=["Carol"], observed_at=None)
    assert extraction_handler(system, user) == offline_extract(text, speaker_name="Alice", known_entities=["Carol"])


class _FakeModel:
    def __init__(self):
        self.handlers = {}

    def register_structured(self, schema_cls, fn):
        self.handlers[schema_cls] = fn

    def register_responder(self, fn):
        self.responder = fn


def test_register_offline_extractor_registers_for_extraction_output():
    model = _FakeModel()
    register_offline_extractor(model)
    system, user = build_extraction_prompt("I live in Oslo", speaker_name=None, known_entities=[], observed_at=None)
    out = model.handlers[ExtractionOutput](system, user)
    assert [(a.key, a.value) for a in out.attributes] == [("location", "Oslo")]


def test_with_the_offline_language_model():
    model = OfflineLanguageModel()
    register_offline_extractor(model)
    system, user = build_extraction_prompt("My name is Alice. Where do I live?", speaker_name=None,
                                           known_entities=[], observed_at=OBSERVED)
    out = model.structured(system=system, user=user, schema=ExtractionOutput)
    assert [(a.entity, a.key, a.value) for a in out.attributes] == [("User", "name", "Alice")]

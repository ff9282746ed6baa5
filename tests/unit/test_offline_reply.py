"""The offline model's reply to a statement: acknowledged from the offline extractor's own
parse of the message, whatever memory holds or the write stores."""

from __future__ import annotations

import pytest

from agent_memory.adapters.models.offline import NO_MEMORY_REPLY, OfflineLanguageModel
from agent_memory.adapters.offline import register_offline_extractor
from agent_memory.adapters.offline.reply import offline_chat_responder, statement_acknowledgement
from agent_memory.ports import ChatMessage
from agent_memory.services.prompts.chat import build_messages


@pytest.mark.parametrize(("message", "reply"), [
    ("I work at Globex.", "Noted: you work at Globex."),
    ("I work at Globex as a data engineer.", "Noted: you work at Globex as a data engineer."),
    ("I have a dog named Rex.", "Noted: you have a dog named Rex."),
    ("I moved to Berlin last month.", "Noted: you live in Berlin."),
    ("My sister Emma lives in Oslo.", "Noted: Emma is your sister and Emma lives in Oslo."),
    ("I don't like olives", "Noted: you dislike olives."),
    ("I think I live in Paris", "Noted: perhaps you live in Paris."),
    ("Always answer in short sentences.", "Noted: I'll always answer in short sentences."),
    ("Don't use emojis.", "Noted: I won't use emojis."),
    ("From now on call me Al.", "Noted: I'll call you Al."),
])
def test_a_statement_is_acknowledged_from_its_parse(message, reply):
    assert statement_acknowledgement(message) == reply


@pytest.mark.parametrize("message", ["Where do I live?", "I moved to Berlin. Where do I live now?", "hello there"])
def test_a_question_or_an_unparsed_message_is_not_acknowledged(message):
    assert statement_acknowledgement(message) is None


def test_the_offline_model_acknowledges_with_nothing_in_memory():
    """The reply comes from the message alone: no retrieved line, nothing extracted yet."""
    model = OfflineLanguageModel()
    register_offline_extractor(model)
    messages, _ = build_messages("I work at Globex as a data engineer.", hits=[], window=[])
    assert model.complete(messages).text == "Noted: you work at Globex as a data engineer."
    assert "".join(model.stream(messages)) == "Noted: you work at Globex as a data engineer."
    question, _ = build_messages("Where do I work?", hits=[], window=[])
    assert model.complete(question).text == NO_MEMORY_REPLY


def test_a_question_is_still_answered_from_memory():
    messages = [ChatMessage("system", "Memory:\n[S1] (attribute) User employer = Globex"),
                ChatMessage("user", "# Question\nWhere do I work?")]
    assert offline_chat_responder(messages) == "From memory: User employer = Globex [S1]"

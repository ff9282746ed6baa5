"""rules.questions: the keys and labels a question asks for, read from whole phrases and
registry nouns (never word by word), and whether a turn only asks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory.rules.questions import asked_slots, asks_only


@pytest.mark.parametrize("question, keys, labels", [
    ("Where do I work?", {"employer"}, set()),
    ("Who is my employer?", {"employer"}, set()),
    ("What company does Emma work for?", {"employer"}, set()),
    ("Where do I live?", {"location"}, set()),
    ("Which city does Emma live in?", {"location"}, set()),
    ("Where am I from?", {"hometown"}, set()),
    ("What do I do for a living?", {"job_title"}, set()),
    ("What is my sister's job?", {"job_title"}, {"sister"}),
    ("How old is Emma?", {"age"}, set()),
    ("When is my birthday?", {"birthday"}, set()),
    ("What is my email address?", {"email"}, set()),
    ("What are my hobbies?", {"hobbies"}, set()),
    ("How am I feeling?", {"mood"}, set()),
    ("What are my plans?", {"plans"}, set()),
    ("Who is my boss?", set(), {"manager"}),
    ("Who do I report to?", set(), {"manager"}),
    ("Who are my friends?", set(), {"friend"}),
    ("What is my favourite colour?", {"favourite_colour"}, set()),  # a key the registry lacks, by name
    # no key named: none asked, whatever single words would have hinted
    ("Who is Emma?", set(), set()),
    ("Where did I go last summer?", set(), set()),
    ("What did Priya repair?", set(), set()),
    ("Tell me about work.", set(), set()),
])
def test_asked_slots(question, keys, labels):
    asked = asked_slots(question)
    assert (set(asked.keys), set(asked.labels)) == (keys, labels)


@pytest.mark.parametrize("text, only", [
    ("Where do I live?", True),
    ("Hi! Where do I live?", True),
    ("Do you know where I work", True),
    ("I live in Berlin. Do you?", False),
    ("I moved to Berlin last month.", False),
    ("From memory: User location: Berlin [S1]", False),
    ("Do not call me after nine.", False),
    ("", False),
])
def test_asks_only(text, only):
    assert asks_only(text) is only


@pytest.mark.parametrize("question, who", [
    ("What do you know about me?", "me"),
    ("Who am I?", "me"),
    ("tell me everything you know about me", "me"),
    ("What is my profile?", "me"),
    ("Tell me about Priya", "Priya"),
    ("What do you remember about Mary Jones?", "Mary Jones"),
    ("Who is Priya?", "Priya"),
    # questions that name a key, a pronoun or nothing are not about someone as a whole
    ("What is my job?", None),
    ("Who is my boss?", None),
    ("What do you know about my job?", None),
    ("Who is he?", None),
    ("Tell me about the weather", None),
    ("Where do I live?", None),
])
def test_profile_subject(question, who):
    from agent_memory.rules.questions import profile_subject

    assert profile_subject(question) == who


@pytest.mark.parametrize("question, which", [
    ("What did I tell you at the start of this conversation?", "first"),
    ("What did I just say?", "last"),
    ("What did I ask a moment ago?", "last"),
    ("What have we talked about so far?", "all"),
    # memory questions, not about the conversation
    ("What did I tell you about my job?", None),
    ("Where do I live?", None),
    ("What did I say my sister's name was?", None),
])
def test_about_conversation(question, which):
    from agent_memory.rules.questions import about_conversation

    assert about_conversation(question) == which


@pytest.mark.parametrize("question, parts", [
    ("How long do I have to return it, and where do orders ship from?",
     ["How long do I have to return it", "where do orders ship from?"]),
    ("Where do I live? What is my job?", ["Where do I live?", "What is my job?"]),
    # one question about two things is one part
    ("What do I like and dislike?", ["What do I like and dislike?"]),
    ("Where do I work and live?", ["Where do I work and live?"]),
    ("I moved. Where do I live now?", ["I moved. Where do I live now?"]),
])
def test_question_parts(question, parts):
    from agent_memory.rules.questions import question_parts

    assert question_parts(question) == parts


def _asks_only_by_definition(text: str) -> bool:
    """Every sentence split out at once: the definition ``asks_only`` walks lazily."""
    import re

    from agent_memory.rules.questions import is_question

    parts = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]
    return any(is_question(p) for p in parts) and all(is_question(p) or len(p.split()) <= 2 for p in parts)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["What", "is", "it", "?", ".", "!", " ", "\n", "do", "not", "go", "Thanks",
                                 "Where did you go", "I went home", "ok"]), max_size=12).map("".join))
def test_asks_only_stops_at_the_first_statement_and_agrees_with_its_definition(text):
    assert asks_only(text) == _asks_only_by_definition(text)

"""The ``offline`` provider: a deterministic model with no network, for tests, CI and keyless
local runs. Structured calls dispatch to handlers (the offline extractor registers its own:
``adapters.offline.register.build`` makes the provider's model); replies come from a responder, by default one that quotes the retrieved
memory line that best meets the question."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from agent_memory.adapters.models.schemas import validate_output
from agent_memory.lexicon import ANSWER_WORD_HINTS, OVERLAP_STOP_WORDS
from agent_memory.ports import ChatMessage, Completion, ModelError
from agent_memory.rules.questions import (
    about_conversation,
    asked_slots,
    asks_only,
    profile_subject,
    question_parts,
)

M = TypeVar("M", bound=BaseModel)

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
        return validate_output(schema, result)

    def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> Completion:
        text = self._responder(messages)
        return Completion(
            text=text,
            model=self.name,
            prompt_tokens=sum(approx_tokens(m.content) for m in messages),
            completion_tokens=approx_tokens(text),
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


def approx_tokens(text: str) -> int:
    """Rough token count (4 characters per token) where a provider reports none."""
    return len(text) // 4


# ---------------------------------------------------------------------------

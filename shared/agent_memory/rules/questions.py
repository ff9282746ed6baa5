"""What a question asks for, and whether a turn only asks: the rules query analysis, ranking's
callers and the offline model share.

``asked_slots("Where do I work?")`` is ``employer``: the attribute keys and relation labels a
question asks about, read from whole phrases (``lexicon.SLOT_QUESTIONS``), and from a
possessive or question noun that names a registry key or label ("my company" -> employer,
"Emma's boss" -> manager, "which city" -> location; synonyms are the registry's,
``vocabulary.normalise_key`` / ``normalise_label``, the same that file a model's ``workplace``
or ``city`` under its key at write time). A question that names no key asks for none: there is
no fallback by single words ("where", "work") or by what was said last.

``asks_only(text)``: every sentence of ``text`` is a question (greetings and thanks of two
words or fewer aside), so the text states nothing that could answer one.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass

from agent_memory import lexicon
from agent_memory.rules import vocabulary as vocab

_SUBJECT = r"(?:[\w\-']+ ){0,2}?[\w\-']+"
_PHRASES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(r"\b(?:" + pattern.replace("<s>", _SUBJECT) + r")\b"), slots)
    for pattern, slots in lexicon.SLOT_QUESTIONS)
_WORD = re.compile(r"[a-z0-9][\w\-]*(?:'s)?")
_POSSESSORS = frozenset({"my", "your", "his", "her", "their", "our"})
_WHAT_IS = re.compile(r"^what(?:'s| is| are| was| were)$")
_HEAD = frozenset({"what", "which"})
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class AskedSlots:
    """The attribute ``keys`` and relation ``labels`` a question asks about."""

    keys: frozenset[str] = frozenset()
    labels: frozenset[str] = frozenset()

    @property
    def slots(self) -> frozenset[str]:
        """Keys and labels together (a fact's slot is its key or its label)."""
        return self.keys | self.labels

    def __bool__(self) -> bool:
        return bool(self.keys or self.labels)


def _normal(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").lower()
    return " ".join(re.sub(r"[^\w\s'\-]", " ", text).split())


def _registered(words: list[str]) -> tuple[str | None, str | None]:
    """The registry key and label the noun phrase ``words`` names (longest first), if any."""
    for n in range(len(words), 0, -1):
        phrase = " ".join(words[:n])
        key, label = vocab.normalise_key(phrase), vocab.normalise_label(phrase)
        found = (key if key in vocab.KEYS else None, label if label in vocab.LABELS else None)
        if any(found):
            return found
    return None, None


@functools.lru_cache(maxsize=4096)
def asked_slots(question: str) -> AskedSlots:
    """The keys and labels ``question`` asks about (see the module docstring)."""
    text = _normal(question)
    keys: set[str] = set()
    labels: set[str] = set()
    for pattern, slots in _PHRASES:
        if pattern.search(text):
            for slot in slots:
                (keys if slot in vocab.KEYS else labels).add(slot)
    words = _WORD.findall(text)
    for i, word in enumerate(words):
        possessor = word in _POSSESSORS or (word.endswith("'s") and len(word) > 2)
        if not (possessor or word in _HEAD) or i + 1 >= len(words):
            continue
        following = []
        for w in words[i + 1:i + 3]:
            following.append(w.removesuffix("'s"))
            if w.endswith("'s"):
                break  # "my sister's job": the sister here, the job at the next possessor
        key, label = _registered(following)
        if key:
            keys.add(key)
        if label:
            labels.add(label)
        if not (key or label) and possessor and i >= 1 and _WHAT_IS.match(" ".join(words[i - 1:i]) if i < 2
                                                                           else " ".join(words[i - 2:i])):
            # "what is my favourite colour": a key the registry does not know, asked by name
            named = vocab.normalise_key(" ".join(following))
            if named:
                keys.add(named)
    return AskedSlots(frozenset(keys), frozenset(labels))


def is_question(sentence: str) -> bool:
    """A sentence ending in "?" or starting with a question word (not "do not ...")."""
    s = sentence.strip()
    if s.endswith("?"):
        return True
    words = s.lower().split()
    return bool(words) and words[0] in lexicon.QUESTION_WORDS and words[:2] != ["do", "not"]


@functools.lru_cache(maxsize=16384)  # retrieval asks it of the same candidate turns query after query
def asks_only(text: str) -> bool:
    """Whether every sentence of ``text`` is a question (two-word interjections aside): a
    turn that asks and states nothing."""
    text = text or ""
    asked = False
    start = 0
    # Sentence by sentence, stopping at the first statement (most turns: the first sentence).
    for end in itertools.chain((m.span() for m in _SENTENCE_END.finditer(text)), [(len(text), len(text))]):
        part = text[start:end[0]].strip()
        start = end[1]
        if not part:
            continue
        if is_question(part):
            asked = True
        elif len(part.split()) > 2:
            return False
    return asked


#: The question shapes that ask for everything memory holds about someone (docs/chat.md,
#: "Questions about the user"): the profile route. ``who`` is the person; "me"/"myself" the user.
_PROFILE_SHAPES = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"^(?:so,? |and |ok(?:ay)?,? )?what (?:else )?(?:do|did|does) (?:you|memory) (?:know|remember|have(?: stored)?|recall)"
    r" (?:about|of|on) (?P<who>me|myself|[A-Z][\w'\-]*(?: [A-Z][\w'\-]*)?)$",
    r"^(?:please )?tell me (?:everything |all |what )?(?:you know |you remember |you have )?about"
    r" (?P<who>me|myself|[A-Z][\w'\-]*(?: [A-Z][\w'\-]*)?)$",
    r"^(?P<who>who) am i$",
    r"^what (?:do|did) i (?:tell|told) you about (?P<who>me|myself)$",
    r"^(?:describe|summari[sz]e) (?P<who>me|myself|[A-Z][\w'\-]*)$",
    r"^who is (?P<who>[A-Z][\w'\-]*(?: [A-Z][\w'\-]*)?)$",
    r"^what(?:'s| is) my profile$",
))
PROFILE_SELF = "me"
_NOT_PROFILED = _POSSESSORS | frozenset({"he", "she", "they", "it", "this", "that", "there", "i", "you", "we"})


def profile_subject(question: str) -> str | None:
    """Whom ``question`` asks everything about: ``PROFILE_SELF`` for the user ("What do you
    know about me?", "Who am I?"), a name ("Tell me about Priya", "Who is Priya?"), or
    ``None`` for any other question (one that names a key is not a profile question)."""
    text = " ".join((question or "").split()).strip().rstrip("?.! ").strip()
    for pattern in _PROFILE_SHAPES:
        found = pattern.match(text)
        if found:
            who = found.groupdict().get("who") or "me"
            if who.lower() in ("me", "myself", "who"):
                return PROFILE_SELF
            # a name, as written: capitalised, not a pronoun or a possessive ("my job" names a key)
            if not who[:1].isupper() or who.split()[0].lower() in _NOT_PROFILED:
                return None
            return who
    return None


#: "What did I tell you at the start of this conversation?": a question about the conversation
#: itself, answered from the transcript window, never from memory. A cue that names the
#: conversation (or a moment of it) is required: "What did I tell you about my job?" asks memory.
@functools.cache
def _conversation_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(cue, ask), compiled on first use: only the chat's offline responder asks (recall's
    import does not pay for them)."""
    cue = re.compile(
        r"\b(?:(?:this|our|the) (?:conversation|chat|session)|so far|earlier (?:today|on)?|a (?:moment|minute) ago"
        r"|at the (?:start|beginning)|to begin with|first thing|(?:just|previously|last time|before) (?:now)?)\b",
        re.IGNORECASE)
    ask = re.compile(
        r"\b(?:what|which)\b.*\b(?:did|have|had) I (?:just |first |last )?(?:tell|told|say|said|ask|asked|mention|"
        r"mentioned|write|wrote|talk|talked)\b|\bwhat (?:were|was) (?:we|I) (?:talking|saying|discussing)\b"
        r"|\bwhat (?:have|did) we (?:talk|talked|discuss|discussed)\b|\bremind me what I (?:said|asked|told you)\b",
        re.IGNORECASE)
    return cue, ask


def about_conversation(question: str) -> str | None:
    """Whether ``question`` asks about the conversation itself: ``"first"`` (its start),
    ``"last"`` (what was just said), ``"all"`` (so far), else ``None``."""
    text = " ".join((question or "").split())
    cue, ask = _conversation_patterns()
    if not (ask.search(text) and cue.search(text)):
        return None
    lowered = text.lower()
    if re.search(r"\b(?:start|beginning|first|to begin with)\b", lowered):
        return "first"
    if re.search(r"\b(?:just|last|a (?:moment|minute) ago|previously|before)\b", lowered):
        return "last"
    return "all"


@functools.cache
def _part_split() -> re.Pattern[str]:
    """Where a question's parts meet, compiled on first use (the chat's, not recall's)."""
    return re.compile(r"(?<=\?)\s+|,?\s+(?:and|also|plus)\s+(?=(?:" + "|".join(
        sorted(w for w in lexicon.QUESTION_WORDS if w.isalpha() and w not in {
            "do", "does", "did", "is", "are", "am", "was", "were", "have", "has"})) + r")\b)", re.IGNORECASE)


def question_parts(question: str) -> list[str]:
    """The parts of a question that asks two or more things ("How long do I have to return
    it, and where do orders ship from?" -> two), split at a "?" or at "and"/"also" before a
    question word; a one-part question is one part. Parts keep their own words."""
    text = " ".join((question or "").split())
    parts = [p.strip(" ,;") for p in _part_split().split(text) if p and p.strip(" ,;")]
    parts = [p for p in parts if len(p.split()) >= 2]
    return parts if len(parts) > 1 and all(is_question(p) or p.endswith("?") for p in parts) else [text]

"""What a question names, when it points at, and how it reads as a statement: deterministic
query analysis for retrieval (no model call, so it costs microseconds and behaves the same
in tests, CI and production).

Why each part exists (measured on LoCoMo, see ``bench/locomo.py``):

- **Names** ("What did Priya repair?"): most evidence for a question about a person is
  what that person said or what is known about them. Retrieval runs extra legs restricted to
  the named entity's units, and tier 1 reads the entity's current facts from the store.
  Names are capitalised runs of words (possessive ``'s`` dropped, question words, pronouns,
  months and weekdays skipped); lower-case words are also offered to the store as possible
  entity names, so "where does bob live" still finds ``person/bob`` when it exists.
- **Self reference** ("Where do I live?"): "I/me/my" in a question means the speaking user,
  the self entity ``entity:person/user``.
- **Statement form**: a question and the sentence that answers it share content words but
  not their scaffolding ("What did ... do"), and sentence embeddings of a question sit closer
  to other questions than to answers. The vector legs embed the question with its
  scaffolding and the names already handled by the entity legs removed ("repair"); the noun
  a "what/which <noun> ..." question asks for stays ("Which boats did Priya repair?" ->
  "boats repair"): it names the kind of answer (LoCoMo tuning recall@10 +0.011, validation
  +0.014 with the hashing embedder).
- **Asked keys** ("Where do I work?" -> ``employer``; "Who is my boss?" -> ``manager``): the
  attribute keys and relation labels the question asks about, read from whole phrases
  (``rules.questions``), order tier 1's facts; a question that names none asks for none.
- **Time** ("When did Dana go sailing in July?", "... on 3 March, 2021"): a time phrase
  becomes a window; units said inside it (or shortly after: people talk about an event
  after it happened) are boosted. A month or day without a year is the most recent one
  by the query's instant: the same rule (``months``) the write side applies to statements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from agent_memory import lexicon
from agent_memory.rules import event_time
from agent_memory.rules.questions import PROFILE_SELF, asked_slots, profile_subject

_QUESTION_LEAD = re.compile(
    r"^\s*(?:(?:what|which|who|whom|whose|when|where|why|how)(?:\s+(?:kind|type|sort|much|many|long|often|old"
    r"|far|soon|big|well)(?:\s+of)?)?(?:\s+\w+)??\s+"
    r"(?:do|does|did|is|are|was|were|has|have|had|can|could|would|will|should|might|may|am)\b"
    r"|(?:what|which|who|whom|whose|when|where|why|how)\b"
    r"|(?:do|does|did|is|are|was|were|has|have|had|can|could|would|will|should|might|may|am)\b)",
    re.IGNORECASE)
_AUXILIARY = r"(?:do|does|did|is|are|was|were|has|have|had|can|could|would|will|should|might|may|am)"
# "What <noun> does ..." / "Which kind of <noun> did ...": the noun names what the answer is.
_HEAD_NOUN = re.compile(
    r"^\s*(?:what|which|whose)\s+(?:(?:kind|type|sort)s?\s+of\s+)?"
    r"(?P<noun>(?!(?:kind|type|sort|" + _AUXILIARY[3:-1] + r")\b)[a-z][\w\-]*)\s+" + _AUXILIARY + r"\b",
    re.IGNORECASE)
_SELF = re.compile(r"\bI\b|\bI'(?:m|ve|d|ll)\b|\b(?:me|my|mine|myself)\b", re.IGNORECASE)
_SELF_WORDS = re.compile(r"\b(?:I'm|I've|I'd|I'll|I|me|my|mine|myself)\b", re.IGNORECASE)
_CAP_RUN = re.compile(r"[A-Z][\w&.\-]*(?:['\u2019][A-Za-z]+)?(?:\s+[A-Z][\w&.\-]*(?:['\u2019][A-Za-z]+)?)*")
_WORD = re.compile(r"[A-Za-z0-9][\w'\-]*")
_POSSESSIVE = re.compile(r"['\u2019]s?$")

# Capitalised words that are not names: question words, pronouns, auxiliaries, calendar words.
_NOT_NAMES = lexicon.NOT_NAME_WORDS | frozenset(event_time.MONTHS) | frozenset(event_time.WEEKDAYS)
STOPWORDS = lexicon.QUERY_STOP_WORDS



@dataclass(frozen=True)
class TimeHint:
    """A window named by the query: ``[start, end)``."""

    phrase: str
    start: datetime
    end: datetime

    def contains(self, instant: datetime, slack_days: float = 0.0) -> bool:
        """Whether ``instant`` lies in the window, or up to ``slack_days`` after it."""
        return self.start <= instant < self.end + timedelta(days=slack_days)

    def to_wire(self) -> dict[str, object]:
        return {"phrase": self.phrase, "start": _iso(self.start), "end": _iso(self.end)}


@dataclass
class QueryAnalysis:
    text: str
    names: list[str] = field(default_factory=list)  # capitalised names, query order
    lookup_names: list[str] = field(default_factory=list)  # names + content words (store lookup)
    self_reference: bool = False
    statement: str = ""  # question scaffolding removed
    content: str = ""  # statement without names and self pronouns (entity legs, vectors)
    content_words: list[str] = field(default_factory=list)
    time: TimeHint | None = None
    # The attribute keys and relation labels the question asks about, as a whole phrase
    # (``rules.questions.asked_slots``: "where do I work" -> employer); empty when it names none.
    key_hints: frozenset[str] = frozenset()
    # Whom the question asks everything about (``rules.questions.profile_subject``: "me" for
    # the user, else a name): the profile route; ``None`` for any other question.
    profile_of: str | None = None


def analyse(query: str, *, anchor: datetime | None = None) -> QueryAnalysis:
    """Analyse ``query``; relative time phrases resolve against ``anchor`` (default now)."""
    anchor = anchor or datetime.now(UTC)
    text = " ".join(query.split())
    names = extract_names(text)
    statement = to_statement(text)
    content = statement
    for name in sorted(names, key=len, reverse=True):
        content = re.sub(r"\b" + re.escape(name) + r"(?:['\u2019]s?)?(?!\w)", " ", content)
    self_ref = bool(_SELF.search(text))
    if self_ref:
        content = _SELF_WORDS.sub(" ", content)
    content = re.sub(r"(?<!\w)[\"'\u201c\u201d]+(?!\w)|\s(?:and|or|,)(?=\s+(?:and|or|,)?\s*$)", " ", content)
    content = " ".join(content.split()).strip(" ,.;:!?") or statement or text
    words = [w.lower() for w in _WORD.findall(content)]
    content_words = [w for w in dict.fromkeys(words) if w not in STOPWORDS and len(w) > 1]
    # Lower-case words are offered to the store as entity names only when nothing is
    # capitalised ("where does bob live"); otherwise they would dilute the names' legs.
    lookup = names or [w for w in content_words if len(w) > 2]
    hints = asked_slots(text).slots
    profile_of = profile_subject(text)
    return QueryAnalysis(text=text, names=names, lookup_names=lookup[:16],
                         self_reference=self_ref or profile_of == PROFILE_SELF,
                         statement=statement, content=content, content_words=content_words,
                         time=time_hint(text, anchor), key_hints=hints, profile_of=profile_of)


def extract_names(text: str) -> list[str]:
    """Capitalised runs that look like names, possessives stripped, in query order."""
    out: list[str] = []
    for m in _CAP_RUN.finditer(text):
        words = [_POSSESSIVE.sub("", w) for w in m.group(0).split()]
        # drop leading/trailing words that are not names ("What", "Did", "July")
        while words and words[0].lower() in _NOT_NAMES:
            words.pop(0)
        while words and words[-1].lower() in _NOT_NAMES:
            words.pop()
        if not words or any(w.lower() in _NOT_NAMES for w in words):
            # a run with a non-name inside ("Priya And Tunde") splits at it
            parts, cur = [], []
            for w in words:
                if w.lower() in _NOT_NAMES:
                    if cur:
                        parts.append(cur)
                    cur = []
                else:
                    cur.append(w)
            if cur:
                parts.append(cur)
        else:
            parts = [words]
        for part in parts:
            name = " ".join(part).strip(".-")
            if len(name) > 1 and name not in out:
                out.append(name)
    return out[:6]


def to_statement(text: str) -> str:
    """Drop question scaffolding: ``"What did Priya repair?"`` -> ``"Priya repair"``. The noun
    a question asks for stays: ``"Which kind of boats has Priya repaired?"`` -> ``"boats
    Priya repaired"`` (it says what the answer is about)."""
    s = text.strip().rstrip("?!. ")
    head = _HEAD_NOUN.match(s)
    if head:
        return f"{head.group('noun')} {s[head.end():].strip(' ,')}".strip()
    s = _QUESTION_LEAD.sub("", s, count=1).strip(" ,")
    return s or text.strip()


_PHRASE = re.compile(r"(?<![\w-])(?P<t>" + event_time.PHRASE + r")(?![\w-])", re.IGNORECASE)
_PRESENT = frozenset({"now", "right now", "just now", "today", "tonight", "this morning", "this afternoon",
                      "this evening", "earlier today"})
_MONTH_WORD = re.compile(r"\b(?:" + "|".join(sorted(event_time.MONTHS, key=len, reverse=True)) + r")\b")
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_DAY_NUMBER = re.compile(r"\b\d{1,2}(?:st|nd|rd|th)?\b(?!\d)")
_UNIT = re.compile(r"\b(minute|hour|day|week|weekend|fortnight|month|year)s?\b")


def time_hint(text: str, anchor: datetime) -> TimeHint | None:
    """The first time phrase of ``text`` as a window (see the module docstring)."""
    for m in _PHRASE.finditer(text):
        phrase = m.group("t")
        low = " ".join(phrase.lower().split())
        core = re.sub(r"^(?:since|as of|starting|back|around|about|just|on|in|during|by|last|this)\s+", "", low)
        if core in _PRESENT or low in _PRESENT:
            continue
        month = _MONTH_WORD.search(core)
        has_year = bool(_YEAR.search(core))
        start = event_time.resolve_event_time(phrase, anchor)
        if start is None:
            continue
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", core) or (month and _DAY_NUMBER.search(_YEAR.sub("", core))):
            start = start.replace(hour=0, minute=0, second=0, microsecond=0)
            return TimeHint(phrase=phrase, start=start, end=start + timedelta(days=1))
        if month:
            start = start.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
            return TimeHint(phrase=phrase, start=start, end=event_time.add_months(start, 1))
        if has_year and not _UNIT.search(core):
            start = start.replace(month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
            return TimeHint(phrase=phrase, start=start, end=event_time.add_months(start, 12))
        unit = _UNIT.search(core)
        span = {"minute": 1, "hour": 1, "day": 1, "week": 7, "weekend": 7, "fortnight": 14, "month": 31,
                "year": 366}.get(unit.group(1) if unit else "day", 1)
        if re.search(r"\bago\b|\bfor\b", core) and span > 1:
            # "3 years ago" is approximate: centre a window of one unit on it
            return TimeHint(phrase=phrase, start=start - timedelta(days=span / 2), end=start + timedelta(days=span / 2))
        day = start.replace(hour=0, minute=0, second=0, microsecond=0)
        return TimeHint(phrase=phrase, start=day, end=day + timedelta(days=span))
    return None


def _iso(value: datetime) -> str:
    from agent_memory.kernel import timeutil

    return timeutil.iso(value)

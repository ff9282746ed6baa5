"""Offline extractor: deterministic English patterns, no model, no network.

It is how tests, CI and keyless local runs extract facts, so it handles a fixed,
documented set of statements and nothing else (docs/decisions.md, "Models"). It fills the same
``ExtractionOutput`` a real model fills, under the same conventions as the prompt.

Speaker mapping (``rules/self_entity.py``): "I/me/my" is the entity named ``User`` (the self entity
``entity:person/user``). Statements about a person named like the speaker ("Alice works at
Acme" with ``speaker_name="Alice"``) keep the name; reconciliation maps it to the self entity.

Text handling: a whole conversation ("user: ..." / "assistant: ..." lines) keeps the user's
lines only. The text is cut into sentences (``.``/``!``/``?``/newlines) and each sentence
into clauses at ``;`` and at ", and|but|so" before a new "I/my" subject. A value ends before
"and|but|so|because|while|although" and a pronoun subject (they, he, she, it, we, there...):
"My favourite colour is teal and they have cats" is teal; a subject's predicates split before
a known verb, "and she" or "and he" included ("Emma lives in Oslo and she works at Equinor").
(The sentence is not cut there, so an action keeps its whole clause.) "She"/"he"
starting a clause is the last person named in the text ("My manager is Priya. She is based in
Pune"); with nobody named before, the clause yields nothing. A capitalised first word is
someone only when it is a known entity, a name of several words, or followed by what a person
does: a bare verb with no object ("Message received", "Next run in 24h") is no person. Questions (ending in
``?`` or starting with who/what/where/when/why/how/which/do/does/did/is/are/was/were/can/
could/would/will/should/have/has/am) yield nothing. Leading fillers ("Actually,", "Hi,",
"By the way,", "Remember that") are dropped; hedges ("I think", "maybe", "probably") lower
``confidence`` to 0.4, under the default floor, so they become uncertainties. A clause with
one subject and several predicates ("I live in Paris and work at Acme", "Emma lives in Oslo
and works at Equinor") is split before known verbs. Time phrases (see ``rules/event_time.py``: "last
month", "in 2023", "for 3 years") become ``valid_from`` / ``occurred_at``: one leading a
clause applies to all its predicates, one ending a predicate to that predicate; when a
pattern only matches with the phrase kept ("My birthday is on 5 May") it is the value.
A third-person clause "<Name> <verb>s ..." is read as the first-person pattern for that
subject ("Bob lives in Paris" = "I live in Paris" for Bob), "<Name>'s X" as "my X".
Entity types: employers are organisations, places locations, people persons; a name keeps
the type it first got in the text. Known entity names are reused with their known
spelling (case-insensitive match).

Patterns (first match per clause wins; ``S`` is the subject):

==========================================  =================================================
"I'm not sure (yet) whether I'll stay",
"I haven't decided where to live"           an uncertainty about it (no fact)
"My name is Alice", "I'm Alice"             name = Alice
"Hi! I'm Alice, CTO at Acme",
"I'm Bruno, a nurse at St Mary's"           name + job_title (+ employer when named)
"Call me Al", "You can call me Al"          nickname = Al (the legal name stays)
"I'm a data scientist", "I work as a CTO"   job_title
"I'm CTO at Acme", "I'm a X at/for Acme"    job_title + employer
"I work at Acme as a data engineer",
"I joined Acme as a CTO"                    employer + job_title
"I work at/for Acme", "I joined Acme"       employer (Acme: organisation)
"I started a new job at Hooli",
"I switched to Hooli"                       employer = Hooli (the old one superseded)
"I live in London", "I'm based in Paris"    location (London: location)
"I moved to Berlin last month"              location = Berlin, valid_from "last month"
"I moved from London to Berlin"             location London negated + location Berlin
"I'm from Spain", "I grew up in Spain"      hometown
"I like/love/enjoy sushi", "I'm into X"     likes (lists split at "," / "and")
"I'm a (big) fan of X"                      likes
"I hate/dislike/can't stand X"              dislikes
"I don't like X"                            dislikes X, and likes X negated
"I prefer tea over coffee", "I prefer X"    preferences = "tea over coffee" / "X"
"I'm allergic to X", "I speak X and Y"      allergies / languages
"I'm interested in X"                       interests
"I have a dog named Rex"                    pets = dog, relation S -pet-> Rex (type other), and
                                            Rex's species = dog ("two cats called A and B":
                                            pets = cats, one pet and species per name)
"My dog is called Rex",
"My cat's name is Mochi"                    as "I have a dog named Rex"
"I have a dog"                              pets = dog
"I'm 34", "I'm 34 years old"                age = 34
"I'm German"                                nationality = German
"I'm vegan", "I'm a vegetarian"             diet ("I'm pescatarian now": the other diets negated)
"My email is a@b.c", "My hobbies are X"     generic: key from the words (synonyms applied);
"My boat is called Wanda"                   "called"/"named" is not part of the value
"My sister Emma lives in Oslo"              relation S -sister-> Emma + Emma's facts
"My manager is Bob", "Bob is my manager"    relation S -manager-> Bob
"I work with Carol", "I report to Bob"      relation colleague / manager
"I'm married to Dan", "I'm friends with X"  relation spouse / friend
"Bob is no longer my manager"               relation negated
"I no longer work at Acme",
"I don't work for Acme anymore",
"I left Acme", "I quit Acme"                employer Acme negated
"I don't live in London anymore",
"I no longer live in London"                location London negated
"I don't like sushi anymore",
"I no longer like sushi"                    likes sushi negated
"I'm no longer a X", "My X is no longer Y"  negated job_title / key
"Always answer in German",
"Never mention my salary",
"Don't use emojis"                          instruction, labelled by what it governs: language
                                            ("in German": a language's name), form_of_address,
                                            response_length ("short sentences", "concise"),
                                            format ("bullet points", "markdown"), tone
                                            ("formal"), else a slug such as never_mention_salary
"From now on call me Al"                    instruction + nickname = Al
"I ran a marathon yesterday",
"I've finished the report"                  action (verb ran, object marathon, occurred_at
                                            "yesterday"); past tense: -ed or a known
                                            irregular verb, stative verbs excluded
"Alice works at Acme", "Bob lives in Paris" the same patterns about Alice / Bob
==========================================  =================================================
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from agent_memory.adapters.offline.words import (
    ADVERBS,
    DEMONYMS,
    DIETS,
    INSTRUCTION_LEAD_WORDS,
    INSTRUCTION_TOPICS,
    IRREGULAR_PAST,
    JOB_ACRONYMS,
    JOB_REJECT_FIRST,
    LANGUAGE_NAMES,
    MOTION_PAST,
    PET_WORDS,
    STATIVE_PAST,
)
from agent_memory.lexicon import (
    LABEL_STOP_WORDS,
    NOT_NAME_ADJECTIVES,
    QUESTION_WORDS,
    SENTENCE_START_NOT_NAMES,
)
from agent_memory.models.extraction import (
    ExtractedAction,
    ExtractedAttribute,
    ExtractedEntity,
    ExtractedInstruction,
    ExtractedRelation,
    ExtractedUncertainty,
    ExtractionOutput,
)
from agent_memory.rules import vocabulary as vocab
from agent_memory.rules.event_time import leading_time_phrase, trailing_time_phrase
from agent_memory.rules.self_entity import SELF_NAME, self_display_name
from agent_memory.rules.turn_data import read_turn

#: Diets one holds at a time: "I'm X now" closes the others.
EXCLUSIVE_DIETS = frozenset({"vegan", "vegetarian", "pescatarian", "omnivore"})

PLAIN_CONFIDENCE = 0.9
HEDGED_CONFIDENCE = 0.4

_WORD = r"[A-Z][\w&-]*(?:['.](?!s\b)[A-Za-z][\w&-]*)*"  # O'Brien, J.R; never a possessive 's
NAME = _WORD + r"(?: (?:of |de |van |von |the |du |da )?" + _WORD + ")*"

_FILLER = re.compile(
    r"^(?:(?:well|actually|oh|also|and|but|so|btw|by the way|anyway|hi|hello|hey|yes|yeah|no|ok|okay|"
    r"just so you know|fyi|fun fact|remember that|please remember that|note that|for the record)"
    r"\b[,:!]?\s+)+", re.IGNORECASE)
_FACT_LEAD = re.compile(r"^(?i:from now on|going forward|these days|nowadays),?\s+(?=(?:I|I'm|I've|My)\b)")
_HEDGE = re.compile(r"^(?:I think|I guess|I believe|I suppose|maybe|probably|perhaps)\b,?\s+(?:that\s+)?",
                    re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAUSE_SPLIT = re.compile(r"\s*;\s*|,?\s+(?:and|but|so)\s+(?=(?:I|I'm|I've|my|My)\b)|,\s+(?=(?:I|I'm|My)\b)")
# A value ends before a conjunction that starts a clause of its own ("teal and they have cats").
_VALUE_END = re.compile(r",?\s+(?:and|but|so|because|while|whereas|although)\s+"
                        r"(?=(?i:they|he|she|we|it|there|their|his|her|our|its)\b)")
_LIST_SPLIT = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+&\s+|\s+or\s+")
_TRAILING_NOISE = re.compile(
    r"(?:\s+(?:any ?more|now|too|as well|a lot|very much|so much|these days|nowadays|originally))+$", re.IGNORECASE)


def _kin_alternation() -> str:
    words = set(vocab.LABELS) | {k for k in vocab.LABEL_SYNONYMS if not re.search(r"_(?:to|with|of)$", k)}
    words |= {"best_friend", "co_worker", "line_manager", "direct_report"}
    parts = sorted((w.replace("_", "[ -]") for w in words), key=len, reverse=True)
    return "(?:" + "|".join(parts) + ")"


KIN = _kin_alternation()


@dataclass
class _Builder:
    """Collects one text's output; canonicalises names and remembers entity types."""

    speaker_name: str | None
    known: dict[str, str]
    confidence: float = PLAIN_CONFIDENCE
    out: ExtractionOutput = field(default_factory=ExtractionOutput)
    types: dict[str, str] = field(default_factory=dict)
    last_person: str | None = None  # the last person named: "she"/"he" in a later clause

    def canon(self, name: str) -> str:
        name = name.strip().strip("\"'")
        return self.known.get(name.casefold(), name)

    def entity(self, name: str, etype: str) -> str:
        name = self.canon(name)
        key = name.casefold()
        if key not in self.types:
            self.types[key] = etype
            category = "identity" if name == SELF_NAME else None
            self.out.entities.append(ExtractedEntity(name=name, type=etype, category=category))
        return name

    def type_of(self, name: str, default: str = "person") -> str:
        return self.types.get(self.canon(name).casefold(), default)

    def attr(self, subject: str, key: str, value: str, *, negated: bool = False, when: str | None = None,
             split: bool = False) -> None:
        key = vocab.normalise_key(key)
        value = _VALUE_END.split(value, maxsplit=1)[0]
        values = _split_list(value) if split or vocab.cardinality(key) == "multi" else [_clean(value)]
        stype = self.type_of(subject)
        subject = self.entity(subject, stype)
        for v in values:
            if v:
                self.out.attributes.append(ExtractedAttribute(
                    entity=subject, entity_type=stype, key=key, value=v, cardinality=vocab.cardinality(key),
                    negated=negated, confidence=self.confidence, valid_from=when))

    def rel(self, subject: str, label: str, obj: str, *, negated: bool = False, when: str | None = None,
            object_type: str = "person") -> list[str]:
        """The relations ``subject -label-> each name in obj``; returns the names."""
        stype = self.type_of(subject)
        subject = self.entity(subject, stype)
        targets = []
        for name in (self.canon(n) for n in _split_list(obj)):
            if not re.fullmatch(NAME, name):
                continue
            target = self.entity(name, object_type)
            targets.append(target)
            if self.type_of(target) == "person":
                self.last_person = target
            self.out.relations.append(ExtractedRelation(
                subject=subject, subject_type=stype, label=vocab.normalise_label(label), object=target,
                object_type=self.type_of(target), negated=negated, valid_from=when))
        return targets

    def org(self, name: str) -> str:
        name = self.canon(_cut(name))
        return self.entity(name, "organisation") if re.fullmatch(NAME, name) else name

    def place(self, name: str) -> str:
        name = self.canon(_cut(name))
        return self.entity(name, "location") if re.fullmatch(NAME, name) else name


def _clean(value: str) -> str:
    value = _TRAILING_NOISE.sub("", value.strip().strip(" .,!;:\"'`"))
    return value.strip()


def _cut(value: str) -> str:
    """A place or organisation ends before a trailing clause ("London with my wife")."""
    return _clean(re.split(r"\s+(?:with|and|but|because|since|where|which|who)\b", value, maxsplit=1)[0])


def _split_list(value: str) -> list[str]:
    return [v for v in (_clean(p) for p in _LIST_SPLIT.split(value)) if v]


def _strip_article(value: str) -> str:
    return re.sub(r"^(?:a|an|the|my|our|some)\s+", "", value.strip(), flags=re.IGNORECASE)


# ---------------------------------------------------------------------------
# Text -> clauses
# ---------------------------------------------------------------------------


def _normalise(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = re.sub(r"\bi(?=\b|')", "I", text)
    text = re.sub(r"\bI am\b", "I'm", text)
    text = re.sub(r"\bI have\b", "I've", text)
    return re.sub(r"[ \t]+", " ", text)


def is_question(sentence: str) -> bool:
    s = sentence.strip()
    if s.endswith("?"):
        return True
    words = s.lower().split()
    if not words:
        return False
    return words[0] in QUESTION_WORDS and words[:2] != ["do", "not"]


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(_normalise(text)) if s.strip()]


def clauses(sentence: str) -> list[str]:
    return [c.strip(" ,.!") for c in _CLAUSE_SPLIT.split(sentence.rstrip(".! ")) if c.strip(" ,.!")]


# ---------------------------------------------------------------------------
# Patterns. Each takes (builder, subject, clause, time phrase) and returns True when it
# consumed the clause. Clauses are first person ("I ...", "My ...") by the time they get here.
# ---------------------------------------------------------------------------

Pattern = Callable[[_Builder, str, str, "str | None"], bool]
PATTERNS: list[Pattern] = []


def pattern(regex: str) -> Callable[[Callable[..., None]], Pattern]:
    compiled = re.compile(regex)

    def wrap(fn: Callable[..., None]) -> Pattern:
        def run(b: _Builder, s: str, clause: str, when: str | None) -> bool:
            m = compiled.fullmatch(clause)
            if m is None:
                return False
            return fn(b, s, m, when) is not False

        run.__name__ = fn.__name__
        PATTERNS.append(run)
        return run

    return wrap


@pattern(r"(?:I'm (?i:not sure|unsure|undecided|not certain|still deciding|torn)|I (?i:don't|do not) know"
         r"|I (?i:haven't|have not) (?i:decided|made up my mind))(?: (?i:yet))?,?"
         r"(?: (?P<about>(?i:whether|if|about|what|where|which|when|how) .+?))?(?: (?i:yet))?")
def _unsure(b, s, m, when):
    """"I'm not sure yet whether I'll stay": an open question about the speaker, not a fact."""
    about = _clean(m.group("about") or "")
    if not about:
        return None  # "I'm not sure": nothing it is about
    who = self_display_name(b.speaker_name) if s == SELF_NAME else s
    b.entity(s, b.type_of(s))
    b.out.uncertainties.append(ExtractedUncertainty(about=f"{who}: {about}",
                                                    reason=f"{who} is not sure yet"))


@pattern(r"(?i:my (?:full )?name is|my name's|I'm called|people call me|everyone calls me) (?P<v>.+)")
def _name(b, s, m, when):
    if m.group(0).lower().startswith(("people", "everyone")):
        b.attr(s, "nickname", m.group("v"), when=when)
    else:
        b.attr(s, "name", m.group("v"), when=when)


@pattern(r"(?i:(?:you can |please )?call me) (?P<v>.+)")
def _nickname(b, s, m, when):
    b.attr(s, "nickname", m.group("v"), when=when)


@pattern(r"I (?i:moved|relocated) (?i:away )?from (?P<old>.+?) to (?P<new>.+)")
def _moved_from_to(b, s, m, when):
    b.attr(s, "location", b.place(m.group("old")), negated=True, when=when)
    b.attr(s, "location", b.place(m.group("new")), when=when)


@pattern(r"I (?i:moved|relocated) (?i:away )?from (?P<old>.+)")
def _moved_away(b, s, m, when):
    b.attr(s, "location", b.place(m.group("old")), negated=True, when=when)


@pattern(r"I(?:'ve| (?i:have))? (?i:moved|relocated) (?i:back )?to (?P<v>.+)")
def _moved_to(b, s, m, when):
    b.attr(s, "location", b.place(m.group("v")), when=when)


@pattern(r"I (?i:don't|do not) (?i:live|reside) in (?P<v>.+?) (?i:any ?more)"
         r"|I (?i:no longer) (?i:live|reside) in (?P<v2>.+)"
         r"|I'm (?i:no longer|not) (?i:living|based|located) in (?P<v3>.+?)(?: (?i:any ?more))?")
def _location_negated(b, s, m, when):
    value = m.group("v") or m.group("v2") or m.group("v3")
    if m.group("v3") and not re.search(r"(?i:no longer|any ?more)", m.group(0)):
        return False  # "I'm not based in Paris": a denial, not a change we can place in time
    b.attr(s, "location", b.place(value), negated=True, when=when)


@pattern(r"(?:I (?i:live|reside)|I'm (?i:living|based|located|staying)|I've (?i:lived|been living|been based)) "
         r"(?i:in) (?P<v>.+)")
def _location(b, s, m, when):
    b.attr(s, "location", b.place(m.group("v")), when=when)


@pattern(r"(?:I'm|I (?i:come)) (?i:originally )?(?i:from) (?P<v>.+)|I (?i:grew up) in (?P<v2>.+)")
def _hometown(b, s, m, when):
    b.attr(s, "hometown", b.place(m.group("v") or m.group("v2")), when=when)


@pattern(r"I'm (?i:no longer|not) (?P<what>(?i:married to|friends with|dating)) (?P<v>.+?)(?: (?i:any ?more))?")
def _social_negated(b, s, m, when):
    label = {"married to": "spouse", "friends with": "friend", "dating": "partner"}[m.group("what").lower()]
    b.rel(s, label, m.group("v"), negated=True, when=when)


@pattern(r"I'm (?P<what>(?i:married to|friends with|dating|engaged to)) (?P<v>.+)")
def _social(b, s, m, when):
    what = m.group("what").lower()
    label = {"married to": "spouse", "friends with": "friend", "dating": "partner", "engaged to": "fiance"}[what]
    b.rel(s, label, m.group("v"), when=when)


@pattern(r"I (?i:no longer|don't|do not) (?i:work) (?i:at|for) (?P<v>.+?)(?: (?i:any ?more))?"
         r"|I (?i:left|quit|stopped working at|stopped working for) (?:(?i:my job at) )?(?P<v2>" + NAME + ")")
def _employer_negated(b, s, m, when):
    b.attr(s, "employer", b.org(m.group("v") or m.group("v2")), negated=True, when=when)


@pattern(r"I'm (?i:no longer|not) (?:(?i:a|an|the) )?(?P<v>.+?)(?: (?i:any ?more))?")
def _job_negated(b, s, m, when):
    value = _clean(m.group("v"))
    if value.lower() in DIETS:
        b.attr(s, "diet", value, negated=True, when=when)
    elif m.group(0).lower().startswith("i'm no longer") or re.search(r"any ?more$", m.group(0), re.I):
        b.attr(s, "job_title", value, negated=True, when=when)
    else:
        return False


@pattern(r"I (?i:work|am working)|I'm (?i:working|employed)")  # bare: nothing to store
def _work_bare(b, s, m, when):
    return None


@pattern(r"(?:(?:I (?i:work)|I'm (?i:working)|I've (?i:been working|worked)) (?i:at|for)"
         r"|I (?i:joined|started at|started working at|started working for|got a job at)) (?P<org>" + NAME + r")"
         r" (?i:as) (?:(?i:a|an|the) )?(?P<title>[\w/&-]+(?: [\w/&-]+){0,4})")
def _employer_as(b, s, m, when):
    """"I work at Globex as a data engineer": the employer, and the title it employs them as."""
    title = m.group("title")
    if title.split()[0].lower() in JOB_REJECT_FIRST:
        return False
    b.attr(s, "employer", b.org(m.group("org")), when=when)
    b.attr(s, "job_title", title, when=when)


@pattern(r"(?:I (?i:work)|I'm (?i:working)|I've (?i:been working|worked)) (?i:at|for) (?P<v>.+)"
         r"|I'm (?i:employed by) (?P<v2>.+)"
         r"|I (?i:joined|started at|started working at|started working for|got a job at) (?P<v3>" + NAME + ")"
         r"|I (?i:started|got|found|took|landed|accepted) (?i:a |my )?(?i:new )?(?i:job|position|role) (?i:at|with)"
         r" (?P<v4>" + NAME + ")"
         r"|I (?i:switched|changed) (?i:jobs |employers )?to (?P<v5>" + NAME + ")")
def _employer(b, s, m, when):
    """"I work at Acme"; a new employer: "I started a new job at Hooli", "I switched to Hooli"."""
    b.attr(s, "employer", b.org(next(v for v in m.group("v", "v2", "v3", "v4", "v5") if v)), when=when)


@pattern(r"(?:I'm|I (?i:work as|am working as)|I'm (?i:working as|employed as)) (?:(?i:a|an|the) )?"
         r"(?P<title>[\w/&-]+(?: [\w/&-]+){0,4}?) (?i:at|for|of|with) (?P<org>" + NAME + ")")
def _job_at(b, s, m, when):
    title = m.group("title")
    if m.group(0).startswith("I'm ") and not re.match(r"I'm (?:(?i:a|an|the) )", m.group(0)) \
            and title not in JOB_ACRONYMS and not title.isupper():
        return False
    if title.split()[0].lower() in JOB_REJECT_FIRST:
        return False
    b.attr(s, "job_title", title, when=when)
    b.attr(s, "employer", b.org(m.group("org")), when=when)


@pattern(r"I (?:(?i:really|also|absolutely|just|do) )*(?i:don't|do not|no longer) (?:(?i:really) )?"
         r"(?i:like|love|enjoy) (?P<v>.+?)(?P<anymore> (?i:any ?more))?")
def _likes_negated(b, s, m, when):
    anymore = m.group("anymore") or "no longer" in m.group(0).lower()
    b.attr(s, "likes", m.group("v"), negated=True, when=when)
    if not anymore:
        b.attr(s, "dislikes", m.group("v"), when=when)


@pattern(r"I (?:(?i:really|also|absolutely|just|truly) )*(?i:like|love|enjoy|adore) (?P<v>.+)"
         r"|I'm (?:(?i:a|such a) )?(?:(?i:big|huge|great) )?(?i:fan of|into|passionate about) (?P<v2>.+)")
def _likes(b, s, m, when):
    b.attr(s, "likes", m.group("v") or m.group("v2"), when=when)


@pattern(r"I (?:(?i:really|also|absolutely|just|truly) )*(?i:hate|dislike|detest|loathe|can't stand|cannot stand)"
         r" (?P<v>.+)")
def _dislikes(b, s, m, when):
    b.attr(s, "dislikes", m.group("v"), when=when)


@pattern(r"I (?:(?i:really|also|usually|generally) )*(?i:prefer) (?P<a>.+?)(?: (?P<op>(?i:over|to|rather than)) "
         r"(?P<b>.+))?")
def _prefers(b, s, m, when):
    value = m.group("a") if not m.group("b") else f"{_clean(m.group('a'))} over {_clean(m.group('b'))}"
    b.attr(s, "preferences", value, split=False, when=when)


@pattern(r"I'm (?i:allergic to) (?P<v>.+)")
def _allergies(b, s, m, when):
    b.attr(s, "allergies", m.group("v"), when=when)


@pattern(r"I (?:(?i:can|also) )?(?i:speak) (?:(?i:fluent) )?(?P<v>.+)")
def _languages(b, s, m, when):
    b.attr(s, "languages", re.sub(r"\s+(?i:fluently|well|a little)$", "", m.group("v")), when=when)


@pattern(r"I'm (?i:interested in) (?P<v>.+)")
def _interests(b, s, m, when):
    b.attr(s, "interests", m.group("v"), when=when)


@pattern(r"I(?:'ve| (?i:have|own)|'ve got) (?P<kind>(?:(?i:a|an|two|three|\d+) )" + PET_WORDS + r")"
         r",? (?i:named|called) (?P<names>" + NAME + r"(?:(?:,? and |, )" + NAME + r")*)")
def _named_pets(b, s, m, when):
    """"I have a dog named Rex": the pet's kind, and the pet by its name (a pet entity)."""
    kind = _strip_article(m.group("kind"))
    b.attr(s, "pets", kind, split=False, when=when)
    species = _singular(re.sub(r"^(?:two|three|\d+) ", "", kind, flags=re.I))
    for name in b.rel(s, "pet", m.group("names"), when=when, object_type="other"):
        b.attr(name, "species", species, when=when)


def _singular(noun: str) -> str:
    if noun.endswith("ies"):
        return noun[:-3] + "y"
    return noun[:-1] if noun.endswith("s") and not noun.endswith("ss") else noun


@pattern(r"(?i:my) (?P<kind>" + PET_WORDS + r")(?:'s names? (?i:is|are)| (?i:is|are) (?i:called|named))"
         r" (?P<names>" + NAME + r"(?:(?:,? and |, )" + NAME + r")*)")
def _pet_is_called(b, s, m, when):
    """"My dog is called Rex", "My cat's name is Mochi": as "I have a dog named Rex"."""
    kind = m.group("kind").lower()
    b.attr(s, "pets", kind, split=False, when=when)
    for name in b.rel(s, "pet", m.group("names"), when=when, object_type="other"):
        b.attr(name, "species", _singular(kind), when=when)


@pattern(r"I(?:'ve| (?i:have|own)|'ve got) (?P<v>(?:(?i:a|an|two|three|\d+) )" + PET_WORDS + r"(?: .+)?)")
def _pets(b, s, m, when):
    b.attr(s, "pets", _strip_article(m.group("v")), split=False, when=when)


@pattern(r"I'm (?P<v>\d{1,3})(?: (?i:years old|years of age|yo|y/o))?")
def _age(b, s, m, when):
    b.attr(s, "age", m.group("v"), when=when)


@pattern(r"I'm (?:(?i:a|an) )?(?P<v>\w+)(?P<change> (?i:now|these days|nowadays))?")
def _demonym_or_diet(b, s, m, when):
    word = m.group("v")
    if word in DEMONYMS:
        b.attr(s, "nationality", word, when=when)
    elif word.lower() in DIETS:
        if m.group("change") or (when or "").lower() in ("now", "these days", "nowadays", "right now"):
            # "I'm pescatarian now": one diet replaces another; the others no longer hold.
            for other in sorted(EXCLUSIVE_DIETS - {word.lower()}):
                b.attr(s, "diet", other, negated=True, when=when)
        b.attr(s, "diet", word.lower(), when=when)
    else:
        return False


@pattern(r"(?:I'm|(?i:my name is)) (?P<name>" + NAME + r"),? (?:(?P<article>(?i:a|an|the)) )?"
         r"(?P<title>[\w/&-]+(?: [\w/&-]+){0,4}?)(?: (?i:at|for|of|with) (?P<org>" + NAME + "(?:'s)?))?")
def _intro_with_role(b, s, m, when):
    """"I'm Alice, CTO at Acme", "I'm Bruno, a nurse at St Mary's": the name, the role (an
    acronym, a capitalised title or one after an article) and the employer when named."""
    name, title = m.group("name"), m.group("title")
    if not _plain_name(name) or "," not in m.group(0).split(title, 1)[0]:
        return False
    if not (m.group("article") or title in JOB_ACRONYMS or title[:1].isupper() or m.group("org")) \
            or title.split()[0].lower() in JOB_REJECT_FIRST:
        return False
    b.attr(s, "name", name, when=when)
    b.attr(s, "job_title", title, when=when)
    if m.group("org"):
        b.attr(s, "employer", b.org(m.group("org")), when=when)


def _plain_name(name: str) -> bool:
    """A name as "I'm <name>" introduces one: not a state, an acronym or a sentence word."""
    return not (name in SENTENCE_START_NOT_NAMES or name in JOB_ACRONYMS or name.lower() in NOT_NAME_ADJECTIVES
                or len(name.split()) > 3)


@pattern(r"(?:I'm|(?i:my name is)) (?P<v>" + NAME + ")")
def _name_intro(b, s, m, when):
    name = m.group("v")
    if not _plain_name(name):
        return False
    b.attr(s, "name", name, when=when)


@pattern(r"(?:I'm|I (?i:work as|am working as)|I'm (?i:working as|employed as)) (?:(?i:a|an|the) )?"
         r"(?P<title>[\w/&-]+(?: [\w/&-]+){0,4})")
def _job(b, s, m, when):
    title = re.split(r" (?:at|for|with|of|in|and|but|because)\b", m.group("title"), maxsplit=1)[0]
    has_article = bool(re.match(r"I'm (?i:a|an|the) ", m.group(0))) or not m.group(0).startswith("I'm ")
    if not has_article and title not in JOB_ACRONYMS:
        return False
    if title.split()[0].lower() in JOB_REJECT_FIRST:
        return False
    b.attr(s, "job_title", title, when=when)


@pattern(r"(?i:my) (?P<rel>" + KIN + r")(?:'s names? (?:is|are)| is named| is called)? "
         r"(?P<names>" + NAME + r"(?: and " + NAME + r")*)(?: (?P<rest>.+))?")
def _kin_named(b, s, m, when):
    names = [b.canon(n) for n in m.group("names").split(" and ")]
    if any(n.split()[0] in SENTENCE_START_NOT_NAMES for n in names):
        return False
    b.rel(s, m.group("rel"), m.group("names"), when=None if m.group("rest") else when)
    for name in names:
        for predicate in _predicates(m.group("rest") or ""):
            _third_person(b, name, predicate, when)


@pattern(r"(?i:my) (?P<rel>" + KIN + r") (?i:is|are) (?i:now )?(?P<name>" + NAME + r"(?: (?i:and) " + NAME + ")*)")
def _kin_is(b, s, m, when):
    b.rel(s, m.group("rel"), m.group("name"), when=when)


@pattern(r"(?i:my) (?P<rel>" + KIN + r")\b.*")
def _kin_unnamed(b, s, m, when):
    return None  # "My sister is a doctor": no name, no entity to attach it to


@pattern(r"I (?:(?i:also) )?(?i:work with|work alongside) (?P<v>.+)")
def _colleague(b, s, m, when):
    b.rel(s, "colleague", m.group("v"), when=when)


@pattern(r"I (?i:no longer|don't) (?i:work with) (?P<v>.+?)(?: (?i:any ?more))?")
def _colleague_negated(b, s, m, when):
    b.rel(s, "colleague", m.group("v"), negated=True, when=when)


@pattern(r"I (?i:report to) (?P<v>.+)")
def _reports_to(b, s, m, when):
    b.rel(s, "manager", m.group("v"), when=when)


@pattern(r"(?i:my) (?P<key>(?:\w+ ){0,3}?\w+) (?i:is no longer|isn't|is not|are no longer|aren't) "
         r"(?P<v>.+?)(?: (?i:any ?more))?")
def _my_key_negated(b, s, m, when):
    b.attr(s, _key_words(m.group("key")), m.group("v"), negated=True, when=when)


@pattern(r"(?i:my) (?P<key>(?:\w+ ){0,3}?\w+) (?i:is|are|was) (?:(?i:now) )?(?P<v>.+)")
def _my_key(b, s, m, when):
    """"My email is a@b.c"; "My boat is called Wanda": the name is the value, not "called Wanda"."""
    key = _key_words(m.group("key"))
    b.attr(s, key, re.sub(r"^(?i:on|in|called|named) ", "", m.group("v")), when=when)


def _key_words(words: str) -> str:
    key = vocab.normalise_key(words)
    if key.startswith("favourite_") or key in vocab.KEYS:
        return key
    return vocab.normalise_key(re.sub(r"^(?:current|new|main)\s+", "", words.lower()))


@pattern(r"I(?:'ve)? (?P<verb>[a-z]+) (?P<obj>.+)|I(?:'ve)? (?P<verb2>[a-z]+)")
def _action(b, s, m, when):
    verb = m.group("verb") or m.group("verb2")
    obj = m.group("obj")
    past = verb.endswith("ed") or verb in IRREGULAR_PAST
    infinitive = re.match(r"to (?!the |a |an |my )[a-z]", obj or "") and verb not in MOTION_PAST
    if not past or verb in STATIVE_PAST or infinitive:
        return False
    obj_clean = _strip_article(re.sub(r"^(?:to|at|in|on|with|for|from|into)\s+", "", obj or "", flags=re.I))
    actor = b.entity(s, b.type_of(s))
    tail = f" {when[0].lower()}{when[1:]}" if when else ""
    summary = f"{self_display_name(b.speaker_name) if s == SELF_NAME else actor} {verb}{' ' + obj if obj else ''}{tail}"
    b.out.actions.append(ExtractedAction(
        actor=actor, actor_type=b.type_of(s), verb=verb, object=_clean(obj_clean) or None,
        occurred_at=when, summary=summary.strip(), category="context"))


# ---------------------------------------------------------------------------
# Instructions and third-person clauses
# ---------------------------------------------------------------------------

_INSTRUCTION = re.compile(
    r"^(?P<lead>(?i:(?:please )?(?:always|never|don't ever|do not ever|don't|do not)|"
    r"(?:please )?(?:from now on|going forward|in future|in the future)),?) (?P<rest>.+)$")
_SUBJECT_START = re.compile(r"^(?:I|I'm|I've|I'd|My|We|Our|" + NAME + r" (?:is|are|works|lives|has))\b")


def instruction_label(text: str) -> str:
    """What the instruction governs: ``form_of_address``, ``language`` (only "in <a
    language's name>"), a topic of ``INSTRUCTION_TOPICS`` (``response_length``, ``format``,
    ``tone``), else a slug of the directive."""
    if re.search(r"\bcall me\b", text, re.I):
        return "form_of_address"
    language = re.search(r"\b(?:answer|respond|reply|write|speak|talk|communicate)\w*\b.*\bin (?P<lang>[A-Za-z]+)",
                         text, re.I)
    if language and language.group("lang").title() in LANGUAGE_NAMES:
        return "language"
    for label, words in INSTRUCTION_TOPICS:
        if re.search(words, text, re.I):
            return label
    text = re.sub(r"\b(?:don't|do not)(?: ever)?\b", "never", text.lower())
    words = [w for w in re.findall(r"[a-z0-9]+", text) if w not in LABEL_STOP_WORDS]
    words = [w for w in words if w not in INSTRUCTION_LEAD_WORDS]
    return "_".join(words[:3]) or "instruction"


def _instruction(b: _Builder, clause: str, sentence: str) -> bool:
    m = _INSTRUCTION.match(clause)
    if m is None:
        return False
    rest = m.group("rest")
    lead = m.group("lead").lower()
    if re.match(r"(?:please )?(?:from now on|going forward|in (?:the )?future)", lead) and _SUBJECT_START.match(rest):
        return False  # "From now on I work at Globex": a fact, not an instruction
    description = sentence.strip()
    if not description.endswith((".", "!")):
        description += "."
    b.out.instructions.append(ExtractedInstruction(label=instruction_label(clause), description=description))
    _run_patterns(b, SELF_NAME, rest, None)  # "From now on call me Al": also nickname = Al
    return True


_THIRD_PERSON_VERB = re.compile(
    r"^(?:(?:now|no longer|currently|still|also|really|recently|just|never) )*"
    r"(?:is|isn't|was|has|hasn't|does|doesn't|\w+s|\w+ed|" + "|".join(IRREGULAR_PAST) + r")\b")
_FIRST_PERSON = {"is": "I'm", "isn't": "I'm not", "is not": "I'm not", "was": "I was", "has": "I've",
                 "hasn't": "I haven't", "does": "I do", "doesn't": "I don't", "does not": "I do not"}


def _to_first_person(predicate: str) -> str:
    """``"no longer works at Acme"`` -> ``"I no longer work at Acme"``."""
    m = re.match(r"^(?P<adv>(?:(?:now|no longer|currently|still|also|really|recently|just|never) )*)"
                 r"(?P<verb>does not|is not|[\w']+)(?P<rest>.*)$", predicate)
    if m is None:
        return "I " + predicate
    adv, verb, rest = m.group("adv"), m.group("verb"), m.group("rest")
    if verb in _FIRST_PERSON:
        first = _FIRST_PERSON[verb]
        return f"{first.split()[0]} {adv}{' '.join(first.split()[1:])}{rest}".replace("  ", " ").replace(" ,", ",")
    if verb.endswith("ies"):
        verb = verb[:-3] + "y"
    elif re.search(r"(?:sh|ch|x|ss|o)es$", verb):
        verb = verb[:-2]
    elif verb.endswith("s") and not verb.endswith("ss"):
        verb = verb[:-1]
    return f"I {adv}{verb}{rest}"


_VERBS = ("work|works|live|lives|like|likes|love|loves|enjoy|enjoys|hate|hates|speak|speaks|prefer|prefers|"
          "moved|joined|left|have|has|am|is|'m")
_AND_VERB = re.compile(r",?\s+and\s+(?:(?:he|she)\s+)?(?=(?:" + _VERBS + r")\b)")


def _predicates(rest: str) -> list[str]:
    """``"lives in Oslo and works at Acme"`` -> two predicates (split only before known verbs)."""
    return [p.strip(" ,") for p in _AND_VERB.split(rest.strip(" ,")) if p.strip(" ,")]


def _third_person(b: _Builder, subject: str, predicate: str, when: str | None) -> bool:
    if not _THIRD_PERSON_VERB.match(predicate):
        return False
    m = re.fullmatch(r"(?:is|'s) (?:(?i:now) )?my (?P<rel>" + KIN + ")", predicate)
    if m:  # "Bob is my manager": the relation is the speaker's
        b.rel(SELF_NAME, m.group("rel"), subject, when=when)
        return True
    m = re.fullmatch(r"(?:is no longer|isn't|is not) my (?P<rel>" + KIN + r")(?: (?i:any ?more))?", predicate)
    if m:
        b.rel(SELF_NAME, m.group("rel"), subject, negated=True, when=when)
        return True
    return _run_timed(b, subject, _to_first_person(predicate), when)


def _run_patterns(b: _Builder, subject: str, clause: str, when: str | None) -> bool:
    return any(p(b, subject, clause, when) for p in PATTERNS)


def _run_timed(b: _Builder, subject: str, clause: str, when: str | None) -> bool:
    """Run the patterns with the clause's own trailing time phrase cut off, unless the
    sentence already gave one; if nothing matches that way the phrase may be the value
    ("My birthday is on 5 May"), so try the whole clause too."""
    if when is None:
        core, phrase = trailing_time_phrase(clause)
        if phrase and _run_patterns(b, subject, core, phrase):
            return True
    return _run_patterns(b, subject, clause, when)


def _clause(b: _Builder, clause: str, sentence: str) -> None:
    clause = _FACT_LEAD.sub("", _FILLER.sub("", clause)).strip()
    hedged = _HEDGE.match(clause)
    b.confidence = HEDGED_CONFIDENCE if hedged else PLAIN_CONFIDENCE
    clause = clause[hedged.end():] if hedged else clause
    if not clause or _instruction(b, clause, sentence):
        return
    rest, when = leading_time_phrase(clause)  # "Yesterday I bought a bike": for every predicate
    _subject_clause(b, rest, when)


_SELF_START = re.compile(r"^(?:I|I'm|I've|I'd|(?i:you can call me|please call me|call me))\b")


def _subject_clause(b: _Builder, clause: str, when: str | None) -> bool:
    clause = re.sub(r"^(I(?:'m|'ve)?) (?:" + ADVERBS + r" )+", r"\1 ", clause)
    if _SELF_START.match(clause):  # "I live in Paris and work at Acme": one subject, two predicates
        parts = _predicates(clause)
        results = [_run_timed(b, SELF_NAME, parts[0], when)]
        results += [_run_timed(b, SELF_NAME, _self_continuation(p), when) for p in parts[1:]]
        return any(results)
    if re.match(r"^(?:My|my)\b", clause):  # "and ..." after "My sister Emma" belongs to Emma
        return _run_timed(b, SELF_NAME, clause, when)
    pronoun = re.match(r"^(?:She|He|she|he)(?P<poss>'s)? (?P<rest>.+)$", clause)
    if pronoun and b.last_person:  # "She is based in Pune": the last person named
        clause = b.last_person + (pronoun.group("poss") or "") + " " + pronoun.group("rest")
    m = re.match(r"^(?P<name>" + NAME + r")(?P<poss>'s)? (?P<rest>.+)$", clause)
    if m is None or m.group("name").split()[0] in SENTENCE_START_NOT_NAMES:
        return False
    name = b.canon(m.group("name"))
    if m.group("poss"):
        return _run_timed(b, name, "my " + m.group("rest"), when)
    if not _named_subject(b, name, m.group("rest")):
        return False
    results = [_third_person(b, name, p, when) for p in _predicates(m.group("rest"))]
    return any(results)


def _named_subject(b: _Builder, name: str, rest: str) -> bool:
    """Whether a capitalised first word is someone: a known entity, a name of several words,
    or one whose predicate says something of a person ("Bob works at Acme", "Ann ran a
    marathon"). "Message received" and "Next run in 24h" are not: a capital at the start
    of a sentence is no name when a bare verb with no object follows it."""
    if name.casefold() in b.known or name.casefold() in b.types or " " in name:
        return True
    verb, _, obj = rest.partition(" ")
    past_only = verb.endswith("ed") or verb in IRREGULAR_PAST
    return not (past_only and (not obj or re.match(r"(?i:in|at|on|for|by|to|from|with|within|after|every)\b", obj)))


def _self_continuation(predicate: str) -> str:
    """``"work at Acme"`` after "I live in Paris and" -> ``"I work at Acme"``."""
    if predicate.startswith(("am ", "'m ")):
        return "I'm " + predicate.split(" ", 1)[1]
    return "I " + predicate


def offline_extract(text: str, *, speaker_name: str | None = None,
                    known_entities: Iterable[str] = ()) -> ExtractionOutput:
    """Extract what ``text`` states, by the patterns in the module docstring."""
    known = {k.strip().casefold(): k.strip() for k in known_entities if k and k.strip()}
    b = _Builder(speaker_name=speaker_name, known=known)
    for sentence in sentences(_user_lines(text or "")):
        if is_question(sentence):
            continue
        for clause in clauses(sentence):
            _clause(b, clause, sentence)
    return b.out


_ROLE_LINE = re.compile(r"^(?P<role>user|assistant|system|tool):[ \t]*", re.IGNORECASE)


def _user_lines(text: str) -> str:
    """A whole conversation ("user: ...\nassistant: ..." lines, as a batch's
    ``extract: whole_conversation`` sends it): the user's lines without their role, the
    others left out (what the assistant says is not the user's statement). Text without role
    lines is returned as it is."""
    lines = text.splitlines()
    if not any(_ROLE_LINE.match(line) for line in lines):
        return text
    kept = []
    for line in lines:
        role = _ROLE_LINE.match(line)
        if role is None:
            kept.append(line)
        elif role.group("role").lower() == "user":
            kept.append(line[role.end():])
    return "\n".join(kept)


# ---------------------------------------------------------------------------
# Offline language model hook
# ---------------------------------------------------------------------------


def extraction_handler(system: str, user: str) -> ExtractionOutput:
    """``structured`` handler: take the turn from the prompt's JSON data block and extract it."""
    turn = read_turn(user)
    if turn.passages is None:
        return offline_extract(turn.text, speaker_name=turn.speaker_name, known_entities=turn.known_entities)
    # A document window: each passage as its own turn, every item naming its passage, as the
    # window prompt asks of a real model.
    merged = ExtractionOutput()
    for index, passage in enumerate(turn.passages):
        part = offline_extract(passage, speaker_name=turn.speaker_name, known_entities=turn.known_entities)
        for name in ExtractionOutput.model_fields:
            getattr(merged, name).extend(item.model_copy(update={"passage": index}) for item in getattr(part, name))
    return merged


"""What retrieval returns and the pure rules over its units and hits: ``Hit`` and
``RetrievalResult``, the hit kinds a query returns, how a unit reads as a hit, how tier-1
facts are ordered, and what the named entities' facts say of the turns that stated them
(``TurnFacts``). Nothing here reads a store or an index."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_memory.kernel import timeutil
from agent_memory.kernel.ids import ENTITY_TYPES
from agent_memory.models.facts import Entity
from agent_memory.ports import SearchUnit
from agent_memory.ranking.encoding import instant
from agent_memory.rules.self_entity import SELF_ENTITY_ID
from agent_memory.services.retrieval.query_analysis import STOPWORDS, QueryAnalysis

if TYPE_CHECKING:
    pass


#: Hit kinds a query returns unless ``include`` says otherwise. ``entity`` hits (a profile
#: line per named entity) come only when asked for or in ``graph`` mode; thread turns are
#: served by the threads area, whose reader lists and audit rules retrieval does not apply.
DEFAULT_KINDS = ("turn", "attribute", "relation", "action", "instruction", "chunk")


ALL_KINDS = (*DEFAULT_KINDS, "entity")


FACT_KINDS = ("attribute", "relation")


PASSAGE_KINDS = ("turn", "chunk")  # what was said or written, as against what was learned from it


@dataclass
class Hit:
    """One retrieved item. ``source_ids`` are the records it derives from (a fact's source
    turns, a chunk's document); ``metadata`` carries kind-specific details (a chunk's
    ``documentId``/``documentTitle``/``positionPercent``, a turn's ``seq``/``speaker``, a
    fact's ``entity``/``key``/``value``). ``score`` is relative (higher is better)."""

    id: str
    kind: str
    text: str
    score: float
    occurred_at: str | None = None
    role: str | None = None
    session_id: str | None = None
    source_ids: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    structured: bool = False  # found by a tier-1 structured read
    # A turn whose facts were all superseded by the query's instant: when the last of them
    # was (the context block says so, so a model does not take it as current).
    superseded_at: str | None = None


@dataclass
class RetrievalResult:
    """``tier``: 1 when the best hit is a tier-1 structured read (an entity the query names
    has a current fact that answers it), else 3 (search results; a chat turn needs the model).
    Tier 2 is chat's response cache and never comes from retrieval."""

    tier: int
    hits: list[Hit]
    query_ms: float
    trace: dict[str, Any] = field(default_factory=dict)
    # ``search-unavailable`` when the index failed and the answer is the record store's alone
    # (tier-1 facts of the entities the query names); ``None`` for a full answer.
    degraded: str | None = None


@dataclass
class NamedEntity:
    id: str
    name: str
    stored: Entity | None = None  # None: only a label (a speaker never extracted as an entity)


_ECHO_WORD = re.compile(r"[^\W_]{3,}")


_SUFFIXES = ("ing", "ed", "es", "s")


@functools.lru_cache(maxsize=16384)  # the same candidates' texts come back query after query
def echo_words(text: str) -> frozenset[str]:
    """The content words of ``text``, crudely stemmed ("returned" and "returns" meet
    "return"), for telling which statement or passage an echo repeats."""
    out = set()
    for word in _ECHO_WORD.findall((text or "").lower()):
        if word in STOPWORDS:
            continue
        for suffix in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
        out.add(word)
    return frozenset(out)


@dataclass
class TurnFacts:
    """What the named entities' facts (closed ones included) say of the turns that stated
    them, at the query's instant: ``sources``, every turn some fact came from; ``stale``, the
    turns none of whose facts holds at that instant (superseded, or not yet valid under
    ``asOf``), each with when the last of its facts was superseded (``None``: none was, they
    are not valid yet); ``supports``, the turns that state a value holding at that instant of a
    key or label the question asks for."""

    sources: set[str] = field(default_factory=set)
    stale: dict[str, str | None] = field(default_factory=dict)
    supports: set[str] = field(default_factory=set)
    _holds: set[str] = field(default_factory=set)

    def add(self, unit: SearchUnit, instant_iso: str, asked: frozenset[str]) -> None:
        start = _normalised(unit.valid_from) if unit.valid_from else None
        end = _normalised(unit.valid_until) if unit.valid_until else None
        holds = (start is None or start <= instant_iso) and (end is None or end > instant_iso)
        for turn in unit.source_ids:
            self.sources.add(turn)
            if holds:
                self._holds.add(turn)
                self.stale.pop(turn, None)
                if unit_slot(unit) in asked:
                    self.supports.add(turn)
            elif turn not in self._holds:
                closed = end if end is not None and end <= instant_iso else None
                before = self.stale.get(turn)
                self.stale[turn] = max(x for x in (before, closed) if x) if (before or closed) else None


# A named entity's facts are read on every query that names it: their windows parse once.
_normalised = functools.lru_cache(maxsize=65536)(timeutil.normalise)


def unit_slot(unit: SearchUnit) -> str | None:
    return unit.metadata.get("label") if unit.kind == "relation" else unit.metadata.get("key")


def expand_kinds(include: Sequence[str]) -> list[str]:
    """``include`` as hit kinds: ``facts`` -> ``FACT_KINDS``, ``passages`` -> ``PASSAGE_KINDS``."""
    out: list[str] = []
    for name in include:
        out += FACT_KINDS if name == "facts" else PASSAGE_KINDS if name == "passages" else [name]
    unknown = [x for x in out if x not in ALL_KINDS]
    if unknown:
        raise ValueError(f"unknown hit kinds {unknown} (known: {', '.join(ALL_KINDS)}, facts, passages)")
    return list(dict.fromkeys(out))


def hit_text(unit: SearchUnit) -> str:
    """The text a unit is shown, cited and reranked as: another speaker's turn names them
    (the user's own turns need no name). The local reranker stores token vectors of this text
    at write time (runtime: ``PrecomputingIndex``)."""
    speaker = unit.metadata.get("speaker") if unit.kind == "turn" else None
    if speaker and SELF_ENTITY_ID not in unit.entity_ids:
        return f"{speaker}: {unit.text}"
    return unit.text


def seed_order(unit: SearchUnit, qa: QueryAnalysis) -> tuple[float, ...]:
    """Tier-1 facts: the key the question asks about (``where`` -> location), then words
    shared with the query, then current before closed, then newest."""
    key = unit.metadata.get("key") or unit.metadata.get("label") or ""
    hinted = 1.0 if key in qa.key_hints else 0.0
    words, prefixes = _content_words(unit.text)
    overlap = sum(1 for w in qa.content_words if w in words or (len(w) > 4 and w[:5] in prefixes))
    return (-hinted, -overlap, 0.0 if unit.valid_until is None else 1.0, -_epoch(unit.valid_from), unit.id)


def subject_name(value: str) -> str:
    """``entity:person/alice`` / ``person/alice`` -> ``alice``; a plain name stays."""
    body = value.removeprefix("entity:")
    etype, sep, name = body.partition("/")
    return name if sep and etype in ENTITY_TYPES else value


@functools.lru_cache(maxsize=65536)
def _content_words(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """A text's content words, and the 5-letter prefixes of those that long (loose match)."""
    words = frozenset(w for w in re.findall(r"\w+", text.lower()) if w not in STOPWORDS)
    return words, frozenset(w[:5] for w in words if len(w) >= 5)


def _epoch(value: str | None) -> float:
    parsed = instant(value) if value else None
    return parsed.timestamp() if parsed else 0.0

"""RetrievalService: ranked, cited memory for a query (/query, /context, /chat).

Usage (in-process; ``runtime.retrieval`` is one instance)::

    result = runtime.retrieval.retrieve(ctx, "Where does Alice work?", k=8,
                                        exclude_ids=[...transcript window turn ids...])
    for hit in result.hits:  # best first
        hit.id, hit.kind, hit.text, hit.score, hit.occurred_at, hit.role, hit.metadata

How a query is answered (each step is a reason, measured on LoCoMo in ``bench/locomo.py``):

1. **Analysis** (``query_analysis``): names, "I/me/my", statement form, time window.
2. **Tier 1, structured reads**: entities the query names (matched against the context's
   entity names; the self entity for "I/me/my"; ``subject`` when given) have their current
   attributes and relations read from the record store. They are candidates whatever the
   wording: "Where do I live?" shares no word with "User location: Berlin".
3. **Search legs** (the ``SearchIndex``; every access rule is a ``SearchFilter`` applied
   inside the search, before any top-k cut): BM25 over the whole query; vectors over its
   statement form; and, for each named entity, a vector leg restricted to that entity's
   units plus the BM25 leg's hits about that entity. Most answers about a person are what
   that person said or what is known about them, and restricting inside the search finds
   them even when the query's words are common.
4. **Ranking** (``agent_memory.ranking``): weighted reciprocal rank over the legs plus each
   leg's own score, then the ranking rules (neighbour share, time window, what a unit is,
   session prior) and, with a ``models.reranker`` in hybrid mode, reranking of the best fused
   candidates with a tier-1 answer kept first.

This module decides what to read and which legs to run; how they are weighed is the mode's
recipe (``ranking.recipes.RECIPES``), data rather than constants in code.

Visibility (context, partition, read region, reader lists, validity / ``as_of``, labels,
session, kinds, exclusions) is always enforced by the index filter or, for structured
reads, by ``ranking.visibility.unit_visible`` with the same semantics; nothing is filtered after a cut.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from agent_memory.access import scopes
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import fan_out, timeutil
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.ids import ENTITY_TYPES, entity_id, normalise_entity_name, split_entity_id
from agent_memory.models.facts import Entity
from agent_memory.ports import QueryPrefetch, RowLeg, RowRanking, SearchFilter, SearchUnavailable, SearchUnit
from agent_memory.ranking.fusion import STRUCTURED_LEG, Leg, candidate_depth
from agent_memory.ranking.rank import QueryFacts, rank
from agent_memory.ranking.recipes import RECIPES, RETRIEVAL_MODES, SearchRecipe
from agent_memory.ranking.rerank import rerank
from agent_memory.ranking.rows import ranking_from_units, ranking_with_units
from agent_memory.ranking.rules import echoes_below_sources, evidence_factor
from agent_memory.ranking.visibility import unit_visible
from agent_memory.rules import geo
from agent_memory.rules.questions import PROFILE_SELF, asks_only
from agent_memory.rules.self_entity import SELF_ENTITY_ID
from agent_memory.services.facts.profile import attribute_section, relation_section
from agent_memory.services.operations.projection import build_units
from agent_memory.services.retrieval.hits import (
    ALL_KINDS,
    DEFAULT_KINDS,
    PASSAGE_KINDS,
    Hit,
    NamedEntity,
    RetrievalResult,
    TurnFacts,
    echo_words,
    expand_kinds,
    hit_text,
    seed_order,
    subject_name,
)
from agent_memory.services.retrieval.query_analysis import QueryAnalysis, analyse
from agent_memory.services.retrieval.read_cache import MISSING, ReadCache

if TYPE_CHECKING:
    from agent_memory.ports import Record, RecordStore, Reranker, SearchIndex

log = logging.getLogger("agent_memory.retrieval")

# What a degraded answer says it is (the trace's ``degraded``, the ``X-Memory-Degraded`` header).
DEGRADED_SEARCH_UNAVAILABLE = "search-unavailable"
# With search down, the recent turns read from the store stand in for the search legs.
RECENT_TURNS_LEG = "recent-turns"
RECENT_SESSIONS = 3  # newest sessions read
RECENT_TURNS = 50  # newest turns read per session (and the most kept)
_WORD = re.compile(r"[a-z0-9][\w'\-]*")  # query_analysis's words, on lower-cased text

SOURCE_DOCUMENTS = 5000  # documents read to resolve a ``source`` filter
LOCATED_ATTRIBUTES = 20_000  # current attributes read to resolve a ``location`` filter
SEED_ROWS = 500  # rows of one entity's attribute or relation history read for tier 1
ENTITY_PROFILE_ATTRIBUTES = 8
MAX_NAME_CHARS = 128


class WriteReads(Protocol):
    """Whole partitions read once for a write (``services.facts.repository.PartitionReads``)."""

    def rows(self, pk: str) -> list[Record]: ...

    def complete(self, pk: str) -> dict[str, Record] | None: ...


@dataclass(frozen=True)
class Narrowing:
    """What a request narrows its search to besides the caller's read region, as plain ids:
    the hit kinds left; the documents a ``source`` or ``documents`` filter admits (``None``:
    any); the entities an ``area`` holds (``None``: any)."""

    kinds: list[str]
    source_ids: list[str] | None = None
    any_labels: list[str] | None = None


class RetrievalService:
    def __init__(self, store: RecordStore, search: SearchIndex | None, reranker: Reranker | None = None, *,
                 settle: Callable[[str], bool] | None = None):
        self._store = store
        self._search = search
        self._reranker = reranker
        # Read-your-writes where projection runs after the commit (``Projector.settle``): a
        # search first waits, within a bound, for its context's projections queued before it.
        self._settle = settle
        self._reads = ReadCache()
        # Checked once: a runtime-checkable Protocol's isinstance costs tens of microseconds.
        self._prefetch = search if isinstance(search, QueryPrefetch) else None

    def await_projection(self, context_id: str) -> bool:
        """Wait (bounded) until the context's writes committed before now are searchable;
        False when some are not yet (the read then answers with what is searchable)."""
        return self._settle(context_id) if self._settle is not None else True

    def retrieve(self, ctx: RequestContext, query: str, *, k: int = 10, mode: str = "hybrid",
                 as_of: str | None = None, session_id: str | None = None, labels: Sequence[str] | None = None,
                 exclude_ids: Iterable[str] = (), include: Sequence[str] | None = None,
                 subject: str | None = None, reads: WriteReads | None = None,
                 valid_window: tuple[str | None, str | None] | None = None,
                 lens: Sequence[Sequence[str]] | None = None, scope_view: str = "strict",
                 source: str | None = None, area: geo.Area | None = None,
                 documents: Sequence[str] | None = None) -> RetrievalResult:
        """Best ``k`` hits for ``query`` that ``ctx`` may read.

        - ``mode``: ``hybrid`` | ``bm25`` | ``vector`` | ``graph`` (structured reads only).
        - ``as_of``: RFC 3339; facts valid at that instant instead of current ones (the state
          at one instant: a superseded value whose window holds it comes back, its successor
          does not). ``/query``'s ``atInstant`` and ``asOf`` both land here.
        - ``valid_window``: ``(start, end)`` (either may be ``None``): facts whose validity
          overlaps it, closed ones included, instead of current ones.
        - ``session_id``: only units of that session (turns, and facts learned in it).
        - ``labels``: only units carrying every one of these labels.
        - ``exclude_ids``: unit ids never returned (chat passes its transcript window).
        - ``include``: hit kinds to return (``DEFAULT_KINDS`` when omitted); ``facts`` stands
          for ``FACT_KINDS``, ``passages`` for ``PASSAGE_KINDS``.
        - ``subject``: an entity (``person/alice``, ``entity:person/alice`` or a name) the
          caller is asking about; treated as named by the query.
        - ``reads``: the partition reads of the write this retrieval precedes (chat's user
          turn): tier 1 takes the entity partitions from them, and the write reuses what
          was read here (one query per partition for both).
        - ``lens`` / ``scope_view``: a narrowing of the caller's read region in DNF
          (``access.scopes.lens_admits``: ``strict``, ``merged``, ``crossTeam``); never wider.
        - ``source``: ``turn`` or ``chunk`` (hits of that kind), else a document ``source``:
          the chunks of the documents the caller may read that carry it.
        - ``area``: only hits about an entity whose current ``lat``/``lng`` attributes lie in it
          (``rules.geo``): its facts and profile, and turns and chunks that mention it.
        - ``documents``: only chunks of these documents (``POST /documents/query``'s metadata
          filter, resolved to ids by ``retrieval/corpus.py``); other kinds are dropped.
        """
        started = time.perf_counter()
        _, kinds = _recipe_and_kinds(mode, include, scope_view)
        narrowing = None
        if k > 0 and (source is not None or area is not None or documents is not None):
            narrowing = self.narrowing(ctx, kinds, source=source, area=area, documents=documents)
        result = self.retrieve_resolved(ctx, query, k=k, mode=mode, as_of=as_of, session_id=session_id,
                                        labels=labels, exclude_ids=exclude_ids, include=include, subject=subject,
                                        reads=reads, valid_window=valid_window, lens=lens, scope_view=scope_view,
                                        narrowing=narrowing)
        if k > 0:
            result.query_ms = (time.perf_counter() - started) * 1000
        return result

    def narrowing(self, ctx: RequestContext, kinds: Sequence[str], *, source: str | None = None,
                  area: geo.Area | None = None, documents: Sequence[str] | None = None) -> Narrowing:
        """What ``source``, ``area`` and ``documents`` (``retrieve``) narrow ``kinds`` to, resolved
        once to plain ids through what ``ctx`` may read; the search then runs on those ids."""
        kinds = list(kinds)
        source_ids: list[str] | None = None
        if source is not None:
            if source in PASSAGE_KINDS:
                kinds = [x for x in kinds if x == source]
            else:
                kinds = [x for x in kinds if x == "chunk"]
                source_ids = self._documents_from(ctx, source) if kinds else []
        if documents is not None:
            kinds = [x for x in kinds if x == "chunk"]
            wanted = list(dict.fromkeys(documents))
            source_ids = wanted if source_ids is None else [d for d in source_ids if d in set(wanted)]
        any_labels = self._entities_in(ctx, area) if area is not None else None
        return Narrowing(kinds=kinds, source_ids=source_ids, any_labels=any_labels)

    def retrieve_resolved(self, ctx: RequestContext, query: str, *, k: int = 10, mode: str = "hybrid",
                          as_of: str | None = None, session_id: str | None = None,
                          labels: Sequence[str] | None = None, exclude_ids: Iterable[str] = (),
                          include: Sequence[str] | None = None, subject: str | None = None,
                          reads: WriteReads | None = None,
                          valid_window: tuple[str | None, str | None] | None = None,
                          lens: Sequence[Sequence[str]] | None = None, scope_view: str = "strict",
                          narrowing: Narrowing | None = None) -> RetrievalResult:
        """``retrieve`` once its request's narrowing (``narrowing``) is resolved: the pipeline
        (analysis, tier-1 reads, search legs, ranking, rerank, evidence order) on plain values.
        Chat's turns call it directly: they narrow by nothing but the window they exclude."""
        started = time.perf_counter()
        recipe, kinds = _recipe_and_kinds(mode, include, scope_view)
        if k <= 0:
            return RetrievalResult(tier=3, hits=[], query_ms=0.0, trace={"mode": mode})
        source_ids: list[str] | None = None
        any_labels: list[str] | None = None
        if narrowing is not None:
            kinds, source_ids, any_labels = list(narrowing.kinds), narrowing.source_ids, narrowing.any_labels
        anchor = timeutil.parse(as_of) if as_of else timeutil.now()
        qa = analyse(query, anchor=anchor)
        flt = SearchFilter(
            context_id=ctx.context_id, partition=ctx.partition,
            read_region=list(ctx.read_region) if ctx.read_region is not None else None,
            # No admin bypass of reader lists here: bypasses must be audited where they happen.
            principals=ctx.principals, admin=False, as_of=as_of,
            kinds=[x for x in kinds if x != "entity"], session_id=session_id,
            labels=list(labels) if labels else None, exclude_ids=list(dict.fromkeys(exclude_ids)),
            valid_window=tuple(valid_window) if valid_window else None,  # type: ignore[arg-type]
            lens=[list(c) for c in lens] if lens else None, lens_view=scope_view,
            any_labels=any_labels, source_ids=source_ids)
        if (flt.any_labels is not None and not flt.any_labels) or (source_ids is not None and not source_ids):
            kinds, flt.kinds = [], []  # nothing can match: no entity in the area, no such document
        if flt.kinds and (recipe.vector or recipe.entity_vector) and self._prefetch is not None:
            # The query's embedding runs while tier 1 reads the store (``_search_legs`` embeds
            # this same text): with MiniLM most of a search, with a remote model a round trip.
            self._prefetch.prefetch_query(qa.content or qa.text)
        entities = self.named_entities(ctx, qa, subject, reads)
        if flt.any_labels is not None:
            entities = [e for e in entities if e.id in flt.any_labels]
        legs: list[Leg] = []
        seeds: list[SearchUnit] = []
        said = TurnFacts()
        structured = bool(recipe.structured and (flt.kinds or "entity" in kinds))
        if structured:
            # Next to search results, a named entity's fact is a candidate only when it bears
            # on the question (its key is asked for, or it shares a content word): a person's
            # every fact would otherwise crowd out what answers the question.
            # A profile question ("What do you know about me?") wants every current fact.
            seeds = self._seeds(ctx, [e for e in entities if e.stored is not None], flt, qa,
                                with_profiles="entity" in kinds,
                                bearing_only=bool(recipe.bm25 or recipe.vector) and not qa.profile_of,
                                reads=reads, said=said)
        profiled = profiled_entity(qa, entities) if seeds else None
        ranking = ranking_from_units([])
        degraded: str | None = None
        # False: the bound passed with some of this context's writes not yet searchable.
        settled = True
        if flt.kinds:
            settled = self.await_projection(ctx.context_id)
            depth = candidate_depth(k, recipe.min_depth, recipe.depth_per_k)
            try:
                ranking, legs = self._search_legs(recipe, qa, flt, entities, depth)
            except SearchUnavailable as exc:
                # Answer from what the store knows rather than fail the read.
                log.warning("search unavailable (%s); answering from the record store", exc.reason)
                degraded = DEGRADED_SEARCH_UNAVAILABLE
        recent: list[SearchUnit] = []
        if degraded is not None and "turn" in (flt.kinds or []):
            recent = self._recent_turns(ctx, flt, qa)
        # Candidates are columns (``RowRanking``): only the final k are decoded.
        ranking, seed_rows = ranking_with_units(ranking, seeds)
        if recent:
            # Search is down: the recent turns that share a content word with the question stand
            # in for the search legs (best overlap first, then newest).
            ranking, recent_rows = ranking_with_units(ranking, recent)
            legs.append(Leg(RECENT_TURNS_LEG, 1.0, recent_rows, np.linspace(1.0, 0.5, recent_rows.size)))
        if structured:
            # A fact read for two named entities (a relation between them) counts once.
            seed_rows = np.asarray(list(dict.fromkeys(seed_rows.tolist())), dtype=np.int64)
            # A tier-1 read is an exact match of what the query names and asks: every seed
            # takes the full score share of its leg, like a search leg's clear winner.
            legs.insert(0, Leg(STRUCTURED_LEG, recipe.structured, seed_rows, np.ones(seed_rows.size)))
        reranker = self._reranker if recipe.rerank > 0 else None
        facts = QueryFacts(qa.key_hints, (qa.time.start, qa.time.end) if qa.time else None,
                           stale=frozenset(said.stale), supports=frozenset(said.supports))
        # Room below k: the evidence rule (questions ranked below what answers them) runs on
        # decoded hits, and a hit it lowers leaves its place to the next one.
        pool = max(k, recipe.rerank_depth) if reranker else k + max(recipe.evidence_margin, 0)
        if profiled:
            pool += len(seeds)  # every fact of the profiled entity is decoded
        ranked, candidates = rank(recipe, ranking, legs, pool, facts)
        seed_ids = {u.id for u in seeds}
        units = ranking.decode([i for i, _ in ranked])
        hits = [self._hit(unit, score, unit.id in seed_ids)
                for unit, (_, score) in zip(units, ranked, strict=True) if unit is not None]
        for h in hits:
            if h.id in said.stale:
                h.superseded_at = said.stale[h.id]
        answer = tier1_answer(hits, qa)
        trace = {
            "mode": mode, "entities": [e.id for e in entities],
            "legs": {leg.name: len(leg.rows) for leg in legs}, "candidates": candidates,
            "vectorQuery": qa.content, "timeWindow": qa.time.to_wire() if qa.time else None,
            # The keys and labels the question asks for, and the one tier 1 answered with.
            "askedKeys": sorted(qa.key_hints), "tier1Key": slot_of(hits[0]) if answer else None,
        }
        if said.stale:
            trace["superseded"] = {uid: when for uid, when in said.stale.items() if when}
        if reranker is not None:
            # A tier-1 answer (the current fact of the key the query asks for) stays first.
            order, trace["rerank"] = rerank(reranker, query, hits, weight=recipe.rerank,
                                            reply_share=recipe.reply_share, context_share=recipe.context_share,
                                            power=recipe.rerank_power, pin_first=answer)
            hits = [dataclasses.replace(hits[i], score=score) for i, score in order]
        hits = self._evidence_order(recipe, hits, said, pinned=answer, reranked=reranker is not None)
        if profiled:
            hits = profile_first(hits, profiled)
        hits = hits[:k]
        answer = tier1_answer(hits, qa)
        if profiled and hits and hit_is_about(hits[0], profiled):
            answer, trace["profileOf"] = True, profiled
        tier = 1 if answer else 3
        elapsed = (time.perf_counter() - started) * 1000
        if degraded is not None:
            trace["degraded"] = degraded
        if not settled:
            trace["projectionPending"] = True
        return RetrievalResult(tier=tier, hits=hits, query_ms=elapsed, trace=trace, degraded=degraded)

    @staticmethod
    def _evidence_order(recipe: SearchRecipe, hits: list[Hit], said: TurnFacts, *, pinned: bool,
                        reranked: bool) -> list[Hit]:
        """``hits`` reordered by ``rules.evidence_factor``: a user turn that only asks (and
        states no fact) below statements and chunks that match as well. After a reranker
        (which scored the texts again) assistant replies and superseded turns are lowered
        here too; without one ``rank`` already did. Then ``rules.echoes_below_sources``: a
        question or an assistant reply never stays above a statement, fact or passage it
        repeats (shares content words with), whatever the scores. A pinned tier-1 answer stays
        first."""
        head, rest = (hits[:1], hits[1:]) if pinned else ([], hits)
        if not rest:
            return hits
        kind = np.asarray([h.kind for h in rest], dtype=object)
        role = np.asarray([h.role for h in rest], dtype=object)
        asks = np.fromiter((h.kind == "turn" and h.role == "user" and h.id not in said.sources
                            and asks_only(h.text) for h in rest), dtype=bool, count=len(rest))
        stale = np.fromiter((h.id in said.stale for h in rest), dtype=bool, count=len(rest))
        factor = evidence_factor(kind, role, asks, stale, question=recipe.question_factor,
                                 assistant=recipe.assistant_factor if reranked else 1.0,
                                 superseded=recipe.superseded_factor if reranked else 1.0)
        asked = {h.id for h, a in zip(rest, asks.tolist(), strict=True) if a}
        if (factor != 1.0).any():
            scored = [(h.score * float(f), i, h) for i, (h, f) in enumerate(zip(rest, factor.tolist(), strict=True))]
            scored.sort(key=lambda t: (-t[0], t[1]))  # ties keep the order they came in
            rest = [dataclasses.replace(h, score=score) for score, _, h in scored]
        echo = [h.id in asked or (h.kind == "turn" and h.role == "assistant") for h in rest]
        if any(echo):
            words = [echo_words(h.text) for h in rest]
            # A question repeats what shares two of its content words (or its only one); a reply
            # restates anything it shares a word with. An echo with no content word of its own
            # ("Who am I?") repeats nothing: every statement and passage found for it outranks it.
            need = [1 if h.role == "assistant" else min(2, len(w)) for h, w in zip(rest, words, strict=True)]
            sources = [[j for j, other in enumerate(words) if j != i and not echo[j]
                        and (not words[i] or len(words[i] & other) >= need[i])] if echo[i] else []
                       for i in range(len(rest))]
            order = echoes_below_sources(echo, sources)
            rest = [rest[i] for i in order]
            # Scores stay monotonic down the list: a moved echo takes the score of the hit above it.
            fixed: list[Hit] = []
            for h in rest:
                if fixed and h.score > fixed[-1].score:
                    h = dataclasses.replace(h, score=fixed[-1].score)
                fixed.append(h)
            rest = fixed
        return head + rest

    def _documents_from(self, ctx: RequestContext, source: str) -> list[str]:
        """Ids of the documents ``ctx`` may read whose ``source`` is ``source`` (at most
        ``SOURCE_DOCUMENTS`` read)."""
        found: list[str] = []
        after = None
        read = 0
        while read < SOURCE_DOCUMENTS:
            page = self._store.query(keys.documents_pk(ctx), after=after, limit=500,
                                     read_region=ctx.read_region)
            for r in page.records:
                data = r.data
                if data.get("source") == source and not data.get("deleted") \
                        and scopes.visible(data.get("scopes") or [], ctx.read_region):
                    found.append(data.get("id") or r.sk)
            read += len(page.records)
            after = page.last_key
            if not after:
                break
        return found

    def _entities_in(self, ctx: RequestContext, area: geo.Area) -> list[str]:
        """Ids of the entities ``ctx`` may read whose current ``lat`` and ``lng`` attributes
        (numbers, or strings holding them) lie in ``area``: one paged read of the current
        attribute index (at most ``LOCATED_ATTRIBUTES`` rows)."""
        coords: dict[str, dict[str, float]] = {}
        after = None
        read = 0
        while read < LOCATED_ATTRIBUTES:
            page = self._store.query(keys.current_gsi(ctx, "attribute"), index="gsi1", after=after, limit=500,
                                     read_region=ctx.read_region)
            for r in page.records:
                data = r.data
                key = data.get("key")
                if key not in ("lat", "lng") or data.get("deleted") or data.get("supersededBy") \
                        or data.get("validUntil") or not scopes.visible(data.get("scopes") or [], ctx.read_region):
                    continue
                try:
                    value = float(data.get("value"))
                except (TypeError, ValueError):
                    continue
                if math.isfinite(value):
                    coords.setdefault(data.get("entityId") or "", {})[key] = value
            read += len(page.records)
            after = page.last_key
            if not after:
                break
        return sorted(eid for eid, c in coords.items()
                      if eid and "lat" in c and "lng" in c and area.contains(c["lat"], c["lng"]))

    def _recent_turns(self, ctx: RequestContext, flt: SearchFilter, qa: QueryAnalysis) -> list[SearchUnit]:
        """With search down: the turns of the newest sessions (``flt.session_id``'s alone when
        given) that share a content word with the query, visible by the search filter's rules."""
        words = set(qa.content_words) | {w for name in qa.names for w in _WORD.findall(name.lower())}
        if not words:
            return []
        if flt.session_id:
            sessions = [flt.session_id]
        else:
            page = self._store.query(keys.sessions_pk(ctx), limit=RECENT_SESSIONS, forward=False)
            sessions = [r.data.get("id") or r.sk for r in page.records]
        now = timeutil.now_iso()
        scored: list[tuple[int, int, SearchUnit]] = []
        for order, session_id in enumerate(sessions):
            turns = self._store.query(keys.turns_pk(ctx, session_id), limit=RECENT_TURNS, forward=False)
            for age, record in enumerate(turns.records):
                for unit in build_units(record.data, record.version):
                    if unit.kind != "turn" or not unit_visible(unit, flt, now):
                        continue
                    overlap = len(words & set(_WORD.findall(unit.text.lower())))
                    if overlap:
                        scored.append((-overlap, order * RECENT_TURNS + age, unit))
        scored.sort(key=lambda t: (t[0], t[1]))
        return [unit for _, _, unit in scored[:RECENT_TURNS]]

    # --- entities ----------------------------------------------------------------------

    def named_entities(self, ctx: RequestContext, qa: QueryAnalysis, subject: str | None = None,
                       reads: WriteReads | None = None) -> list[NamedEntity]:
        """Entities the query is about, most specific first: ``subject``, then names in query
        order (existing entities of any type with that name; a capitalised name with no
        entity is kept as ``person/<name>``, the label a turn written with that ``speaker``
        carries), then store entities matching other query words, then the self entity for
        "I/me/my" (or when the user's own name is used)."""
        wanted = [subject] if subject else []
        wanted += qa.lookup_names
        stored = self._entities_by_name(ctx, [subject_name(w) for w in wanted], reads)
        self_entity = stored.get(SELF_ENTITY_ID)
        self_name = normalise_entity_name(self_entity.name) if self_entity and self_entity.name else None
        by_name: dict[str, list[Entity]] = {}
        for e in stored.values():
            if e.id != SELF_ENTITY_ID:
                by_name.setdefault(normalise_entity_name(e.name or split_entity_id(e.id)[1]), []).append(e)
                by_name.setdefault(split_entity_id(e.id)[1], []).append(e)
        out: dict[str, NamedEntity] = {}

        def add(eid: str, name: str, entity: Entity | None) -> None:
            if eid not in out:
                out[eid] = NamedEntity(eid, name, entity)

        if subject and len(subject) <= MAX_NAME_CHARS:
            sid = subject if subject.startswith("entity:") else (
                f"entity:{subject}" if "/" in subject and subject.split("/")[0] in ENTITY_TYPES else None)
            if sid is not None:
                found = self._entity(ctx, sid)
                add(sid, found.name if found else split_entity_id(sid)[1], found)
        for raw in wanted:
            name = subject_name(raw)
            norm = normalise_entity_name(name) if len(name) <= MAX_NAME_CHARS else ""
            if not norm:
                continue
            if self_name and norm == self_name:
                add(SELF_ENTITY_ID, self_entity.name, self_entity)
                continue
            matches = by_name.get(norm, [])
            for e in matches:
                add(e.id, e.name or name, e)
            if not matches and (raw == subject or raw in qa.names):
                add(entity_id("person", name), name, None)
        if qa.self_reference:
            add(SELF_ENTITY_ID, self_entity.name if self_entity else "User", self_entity)
        return list(out.values())

    def _entities_by_name(self, ctx: RequestContext, names: Sequence[str],
                          reads: WriteReads | None = None) -> dict[str, Entity]:
        """Existing entities any of ``names`` could name (every type), plus the self entity:
        one batch read of natural keys, no scan of the context's entities."""
        # Entity names are short; a longer "name" cannot be a key (and would exceed key limits).
        wanted = {normalise_entity_name(n) for n in names if n and n.strip() and len(n) <= MAX_NAME_CHARS}
        wanted.discard("")
        pk = keys.entities_pk(ctx)
        keys_ = [(pk, f"{t}/{n}") for n in sorted(wanted) for t in ENTITY_TYPES]
        keys_.append((pk, keys.entity_sk(SELF_ENTITY_ID)))
        found: dict[str, Entity] = {}
        whole = reads.complete(pk) if reads is not None else None
        if whole is not None:  # the caller read the whole entities partition: no batch read
            for _, sk in keys_:
                entity = Entity.from_dict(whole[sk].data) if sk in whole else None
                if entity is not None and not entity.deleted and scopes.visible(entity.scopes, ctx.read_region):
                    found[entity.id] = entity
            return found
        store = self._store
        token = self._reads.token(store)
        cached = {key: self._reads.get(token, ("entity", key)) for key in keys_}
        todo = [key for key in keys_ if cached[key] is None]
        for i in range(0, len(todo), 100):
            chunk = todo[i:i + 100]
            read = {(r.pk, r.sk): Entity.from_dict(r.data) for r in store.batch_get(chunk)}
            for key in chunk:
                cached[key] = read.get(key, MISSING)
                self._reads.put(token, ("entity", key), cached[key])
        for key in keys_:
            entity = cached[key]
            if entity is not MISSING and not entity.deleted and scopes.visible(entity.scopes, ctx.read_region):
                found[entity.id] = entity
        return found

    def _entity(self, ctx: RequestContext, eid: str) -> Entity | None:
        record = self._store.get(keys.entities_pk(ctx), keys.entity_sk(eid))
        if record is None:
            return None
        entity = Entity.from_dict(record.data)
        return None if entity.deleted or not scopes.visible(entity.scopes, ctx.read_region) else entity

    # --- tier 1: structured reads ------------------------------------------------------

    def _seeds(self, ctx: RequestContext, entities: Sequence[NamedEntity], flt: SearchFilter, qa: QueryAnalysis,
               *, with_profiles: bool, bearing_only: bool = False,
               reads: WriteReads | None = None, said: TurnFacts | None = None) -> list[SearchUnit]:
        """Current (or ``as_of``) attributes and relations of the named entities, as the
        units search would return for them, visible under ``flt``, best first (with
        ``bearing_only``, only those that bear on the question: a key it asks about, or a
        content word in common). ``said`` collects what the entities' facts, closed ones
        included, say of the turns that stated them (``TurnFacts``)."""
        store = self._store
        token = self._reads.token(store)
        now = timeutil.now_iso()
        instant_iso = timeutil.normalise(flt.as_of) if flt.as_of else now
        any_kind = dataclasses.replace(flt, kinds=None)  # profiles summarise attributes even when not returned
        # Every validity (an open window admits closed facts too): which turns said what no longer holds.
        any_time = dataclasses.replace(any_kind, as_of=None, valid_window=(None, None))
        units: list[tuple[tuple[float, ...], SearchUnit]] = []
        profiles: list[SearchUnit] = []
        picked = entities[:3]
        wanted_reads = [(entity.id, kind, pk) for entity in picked
                        for kind, pk in (("attribute", keys.attrs_pk(ctx, entity.id)),
                                         ("relation", keys.rels_pk(ctx, entity.id)))
                        if kind in (flt.kinds or ()) or with_profiles]
        # The partitions do not depend on each other: those not decoded already are read at
        # once, one round trip for all.
        calls = [functools.partial(self._fact_units, store, token, pk, kind, reads) for _, kind, pk in wanted_reads]
        cached = [reads is None and self._reads.get(token, ("facts", pk, kind)) is not None
                  for _, kind, pk in wanted_reads]
        fetched = iter(fan_out.run_at_once([c for c, hit in zip(calls, cached, strict=True) if not hit],
                                           name="tier1"))
        read = [call() if hit else next(fetched) for call, hit in zip(calls, cached, strict=True)]
        by_entity: dict[str, list[SearchUnit]] = {}
        for (eid, _, _), found in zip(wanted_reads, read, strict=True):
            by_entity.setdefault(eid, []).extend(found)
        for entity in picked:
            facts: list[tuple[tuple[float, ...], SearchUnit]] = []
            for unit in by_entity.get(entity.id, ()):
                if unit_visible(unit, any_kind, now):
                    facts.append((seed_order(unit, qa), unit))
                if said is not None and unit.source_ids and unit_visible(unit, any_time, now):
                    said.add(unit, instant_iso, qa.key_hints)
            facts.sort(key=lambda ou: ou[0])
            wanted = flt.kinds or ()
            units += [(o, u) for o, u in facts if u.kind in wanted and (not bearing_only or o[0] or o[1])]
            if with_profiles and entity.stored is not None:
                profiles.append(_profile_unit(ctx, entity.stored, [u for _, u in facts if u.kind == "attribute"]))
        units.sort(key=lambda ou: ou[0])
        return profiles + [u for _, u in units]

    def _fact_units(self, store: Any, token: Any, pk: str, kind: str,
                    reads: WriteReads | None = None) -> list[SearchUnit]:
        """The units of one entity partition's ``kind`` facts (not deleted), as search
        would index them; decoded once per store generation (``ReadCache``), or from
        ``reads`` (the whole partition, which the write after this retrieval reuses)."""
        if reads is not None:
            rows = [r for r in reads.rows(pk) if r.sk.startswith("a#")][:SEED_ROWS]
            return [u for r in rows if r.data.get("kind") == kind and not r.data.get("deleted")
                    for u in build_units(r.data, r.version)]
        units = self._reads.get(token, ("facts", pk, kind))
        if units is None:
            units = []
            for record in store.query(pk, prefix="a#", limit=SEED_ROWS).records:
                if record.data.get("kind") == kind and not record.data.get("deleted"):
                    units += build_units(record.data, record.version)
            self._reads.put(token, ("facts", pk, kind), units)
        return units

    # --- search legs -------------------------------------------------------------------

    def _search_legs(self, recipe: SearchRecipe, qa: QueryAnalysis, flt: SearchFilter,
                     entities: Sequence[NamedEntity], depth: int) -> tuple[RowRanking, list[Leg]]:
        index = self._search
        if index is None:
            return ranking_from_units([]), []
        picked = entities[:recipe.max_entities]
        # One ``rank_rows`` call runs every leg; its candidates come back as columns.
        requests: list[RowLeg] = []
        deep_leg = vector_leg = None
        if recipe.bm25 or (recipe.entity_bm25 and picked):
            deep = depth * recipe.bm25_depth_factor if picked and recipe.entity_bm25 else depth
            deep_leg = len(requests)
            requests.append(RowLeg(qa.text, "bm25", deep))
        vector_query = qa.content or qa.text
        if recipe.vector:
            vector_leg = len(requests)
            requests.append(RowLeg(vector_query, "vector", depth))
        entity_legs: dict[str, int] = {}
        if recipe.entity_vector:
            for e in picked:
                entity_legs[e.id] = len(requests)
                requests.append(RowLeg(vector_query, "vector", depth, (e.id,)))
        ranking = index.rank_rows(flt, requests)
        scored = ranking.leg_scores

        def scores(at: int) -> np.ndarray | None:
            return scored[at] if scored is not None else None

        legs: list[Leg] = []
        about: dict[str, list[Leg]] = {e.id: [] for e in picked}
        if deep_leg is not None:
            rows, deep_scores = ranking.legs[deep_leg], scores(deep_leg)
            if recipe.bm25:
                legs.append(Leg("bm25", recipe.bm25, rows[:depth],
                                 deep_scores[:depth] if deep_scores is not None else None))
            if recipe.entity_bm25:
                # Cut from the deep BM25 list: every unit in it already passed the filter.
                labels = ranking.labels
                for e in picked:
                    mine = np.fromiter((e.id in labels[i] for i in rows.tolist()), dtype=bool, count=rows.size)
                    about[e.id].append(Leg(f"bm25:{e.id}", recipe.entity_bm25, rows[mine][:depth],
                                            deep_scores[mine][:depth] if deep_scores is not None else None))
        if vector_leg is not None:
            legs.append(Leg("vector", recipe.vector, ranking.legs[vector_leg], scores(vector_leg)))
        for eid, at in entity_legs.items():
            about[eid].append(Leg(f"vector:{eid}", recipe.entity_vector, ranking.legs[at], scores(at)))
        # Entities share their legs' weight; one with no units at all (a capitalised word
        # that names nobody here) takes no share.
        present = [eid for eid, entity_legs_ in about.items() if any(leg.rows.size for leg in entity_legs_)]
        for eid in present:
            for leg in about[eid]:
                legs.append(dataclasses.replace(leg, weight=leg.weight / len(present)))
        return ranking, legs

    def _hit(self, unit: SearchUnit, score: float, structured: bool) -> Hit:
        return Hit(id=unit.id, kind=unit.kind, text=hit_text(unit), score=score, occurred_at=unit.occurred_at,
                   role=unit.role if unit.kind == "turn" else None, session_id=unit.session_id,
                   source_ids=list(unit.source_ids), metadata=dict(unit.metadata), structured=structured)


# --- helpers ------------------------------------------------------------------------------


def _recipe_and_kinds(mode: str, include: Sequence[str] | None,
                      scope_view: str) -> tuple[SearchRecipe, list[str]]:
    """The mode's recipe and the hit kinds asked for; ``ValueError`` for an unknown mode or view."""
    # Looked up on every call: a benchmark swaps recipes in.
    recipe = RECIPES.get(mode) if mode in RETRIEVAL_MODES else None
    if recipe is None:
        raise ValueError(f"unknown retrieval mode {mode!r} (known: {', '.join(RETRIEVAL_MODES)})")
    if scope_view not in scopes.LENS_VIEWS:
        raise ValueError(f"unknown scope view {scope_view!r} (known: {', '.join(scopes.LENS_VIEWS)})")
    return recipe, expand_kinds(include) if include else list(DEFAULT_KINDS if mode != "graph" else ALL_KINDS)


def _profile_unit(ctx: RequestContext, entity: Entity, attributes: Sequence[SearchUnit]) -> SearchUnit:
    """An ``entity`` hit: the entity's name and type with a few current attributes."""
    etype = split_entity_id(entity.id)[0]
    parts = [f"{u.metadata.get('key', '').replace('_', ' ')}: {u.metadata.get('value')}"
             for u in attributes if u.valid_until is None][:ENTITY_PROFILE_ATTRIBUTES]
    text = f"{entity.name or split_entity_id(entity.id)[1]} ({etype})" + (": " + "; ".join(parts) if parts else "")
    return SearchUnit(id=entity.id, context_id=ctx.context_id, kind="entity", text=text, partition=ctx.partition,
                      scopes=entity.scopes, labels=[entity.id], entity_ids=[entity.id],
                      occurred_at=entity.updated_at or entity.created_at or None,
                      metadata={"entityType": etype, "name": entity.name})


def profiled_entity(qa: QueryAnalysis, entities: Sequence[NamedEntity]) -> str | None:
    """The entity a profile question asks about (``qa.profile_of``), when it is stored."""
    if not qa.profile_of:
        return None
    if qa.profile_of == PROFILE_SELF:
        return SELF_ENTITY_ID if any(e.id == SELF_ENTITY_ID for e in entities) else None
    wanted = normalise_entity_name(qa.profile_of)
    for e in entities:
        if e.stored is not None and e.id != SELF_ENTITY_ID and normalise_entity_name(e.name or "") == wanted:
            return e.id
    return None


def hit_is_about(hit: Hit, entity: str) -> bool:
    """A structured fact (attribute or relation) whose subject is ``entity``."""
    meta = hit.metadata or {}
    return hit.structured and hit.kind in ("attribute", "relation") \
        and (meta.get("entity") or meta.get("subject")) == entity


def profile_first(hits: Sequence[Hit], entity: str) -> list[Hit]:
    """A profile question's hits: the current facts of ``entity`` first, by profile section
    (static: who they are; dynamic: work, places, people; preferences: tastes; the sections
    of ``GET /profile``, ``facts/profile.py``), each section in rank order; then the rest."""
    order = {"static": 0, "dynamic": 1, "preferences": 2}
    facts = [(order[_section(h)], i, h) for i, h in enumerate(hits) if hit_is_about(h, entity)]
    if not facts:
        return list(hits)
    facts.sort(key=lambda t: t[:2])
    chosen = {id(h) for *_, h in facts}
    lead = [h for *_, h in facts]
    top = max(h.score for h in hits)
    # Scores stay monotonic: the facts lead with the best score, the rest keep theirs below it.
    lead = [dataclasses.replace(h, score=max(h.score, top)) for h in lead]
    return lead + [h for h in hits if id(h) not in chosen]


def _section(hit: Hit) -> str:
    meta = hit.metadata or {}
    if hit.kind == "relation":
        return relation_section(str(meta.get("label") or ""))
    return attribute_section(str(meta.get("key") or ""), meta.get("category"))


def tier1_answer(hits: Sequence[Hit], qa: QueryAnalysis) -> bool:
    """Whether the first hit is a tier-1 answer: a structured read of a key or label the
    question asks for. A question that names none gets no tier-1 answer, whatever was read."""
    return bool(hits) and hits[0].structured and slot_of(hits[0]) in qa.key_hints


def slot_of(hit: Hit) -> str | None:
    return hit.metadata.get("label") if hit.kind == "relation" else hit.metadata.get("key")

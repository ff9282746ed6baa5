"""Recipes: how each ranking caller weighs its legs and rules, as data.

A ``SearchRecipe`` says which legs run, how deep, how they are weighed and how strongly each
rule applies. The values of ``hybrid`` were chosen on LoCoMo's tuning split and checked on
validation (docs/benchmarks.md, "How it was chosen"; ``bench/locomo.py --ablate`` measures
each stage). Callers look a recipe up when they rank, so a benchmark may swap one in.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SearchRecipe:
    """How one caller ranks. Leg weights multiply reciprocal-rank scores
    (``weight / (rrf_k + rank)``); a weight of 0 turns a leg off. ``entity_*`` weights are
    shared by the named entities. Each leg takes ``max(min_depth, depth_per_k * k)`` candidates."""

    name: str
    # Tier-1 structured reads (0 = off): a named entity's current fact answers whatever the wording.
    structured: float = 1.0
    # BM25 over the whole query: exact words (names, numbers, rare terms) that vectors blur.
    bm25: float = 0.5
    # Vectors over the query's statement form: matches meaning when the words differ.
    vector: float = 0.5
    # BM25 hits about each named entity: answers about a person are what they said or what is known of them.
    entity_bm25: float = 1.0
    # Vectors restricted to each named entity's units: finds them even when the query's words are common.
    entity_vector: float = 1.0
    # Named entities that get legs of their own: each further one dilutes the others' share.
    max_entities: int = 2
    # Candidates per leg at least: fusion and the rules need room below the k kept.
    min_depth: int = 50
    # ... or this many per hit asked for, when more.
    depth_per_k: int = 5
    # The BM25 leg goes this many times deeper when entity BM25 legs are cut from it.
    bm25_depth_factor: int = 4
    # Reciprocal-rank constant: a smaller one gives the top of each leg more weight against its tail.
    rrf_k: int = 60
    # A candidate's leg score as a share of the leg's best, x this x what rank 1 earns: ranks alone
    # treat a near tie and a clear winner alike.
    score_share: float = 0.0
    # Share of a turn's score given to the adjacent turns of its session: answers follow questions.
    neighbour_share: float = 0.3
    # ... and to turns up to this many positions away: a conversation stays on a topic for a while.
    neighbour_window: int = 4
    # ... x this per position beyond the first: the nearer a turn, the likelier it bears on the hit.
    neighbour_decay: float = 0.7
    # ... beyond the adjacent turn only from turns scoring >= this x the best: weak runs must not add up.
    neighbour_strong: float = 0.5
    # Score x (1 + this x best score in the unit's session / best score): a strong hit's session is on topic.
    session_prior: float = 0.0
    # Units said inside the query's time window score x (1 + this): the question names when.
    time_boost: float = 1.0
    # ... or up to this many days after it: people talk about an event after it happened.
    time_slack_days: float = 14.0
    # Assistant turns score x this: a reply restates what the user said, the user's statement is the evidence.
    assistant_factor: float = 0.5
    # Current attributes and relations score x this: what holds now, against turns that say it.
    current_fact_factor: float = 1.5
    # Attributes and relations but the best tier-1 one score x this: a fact's source turn is what answers.
    fact_factor: float = 1.0
    # Attributes with a key the question asks for ("where" -> location) score x this: tier 1's answer leads.
    key_hint_factor: float = 1.5
    # Turns none of whose facts holds at the query's instant (superseded) score x this: what used to be
    # true stays retrievable, below what is.
    superseded_factor: float = 0.25
    # Turns stating a value that holds of the key the question asks for score x this: the current statement.
    support_factor: float = 2.0
    # User turns that only ask (question form, no fact) score x this: a question is not its answer.
    question_factor: float = 0.25
    # Tier 1's answer (the current fact of the key the question asks for) ranks first.
    lead_answer: bool = True
    # Hits decoded beyond k for the rule above (it reads the text): a question lowered leaves room.
    evidence_margin: int = 10
    # With a reranker: final = (1 - this) x fused score / the best + this x reranker score, min-max scaled.
    rerank: float = 0.0
    # Fused candidates the reranker scores again: it is slow, and what ranks lower rarely answers.
    rerank_depth: int = 50
    # After reranking, a turn that asks something passes this x its score to its reply: the reranker
    # favours the turn repeating the query's words, the reply after it is what answers.
    reply_share: float = 0.0
    # ... and every turn passes this x its score to the turn before it in its session: an answer
    # makes the turn it answers or continues likelier to bear on the query too (multi-turn evidence).
    context_share: float = 0.0
    # The reranker's scaled score is raised to this power before the blend: above 1, only its clear
    # winners move far from the fused order, and its middling scores count for little.
    rerank_power: float = 1.0


RECIPES: dict[str, SearchRecipe] = {
    # /query, /context and /chat by default: every leg and rule (values: docs/benchmarks.md).
    "hybrid": SearchRecipe("hybrid", current_fact_factor=1.0, rrf_k=30, session_prior=1.0, fact_factor=0.7,
                           score_share=2.0, key_hint_factor=2.5, rerank=0.5, reply_share=0.4,
                           context_share=0.1, rerank_power=2.0),
    # The single-leg retrieval modes: one kind of match, for callers that want only that one.
    "bm25": SearchRecipe("bm25", vector=0.0, entity_vector=0.0, bm25=1.0),
    "vector": SearchRecipe("vector", bm25=0.0, entity_bm25=0.0, vector=1.0),
    # Structured reads only: what the record store knows of the entities the query names.
    "graph": SearchRecipe("graph", bm25=0.0, vector=0.0, entity_bm25=0.0, entity_vector=0.0),
    # Plain reciprocal-rank fusion of one BM25 and one vector leg, no rules: a thread's semantic
    # matches (thread turns have no sessions, speakers' roles or facts for the rules to weigh).
    "rrf": SearchRecipe("rrf", structured=0.0, bm25=1.0, vector=1.0, entity_bm25=0.0, entity_vector=0.0,
                        neighbour_share=0.0, time_boost=0.0, assistant_factor=1.0, current_fact_factor=1.0,
                        key_hint_factor=1.0, superseded_factor=1.0, support_factor=1.0, question_factor=1.0),
}

#: The recipes ``RetrievalService.retrieve`` takes as its ``mode`` (``models.retrieval.RetrievalMode``).
RETRIEVAL_MODES = ("hybrid", "bm25", "vector", "graph")

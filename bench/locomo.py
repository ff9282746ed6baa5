"""LoCoMo evidence recall@k: the product's retrieval against plain BM25, plain dense retrieval
and their RRF, computed in the same run with the same embedder (not a test).

Usage::

    python bench/locomo.py .locomo [--embedder hashing|minilm] [--reranker none|minilm]
                           [--out results.json]
    agent-memory bench locomo .locomo --embedder minilm

Data: LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM
Agents", ACL 2024; https://github.com/snap-research/locomo), read by path from the folder
``bench/locomo_data.py`` prepares (``.locomo``, git-ignored); never copied into the repository.

What runs, per conversation (one context each, in a fresh temporary data directory):

- **Ingest through the product's write path**: each LoCoMo session becomes one session,
  written with ``POST /facts/batch`` semantics (``runtime.facts.write_batch``, ``infer:
  full``, the configured extractor: offline unless a model is configured), every turn's text
  (plus ``[shares <caption>]`` for a shared photo) with its ``speaker`` field set to the
  speaker's name and the session's date as ``ts`` (``observed_at``). The turn id -> ``dia_id`` map comes from the write
  responses and stays here, in the benchmark.
- **Questions** of categories 1-4 (5 is adversarial) go to ``runtime.retrieval.retrieve``
  (hybrid, k=50) and to the baselines.
- **Baselines**, one unit per turn with the same speaker-prefixed text: BM25 (``rank_bm25``'s
  BM25Okapi when installed, else the identical formula below; lower-cased ``\\w+`` tokens),
  dense (cosine over the same embedder the product uses), and their reciprocal-rank fusion
  (k=60).
- **Counting** (docs/decisions.md, "Retrieval benchmark counting"): ranked units expand to the
  ``dia_id``s they cover, in rank order (a turn covers itself, a fact its source turns, other
  units nothing), and the list is cut at k *distinct* ``dia_id``s; recall@k =
  |evidence ∩ cut| / |evidence|, averaged over questions. Evidence ids are stripped of
  whitespace and split at ``;``. Questions without evidence are skipped.

Output: a table (recall@5/10/20 per method, product/baseline ratio) and JSON written to
``bench/results/`` (gitignored) or ``--out``.

**Splits** (``SPLITS``): the seven conversations are split, by file name and fixed before
any result was looked at, into a *tuning* set (every other file in name order, starting with
the first: 26, 41, 43, 47) and a *validation* set (30, 42, 44). Every figure is reported for
both and for all seven. A ranking change is tuned on the tuning set and lands only if it
also helps the validation set.

**Ablations** (``--ablate``): the product row again with one stage off at a time: the
``speaker`` field (turns written without it), extraction (``infer: none``, so no facts), the
entity legs, the time boost, the neighbour share (and its window: adjacent turns only), the
session prior, the fusion's ``rrf_k`` at its earlier 60, the legs' own scores (ranks only), and
tier-1 structured reads, the reranker (with ``--reranker``), and the evidence rules of issue
35 (superseded turns below current ones, questions below statements, tier 1's answer leading); recall
per split. Recipe stages reuse one ingest; the speaker and facts rows ingest again.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

KS = (5, 10, 20)
SPLITS = {"tuning": ("26", "41", "43", "47"), "validation": ("30", "42", "44")}
# name -> (ingest options, SearchRecipe overrides of the hybrid recipe)
ABLATIONS: dict[str, tuple[dict[str, Any], dict[str, float]]] = {
    "product": ({}, {}),
    "speaker field off": ({"speaker": False}, {}),
    "facts off (infer none)": ({"infer": "none"}, {}),
    "entity legs off": ({}, {"entity_bm25": 0.0, "entity_vector": 0.0}),
    "time boost off": ({}, {"time_boost": 0.0}),
    "neighbour share off": ({}, {"neighbour_share": 0.0}),
    "neighbours: adjacent only": ({}, {"neighbour_window": 1, "neighbour_decay": 1.0}),
    "session prior off": ({}, {"session_prior": 0.0}),
    "rrf k 60 (was)": ({}, {"rrf_k": 60}),
    "leg scores off (ranks only)": ({}, {"score_share": 0.0, "key_hint_factor": 1.5}),
    "structured reads off": ({}, {"structured": 0.0}),
    "reranker off": ({}, {"rerank": 0.0}),
    "reply share off": ({}, {"reply_share": 0.0}),
    "context share off": ({}, {"context_share": 0.0}),
    "rerank power 1 (was)": ({}, {"rerank_power": 1.0}),
    "superseded/support off": ({}, {"superseded_factor": 1.0, "support_factor": 1.0}),
    "question factor off": ({}, {"question_factor": 1.0}),
    "tier-1 answer lead off": ({}, {"lead_answer": False}),
}


def split_of(name: str) -> str | None:
    return next((split for split, names in SPLITS.items() if name in names), None)
CATEGORIES = (1, 2, 3, 4)
RRF_K = 60
PRODUCT_K = 50
_TOKEN = re.compile(r"\w+")


# --- data ---------------------------------------------------------------------------------


@dataclass
class Turn:
    speaker: str
    dia_id: str
    text: str


@dataclass
class Session:
    number: int
    observed_at: str | None
    turns: list[Turn]


@dataclass
class Question:
    question: str
    evidence: list[str]
    category: int


@dataclass
class Conversation:
    name: str
    speakers: tuple[str, str]
    sessions: list[Session]
    questions: list[Question] = field(default_factory=list)

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]


def parse_session_date(value: str | None) -> str | None:
    """``"1:56 pm on 8 May, 2023"`` -> ``"2023-05-08T13:56:00.000Z"`` (``None`` if unparseable)."""
    if not value:
        return None
    text = " ".join(value.replace(" on ", " ").split())
    for fmt in ("%I:%M %p %d %B, %Y", "%I:%M %p %d %B %Y", "%I:%M %p %B %d, %Y"):
        try:
            dt = datetime.strptime(text, fmt).replace(tzinfo=UTC)
            return dt.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        except ValueError:
            continue
    return None


def normalise_evidence(evidence: Iterable[Any]) -> list[str]:
    out: list[str] = []
    for item in evidence or []:
        for part in str(item).split(";"):
            part = "".join(part.split())
            if part and part not in out:
                out.append(part)
    return out


def turn_text(turn: dict[str, Any]) -> str:
    """What the speaker shared: the text, plus the caption of a shared photo."""
    text = str(turn.get("text") or "").strip()
    caption = turn.get("blip_caption")
    return f"{text} [shares {caption}]" if caption else text


def load_conversation(path: Path) -> Conversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    conv = data.get("conversation", data)  # both LoCoMo layouts
    sessions: list[Session] = []
    n = 1
    while f"session_{n}" in conv or f"session_{n}_date_time" in conv:
        raw = conv.get(f"session_{n}") or []
        turns = [Turn(t["speaker"], "".join(str(t["dia_id"]).split()), turn_text(t)) for t in raw]
        if turns:
            sessions.append(Session(n, parse_session_date(conv.get(f"session_{n}_date_time")), turns))
        n += 1
    questions = [Question(q["question"], normalise_evidence(q.get("evidence")), int(q.get("category", 0)))
                 for q in data.get("qa", []) if int(q.get("category", 0)) in CATEGORIES]
    return Conversation(path.stem, (conv["speaker_a"], conv["speaker_b"]), sessions,
                        [q for q in questions if q.evidence])


def load_dir(directory: Path, limit: int | None = None) -> list[Conversation]:
    files = sorted(p for p in Path(directory).glob("*.json"))
    if not files:
        raise SystemExit(f"no LoCoMo conversation files (*.json) in {directory}")
    return [load_conversation(p) for p in files[:limit]]


# --- counting -----------------------------------------------------------------------------


def cut_distinct(ranked: Iterable[Sequence[str]], k: int) -> list[str]:
    """Expand ranked units to the dia_ids they cover, in rank order, and keep the first ``k``
    distinct ones: a unit covering several turns spends several of the ``k`` slots."""
    seen: list[str] = []
    for dias in ranked:
        for d in dias:
            if d not in seen:
                seen.append(d)
                if len(seen) == k:
                    return seen
    return seen


def recall_at(ranked: Sequence[Sequence[str]], evidence: Sequence[str], k: int) -> float:
    wanted = set(evidence)
    return len(wanted & set(cut_distinct(ranked, k))) / len(wanted) if wanted else 0.0


# --- baselines ----------------------------------------------------------------------------


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class PlainBM25:
    """Okapi BM25 exactly as ``rank_bm25.BM25Okapi`` (k1=1.5, b=0.75, negative IDFs floored
    at 0.25 x the mean IDF), so the baseline does not depend on an optional package."""

    def __init__(self, corpus: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25):
        self.k1, self.b = k1, b
        self.doc_len = np.array([len(d) for d in corpus], dtype=np.float64)
        self.avgdl = float(self.doc_len.mean()) if len(corpus) else 0.0
        self.tf: list[dict[str, int]] = []
        df: dict[str, int] = {}
        for doc in corpus:
            counts: dict[str, int] = {}
            for w in doc:
                counts[w] = counts.get(w, 0) + 1
            self.tf.append(counts)
            for w in counts:
                df[w] = df.get(w, 0) + 1
        n = len(corpus)
        self.idf = {w: math.log(n - f + 0.5) - math.log(f + 0.5) for w, f in df.items()}
        average = sum(self.idf.values()) / len(self.idf) if self.idf else 0.0
        floor = epsilon * average
        self.idf = {w: (v if v >= 0 else floor) for w, v in self.idf.items()}

    def get_scores(self, query: Sequence[str]) -> np.ndarray:
        scores = np.zeros(len(self.tf))
        norm = self.k1 * (1 - self.b + self.b * self.doc_len / (self.avgdl or 1.0))
        for q in query:
            freq = np.array([d.get(q, 0) for d in self.tf], dtype=np.float64)
            scores += self.idf.get(q, 0.0) * (freq * (self.k1 + 1) / (freq + norm))
        return scores


def make_bm25(corpus: Sequence[Sequence[str]]) -> Any:
    try:
        from rank_bm25 import BM25Okapi
    except ImportError:
        return PlainBM25(corpus)
    return BM25Okapi(list(corpus))


def rrf(lists: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    scores: dict[int, float] = {}
    for ranked in lists:
        for rank, item in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda i: (-scores[i], i))


class Baselines:
    """One unit per turn, ``"<speaker>: <text>"``."""

    def __init__(self, conv: Conversation, embedder: Any, depth: int = 100):
        turns = conv.turns
        self.dias = [t.dia_id for t in turns]
        texts = [f"{t.speaker}: {t.text}" for t in turns]
        self.bm25 = make_bm25([tokens(t) for t in texts])
        self.vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
        self.embedder = embedder
        self.depth = depth

    def rank(self, question: str) -> dict[str, list[list[str]]]:
        scores = np.asarray(self.bm25.get_scores(tokens(question)))
        by_bm25 = [int(i) for i in np.argsort(-scores, kind="stable")[: self.depth]]
        q = np.asarray(self.embedder.embed([question]), dtype=np.float32)[0]
        by_dense = [int(i) for i in np.argsort(-(self.vectors @ q), kind="stable")[: self.depth]]
        fused = rrf([by_bm25, by_dense])[: self.depth]
        return {name: [[self.dias[i]] for i in order]
                for name, order in (("bm25", by_bm25), ("dense", by_dense), ("bm25+dense rrf", fused))}


# --- the product --------------------------------------------------------------------------


EMBEDDERS = {"hashing": "hashing/v1", "minilm": "local/all-MiniLM-L6-v2"}
# models.reranker: none, or late interaction over MiniLM's token vectors (adapters/rerankers.py)
RERANKERS = {"none": "none", "minilm": "local/all-MiniLM-L6-v2"}


def make_runtime(data_dir: Path, embedder: str, reranker: str = "none") -> Any:
    from agent_memory.config import load_settings
    from agent_memory.runtime import Runtime

    env = {"AGENT_MEMORY_DATA_DIR": str(data_dir), "AGENT_MEMORY_STORE": "sqlite", "AGENT_MEMORY_SEARCH": "embedded",
           "AGENT_MEMORY_CURSOR_SECRET": "locomo-bench", "AGENT_MEMORY_MODELS_EMBEDDING": EMBEDDERS[embedder],
           "AGENT_MEMORY_MODELS_RERANKER": RERANKERS[reranker]}
    runtime = Runtime(load_settings(env=env, config_path=None))
    if embedder != "hashing":
        _cache_embeddings(runtime)
    return runtime


def _cache_embeddings(runtime: Any) -> None:
    """Re-runs pay only for texts never embedded before (bench/embedding_cache.py)."""
    import importlib.util

    from agent_memory.adapters.query_cache import QueryCachingEmbedder
    from agent_memory.runtime import build_embedder

    spec = importlib.util.spec_from_file_location("bench_embedding_cache", Path(__file__).with_name("embedding_cache.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = module.cache_path()
    if path is not None:  # before anything reads runtime.embedder (a cached property)
        runtime.__dict__["embedder"] = QueryCachingEmbedder(
            module.DiskCachingEmbedder(build_embedder(runtime.settings), path))


def ingest(runtime: Any, ctx: Any, conv: Conversation, *, speaker: bool = True,
           infer: str = "full") -> dict[str, str]:
    """Write every session through the product's write path; returns turn id -> dia_id."""
    from agent_memory.models.requests import WriteFactsBatchRequest

    mapping: dict[str, str] = {}
    for session in conv.sessions:
        req = WriteFactsBatchRequest(
            messages=[{"role": "user", "content": t.text, "ts": session.observed_at,
                       **({"speaker": t.speaker} if speaker else {})} for t in session.turns],
            infer=infer, extract="per_message")
        result = runtime.facts.write_batch(ctx, req)
        for turn_id, turn in zip(result.turn_ids, session.turns, strict=True):
            mapping[turn_id] = turn.dia_id
    return mapping


def product_ranking(runtime: Any, ctx: Any, question: str, mapping: dict[str, str]) -> tuple[list[list[str]], Any]:
    result = runtime.retrieval.retrieve(ctx, question, k=PRODUCT_K)
    ranked = []
    for hit in result.hits:
        if hit.kind == "turn":
            ranked.append([mapping[hit.id]] if hit.id in mapping else [])
        else:
            ranked.append([mapping[s] for s in hit.source_ids if s in mapping])
    return ranked, result


# --- the run ------------------------------------------------------------------------------

METHODS = ("bm25", "dense", "bm25+dense rrf", "product")


def _data_dir(keep: Path | None, embedder: str, variant: str) -> Any:
    """A fresh temporary data directory, or ``keep/<embedder>-<variant>`` kept between runs."""
    import contextlib

    if keep is None:
        return tempfile.TemporaryDirectory(prefix=f"locomo-{variant}-")
    path = Path(keep) / f"{embedder}-{variant}"
    path.mkdir(parents=True, exist_ok=True)
    return contextlib.nullcontext(str(path))


def kept_ingest(runtime: Any, ctx: Any, conv: Conversation, keep: Path | None, **options: Any) -> dict[str, str]:
    """``ingest``, or with ``keep`` the turn id -> dia_id map of an earlier run's ingest into the
    same kept data directory (``--keep``: ranking experiments reuse one ingest; delete the
    directory after changing the write path)."""
    if keep is None:
        return ingest(runtime, ctx, conv, **options)
    saved = keep / f"mapping-{conv.name}.json"
    if saved.exists():
        return json.loads(saved.read_text(encoding="utf-8"))
    mapping = ingest(runtime, ctx, conv, **options)
    saved.write_text(json.dumps(mapping), encoding="utf-8")
    return mapping


def run(directory: Path, *, embedder: str = "hashing", limit: int | None = None,
        progress: Callable[[str], None] = print, step: Callable[[int, int], None] | None = None,
        keep: Path | None = None, reranker: str = "none") -> dict[str, Any]:
    """``progress`` gets a line per conversation; ``step(done, total)`` counts them; ``keep``
    keeps the ingest between runs (``kept_ingest``)."""
    from agent_memory.access.request_context import RequestContext

    conversations = load_dir(directory, limit)
    sums: dict[str, dict[int, list[float]]] = {m: {k: [] for k in KS} for m in METHODS}
    by_split: dict[str, dict[str, dict[int, list[float]]]] = {
        s: {m: {k: [] for k in KS} for m in METHODS} for s in SPLITS}
    by_category: dict[str, dict[int, list[float]]] = {m: {c: [] for c in CATEGORIES} for m in METHODS}
    latencies: list[float] = []
    started = time.perf_counter()
    with _data_dir(keep, embedder, "product") as tmp:
        runtime = make_runtime(Path(tmp), embedder, reranker)
        embedder_name = runtime.embedder.name
        for done, conv in enumerate(conversations, 1):
            ctx = RequestContext(context_id=f"locomo-{conv.name}", principal="bench", admin=True)
            t0 = time.perf_counter()
            mapping = kept_ingest(runtime, ctx, conv, Path(tmp) if keep else None)
            ingest_s = time.perf_counter() - t0
            baselines = Baselines(conv, runtime.embedder)
            for q in conv.questions:
                ranked = baselines.rank(q.question)
                ranked["product"], result = product_ranking(runtime, ctx, q.question, mapping)
                latencies.append(result.query_ms)
                for method in METHODS:
                    for k in KS:
                        sums[method][k].append(recall_at(ranked[method], q.evidence, k))
                        if split_of(conv.name):
                            by_split[split_of(conv.name)][method][k].append(recall_at(ranked[method], q.evidence, k))
                    by_category[method][q.category].append(recall_at(ranked[method], q.evidence, 10))
            progress(f"  {conv.name}: {len(conv.turns)} turns ingested in {ingest_s:.1f}s, "
                     f"{len(conv.questions)} questions")
            if step is not None:
                step(done, len(conversations))
    results = {
        "dataset": str(directory), "conversations": [c.name for c in conversations],
        "questions": len(sums["product"][10]), "embedder": embedder_name, "reranker": RERANKERS[reranker],
        "recall": {m: {f"@{k}": round(float(np.mean(v)), 4) if v else None for k, v in sums[m].items()}
                   for m in METHODS},
        "recall_by_split": {s: {m: {f"@{k}": round(float(np.mean(v)), 4) if v else None for k, v in per.items()}
                                for m, per in methods.items()} for s, methods in by_split.items()},
        "recall@10_by_category": {m: {str(c): round(float(np.mean(v)), 4) if v else None
                                      for c, v in by_category[m].items()} for m in METHODS},
        "product_query_ms": {"p50": round(float(np.percentile(latencies, 50)), 2) if latencies else None,
                             "p95": round(float(np.percentile(latencies, 95)), 2) if latencies else None},
        "seconds": round(time.perf_counter() - started, 1),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    baseline = {f"@{k}": max(results["recall"]["bm25"][f"@{k}"] or 0, results["recall"]["dense"][f"@{k}"] or 0)
                for k in KS}
    results["product_vs_baseline"] = {key: round((results["recall"]["product"][key] or 0) / value, 3) if value else None
                                      for key, value in baseline.items()}
    return results


def ablate(directory: Path, *, embedder: str = "hashing", limit: int | None = None,
           progress: Callable[[str], None] = print, step: Callable[[int, int], None] | None = None,
           keep: Path | None = None, reranker: str = "none") -> dict[str, Any]:
    """Product recall@k per split with each stage off in turn (``ABLATIONS``);
    ``step(done, total)`` counts (ingest variant, conversation) pairs."""
    import dataclasses

    from agent_memory.access.request_context import RequestContext
    from agent_memory.ranking import recipes

    conversations = load_dir(directory, limit)
    scores: dict[str, dict[str, dict[int, list[float]]]] = {
        name: {s: {k: [] for k in KS} for s in (*SPLITS, "all")} for name in ABLATIONS}
    ingests: dict[tuple, list[str]] = {}
    for name, (options, _) in ABLATIONS.items():
        ingests.setdefault(tuple(sorted(options.items())), []).append(name)
    base = recipes.RECIPES["hybrid"]
    started = time.perf_counter()
    done = 0
    try:
        for options, names in ingests.items():
            variant = "-".join(f"{k}-{v}" for k, v in options) or "product"
            with _data_dir(keep, embedder, variant) as tmp:
                runtime = make_runtime(Path(tmp), embedder, reranker)
                for conv in conversations:
                    ctx = RequestContext(context_id=f"locomo-{conv.name}", principal="bench", admin=True)
                    mapping = kept_ingest(runtime, ctx, conv, Path(tmp) if keep else None, **dict(options))
                    for name in names:
                        recipes.RECIPES["hybrid"] = dataclasses.replace(base, **ABLATIONS[name][1])
                        for q in conv.questions:
                            ranked, _ = product_ranking(runtime, ctx, q.question, mapping)
                            for split in (split_of(conv.name), "all"):
                                for k in KS:
                                    if split:
                                        scores[name][split][k].append(recall_at(ranked, q.evidence, k))
                        recipes.RECIPES["hybrid"] = base
                    progress(f"  {conv.name}: {', '.join(names)}")
                    done += 1
                    if step is not None:
                        step(done, len(ingests) * len(conversations))
    finally:
        recipes.RECIPES["hybrid"] = base
    return {"embedder": EMBEDDERS[embedder], "reranker": RERANKERS[reranker], "conversations": [c.name for c in conversations],
            "splits": {s: list(v) for s, v in SPLITS.items()},
            "recall": {name: {s: {f"@{k}": round(float(np.mean(v)), 4) if v else None for k, v in per.items()}
                              for s, per in by.items()} for name, by in scores.items()},
            "seconds": round(time.perf_counter() - started, 1),
            "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def ablation_table(results: dict[str, Any]) -> str:
    lines = [f"LoCoMo product recall with one stage off at a time (embedder {results['embedder']}, "
             f"reranker {results.get('reranker', 'none')}); "
             f"tuning {'/'.join(results['splits']['tuning'])}, validation {'/'.join(results['splits']['validation'])}",
             f"{'':<28}" + "".join(f"{s + ' @' + str(k):>15}" for s in ("tuning", "validation") for k in KS)]
    for name, by in results["recall"].items():
        lines.append(f"{name:<28}" + "".join(f"{by[s][f'@{k}'] or 0:>15.4f}" for s in ("tuning", "validation")
                                             for k in KS))
    return "\n".join(lines)


def table(results: dict[str, Any]) -> str:
    lines = [f"LoCoMo evidence recall ({results['questions']} questions, categories 1-4, "
             f"{len(results['conversations'])} conversations, embedder {results['embedder']}, "
             f"reranker {results.get('reranker', 'none')})",
             f"{'method':<18}" + "".join(f"{'@' + str(k):>9}" for k in KS)]
    for method in METHODS:
        row = results["recall"][method]
        lines.append(f"{method:<18}" + "".join(f"{row[f'@{k}']:>9.4f}" for k in KS))
    ratio = results["product_vs_baseline"]
    lines.append(f"{'product/max(bm25,dense)':<18}" + "".join(f"{ratio[f'@{k}']:>9.3f}" for k in KS))
    for split, names in SPLITS.items():
        part = results.get("recall_by_split", {}).get(split)
        if part and part["product"]["@10"] is not None:
            lines.append(f"{split} ({', '.join(names)}): " + "  ".join(
                f"{m} " + "/".join(f"{part[m][f'@{k}']:.4f}" for k in KS) for m in ("bm25", "dense", "product")))
    lat = results["product_query_ms"]
    lines.append(f"product query ms: p50 {lat['p50']}  p95 {lat['p95']}   ({results['seconds']} s in all)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agent-memory bench locomo", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run_command(parser.parse_args(argv))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", type=Path, help="directory of LoCoMo conversation files (*.json)")
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), default="hashing")
    parser.add_argument("--reranker", choices=sorted(RERANKERS), default="none",
                        help="models.reranker for the product (minilm: late interaction over its token vectors)")
    parser.add_argument("--out", type=Path, default=None, help="JSON results (default: bench/results/...)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--ablate", action="store_true",
                        help="print the product's recall per split with each ranking stage off in turn")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep the ingested data here and reuse it on the next run (ranking experiments; "
                             "delete it after changing the write path)")


def run_command(args: argparse.Namespace) -> int:
    import logging

    from agent_memory.interfaces.progress import ProgressBar

    logging.getLogger("agent_memory").setLevel(logging.WARNING)
    if getattr(args, "ablate", False):
        with ProgressBar("locomo ablation", unit="runs") as bar:
            results = ablate(args.directory, embedder=args.embedder, limit=args.limit, progress=bar.note,
                             keep=getattr(args, "keep", None), reranker=getattr(args, "reranker", "none"),
                             step=lambda done, total: bar.update(completed=done, total=total))
        out = args.out or (Path(__file__).resolve().parent / "results" /
                           f"locomo-ablate-{args.embedder}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(ablation_table(results))
        print(f"results: {out}")
        return 0
    with ProgressBar("locomo", unit="conversations") as bar:
        results = run(args.directory, embedder=args.embedder, limit=args.limit, progress=bar.note,
                      keep=getattr(args, "keep", None), reranker=getattr(args, "reranker", "none"),
                      step=lambda done, total: bar.update(completed=done, total=total))
    out = args.out or (Path(__file__).resolve().parent / "results" /
                       f"locomo-{args.embedder}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(table(results))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

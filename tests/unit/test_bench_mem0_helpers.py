"""The pure helpers of bench/mem0_side_by_side.py: percentiles, ratios, the per-side figures
and the printed report. The benchmark itself (Mem0, torch, LoCoMo) never runs in the suite,
and importing the script imports neither Mem0 nor the product."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("bench_mem0_side_by_side", REPO / "bench" / "mem0_side_by_side.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_importing_the_script_loads_no_mem0_and_no_torch() -> None:
    before = set(sys.modules)
    _load()
    assert not {m for m in set(sys.modules) - before if m.split(".")[0] in ("mem0", "torch", "agent_memory")}


@pytest.mark.parametrize("values", [[5.0], [3.0, 1.0, 2.0], [float(v) for v in range(1, 101)], [0.2, 9.0, 4.4, 4.4]])
@pytest.mark.parametrize("q", [0, 50, 95, 100])
def test_percentile_matches_numpy_linear(values, q) -> None:
    assert _load().percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_empty_figures_are_missing_not_zero() -> None:
    bench = _load()
    assert bench.percentile([], 50) is None
    assert bench.summary([]) == {"p50": None, "p95": None, "n": 0}
    assert bench.mean([]) is None


def test_ratio_is_mem0_over_ours_and_missing_when_undefined() -> None:
    bench = _load()
    assert bench.ratio(42.2, 10.2) == 4.14
    assert bench.ratio(None, 1.0) is None
    assert bench.ratio(1.0, None) is None
    assert bench.ratio(1.0, 0.0) is None


def test_search_minus_embedding_is_per_call_and_never_negative() -> None:
    bench = _load()
    raw = {"add": [10.0, 20.0], "add_embedding": [8.0, 18.0],
           "search": [10.0, 30.0, 12.0], "search_embedding": [8.0, 6.0, 12.5]}
    figures = bench.side_figures(raw, {"tuning": [1.0, 0.5], "validation": [], "all": [1.0, 0.5]},
                                 {"embedder": "e"}, {"vmhwm_mb": 600.0, "maxrss_mb": 601.0})
    assert figures["search_minus_embedding"] == bench.summary([2.0, 24.0, 0.0])
    assert figures["recall"] == {"tuning": 0.75, "validation": None, "all": 0.75}
    assert figures["peak_mb"] == 600.0
    assert bench.side_figures(raw, {}, {}, {"maxrss_mb": 601.0})["peak_mb"] == 601.0


def test_the_first_side_alternates_call_by_call() -> None:
    bench = _load()
    assert [bench.alternate(i) for i in range(3)] == [("ours", "mem0"), ("mem0", "ours"), ("ours", "mem0")]


def test_the_report_prints_each_figure_and_the_ratios() -> None:
    bench = _load()

    def side(add, search, embed, recall, peak, describe):
        raw = {"add": add, "add_embedding": [a * 0.5 for a in add], "search": search, "search_embedding": embed}
        return bench.side_figures(raw, {"tuning": recall, "validation": recall, "all": recall}, describe,
                                  {"vmhwm_mb": peak})

    ours = side([10.0, 10.0], [10.0, 10.0], [8.0, 8.0], [0.7], 500.0, {"embedder": "local/all-MiniLM-L6-v2"})
    mem0 = side([20.0, 20.0], [40.0, 40.0], [16.0, 16.0], [0.4], 1000.0, {"version": "2.2.1"})
    text = bench.report({"title": "T", "sides": {"ours": ours, "mem0": mem0}, "turns": 2, "questions": 2,
                         "rounds": 1, "seconds": 1.0, "load_before": "1.00", "load_after": "1.10"})
    lines = {line.split("  ")[0].strip(): line for line in text.splitlines()}
    assert lines["add per turn p50 (p95)"].rstrip().endswith("2.0x")
    assert lines["search k=10 p50 (p95)"].rstrip().endswith("4.0x")
    assert lines["search minus embedding"].rstrip().endswith("12.0x")  # 24 ms / 2 ms
    assert lines["peak memory (VmHWM)"].rstrip().endswith("2.0x")
    assert "0.7000" in lines["recall@10 tuning"] and "0.4000" in lines["recall@10 tuning"]
    assert "agent-memory (local/all-MiniLM-L6-v2)" in text and "Mem0 2.2.1" in text


def test_three_sides_take_turns_going_first() -> None:
    bench = _load()
    sides = ("ours", "mem0", "before")
    orders = [bench.alternate(i, sides) for i in range(3)]
    assert orders == [("ours", "mem0", "before"), ("mem0", "before", "ours"), ("before", "ours", "mem0")]
    assert {order[0] for order in orders} == set(sides)


def test_the_report_with_a_baseline_has_its_column_and_its_ratios() -> None:
    bench = _load()

    def side(search, embed, peak, describe):
        raw = {"add": [5.0], "add_embedding": [4.0], "search": search, "search_embedding": embed}
        return bench.side_figures(raw, {"tuning": [0.5]}, describe, {"vmhwm_mb": peak})

    ours = side([6.0], [4.0], 300.0, {"embedder": "local/all-MiniLM-L6-v2", "commit": "abc1234"})
    mem0 = side([34.0], [14.0], 600.0, {"version": "2.2.1"})
    before = side([15.0], [12.0], 700.0, {"embedder": "local/all-MiniLM-L6-v2", "commit": "78846ec"})
    text = bench.report({"title": "T", "sides": {"ours": ours, "mem0": mem0, "before": before}, "turns": 1,
                         "questions": 1, "rounds": 1, "seconds": 1.0, "load_before": "1", "load_after": "1"})
    lines = {line.split("  ")[0].strip(): line for line in text.splitlines()}
    header = text.splitlines()[1]
    assert "ours before (78846ec)" in header and header.rstrip().endswith("before/ours (p50)")
    # Mem0/ours 20 ms / 2 ms, then before/ours 3 ms / 2 ms.
    assert lines["search minus embedding"].split()[-2:] == ["10.0x", "1.5x"]
    assert lines["peak memory (VmHWM)"].split()[-2:] == ["2.0x", "2.3x"]
    assert "ours before: " in text and "commit 78846ec" in text

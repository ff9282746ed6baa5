"""bench/locomo_data.py turns LoCoMo as snap-research/locomo publishes it (a list of
``{sample_id, conversation, qa}``, as JSON or zipped) into the per-conversation files the
benchmarks read, and the docs' LoCoMo commands read that folder, never a path outside the
repository. The conversations here are made up; the real data is never in the suite."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _sample(number: str) -> dict:
    turns = [{"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a cat."},
             {"speaker": "Ben", "dia_id": "D1:2", "text": "What is its name?"}]
    return {"sample_id": f"conv-{number}",
            "conversation": {"speaker_a": "Ana", "speaker_b": "Ben", "session_1_date_time": "1:56 pm on 8 May, 2023",
                             "session_1": turns},
            "qa": [{"question": "What did Ana adopt?", "answer": "a cat", "evidence": ["D1:1"], "category": 1}],
            "observation": {}, "session_summary": {}, "event_summary": {}}


def test_the_published_layout_becomes_the_folder_the_benchmark_reads(tmp_path) -> None:
    data = _load("locomo_data")
    locomo = _load("locomo")
    source = tmp_path / "locomo" / "data"
    source.mkdir(parents=True)
    numbers = list(data.SPLIT_CONVERSATIONS)
    (source / "locomo10.json").write_text(json.dumps([_sample(n) for n in [*numbers[:4], "99"]]))
    with zipfile.ZipFile(source / "more.zip", "w") as archive:
        archive.writestr("locomo10_v2/rest.json", json.dumps([_sample(n) for n in numbers[4:]]))
    out = tmp_path / ".locomo"
    assert data.main([str(source), "--out", str(out)]) == 0
    assert sorted(p.stem for p in out.glob("*.json")) == sorted(numbers)  # the benchmarked seven only
    conversations = locomo.load_dir(out)
    assert [c.name for c in conversations] == sorted(numbers)
    first = conversations[0]
    assert first.speakers == ("Ana", "Ben") and len(first.sessions) == 1 and len(first.questions) == 1
    assert data.main([str(source), "--out", str(tmp_path / "all"), "--all"]) == 0
    assert "99.json" in {p.name for p in (tmp_path / "all").iterdir()}


def test_one_conversation_per_file_without_sample_ids_keeps_the_file_names(tmp_path) -> None:
    """The layout this script writes (``26.json``: one conversation, no ``sample_id``) reads
    back under the same numbers, so a prepared folder can be prepared again."""
    data = _load("locomo_data")
    source = tmp_path / "prepared"
    source.mkdir()
    for number in data.SPLIT_CONVERSATIONS:
        sample = _sample(number)
        del sample["sample_id"]
        (source / f"{number}.json").write_text(json.dumps({**sample.pop("conversation"), **sample}))
    out = tmp_path / ".locomo"
    assert data.main([str(source), "--out", str(out)]) == 0
    assert sorted(p.stem for p in out.glob("*.json")) == sorted(data.SPLIT_CONVERSATIONS)


def test_missing_conversations_are_named_and_fail(tmp_path, capsys) -> None:
    data = _load("locomo_data")
    (tmp_path / "locomo10.json").write_text(json.dumps([_sample("26")]))
    assert data.main([str(tmp_path / "locomo10.json"), "--out", str(tmp_path / "out")]) == 1
    assert "missing from the source: 30" in capsys.readouterr().out
    assert data.main([str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 2


def test_docs_and_bench_commands_read_locomo_from_the_prepared_folder() -> None:
    outside = re.compile(r"\.\./shared/bench/locomo|/work/shared")
    texts = {p: p.read_text(encoding="utf-8") for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
                                                          *sorted((REPO / "bench").glob("*.py"))]}
    texts[REPO / "shared/agent_memory/interfaces/cli/bench.py"] = \
        (REPO / "shared/agent_memory/interfaces/cli/bench.py").read_text(encoding="utf-8")
    stale = [str(p.relative_to(REPO)) for p, text in texts.items() if outside.search(text)]
    assert not stale, f"LoCoMo read from a path outside the repository in {stale}; use .locomo (bench/locomo_data.py)"
    benchmarks = texts[REPO / "docs" / "benchmarks.md"]
    assert "github.com/snap-research/locomo" in benchmarks and "bench/locomo_data.py" in benchmarks
    # ".locomo" (not only ".locomo/"): a link to the data elsewhere is ignored too
    assert ".locomo" in (REPO / ".gitignore").read_text(encoding="utf-8").split()

"""``agent-memory import --from mem0 FILE``: what Mem0's ``get_all`` returns (OSS 2.x,
``mem0/memory/main.py`` ``_get_all_from_vector_store``: id, memory, hash, metadata, created_at,
updated_at and the promoted user_id, agent_id, run_id, actor_id, role) and its ``history`` rows
(``mem0/memory/storage.py`` ``get_history``) land as facts and turns that the Mem0-style entry
point answers from, metadata kept; a second import writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_memory.compat.mem0 import Memory, read_mem0
from agent_memory.interfaces import cli

FIXTURE = Path(__file__).parent / "fixtures" / "mem0_get_all.json"


@pytest.fixture
def store_kind() -> str:
    return "sqlite"


def test_a_mem0_dump_imports_and_answers_through_the_mem0_entry_point(server, capsys, monkeypatch):
    monkeypatch.delenv("AGENT_MEMORY_API_KEY", raising=False)
    code = cli.main(["import", "--context", "moved", "--url", server, "--from", "mem0", str(FIXTURE), "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert json.loads(out.out) == {"memories": 3, "written": 3, "unchanged": 0, "updates": 1}
    with Memory(context="moved", base_url=server) as m:
        alice = m.get_all(filters={"user_id": "alice"})["results"]
        by_text = {r["memory"]: r for r in alice}
        assert set(by_text) == {"Is a vegetarian", "Plays tennis on Sundays"}
        assert by_text["Is a vegetarian"]["metadata"] == {"category": "food", "source": "onboarding"}
        assert by_text["Plays tennis on Sundays"]["metadata"] is None
        assert [r["memory"] for r in m.get_all(filters={"user_id": "bob"})["results"]] == ["Works as a nurse"]
        assert m.get_all(filters={"user_id": "bob"})["results"][0]["metadata"] == {"confidence": 0.9}
        # agent_id and run_id filter as they did in Mem0
        assert [r["memory"] for r in m.get_all(filters={"user_id": "alice", "agent_id": "diet-coach"})["results"]] \
            == ["Is a vegetarian"]
        assert [r["memory"] for r in m.get_all(filters={"user_id": "alice", "run_id": "run-42"})["results"]] \
            == ["Plays tennis on Sundays"]
        # the history rows became the chain: ADD then UPDATE
        veg = by_text["Is a vegetarian"]["id"]
        rows = m.history(veg)
        assert [(r["event"], r["old_memory"], r["new_memory"]) for r in rows] == [
            ("ADD", None, "Eats no red meat"), ("UPDATE", "Eats no red meat", "Is a vegetarian")]
        hits = m.search("tennis", filters={"user_id": "alice"})["results"]
        assert hits and "tennis" in hits[0]["memory"].lower()
    code = cli.main(["import", "--context", "moved", "--url", server, "--from", "mem0", str(FIXTURE), "--json"])
    assert json.loads(capsys.readouterr().out) == {"memories": 3, "written": 0, "unchanged": 3, "updates": 0}


@pytest.mark.parametrize("text,message", [
    ("not json", "not JSON"),
    ('{"results": [{"id": "x"}]}', "memory 0"),
    ('{"results": [{"id": "x", "memory": "m", "metadata": {"k": "' + "v" * 200 + '"}}]}', "longer than a label"),
    ('{"memories": []}', "get_all output"),
])
def test_a_bad_mem0_file_is_refused_before_anything_is_written(text, message):
    with pytest.raises(ValueError, match=message):
        read_mem0(text)

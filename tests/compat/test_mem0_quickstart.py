"""Mem0 2.2.1's own quick-start, with only its import changed, against the local service: its
chat model pointed at the local fake OpenAI endpoint (``OPENAI_BASE_URL``), its input from a
fixture instead of a terminal. Then the Mem0-shaped methods one by one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_memory.client import AgentMemory
from agent_memory.compat.mem0 import Memory, partition_for
from agent_memory.testing.fake_openai import FakeOpenAIServer

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


@pytest.fixture
def store_kind() -> str:
    return "sqlite"


@pytest.fixture
def fake_model():
    with FakeOpenAIServer() as fake:
        yield fake


def test_the_quickstart_runs_with_only_its_import_changed(server, fake_model):
    env = {**os.environ, "AGENT_MEMORY_URL": server, "AGENT_MEMORY_CONTEXT": "acme",
           "OPENAI_BASE_URL": fake_model.url, "OPENAI_API_KEY": "sk-test",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), os.environ.get("PYTHONPATH", "")])}
    env.pop("AGENT_MEMORY_API_KEY", None)
    run = subprocess.run([sys.executable, str(HERE / "fixtures" / "mem0_quickstart.py")],
                         input=(HERE / "fixtures" / "mem0_quickstart.input").read_text(), env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "Chat with AI (type 'exit' to quit)" and lines[-1].endswith("Goodbye!")
    answers = [line for line in run.stdout.split("You: ") if "AI: " in line]
    assert len(answers) == 3
    assert fake_model.stats.requests >= 3  # its own model calls went to the fake
    # What it added is the default user's memory: the move superseded London.
    with AgentMemory("acme", base_url=server, partition="default_user") as memory:
        current = {a.key: a.value for a in memory.attributes}
    assert current.get("location") == "Berlin"
    # The last question's memories reached its own model, in its own prompt.
    plain = [c for c in fake_model.stats.chats if c and c[0].get("role") == "system" and "User Memories" in c[0]["content"]]
    assert len(plain) == 3 and "Berlin" in plain[-1][0]["content"]


def test_mem0_methods_shapes_and_user_isolation(server):
    m = Memory(context="acme", base_url=server)
    added = m.add("I live in London.", user_id="alice")
    (item,) = added["results"]
    assert item["event"] == "ADD" and "London" in item["memory"] and item["id"].startswith("attr_")
    moved = m.add([{"role": "user", "content": "I moved to Berlin last month."}], user_id="alice")
    update = next(r for r in moved["results"] if r["event"] == "UPDATE")
    assert "Berlin" in update["memory"] and "London" in update["previous_memory"]
    m.add("I live in Oslo.", user_id="bob@example.com")  # not a partition name: hashed into one
    assert partition_for("bob@example.com").startswith("u-")
    assert partition_for("mem0-extract").startswith("u-")  # the partition update() only previews in

    found = m.search("Where do I live?", filters={"user_id": "alice"}, top_k=3)["results"]
    assert found and "Berlin" in found[0]["memory"] and found[0]["score"] == 1.0
    assert all("Oslo" not in r["memory"] for r in found)
    everything = m.get_all(filters={"user_id": "alice"})["results"]
    assert {r["memory"] for r in everything} == {update["memory"]}

    got = m.get(update["id"])
    assert got["id"] == update["id"] and got["memory"] == update["memory"]
    fixed = m.update(update["id"], "I moved to Munich.")
    assert fixed["message"] == "Memory updated successfully!"
    history = m.history(fixed["id"])
    assert [h["event"] for h in history][-2:] == ["UPDATE", "UPDATE"]
    assert history[-1]["old_memory"].endswith("Berlin") and history[-1]["new_memory"].endswith("Munich")

    assert m.delete(fixed["id"]) == {"message": "Memory deleted successfully!"}
    assert m.get(fixed["id"]) is None
    with pytest.raises(ValueError):
        m.delete(fixed["id"])
    m.add("I like tea.", user_id="carol", agent_id="helper")
    m.add("I like coffee.", user_id="carol")
    tagged = m.get_all(filters={"user_id": "carol", "agent_id": "helper"})["results"]
    assert [r["memory"] for r in tagged] == ["User likes: tea"]
    assert m.delete_all(user_id="carol") == {"message": "Memories deleted successfully!"}
    assert m.get_all(filters={"user_id": "carol"})["results"] == []
    assert m.get_all(filters={"user_id": "bob@example.com"})["results"]  # bob untouched
    m.close()


def test_metadata_is_kept_and_returned_by_get_get_all_and_search(server):
    with Memory(context="acme", base_url=server) as m:
        meta = {"source": "onboarding", "priority": 2, "tags": ["work"]}
        (added,) = m.add("I work at Initech.", user_id="dora", metadata=meta)["results"]
        assert added["metadata"] == meta
        assert m.get(added["id"])["metadata"] == meta
        (listed,) = m.get_all(filters={"user_id": "dora"})["results"]
        assert listed["id"] == added["id"] and listed["metadata"] == meta
        found = m.search("Where does the user work?", filters={"user_id": "dora"})["results"]
        assert found[0]["id"] == added["id"] and found[0]["metadata"] == meta
        # Other filter keys match metadata by equality, as in Mem0; operators are refused, not ignored
        (m.add("I like jazz.", user_id="dora", metadata={"source": "survey"}))
        assert [r["id"] for r in m.get_all(filters={"user_id": "dora", "source": "onboarding"})["results"]] == [added["id"]]
        by_meta = m.search("work", filters={"user_id": "dora", "source": "survey"})["results"]
        assert by_meta and all(r["metadata"] == {"source": "survey"} for r in by_meta)
        with pytest.raises(ValueError, match="operators"):
            m.search("work", filters={"user_id": "dora", "priority": {"gte": 1}})
        with pytest.raises(ValueError, match="metadata"):
            m.add("I like rock.", user_id="dora", metadata=["not", "a", "dict"])
        assert len(m.get_all(filters={"user_id": "dora"})["results"]) == 2  # the refused add wrote nothing


def test_one_memory_reads_the_same_from_add_search_get_all_get_and_history(server):
    with Memory(context="acme", base_url=server) as m:
        (added,) = m.add("I work at Initech.", user_id="erin")["results"]
        text = added["memory"]
        assert text == "User employer: Initech"
        (listed,) = m.get_all(filters={"user_id": "erin"})["results"]
        found = m.search("employer", filters={"user_id": "erin"})["results"]
        assert listed["memory"] == found[0]["memory"] == m.get(added["id"])["memory"] == text
        assert m.history(added["id"])[0]["new_memory"] == text


def test_update_replaces_the_memory_text_as_mem0_does(server):
    with Memory(context="acme", base_url=server) as m:
        (job,) = m.add("I work at Initech.", user_id="finn", agent_id="helper",
                       metadata={"source": "chat"})["results"]
        # Another slot's fact: the old memory is replaced, not rewritten as "employer: I live in Porto."
        out = m.update(job["id"], "I live in Porto.")
        assert out["message"] == "Memory updated successfully!"
        now = m.get_all(filters={"user_id": "finn"})["results"]
        assert [r["memory"] for r in now] == ["User location: Porto"]
        assert now[0]["id"] == out["id"] and m.get(job["id"]) is None
        assert all("Initech" not in r["memory"] for r in now)
        # its agent label and metadata came with it
        assert now[0]["metadata"] == {"source": "chat"}
        assert m.get_all(filters={"user_id": "finn", "agent_id": "helper"})["results"][0]["id"] == out["id"]
        # The same slot: a correction, history kept
        moved = m.update(out["id"], "I live in Lisbon.", metadata={"source": "review"})
        assert [r["memory"] for r in m.get_all(filters={"user_id": "finn"})["results"]] == ["User location: Lisbon"]
        assert m.get(moved["id"])["metadata"] == {"source": "review"}
        again = m.update(moved["id"], "I moved to Faro.")
        rows = m.history(again["id"])
        assert rows[-1]["event"] == "UPDATE" and rows[-1]["new_memory"] == "User location: Faro"
        assert rows[-1]["old_memory"] == "User location: Lisbon"
        # The same text with new metadata: the memory keeps its text and takes the metadata
        same = m.update(again["id"], "I moved to Faro.", metadata={"source": "audit"})
        (now_faro,) = m.get_all(filters={"user_id": "finn"})["results"]
        assert now_faro["id"] == same["id"] and now_faro["memory"] == "User location: Faro"
        assert now_faro["metadata"] == {"source": "audit"}
        # A text whose fact is stored already (as another memory): that memory now holds it
        (lunch,) = m.add("My favourite food is ramen.", user_id="finn")["results"]
        moved = m.update(lunch["id"], "I moved to Faro.")
        assert moved["id"] == same["id"] and m.get(lunch["id"]) is None
        assert [r["memory"] for r in m.get_all(filters={"user_id": "finn"})["results"]] == ["User location: Faro"]
        again = same
        # Text with no fact in it is kept as it is
        plain = m.update(again["id"], "Prefers to be contacted after 6pm, never on Sundays")
        assert [r["memory"] for r in m.get_all(filters={"user_id": "finn"})["results"]] == \
            ["Prefers to be contacted after 6pm, never on Sundays"]
        assert m.get(plain["id"])["memory"] == "Prefers to be contacted after 6pm, never on Sundays"


@pytest.mark.parametrize("call", [
    lambda m: m.search("x"),                              # no filters
    lambda m: m.search("x", user_id="alice"),             # top-level entity id, as Mem0 refuses
    lambda m: m.get_all(filters={"user_id": "a"}, top_k=-1),
    lambda m: m.search("x", filters={"user_id": "a"}, threshold=2),
    lambda m: m.add("hi"),                                # no id at all
    lambda m: m.delete_all(),
])
def test_bad_calls_raise_as_mem0_does(server, call):
    with Memory(context="acme", base_url=server) as m, pytest.raises((ValueError, TypeError)):
        call(m)


def test_the_documented_filters_before_and_after_find_the_same_memories(server, monkeypatch):
    """docs/sdk.md's two-line before/after for Mem0's ``filters=`` search: both lines run as
    written (a drifted doc fails here) and find the same memory."""
    doc = (ROOT / "docs" / "sdk.md").read_text()
    block = doc.split("Mem0's `filters=` form of `search`, before and after", 1)[1].split("```python\n", 1)[1]
    before, after = block.split("```", 1)[0].strip().splitlines()
    assert before.rstrip().endswith("# Mem0") and after.startswith("AgentMemory(")
    with Memory(context="mem0", base_url=server) as m:
        m.add("I live in Lisbon.", user_id="alice", agent_id="helper")
        m.add("I like chess.", user_id="alice")  # not the helper's
        mem0_ids = [r["id"] for r in eval(before.split("#")[0], {"m": m})["results"]]  # noqa: S307
    monkeypatch.setenv("AGENT_MEMORY_URL", server)
    monkeypatch.delenv("AGENT_MEMORY_API_KEY", raising=False)
    hits = eval(after, {"AgentMemory": AgentMemory}).hits  # noqa: S307
    assert mem0_ids and [h.id for h in hits] == mem0_ids

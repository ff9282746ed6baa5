"""The spec's loops, run as written (modulo the import line and the constructor) through
the SDK against the local server: the chat loop of chat-sessions.md and the
remember/state/history/asOf flow of state-and-diffs.md, sync and async; the thread flow of
modeling-conversations.md with the async client (tests/threads runs it sync)."""

from __future__ import annotations

import asyncio
import builtins

import pytest

from agent_memory.client import AgentMemory, AsyncAgentMemory, Memory


def _typed(lines: list[str], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Feeds ``input()`` the given lines and collects what ``print()`` writes."""
    feed = iter(lines)
    printed: list[str] = []
    monkeypatch.setattr(builtins, "input", lambda prompt="": next(feed))
    monkeypatch.setattr(builtins, "print", lambda *a, **k: printed.append(" ".join(str(x) for x in a)))
    return printed


LONG_AGO = "2026-01-05T09:00:00Z"
CHAT_INPUT = ["I live in London.", "I moved to Berlin.", "Where do I live?", "exit"]


def _check_chat_transcript(printed: list[str]) -> None:
    agent = [line for line in printed if line.startswith("Agent: ")]
    assert len(agent) == 3
    assert "Berlin" in agent[2]
    assert "  [memory corrected] 'London' → 'Berlin'" in printed


def test_chat_loop_as_written_sync(env_server, model, monkeypatch):
    printed = _typed(CHAT_INPUT, monkeypatch)

    memory = AgentMemory(context="acme")
    session = memory.sessions.create(scopes=["org/acme/user/alice"])

    while True:
        user_input = input("You: ")
        if user_input.lower() in {"exit", "quit"}:
            break

        result = memory.chat(user_input, session_id=session.id)
        print(f"Agent: {result.reply}")

        if result.memory_updates.corrections:
            for c in result.memory_updates.corrections:
                print(f"  [memory corrected] {c.previous.value!r} → {c.current.value!r}")

    session.close()

    _check_chat_transcript(printed)
    turns = list(memory.sessions.handle(session.id).turns())
    assert [t.role for t in turns] == ["user", "assistant"] * 3
    assert memory.sessions.close(session.id).closed_at is not None
    memory.close()


def test_chat_loop_as_written_async(env_server, model, monkeypatch):
    printed = _typed(CHAT_INPUT, monkeypatch)

    async def main() -> str:
        memory = AsyncAgentMemory(context="acme")
        session = await memory.sessions.create(scopes=["org/acme/user/alice"])

        while True:
            user_input = input("You: ")
            if user_input.lower() in {"exit", "quit"}:
                break

            result = await memory.chat(user_input, session_id=session.id)
            print(f"Agent: {result.reply}")

            if result.memory_updates.corrections:
                for c in result.memory_updates.corrections:
                    print(f"  [memory corrected] {c.previous.value!r} → {c.current.value!r}")

        await session.close()
        # the spec's SDK section reads the same result by wire name
        assert result["reply"] == result.reply and result["memoryUpdates"] is result.memory_updates
        assert result["citations"] == result.citations
        await memory.close()
        return session.id

    asyncio.run(main())
    _check_chat_transcript(printed)


class FakeUI:
    def __init__(self):
        self.facts: list[tuple[str, str]] = []
        self.updates: list[tuple[str, str, str]] = []

    def add_fact(self, attr) -> None:
        self.facts.append((attr.key, attr.value))

    def animate_update(self, key: str, old: str, new: str) -> None:
        self.updates.append((key, old, new))


def _check_state_flow(ui: FakeUI, state, history, then, now) -> None:
    assert ("location", "London") in ui.facts and ("location", "Berlin") in ui.facts
    assert ui.updates == [("location", "London", "Berlin")]
    current = {(a["key"], a["value"]) for a in state.identity["attributes"]}
    assert ("location", "Berlin") in current and ("location", "London") not in current
    assert [a.value for a in history] == ["London", "Berlin"]
    assert history[0].superseded_by == history[1].id and history[1].supersedes == history[0].id
    assert [a.value for a in then.attributes if a.key == "location"] == ["London"]
    assert [a.value for a in now.attributes if a.key == "location"] == ["Berlin"]


def test_state_and_diffs_flow_as_written_sync(memory, model):
    ui = FakeUI()
    session_id = memory.sessions.create().id
    first = memory.remember("I live in London.", session_id=session_id, observed_at=LONG_AGO)
    for attr in first.extraction.attributes:
        ui.add_fact(attr)

    result = memory.remember(
        "I moved to Berlin last month",
        session_id=session_id,
    )

    for attr in result.extraction.attributes:
        ui.add_fact(attr)

    for c in result.extraction.corrections:
        ui.animate_update(c["key"], old=c["oldValue"], new=c["newValue"])

    state = memory.state()

    print(state.identity["attributes"])   # Current attribute list
    print(state.instructions)          # Active behavioural instructions
    print(state.unknowns)              # Flagged uncertainties

    profile = memory.profile()
    assert any(e.key == "location" and e.value == "Berlin" for e in profile.self_facts)

    history = memory.entities.history("person", "user", "location")
    then = memory.entities.get("person", "user", as_of=history[0].valid_from)
    now = memory.entities.get("person", "user")
    _check_state_flow(ui, state, history, then, now)


def test_state_and_diffs_flow_as_written_async(env_server, model):
    ui = FakeUI()

    async def main():
        async with AsyncAgentMemory("acme") as memory:
            session_id = (await memory.sessions.create()).id
            first = await memory.remember("I live in London.", session_id=session_id,
                                         observed_at=LONG_AGO)
            for attr in first.extraction.attributes:
                ui.add_fact(attr)

            result = await memory.remember(
                "I moved to Berlin last month",
                session_id=session_id,
            )

            for attr in result.extraction.attributes:
                ui.add_fact(attr)

            for c in result.extraction.corrections:
                ui.animate_update(c["key"], old=c["oldValue"], new=c["newValue"])

            state = await memory.state()

            print(state.identity["attributes"])   # Current attribute list
            print(state.instructions)          # Active behavioural instructions
            print(state.unknowns)              # Flagged uncertainties

            profile = await memory.profile()
            assert any(e.key == "location" and e.value == "Berlin" for e in profile.self_facts)
            history = await memory.entities.history("person", "user", "location")
            then = await memory.entities.get("person", "user", as_of=history[0].valid_from)
            now = await memory.entities.get("person", "user")
            return state, history, then, now

    _check_state_flow(ui, *asyncio.run(main()))


def test_support_handoff_as_written_async(env_server):
    async def main():
        client = AsyncAgentMemory("acme")

        memory = Memory("customer-42", client=client)
        thread = memory.thread("ticket-8492")

        await thread.append(
            "Sign-in still fails after the password reset.",
            {"speaker": "customer", "channel": "email"},
        )
        await thread.append(
            "We verified the reset link and are checking the account lock.",
            {"speaker": "agent", "channel": "email"},
        )

        context = await thread.context(
            "What has already been tried, and what should the next agent check?",
            last_n_turns=8,
        )

        await client.append_thread(
            "patient-7-care",
            "I used the breathing exercise before the flight and felt calmer.",
            entity_id="patient-7",
            metadata={"speaker": "patient", "session_number": 3},
            idempotency_key="patient-7-session-3-turn-4",
        )
        patient = Memory("patient-7", client=client)
        history = patient.thread("patient-7-care")
        care = await history.context(
            "At session 4, which coping strategies did the patient find helpful earlier?",
            last_n_turns=6,
        )
        await client.close()
        return context, care

    context, care = asyncio.run(main())
    assert [item.text for item in context] == [
        "Sign-in still fails after the password reset.",
        "We verified the reset link and are checking the account lock.",
    ]
    assert [item.origin for item in context] == ["recent", "recent"]
    assert context[1].metadata == {"speaker": "agent", "channel": "email"}
    assert [item.text for item in care] == ["I used the breathing exercise before the flight and felt calmer."]

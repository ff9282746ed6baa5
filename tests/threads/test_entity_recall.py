"""``Memory.recall`` is entity-wide (the conversation-modelling spec): with each appointment
its own thread, a thread's context composed with ``Memory.recall`` finds the entity's turn in
another thread, and nothing of another entity. Python SDK here, on both record stores; the
TypeScript helper's test is in clients/typescript."""

from __future__ import annotations

from agent_memory.client import Memory


def test_recall_finds_the_entitys_turn_in_another_thread(sdk):
    care = sdk("care")
    patient = Memory("patient-7", client=care)
    patient.thread("patient-7-session-3").append("The box breathing exercise before the flight helped a lot.")
    Memory("patient-9", client=care).thread("patient-9-session-1").append(
        "The box breathing exercise made me dizzy.")
    session4 = patient.thread("patient-7-session-4")
    session4.append("Today I want to talk about the next flight.")
    same_thread = session4.context("Which breathing exercise helped before the flight?", last_n_turns=6)
    assert not any("helped a lot" in (i.text or "") for i in same_thread), "same-thread context stays in its thread"
    recalled = patient.recall("Which breathing exercise helped before the flight?")
    assert "helped a lot" in recalled.context
    assert "dizzy" not in recalled.context  # another entity's turn is not this entity's memory

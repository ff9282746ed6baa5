"""The spec's two examples (modeling-conversations.md), run as written through the SDK
against the local server over real HTTP, on both stores."""

from __future__ import annotations

import pytest

from agent_memory.client import Memory, MemoryClient
from agent_memory.client.errors import NotFoundError


def test_support_handoff_as_written(sdk):
    client: MemoryClient = sdk("alice")

    memory = Memory("customer-42", client=client)
    thread = memory.thread("ticket-8492")

    thread.append(
        "Sign-in still fails after the password reset.",
        {"speaker": "customer", "channel": "email"},
    )
    thread.append(
        "We verified the reset link and are checking the account lock.",
        {"speaker": "agent", "channel": "email"},
    )

    context = thread.context(
        "What has already been tried, and what should the next agent check?",
        last_n_turns=8,
    )

    assert [item.text for item in context] == [
        "Sign-in still fails after the password reset.",
        "We verified the reset link and are checking the account lock.",
    ]
    assert [item.origin for item in context] == ["recent", "recent"]
    assert [item.turn_index for item in context] == [1, 2]
    assert context[1].metadata == {"speaker": "agent", "channel": "email"}
    assert all(item.entity_id == "customer-42" and item.score is None for item in context)


def test_support_handoff_on_a_longer_ticket_brings_back_the_earlier_attempt(sdk):
    """Past the ordered window, same-thread semantic matches follow the recent turns."""
    thread = Memory("customer-42", client=sdk("alice")).thread("ticket-8493")
    history = [
        ("customer", "Sign-in still fails after the password reset."),
        ("agent", "We cleared the browser cookies and the cached password; sign-in still fails."),
        ("customer", "I also use the mobile app sometimes."),
        ("agent", "Thanks, noted the mobile app."),
        ("customer", "Is there an outage today?"),
        ("agent", "No outage is reported."),
        ("customer", "Ok."),
        ("agent", "We verified the reset link and are checking the account lock."),
        ("customer", "Any news?"),
        ("agent", "Still checking with the identity team."),
    ]
    for speaker, text in history:
        thread.append(text, {"speaker": speaker, "channel": "email"})
    context = thread.context("What was already tried for the sign-in failure: cookies or the password?",
                             last_n_turns=4)
    recent = [item for item in context if item.origin == "recent"]
    semantic = [item for item in context if item.origin == "semantic"]
    assert [item.turn_index for item in recent] == [7, 8, 9, 10]
    assert context[:4] == recent
    assert 1 <= len(semantic) <= 5 and all(item.turn_index < 7 for item in semantic)
    assert semantic[0].text.startswith("We cleared the browser cookies")
    assert len({item.turn_id for item in context}) == len(context)


def test_therapy_session_context_as_written(sdk):
    # "Assume clinic_client is already scoped to the clinic's partition and the current
    # care-team principal."
    clinic_client = sdk("care", partition="clinic-a")
    sessions = {
        1: [("therapist", "Welcome. What brings you here?"),
            ("patient", "I get very anxious before flying for work.")],
        2: [("therapist", "This week, notice what your body does when the anxiety starts."),
            ("patient", "My heart races and my hands shake.")],
        3: [("therapist", "Today we practised slow breathing as a coping strategy for the flight."),
            ("patient", "It felt awkward at first."),
            ("therapist", "Try it once a day, and before the flight.")],
    }
    for session_number, turns in sessions.items():
        for turn_no, (speaker, text) in enumerate(turns, start=1):
            clinic_client.append_thread(
                "patient-7-care", text, entity_id="patient-7",
                metadata={"speaker": speaker, "session_number": session_number},
                acl_readers=["group:care-team-7"],
                idempotency_key=f"patient-7-session-{session_number}-turn-{turn_no}")

    clinic_client.append_thread(
        "patient-7-care",
        "I used the breathing exercise before the flight and felt calmer.",
        entity_id="patient-7",
        metadata={"speaker": "patient", "session_number": 3},
        acl_readers=["group:care-team-7"],
        idempotency_key="patient-7-session-3-turn-4",
    )
    for i, (speaker, text) in enumerate([
        ("therapist", "Good to see you again. How was the month?"),
        ("patient", "Work was busy, lots of deadlines."),
        ("therapist", "How are you sleeping?"),
        ("patient", "Better than before, most nights."),
        ("therapist", "You have another trip next week, right?"),
        ("patient", "Yes, to Lisbon on Tuesday."),
    ], start=1):
        clinic_client.append_thread("patient-7-care", text, entity_id="patient-7",
                                    metadata={"speaker": speaker, "session_number": 4},
                                    acl_readers=["group:care-team-7"],
                                    idempotency_key=f"patient-7-session-4-turn-{i}")

    patient = Memory("patient-7", client=clinic_client)
    history = patient.thread("patient-7-care")
    context = history.context(
        "At session 4, which coping strategies did the patient find helpful earlier?",
        last_n_turns=6,
    )

    recent = [item for item in context if item.origin == "recent"]
    semantic = [item for item in context if item.origin == "semantic"]
    assert [item.metadata["session_number"] for item in recent] == [4] * 6
    assert 1 <= len(semantic) <= 5
    # The session-3 breathing exercise comes back as older, same-thread context. (With the
    # offline hashing embedder matching is lexical: the therapist's "breathing as a coping
    # strategy" turn shares the query's words; the patient's own phrasing of it does not.)
    found = [item for item in semantic if "breathing" in item.text]
    assert found and all(item.metadata["session_number"] == 3 for item in found)
    assert all(item.entity_id == "patient-7" for item in context)
    patient_turn = history.context("Did the breathing exercise before the flight help?", last_n_turns=6)
    assert "I used the breathing exercise before the flight and felt calmer." in [
        item.text for item in patient_turn if item.origin == "semantic"]

    # Retrying the session-3 append with its original key is a replay, not a new turn.
    again = clinic_client.append_thread(
        "patient-7-care", "I used the breathing exercise before the flight and felt calmer.",
        entity_id="patient-7", metadata={"speaker": "patient", "session_number": 3},
        acl_readers=["group:care-team-7"], idempotency_key="patient-7-session-3-turn-4")
    assert again.replayed and again.turn_index == 8
    assert clinic_client.get_thread("patient-7-care")["turnCount"] == 14

    # Reader lists and the partition: another principal of clinic A sees nothing, and the same
    # thread id in clinic B is another thread.
    # The thread has no reader list of its own, so the outsider reads it with none of its turns;
    # in clinic B it does not exist (404, as every thread read).
    outsider = Memory("patient-7", client=sdk("bob", partition="clinic-a")).thread("patient-7-care")
    assert outsider.context("breathing exercise", last_n_turns=6) == []
    other_clinic = Memory("patient-7", client=sdk("care", partition="clinic-b")).thread("patient-7-care")
    with pytest.raises(NotFoundError):
        other_clinic.context("breathing exercise", last_n_turns=6)

"""The profile sorting rules (agent_memory/services/facts/profile.py)."""

from __future__ import annotations

import pytest

from agent_memory.services.facts.profile import attribute_section, relation_section


@pytest.mark.parametrize("key,section", [
    ("name", "static"), ("birthday", "static"), ("nationality", "static"), ("date_of_birth", "static"),
    ("native_language", "static"), ("languages", "static"), ("allergies", "static"), ("email", "static"),
    ("location", "dynamic"), ("city", "dynamic"), ("employer", "dynamic"), ("works_at", "dynamic"),
    ("job_title", "dynamic"), ("role", "dynamic"), ("mood", "dynamic"), ("current_project", "dynamic"),
    ("plans", "dynamic"), ("skills", "dynamic"), ("pets", "dynamic"),
    ("likes", "preferences"), ("loves", "preferences"), ("dislikes", "preferences"), ("prefers", "preferences"),
    ("favourite_food", "preferences"), ("favorite_color", "preferences"), ("hobbies", "preferences"),
    ("diet", "preferences"), ("seat_preference", "preferences"), ("prefers_window_seat", "preferences"),
])
def test_known_keys(key, section):
    assert attribute_section(key) == section


def test_unknown_keys_fall_back_on_their_category():
    assert attribute_section("blood_type", "identity") == "static"
    assert attribute_section("shoe_size", "knowledge") == "dynamic"
    assert attribute_section("current_book", "context") == "dynamic"
    assert attribute_section("blood_type") == "dynamic"  # unknown key, no category: knowledge


def test_the_model_category_does_not_override_a_known_key():
    assert attribute_section("location", "identity") == "dynamic"
    assert attribute_section("likes", "identity") == "preferences"


@pytest.mark.parametrize("label,section", [
    ("sister", "static"), ("mother", "static"), ("mum", "static"), ("husband", "static"),
    ("grandma", "static"), ("child", "static"),
    ("manager", "dynamic"), ("boss", "dynamic"), ("colleague", "dynamic"), ("friend", "dynamic"),
    ("partner", "dynamic"), ("mentor", "dynamic"), ("landlord", "dynamic"),
])
def test_relations(label, section):
    assert relation_section(label) == section

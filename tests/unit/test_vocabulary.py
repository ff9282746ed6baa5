"""The key / label registry (rules.vocabulary)."""

import pytest

from agent_memory.rules import vocabulary as vocab


@pytest.mark.parametrize(("raw", "key"), [
    ("location", "location"),
    ("Location", "location"),
    ("city", "location"),
    ("lives_in", "location"),
    ("Lives in", "location"),
    ("works_at", "employer"),
    ("company", "employer"),
    ("title", "job_title"),
    ("role", "job_title"),
    ("Job Title", "job_title"),
    ("jobTitle", "job_title"),
    ("like", "likes"),
    ("hobby", "hobbies"),
    ("email_address", "email"),
    ("Phone number", "phone"),
    ("favorite_color", "favourite_colour"),
    ("Favourite color", "favourite_colour"),
    ("favourite_colour", "favourite_colour"),
    ("shoe size", "shoe_size"),
])
def test_normalise_key(raw, key):
    assert vocab.normalise_key(raw) == key


@pytest.mark.parametrize("key", ["name", "location", "employer", "job_title", "age", "email", "phone", "timezone",
                                 "nationality", "relationship_status", "birthday", "city", "works_at"])
def test_single_valued_keys(key):
    assert vocab.cardinality(key) == "single"


@pytest.mark.parametrize("key", ["likes", "dislikes", "preferences", "skills", "languages", "pets", "hobbies",
                                 "allergies", "like"])
def test_multi_valued_keys(key):
    assert vocab.cardinality(key) == "multi"


def test_registry_beats_the_model_hint():
    assert vocab.cardinality("location", "multi") == "single"
    assert vocab.cardinality("likes", "single") == "multi"


def test_unknown_key_uses_the_hint_else_single():
    assert vocab.cardinality("board_games_owned", "multi") == "multi"
    assert vocab.cardinality("board_games_owned", "MULTI") == "multi"
    assert vocab.cardinality("board_games_owned", None) == "single"
    assert vocab.cardinality("board_games_owned", "bogus") == "single"


def test_default_categories():
    assert vocab.category("name") == "identity"
    assert vocab.category("employer") == "identity"
    assert vocab.category("city") == "identity"
    assert vocab.category("likes") == "knowledge"
    assert vocab.category("mood") == "context"
    assert vocab.category("something_new") == "knowledge"


def test_model_category_wins_over_default():
    assert vocab.category("location", "context") == "context"
    assert vocab.category("location", "nonsense") == "identity"


def test_initial_importance():
    assert vocab.initial_importance("identity") == 1.0
    assert vocab.initial_importance("knowledge") == 0.8
    assert vocab.initial_importance("context") == 0.5
    assert vocab.initial_importance("unknown") == 0.8


@pytest.mark.parametrize(("raw", "label"), [
    ("sister", "sister"), ("Sister", "sister"), ("sister_of", "sister"), ("boss", "manager"),
    ("reports_to", "manager"), ("works with", "colleague"), ("co-worker", "colleague"), ("wife", "spouse"),
    ("husband", "spouse"), ("mum", "mother"), ("best friend", "friend"), ("fiancé", "fiance"),
])
def test_normalise_label(raw, label):
    assert vocab.normalise_label(raw) == label


def test_label_cardinality():
    assert vocab.label_cardinality("manager") == "single"
    assert vocab.label_cardinality("boss") == "single"
    assert vocab.label_cardinality("spouse") == "single"
    assert vocab.label_cardinality("sister") == "multi"
    assert vocab.label_cardinality("colleague") == "multi"
    assert vocab.label_cardinality("landlord") == "multi"  # unknown: accumulate, never drop
    assert vocab.label_cardinality("landlord", "single") == "single"


def test_label_category():
    assert vocab.label_category("sister") == "identity"
    assert vocab.label_category("landlord") == "knowledge"
    assert vocab.label_category("sister", "context") == "context"

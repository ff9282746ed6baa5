"""Record ids: ``<kind>_<ULID>`` in lower-case Crockford base 32, sortable by creation time."""

from __future__ import annotations

import re
import time

import pytest

from agent_memory.kernel import ids

CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def decode(ulid: str) -> tuple[int, int]:
    value = 0
    for ch in ulid:
        value = value * 32 + CROCKFORD.index(ch)
    return value >> 80, value & ((1 << 80) - 1)


def test_an_id_is_its_kind_and_a_26_character_ulid_of_now():
    before = time.time_ns() // 1_000_000
    made = ids.new_id("turn")
    after = time.time_ns() // 1_000_000
    assert re.fullmatch(r"turn_[0-7][0-9a-hjkmnp-tv-z]{25}", made), made
    ms, _ = decode(made.removeprefix("turn_"))
    assert before <= ms <= after


def test_ids_made_one_after_another_sort_in_that_order_and_differ():
    made = [ids.new_ulid() for _ in range(5000)]  # many in the same millisecond
    assert made == sorted(made)
    assert len(set(made)) == len(made)


def test_the_same_millisecond_or_a_clock_step_back_increments_the_last_randomness(monkeypatch):
    monkeypatch.setattr(ids, "_ulid_last", (0, 0))
    monkeypatch.setattr(ids.time, "time_ns", lambda: 5_000 * 1_000_000)
    first = decode(ids.new_ulid())
    assert decode(ids.new_ulid()) == (5_000, first[1] + 1)
    monkeypatch.setattr(ids.time, "time_ns", lambda: 4_000 * 1_000_000)  # the clock went back
    assert decode(ids.new_ulid()) == (5_000, first[1] + 2)
    monkeypatch.setattr(ids, "_ulid_last", (5_000, (1 << 80) - 1))  # this millisecond is used up
    assert decode(ids.new_ulid())[0] == 5_001


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError):
        ids.new_id("nope")

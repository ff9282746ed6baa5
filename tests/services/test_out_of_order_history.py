"""History under out-of-order writes (docs/decisions.md, "History under out-of-order writes"), on both
record stores: whatever order timed writes arrive in, sequentially or concurrently, a
single-valued key's rows form one chain in event-time order (each ``validUntil`` is the
next row's ``validFrom``, ``supersedes``/``supersededBy`` in that order), the latest value
is current, and ``asOf`` answers at most one value.

The property test compares the stored rows with a reference model of the final chain and
of ``asOf`` at every day (on SQLite: reconciliation is store-independent, and the fixed
shuffled and concurrent cases run on both stores). ``AGENT_MEMORY_HYPOTHESIS_PROFILE=long`` runs many more examples
than the CI profile (``make test``).
"""

from __future__ import annotations

import itertools
import os
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import timeutil
from agent_memory.models.requests import WriteFactsRequest
from agent_memory.runtime import Runtime

# Each example writes to a fresh entity, so the function-scoped runtime is safe to share.
_COMMON = dict(deadline=None, derandomize=True, print_blob=True,
               suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
settings.register_profile("ci", max_examples=20, **_COMMON)
settings.register_profile("long", max_examples=400, **_COMMON)
PROFILE_NAME = os.environ.get("AGENT_MEMORY_HYPOTHESIS_PROFILE", "ci")
PROFILE = settings.get_profile(PROFILE_NAME)
PROPERTY_TIMEOUT = 120 if PROFILE_NAME == "ci" else 3600

CTX = RequestContext(context_id="acme", principal="p", admin=True)
DAY0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
DAYS = 30
_subjects = itertools.count()


def day(n: int) -> str:
    return timeutil.iso(DAY0 + timedelta(days=n))


def fresh_subject() -> str:
    return f"Subject{next(_subjects)}"


def write(runtime: Runtime, subject: str, key: str, value: str, at: int) -> None:
    triple = {"entity": {"type": "person", "name": subject}, "key": key, "value": value}
    runtime.facts.write(CTX, WriteFactsRequest(text=f"{subject} {key} {value}", infer="triples",
                                               triples=[triple], observed_at=day(at)))


def rows(runtime: Runtime, entity_id: str, key: str) -> list[dict]:
    page = runtime.store.query(f"c#acme#default#attrs#{entity_id}", prefix=f"a#{key}#", limit=1000)
    return sorted((r.data for r in page.records if not r.data.get("deleted")),
                  key=lambda r: (r["validFrom"], r["createdAt"], r["id"]))


def as_of(runtime: Runtime, entity_id: str, key: str, at: str) -> list[str]:
    found = runtime.entities.get(CTX, entity_id, at, limit=200).attributes
    return sorted(a.value for a in found if a.key == key)


# --- the reference model ----------------------------------------------------------------


def single_chain(writes: list[tuple[int, str]]) -> list[tuple[int, str, int | None]]:
    """(start, value, end) per row: writes in day order, a repeat of the running value
    extends it, and each row ends where the next begins."""
    runs: list[tuple[int, str]] = []
    for at, value in sorted(writes):
        if not runs or runs[-1][1] != value:
            runs.append((at, value))
    return [(start, value, runs[i + 1][0] if i + 1 < len(runs) else None)
            for i, (start, value) in enumerate(runs)]


def single_as_of(chain: list[tuple[int, str, int | None]], at: int) -> list[str]:
    return [v for start, v, end in chain if start <= at and (end is None or at < end)]


def multi_starts(writes: list[tuple[int, str]]) -> dict[str, int]:
    starts: dict[str, int] = {}
    for at, value in writes:
        starts[value] = min(at, starts.get(value, at))
    return starts


# --- checks against the stored rows ---------------------------------------------------------


def assert_one_chain(stored: list[dict], expected: list[tuple[int, str, int | None]]) -> None:
    got = [(r["validFrom"], r["value"], r["validUntil"]) for r in stored]
    want = [(day(s), v, day(e) if e is not None else None) for s, v, e in expected]
    assert got == want
    for earlier, later in itertools.pairwise(stored):
        assert earlier["supersededBy"] == later["id"] and later["supersedes"] == earlier["id"]
    assert stored[0]["supersedes"] is None and stored[-1]["supersededBy"] is None


def check_single(runtime: Runtime, subject: str, writes: list[tuple[int, str]]) -> None:
    entity_id = f"entity:person/{subject.lower()}"
    expected = single_chain(writes)
    assert_one_chain(rows(runtime, entity_id, "location"), expected)
    for at in range(-1, DAYS + 2):
        assert as_of(runtime, entity_id, "location", day(at)) == single_as_of(expected, at), at


def check_multi(runtime: Runtime, subject: str, writes: list[tuple[int, str]]) -> None:
    entity_id = f"entity:person/{subject.lower()}"
    starts = multi_starts(writes)
    stored = rows(runtime, entity_id, "likes")
    assert sorted((r["value"], r["validFrom"], r["validUntil"]) for r in stored) == \
        sorted((v, day(s), None) for v, s in starts.items())
    for at in range(-1, DAYS + 2):
        assert as_of(runtime, entity_id, "likes", day(at)) == sorted(v for v, s in starts.items() if s <= at), at


timed_writes = st.lists(st.tuples(st.integers(0, DAYS), st.sampled_from(["Oslo", "Rome", "Lima", "Kyiv"])),
                        min_size=1, max_size=7, unique_by=lambda w: w[0])


@pytest.mark.parametrize("store_kind", ["sqlite"])  # moto is too slow for many examples;
@pytest.mark.timeout(PROPERTY_TIMEOUT)                # the fixed cases below run on both stores
@settings(PROFILE)
@given(data=st.data())
def test_a_single_valued_key_keeps_one_chain_whatever_the_arrival_order(runtime, data):
    writes = data.draw(timed_writes, label="writes")
    arrival = data.draw(st.permutations(writes), label="arrival order")
    subject = fresh_subject()
    for at, value in arrival:
        write(runtime, subject, "location", value, at)
    check_single(runtime, subject, writes)


@pytest.mark.parametrize("store_kind", ["sqlite"])  # moto is too slow for many examples;
@pytest.mark.timeout(PROPERTY_TIMEOUT)                # the fixed cases below run on both stores
@settings(PROFILE)
@given(data=st.data())
def test_a_multi_valued_key_keeps_each_value_from_its_first_day_whatever_the_arrival_order(runtime, data):
    writes = data.draw(st.lists(st.tuples(st.integers(0, DAYS), st.sampled_from(["tea", "jazz", "chess"])),
                                min_size=1, max_size=7), label="writes")
    arrival = data.draw(st.permutations(writes), label="arrival order")
    subject = fresh_subject()
    for at, value in arrival:
        write(runtime, subject, "likes", value, at)
    check_multi(runtime, subject, writes)


def test_twenty_values_in_shuffled_order_leave_one_chain(runtime):
    """The reproducer: 20 values with increasing observed_at, written shuffled."""
    writes = [(i + 1, f"City{i}") for i in range(20)]
    arrival = writes[:]
    random.Random(7).shuffle(arrival)
    subject = fresh_subject()
    for at, value in arrival:
        write(runtime, subject, "location", value, at)
    check_single(runtime, subject, writes)


def test_twenty_values_in_shuffled_order_written_concurrently_leave_one_chain(runtime):
    writes = [(i + 1, f"City{i}") for i in range(20)]
    arrival = writes[:]
    random.Random(11).shuffle(arrival)
    subject = fresh_subject()
    barrier = threading.Barrier(8)

    def send(w: tuple[int, str]) -> None:
        try:
            barrier.wait(timeout=5)
        except threading.BrokenBarrierError:
            pass
        write(runtime, subject, "location", w[1], w[0])

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(send, arrival))
    check_single(runtime, subject, writes)


@pytest.mark.parametrize("text", ["I live in Oslo.", "I moved to Rome."])
def test_conversational_turns_out_of_order_are_placed_by_observed_time(runtime, text):
    """Through model extraction: a late, older statement becomes history, never current."""
    runtime.facts.write(CTX, WriteFactsRequest(text="I live in Lima.", observed_at=day(10)))
    runtime.facts.write(CTX, WriteFactsRequest(text=text, observed_at=day(5)))
    stored = rows(runtime, "entity:person/user", "location")
    place = text.split()[-1].rstrip(".")
    assert_one_chain(stored, [(5, place, 10), (10, "Lima", None)])


def test_a_statement_after_a_retroactive_move_supersedes_the_moved_to_value(runtime):
    """"I moved to Rome last week" retracts Lima (closed empty, on the day it was written) and
    starts Rome a week back; a later statement must supersede Rome, not the retracted row."""
    runtime.facts.write(CTX, WriteFactsRequest(text="I live in Lima.", observed_at=day(20)))
    runtime.facts.write(CTX, WriteFactsRequest(text="I moved to Rome last week.", observed_at=day(20)))
    runtime.facts.write(CTX, WriteFactsRequest(text="I live in Oslo.", observed_at=day(25)))
    stored = [r for r in rows(runtime, "entity:person/user", "location") if r["validFrom"] != r["validUntil"]]
    assert [(r["value"], r["validUntil"]) for r in stored] == [("Rome", day(25)), ("Oslo", None)]
    rome, oslo = stored
    assert rome["supersededBy"] == oslo["id"] and oslo["supersedes"] == rome["id"]
    assert as_of(runtime, "entity:person/user", "location", day(26)) == ["Oslo"]

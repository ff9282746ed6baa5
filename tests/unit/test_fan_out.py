"""kernel.fan_out: independent calls run at once, in the caller's context, results in order."""

from __future__ import annotations

import threading

import pytest

from agent_memory.kernel import deadline, fan_out


def test_calls_run_at_once_and_return_in_order():
    barrier = threading.Barrier(3, timeout=30)  # each call waits for the other two: only concurrent calls pass

    def call(i: int):
        barrier.wait()
        return i * 10, fan_out.branch()

    results = fan_out.run_at_once([lambda i=i: call(i) for i in range(3)])
    assert [r for r, _ in results] == [0, 10, 20]
    branches = [b for _, b in results]
    assert len({b[0][0] for b in branches}) == 1  # one fan-out
    assert [b[0][1] for b in branches] == [0, 1, 2]
    assert fan_out.branch() == ()


def test_nested_fan_outs_name_their_path_and_a_single_call_runs_inline():
    def inner():
        return fan_out.run_at_once([fan_out.branch, fan_out.branch])

    outer = fan_out.run_at_once([inner, fan_out.branch])
    (first, second), alone = outer
    assert len(first) == len(second) == 2 and first[0] == second[0] and first[0][0] == alone[0][0]
    assert (first[0][1], alone[0][1]) == (0, 1)
    assert first[1][0] == second[1][0] and (first[1][1], second[1][1]) == (0, 1)
    assert fan_out.run_at_once([threading.current_thread]) == [threading.current_thread()]


def test_the_deadline_follows_the_calls_and_a_failure_raises():
    with deadline.within(30):
        left = fan_out.run_at_once([deadline.remaining, deadline.remaining])
    assert all(x is not None and 0 < x <= 30 for x in left)

    def boom():
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        fan_out.run_at_once([lambda: 1, boom])

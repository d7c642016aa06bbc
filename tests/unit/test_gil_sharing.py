"""The executor shares the GIL with helper threads (ZooKeeper client, control thread)."""

from __future__ import annotations

import sys

import pytest

from topology.runtime.gil_sharing import GilYield, short_switch_interval

pytestmark = pytest.mark.timeout(60)


def test_gil_yield_sleeps_at_most_once_per_interval() -> None:
    slept: list[float] = []
    gil = GilYield(every=0.05, pause=0.0001, sleep=slept.append)
    for now in (10.0, 10.01, 10.049, 10.05, 10.06, 10.2):
        gil.maybe_yield(now)
    assert slept == [0.0001] * 3  # at 10.0, 10.05 and 10.2
    assert gil.yields == 3


def test_the_switch_interval_is_restored_even_when_the_body_raises() -> None:
    before = sys.getswitchinterval()
    with pytest.raises(RuntimeError), short_switch_interval(0.0002):
        assert sys.getswitchinterval() == pytest.approx(0.0002)
        raise RuntimeError("the worker ended badly")
    assert sys.getswitchinterval() == before


def test_overlapping_workers_restore_the_interval_only_when_the_last_one_ends() -> None:
    before = sys.getswitchinterval()
    first, second = short_switch_interval(0.0002), short_switch_interval(0.0002)
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first worker ends: the second still runs
    assert sys.getswitchinterval() == pytest.approx(0.0002)
    second.__exit__(None, None, None)
    assert sys.getswitchinterval() == before

"""Unit tests for topology.runtime.tasks.spout_wait: the spout wait strategies (pure)."""

from __future__ import annotations

import pytest

from topology import config as cfg
from topology.runtime.tasks.spout_wait import fixed_wait, progressive_wait, spout_wait


def test_fixed_wait_is_the_same_after_any_number_of_empty_calls() -> None:
    wait = fixed_wait(0.001)
    assert [wait(n) for n in (1, 2, 50, 10**6)] == [0.001] * 4


def test_progressive_wait_doubles_up_to_its_maximum() -> None:
    wait = progressive_wait(0.001, 0.006)
    assert [wait(n) for n in range(1, 6)] == pytest.approx([0.001, 0.002, 0.004, 0.006, 0.006])
    assert wait(10**9) == pytest.approx(0.006)  # no overflow after a very long idle spell


def test_progressive_wait_never_waits_less_than_its_first_wait_or_at_all_from_zero() -> None:
    assert progressive_wait(0.005, 0.001)(3) == pytest.approx(0.005)
    assert progressive_wait(0.0, 0.1)(20) == 0.0


def test_the_conf_chooses_the_strategy() -> None:
    conf = cfg.resolve({cfg.TOPOLOGY_SPOUT_WAIT_MS: 2})
    assert spout_wait(conf)(5) == pytest.approx(0.002)  # sleep: the default
    conf[cfg.TOPOLOGY_SPOUT_WAIT_STRATEGY] = "progressive"
    assert spout_wait(conf)(5) == pytest.approx(0.032)

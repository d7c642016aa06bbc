"""Bolts report their failed inputs by reason, like spouts (issue 13): ``failed`` when the
bolt's code called ``fail(tup)``, ``error`` when its code raised and the runtime failed the
input."""

from __future__ import annotations

from typing import Any

import pytest

from topology import BasicBolt, Bolt, Count, TopologyBuilder, Tuple, Window, WindowedBolt
from topology.runtime.inprocess import InProcessRunner
from topology.testing import FeederSpout

#: The failure policy before dead letters: an input whose code raised is failed at once.
FAIL_AT_ONCE = {"topology.errors.retries": 0, "topology.errors.action": "fail"}

pytestmark = pytest.mark.timeout(30)


class Sink(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


class FailsSome(Bolt):
    """Fails multiples of 3 itself, raises on multiples of 4, acks the rest."""

    def execute(self, tup: Tuple) -> None:
        n = tup[0]
        if n % 3 == 0:
            self.fail(tup)
        elif n % 4 == 0:
            raise ValueError(f"no {n}")
        else:
            self.ack(tup)


class RaisesOnOdd(BasicBolt):
    def process(self, tup: Tuple) -> None:
        if tup[0] % 2:
            raise ValueError("odd")


class RaisingWindow(WindowedBolt):
    def execute(self, window: Window) -> None:
        raise RuntimeError("window")


def bolt_entry(bolt: Bolt, limit: int = 12) -> dict[str, Any]:
    """The status entry of ``bolt``'s one task after it saw ``limit`` tuples."""
    builder = TopologyBuilder()
    builder.set_spout("source", FeederSpout(["n"], [[i] for i in range(limit)]))
    builder.set_bolt("work", bolt).shuffle_grouping("source")
    runner = InProcessRunner(builder.create_topology(), {"topology.workers": 1, **FAIL_AT_ONCE})
    runner.activate()
    source = runner.task("source")
    runner.run_until(lambda: source.stats.acked + source.stats.failed == limit)
    (worker,) = runner.status()
    (entry,) = [t for t in worker["tasks"].values() if t["component"] == "work"]
    return entry


def test_a_bolts_failures_are_broken_down_by_reason() -> None:
    entry = bolt_entry(FailsSome())  # 0 3 6 9 fail; 4 8 raise
    assert entry["failed_by"] == {"failed": 4, "error": 2}
    assert entry["failed"] == 6
    assert entry["windows"][":all-time"]["failed_by"] == {"failed": 4, "error": 2}


def test_a_basic_bolt_that_raises_counts_errors() -> None:
    entry = bolt_entry(RaisesOnOdd())
    assert entry["failed_by"] == {"error": 6}


def test_a_windowed_bolt_that_raises_fails_the_window_as_errors() -> None:
    entry = bolt_entry(RaisingWindow().with_tumbling_window(count=Count(2)))
    assert entry["failed_by"] == {"error": 12}


def test_a_bolt_that_never_fails_reports_no_reasons() -> None:
    assert bolt_entry(Sink())["failed_by"] == {}

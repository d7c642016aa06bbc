"""The size of stateful bolts' live state in worker status, the status report, the
terminal view and the Prometheus endpoint."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from cli.status_view import bolts_table, checkpoints_line, data_size, state_size
from tests.unit.status_helpers import coordinator_status, make_report, render, row
from topology import ReplayableSpout, StatefulBolt, TopologyBuilder, TopologyContext, Tuple
from topology.runtime.inprocess import InProcessRunner
from topology.runtime.task_status import state_size as task_state_size
from topology.state.live import StateSize
from topology.stats.prometheus import TopologySnapshot, exposition
from topology.stats.status_report import build_report

pytestmark = pytest.mark.timeout(60)


def test_sizes_are_shown_in_decimal_units() -> None:
    assert [data_size(n) for n in (0, 999, 1500, 34_000_000, 340_000_000, 2_100_000_000)] == [
        "0 B",
        "999 B",
        "1.50 kB",
        "34.0 MB",
        "340 MB",
        "2.10 GB",
    ]
    assert state_size(1_200_000, 340_000_000) == "1.20M keys, 340 MB"
    assert state_size(12, 4096) == "12 keys, 4.10 kB"


def test_a_task_reports_the_size_of_its_state_only_when_it_has_one() -> None:
    class Sized:
        def size(self) -> StateSize:
            return StateSize(3, 120)

    class Holder:
        def __init__(self, state: Any) -> None:
            self.state = state

    assert task_state_size(Holder(Sized())) == {"keys": 3, "bytes": 120}
    assert task_state_size(Holder({"a": 1})) is None  # a dict has no size()
    assert task_state_size(Holder(None)) is None
    assert task_state_size(object()) is None


def _report_with_state() -> dict[str, Any]:
    report = make_report()
    for b in report["bolts"]:
        if b["id"] == "count":
            b.update(state_keys=1_234_567, state_bytes=340_000_000)
    return report


def test_the_bolts_table_shows_each_stateful_bolts_state() -> None:
    out = render(bolts_table(_report_with_state()))
    assert row(out, "count")[-1] == "1.23M keys, 340 MB"
    assert row(out, "split")[-1] == "-"
    assert "state" not in render(bolts_table(make_report())).split("\n")[1]  # no column


def test_the_checkpoints_line_gives_the_total_state() -> None:
    report = _report_with_state()
    report["checkpoints"] = coordinator_status()
    for b in report["bolts"]:
        if b["id"] == "audit":
            b.update(state_keys=766_433, state_bytes=60_000_000)
    line = checkpoints_line(report)
    assert line is not None and ", state 2.00M keys, 400 MB" in line.plain


class Numbers(ReplayableSpout):
    outputs = ["n"]

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.next = 0

    def next_tuple(self) -> None:
        if self.next < 300:
            self.emit([self.next % 50])
            self.next += 1

    def position(self) -> int:
        return self.next

    def seek(self, position: Any) -> None:
        self.next = position


class Count(StatefulBolt):
    def execute(self, tup: Tuple) -> None:
        self.state.put(tup[0], self.state.get(tup[0], 0) + 1)


def counted_status(conf: dict[str, Any]) -> list[dict[str, Any]]:
    """The workers' status replies after a count of 300 numbers over 50 keys on 2 workers
    (checkpointed in memory), with ``conf`` over that."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers())
    builder.set_bolt("count", Count(), 2).fields_grouping("numbers", ["n"])
    base = {"topology.workers": 2, "topology.state.provider": "memory"}
    runner = InProcessRunner(builder.create_topology(), {**base, **conf})
    runner.activate()
    for _ in range(2000):
        runner.clock.advance(0.005)  # type: ignore[attr-defined]
        runner.turn()
        if runner.instance("numbers").next == 300:
            break
    runner.turn(20)
    return runner.status()


def test_workers_report_state_sizes_summed_per_component_up_to_prometheus() -> None:
    replies = counted_status({})
    tasks = [t for r in replies for t in r["tasks"].values() if t["component"] == "count"]
    assert sum(t["state"]["keys"] for t in tasks) == 50
    assert all(
        "state" not in t for r in replies for t in r["tasks"].values() if t["kind"] == "spout"
    )
    components = {"numbers": {"kind": "spout", "tasks": 1}, "count": {"kind": "bolt", "tasks": 2}}
    summary = {"name": "demo", "status": "ACTIVE", "workers": 2, "workers_alive": 2}
    report = build_report(summary, components, replies, window="all")
    [count] = report["bolts"]
    assert count["state_keys"] == 50 and count["state_bytes"] > 0
    assert "state_keys" not in report["spouts"][0]
    text = exposition(lambda: [TopologySnapshot(report, replies)]).decode()
    samples = {
        (s.name, s.labels["component"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("sparkstorm_state_")
    }
    assert samples == {
        ("sparkstorm_state_keys", "count"): 50.0,
        ("sparkstorm_state_bytes", "count"): float(count["state_bytes"]),
    }


def test_a_disk_backed_state_reports_its_cache_hits_up_to_prometheus(tmp_path: Any) -> None:
    replies = counted_status(
        {"topology.state.backend": "lmdb", "topology.state.local.dir": str(tmp_path)}
    )
    tasks = [t for r in replies for t in r["tasks"].values() if t["component"] == "count"]
    # 300 counts of 50 keys, each read once: the first read of a key misses, 250 hit
    assert sum(t["state"]["cache_misses"] for t in tasks) == 50
    assert sum(t["state"]["cache_hits"] for t in tasks) == 250
    components = {"numbers": {"kind": "spout", "tasks": 1}, "count": {"kind": "bolt", "tasks": 2}}
    summary = {"name": "demo", "status": "ACTIVE", "workers": 2, "workers_alive": 2}
    report = build_report(summary, components, replies, window="all")
    [count] = report["bolts"]
    assert (count["state_cache_hits"], count["state_cache_misses"]) == (250, 50)
    assert count["state_cache_hit_rate"] == pytest.approx(250 / 300, abs=1e-4)
    out = render(bolts_table(report))
    assert row(out, "count")[-1].endswith("83.3% cached")
    text = exposition(lambda: [TopologySnapshot(report, replies)]).decode()
    samples = {
        s.name: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("sparkstorm_state_cache")
    }
    assert samples == {
        "sparkstorm_state_cache_hits_total": 250.0,
        "sparkstorm_state_cache_misses_total": 50.0,
    }

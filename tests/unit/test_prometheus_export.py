"""Unit tests for topology.stats.prometheus: status reports of in-process workers as
Prometheus exposition text (parsed back with prometheus_client's own parser)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from topology import Bolt, Spout, TopologyBuilder, TopologyContext
from topology.assignment import to_json
from topology.runtime.inprocess import InProcessRunner
from topology.spec import describe_components
from topology.stats.carry import newest, save_reply, stand_ins
from topology.stats.prometheus import TopologySnapshot, exposition
from topology.stats.status_report import build_report

pytestmark = pytest.mark.timeout(30)


class Numbers(Spout):
    outputs = ["n"]

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < 10:
            self.emit([self.i], msg_id=self.i)
            self.i += 1


class Measured(Bolt):
    """Acks even numbers, fails odd ones; counts, gauges and measures them."""

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        self.odd = context.register_counter("odd_numbers", "odd numbers seen")
        self.last = context.register_gauge("last_number")
        self.sizes = context.register_histogram("number_size", buckets=[2, 5])
        context.register_gauge("always", lambda: 42)

    def execute(self, tup: Any) -> None:
        n = tup[0]
        self.last.set(n)
        self.sizes.observe(n)
        if n % 2:
            self.odd.inc()
            self.fail(tup)
        else:
            self.ack(tup)


def scrape(hostile: tuple[bytes, ...] = ()) -> dict[str, Any]:
    """Run the topology to the end in one process (with ``hostile`` frames arriving at
    its worker first); sample name -> {labels: value}."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers())
    builder.set_bolt("measured", Measured()).shuffle_grouping("numbers")
    topology = builder.create_topology()
    runner = InProcessRunner(topology, {"topology.workers": 1})
    runner.start()
    for frame in hostile:
        runner.inbox(0).put(frame)
    runner.activate()
    runner.run_until(lambda: runner.instance("numbers").i == 10, 200)
    runner.turn(5)  # the last tuples, their acks and the spout's outcomes
    replies = runner.status()
    summary = {"name": "demo", "status": "ACTIVE", "workers": 1, "workers_alive": 1}
    report = build_report(summary, describe_components(topology), replies, window="all")
    text = exposition(lambda: [TopologySnapshot(report, replies)]).decode()
    samples: dict[str, Any] = {}
    for family in text_string_to_metric_families(text):  # raises on invalid text
        for sample in family.samples:
            key = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "topology"))
            samples.setdefault(sample.name, {})[key] = sample.value
    return samples


def test_component_counters_and_failure_reasons_match_the_report() -> None:
    samples = scrape()
    spout = (("component", "numbers"),)
    assert samples["sparkstorm_emitted_total"][spout] == 10
    assert samples["sparkstorm_acked_total"][spout] == 5
    assert samples["sparkstorm_failed_total"][spout] == 5
    assert samples["sparkstorm_failures_total"][(*spout, ("reason", "failed"))] == 5
    assert samples["sparkstorm_executed_total"][(("component", "measured"),)] == 10
    assert samples["sparkstorm_pending"][spout] == 0
    assert samples["sparkstorm_topology_active"][()] == 1


def test_latency_histograms_count_every_completed_tree_and_executed_tuple() -> None:
    samples = scrape()
    [(labels, complete)] = samples["sparkstorm_complete_latency_seconds_count"].items()
    assert dict(labels)["component"] == "numbers" and complete == 5  # acked trees only
    [executed] = samples["sparkstorm_execute_latency_seconds_count"].values()
    assert executed == 10
    inf = [v for k, v in samples["sparkstorm_execute_latency_seconds_bucket"].items()]
    assert max(inf) == 10  # the +Inf bucket holds every observation


def test_busy_and_backpressured_seconds_and_queued_tuples_are_exported_per_task() -> None:
    samples = scrape()
    busy = {dict(k)["component"]: v for k, v in samples["sparkstorm_busy_seconds_total"].items()}
    assert set(busy) == {"numbers", "measured"} and min(busy.values()) >= 0
    held = {
        dict(k)["component"]: v
        for k, v in samples["sparkstorm_backpressured_seconds_total"].items()
    }
    assert set(held) == {"numbers", "measured"} and min(held.values()) >= 0
    assert list(samples["sparkstorm_queued"].values()) == [0]  # every tuple executed


def test_user_metrics_are_exported_with_their_kind_and_task() -> None:
    samples = scrape()
    [(labels, odd)] = samples["sparkstorm_user_odd_numbers_total"].items()
    assert odd == 5 and dict(labels)["component"] == "measured" and "task" in dict(labels)
    assert list(samples["sparkstorm_user_last_number"].values()) == [9]
    assert list(samples["sparkstorm_user_always"].values()) == [42]
    buckets = {dict(k)["le"]: v for k, v in samples["sparkstorm_user_number_size_bucket"].items()}
    assert buckets == {"2.0": 3, "5.0": 6, "+Inf": 10}  # 0..9 cumulative
    assert list(samples["sparkstorm_user_number_size_sum"].values()) == [45]


def test_the_grafana_dashboard_queries_only_metrics_the_endpoint_serves() -> None:
    """docs/grafana/sparkstorm-dashboard.json stays in step with the exporter's names."""
    import json
    import re
    from pathlib import Path

    dashboard = Path(__file__).resolve().parents[2] / "docs/grafana/sparkstorm-dashboard.json"
    panels = json.loads(dashboard.read_text())["panels"]
    used = {
        name
        for panel in panels
        for target in panel["targets"]
        for name in re.findall(r"sparkstorm_[a-z_]+", target["expr"])
    }
    served = {name for name in scrape()} | {"sparkstorm_topology_workers"}
    # a histogram's _bucket samples are served under the family's name + _bucket
    missing = sorted(used - served)
    assert not missing, f"the dashboard queries metrics nobody serves: {missing}"
    assert len(panels) >= 10


def test_dropped_frames_are_exported_per_reason() -> None:
    samples = scrape(hostile=(b"\xc1", b"\xc1\xc1", b"\x91\x00"))
    by_reason = samples["sparkstorm_worker_dropped_frames_by_reason_total"]
    assert by_reason == {
        (("reason", "undecodable"), ("worker", "0")): 2.0,
        (("reason", "not-a-frame"), ("worker", "0")): 1.0,
    }
    assert samples["sparkstorm_worker_dropped_frames_total"] == {(("worker", "0"),): 3.0}


def _samples(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    samples: dict[str, Any] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "topology"))
            samples.setdefault(sample.name, {})[key] = sample.value
    return samples


def test_a_scrape_while_a_worker_is_down_has_every_family_and_no_count_goes_down() -> None:
    """Issue 40: worker 1 dies after its last save.  Its tasks count as what they carried
    (what its relaunch starts from): every counter family is there with the same totals,
    its restart shows, its live gauges and dropped frames (this incarnation's) are left
    out rather than reported as 0."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers(), parallelism=2)
    builder.set_bolt("measured", Measured(), parallelism=2).shuffle_grouping("numbers")
    topology = builder.create_topology()
    runner = InProcessRunner(topology, {"topology.workers": 2})
    runner.start()
    runner.activate()
    spouts = [runner.instance("numbers", index) for index in (0, 1)]
    runner.run_until(lambda: all(spout.i == 10 for spout in spouts), 400)
    runner.turn(5)
    replies = runner.status()
    components = describe_components(topology)
    summary = {"name": "demo", "status": "ACTIVE", "workers": 2, "workers_alive": 2}

    def scrape(replies: list[dict[str, Any]], restarts: int, alive: int) -> dict[str, Any]:
        supervision = {1: {"restarts": restarts}}
        report = build_report(
            {**summary, "workers_alive": alive},
            components,
            replies,
            window="all",
            supervision=supervision,
        )
        return _samples(exposition(lambda: [TopologySnapshot(report, replies)]).decode())

    before = scrape(replies, 0, 2)
    carried = newest([save_reply(reply) for reply in replies])
    down = stand_ins(to_json(runner.assignment, 1), components, carried, [1], time.time())
    during = scrape([replies[0], down[1]], 1, 1)

    assert set(during) == set(before)  # every family, the per-incarnation ones from worker 0
    for name in ("emitted", "transferred", "acked", "failed", "executed", "failures"):
        assert during[f"sparkstorm_{name}_total"] == before[f"sparkstorm_{name}_total"]
    assert during["sparkstorm_worker_restarts_total"] == {
        (("worker", "0"),): 0.0,
        (("worker", "1"),): 1.0,
    }
    assert during["sparkstorm_topology_workers_alive"] == {(): 1.0}
    for gauge in ("dropped_frames_total", "buffered", "congested", "receive_queue"):
        assert set(during[f"sparkstorm_worker_{gauge}"]) == {(("worker", "0"),)}
    # worker 1's tasks are gone from the per-incarnation families until it is back
    for family in ("complete", "execute"):
        tasks = {int(dict(k)["task"]) for k in during[f"sparkstorm_{family}_latency_seconds_count"]}
        assert tasks and tasks <= set(runner.assignment.worker_tasks[0])

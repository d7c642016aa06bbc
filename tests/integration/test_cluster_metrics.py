"""LocalCluster's Prometheus endpoint (issue 13): valid exposition text whose counters
match the status report."""

from __future__ import annotations

import os
import signal
import urllib.request
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.flow_components import PacedSpout
from tests.integration.helpers import wait_for
from tests.integration.stats_components import CountingSink
from tests.metrics_scrapes import Scrapes
from topology import LocalCluster, TopologyBuilder
from topology.deploy.local.cluster import ClusterError

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

N = 300


def test_the_metrics_endpoint_counts_what_status_counts() -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", PacedSpout(N, 0.0), parallelism=2)
    builder.set_bolt("count", CountingSink(), parallelism=2).shuffle_grouping("numbers")
    with LocalCluster({"sparkstorm.metrics.port": 0}) as cluster:
        assert cluster.metrics is not None
        cluster.submit_topology("metered", {"topology.workers": 2}, builder.create_topology())
        cluster.wait_until_drained("metered", timeout=60)
        report = cluster.stats("metered", window="all")
        text = urllib.request.urlopen(cluster.metrics.url, timeout=10).read().decode()
    samples = {
        (sample.name, sample.labels.get("component"), sample.labels.get("worker")): sample.value
        for family in text_string_to_metric_families(text)  # raises on invalid text
        for sample in family.samples
        if sample.labels.get("topology") == "metered"
    }
    spout = report["spouts"][0]
    assert spout["acked"] == N * 2
    assert samples[("sparkstorm_acked_total", "numbers", None)] == spout["acked"]
    assert samples[("sparkstorm_emitted_total", "numbers", None)] == spout["emitted"]
    assert samples[("sparkstorm_executed_total", "count", None)] == N * 2
    assert samples[("sparkstorm_topology_workers_alive", None, None)] == 2
    assert {w for (name, _, w) in samples if name == "sparkstorm_worker_restarts_total"} == {
        "0",
        "1",
    }


def test_a_taken_metrics_port_is_a_clear_error_naming_the_key() -> None:
    with LocalCluster({"sparkstorm.metrics.port": 0}) as first:
        assert first.metrics is not None
        taken = first.metrics.port
        with pytest.raises(ClusterError, match=rf"sparkstorm.metrics.port={taken}: .*in use"):
            LocalCluster({"sparkstorm.metrics.port": taken})


def test_every_scrape_through_a_sigkilled_worker_has_every_family_and_no_count_goes_down() -> None:
    """Issue 40: while worker 1 is dead and relaunched, its tasks count as what they
    carried, ``workers_alive`` is what runs and ``restarts`` rises."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", PacedSpout(100_000, 0.002), parallelism=2)
    builder.set_bolt("count", CountingSink(), parallelism=2).shuffle_grouping("numbers")
    with LocalCluster({"sparkstorm.metrics.port": 0}) as cluster:
        assert cluster.metrics is not None
        cluster.submit_topology("kept", {"topology.workers": 2}, builder.create_topology())
        scrapes = Scrapes(cluster.metrics.url, "kept")
        wait_for(
            scrapes.take,
            lambda s: scrapes.value("sparkstorm_acked_total", component="numbers") > 200,
            30,
        )
        acked = scrapes.value("sparkstorm_acked_total", component="numbers")
        os.kill(cluster.worker_pids("kept")[1], signal.SIGKILL)

        def back(samples: dict[Any, float]) -> bool:
            restarted = scrapes.value("sparkstorm_worker_restarts_total", worker="1") >= 1
            running = scrapes.value("sparkstorm_topology_workers_alive") == 2
            counting = scrapes.value("sparkstorm_acked_total", component="numbers") > acked
            return restarted and running and counting

        wait_for(scrapes.take, back, 60, interval=0.1)
        assert scrapes.taken >= 3

"""LocalCluster's Prometheus endpoint (issue 13): valid exposition text whose counters
match the status report."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.flow_components import PacedSpout
from tests.integration.stats_components import CountingSink
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

"""``sparkstorm visualize NAME`` of a topology that runs (real ZooKeeper, nimbus and Spark
workers) draws it live, as the web UI does: the edge's tuples per second in the SVG's
rate label, the bolt coloured by a known capacity, and the text drawing's ``live:`` lines
with the same kind of numbers."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import cli
from tests.spark.components import CountingSpout, SinkBolt
from tests.spark.helpers import wait_for
from topology import TopologyBuilder
from topology.deploy.cluster.client import Cluster

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]

CONF = {"topology.workers": 1, "topology.stats.interval.secs": 1}


def _visualize(zk_conf: dict[str, Any], *args: str) -> str:
    options = [
        "--zookeeper",
        f"127.0.0.1:{zk_conf['storm.zookeeper.port']}",
        "-c",
        f"storm.zookeeper.root={zk_conf['storm.zookeeper.root']}",
    ]
    result = CliRunner().invoke(cli, ["visualize", *args, *options])
    assert result.exit_code == 0, (result.output, result.exception)
    assert "no live rates" not in result.stderr
    return result.stdout


def _rate(label: str) -> float:
    """``1,234/s``, ``12.5/s``, ``12.3k/s`` -> tuples per second."""
    number = label.removesuffix("/s").replace(",", "")
    scale = {"k": 1e3, "M": 1e6}.get(number[-1:], 1.0)
    return float(number.rstrip("kM")) * scale


def test_visualize_of_a_running_topology_shows_rates_and_capacity(
    zk_conf: dict[str, Any], cluster: Cluster
) -> None:
    name = f"live-{uuid.uuid4().hex[:6]}"
    builder = TopologyBuilder()
    builder.set_spout("numbers", CountingSpout(), parallelism=1)  # never ends
    builder.set_bolt("sink", SinkBolt(), parallelism=1).shuffle_grouping("numbers")
    cluster.submit_topology(name, CONF, builder.create_topology())

    def acked() -> bool:
        spouts = cluster.stats(name, "all")["spouts"]
        return bool(spouts) and int(spouts[0].get("acked") or 0) > 100

    wait_for(acked, 60, "the spout's first 100 acks")

    svg = _visualize(zk_conf, name, "--format", "svg")
    [rate] = re.findall(r'<text class="rate"[^>]*>([^<]*)</text>', svg)
    assert _rate(rate) > 0, rate
    node = re.search(r'class="node bolt (cap-[a-z]+)" data-component="sink"', svg)
    assert node is not None and node.group(1) != "cap-unknown", svg

    text = _visualize(zk_conf, name, "--format", "text")
    executed = re.search(r"live: executed ([0-9.,kM]+/s), capacity [0-9.]+", text)
    assert executed is not None and _rate(executed.group(1)) > 0, text
    edge = re.search(r"numbers --shuffle--> sink x1 ([0-9.,kM]+/s)", text)
    assert edge is not None and _rate(edge.group(1)) > 0, text

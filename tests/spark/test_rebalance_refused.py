"""``sparkstorm rebalance`` against a real ZooKeeper: a worker count the master cannot hold,
or whose assignment would not fit a znode, is refused at once in one line and nothing is
written (only ZooKeeper is needed: the refusal comes before any nimbus would act)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cli.main import cli
from tests.spark.components import CountingSpout, SinkBolt
from topology import TopologyBuilder
from topology import config as cfg
from topology.deploy.zk.state import ZkState
from topology.spec import describe_components

pytestmark = [pytest.mark.spark, pytest.mark.timeout(60)]


def _record(zk_conf: dict[str, Any], name: str, tasks: int) -> ZkState:
    """A running-looking topology ``name`` with one bolt of ``tasks`` tasks, written
    straight into ZooKeeper."""
    zk = ZkState(cfg.resolve(zk_conf)).connect()
    conf = cfg.resolve({cfg.TOPOLOGY_NAME: name, cfg.TOPOLOGY_WORKERS: 2})
    builder = TopologyBuilder()
    builder.set_spout("spout", CountingSpout())
    builder.set_bolt("bolt", SinkBolt()).shuffle_grouping("spout")
    components = describe_components(builder.create_topology())
    components["bolt"]["tasks"] = tasks
    record = {"name": name, "status": "ACTIVE", "conf": conf, "components": components}
    zk.create_topology(f"{name}-1-1", record, b"")
    return zk


def _rebalance(zk_conf: dict[str, Any], *args: str) -> Result:
    return CliRunner().invoke(
        cli,
        [
            "rebalance",
            *args,
            "--zookeeper",
            f"127.0.0.1:{zk_conf['storm.zookeeper.port']}",
            "-c",
            f"storm.zookeeper.root={zk_conf['storm.zookeeper.root']}",
        ],
    )


@pytest.mark.parametrize(
    ("tasks", "args", "expected"),
    [
        (4, ["-n", "1000000"], "--workers must be an integer from 1 to 10,000, got 1000000"),
        (4, ["-n", "5", "-c", "spark.master=local[4]"], "spark.master=local[4] has 4"),
        (100_000, ["-n", "10"], "a ZooKeeper node holds at most 1,000,000 (jute.maxbuffer)"),
    ],
    ids=["count", "local-slots", "znode-size"],
)
def test_rebalance_beyond_the_limits_is_refused_at_once(
    zk_conf: dict[str, Any], tasks: int, args: list[str], expected: str
) -> None:
    zk = _record(zk_conf, "bounded", tasks)
    try:
        started = time.monotonic()
        result = _rebalance(zk_conf, "bounded", *args)
        assert time.monotonic() - started < 10
        assert result.exit_code != 0 and "Traceback" not in result.output, result.output
        [line] = result.output.splitlines()
        assert line.startswith("Error: ") and expected in line, line
        assert "rebalance" not in (zk.read_record("bounded-1-1") or {})  # nothing written
    finally:
        zk.remove_topology("bounded-1-1")
        zk.close()

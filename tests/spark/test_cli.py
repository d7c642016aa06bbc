"""The command line against a running nimbus: bad input is refused with a one-line error
naming the problem (never a traceback); list / deactivate / activate / kill print Storm-like
messages."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cli.main import cli
from topology.deploy.cluster.client import Cluster

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]

TOPOLOGY_FILE = """\
from tests.spark.components import CountingSpout, SinkBolt
from topology import TopologyBuilder


def topology():
    builder = TopologyBuilder()
    builder.set_spout("numbers", CountingSpout(), parallelism=1)
    builder.set_bolt("sink", SinkBolt(), parallelism=1).shuffle_grouping("numbers")
    return builder


not_a_topology = {"workers": 2}
"""


@pytest.fixture
def topology_file(tmp_path: Path) -> Path:
    path = tmp_path / "cli_topology.py"
    path.write_text(textwrap.dedent(TOPOLOGY_FILE))
    return path


def _run(zk_conf: dict[str, Any], *args: str) -> Result:
    """``sparkstorm ARGS`` pointed at this test's ZooKeeper root."""
    options = [
        "--zookeeper",
        f"127.0.0.1:{zk_conf['storm.zookeeper.port']}",
        "-c",
        f"storm.zookeeper.root={zk_conf['storm.zookeeper.root']}",
    ]
    return CliRunner().invoke(cli, [*args, *options])


def _assert_refused(result: Result, codes: tuple[int, ...], *words: str) -> None:
    """Exit code in ``codes``, a message containing every word, no traceback."""
    assert result.exit_code in codes, (result.exit_code, result.output)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output, result.output
    for word in words:
        assert word in result.output, (word, result.output)


def test_submit_refuses_bad_targets(zk_conf: dict[str, Any], topology_file: Path) -> None:
    no_colon = _run(zk_conf, "submit", str(topology_file), "--name", "t")
    _assert_refused(
        no_colon, (2,), "is a file: name the topology in it", f"{topology_file}:topology"
    )

    missing = _run(zk_conf, "submit", f"{topology_file.parent}/nope.py:topology", "--name", "t")
    _assert_refused(missing, (2,), "no such file", "nope.py")

    no_attr = _run(zk_conf, "submit", f"{topology_file}:nope", "--name", "t")
    _assert_refused(no_attr, (2,), "has no attribute 'nope'")

    not_topology = _run(zk_conf, "submit", f"{topology_file}:not_a_topology", "--name", "t")
    _assert_refused(not_topology, (2,), "not_a_topology", "is a dict, not a topology")


def test_submit_refuses_bad_config_and_too_few_slots(
    zk_conf: dict[str, Any], cluster: Cluster, topology_file: Path
) -> None:
    target = f"{topology_file}:topology"
    wrong_type = _run(zk_conf, "submit", target, "--name", "typo", "-c", "topology.workers=two")
    _assert_refused(wrong_type, (1, 2), "topology.workers", "'two'")
    assert cluster.topologies() == []

    too_big = _run(zk_conf, "submit", target, "--name", "big", "-c", "topology.workers=9")
    _assert_refused(too_big, (1,), "big", "9 worker(s)", "slot")
    assert cluster.topologies() == []


def test_submit_list_duplicate_deactivate_activate_kill(
    zk_conf: dict[str, Any], cluster: Cluster, topology_file: Path
) -> None:
    target = f"{topology_file}:topology"
    submitted = _run(zk_conf, "submit", target, "--name", "clitopo")
    assert submitted.exit_code == 0, submitted.output
    assert "Finished submitting topology: clitopo" in submitted.output

    listed = _run(zk_conf, "list", "--json")
    assert listed.exit_code == 0, listed.output
    [entry] = json.loads(listed.stdout)
    assert entry["name"] == "clitopo" and entry["status"] == "ACTIVE"
    assert entry["workers"] == 1 and entry["workers_alive"] == 1

    duplicate = _run(zk_conf, "submit", target, "--name", "clitopo")
    _assert_refused(duplicate, (1,), "'clitopo'", "already running")
    assert [t["name"] for t in cluster.topologies()] == ["clitopo"]

    deactivated = _run(zk_conf, "deactivate", "clitopo")
    assert deactivated.exit_code == 0, deactivated.output
    assert "Deactivated topology: clitopo" in deactivated.output
    assert cluster.topologies()[0]["status"] == "INACTIVE"

    activated = _run(zk_conf, "activate", "clitopo")
    assert activated.exit_code == 0, activated.output
    assert "Activated topology: clitopo" in activated.output
    assert cluster.topologies()[0]["status"] == "ACTIVE"

    killed = _run(zk_conf, "kill", "clitopo", "--wait", "0")
    assert killed.exit_code == 0, killed.output
    assert "Killed topology: clitopo" in killed.output
    assert cluster.topologies() == []

    gone = _run(zk_conf, "kill", "clitopo", "--wait", "0")
    _assert_refused(gone, (1,), "no topology named 'clitopo'")

    empty = _run(zk_conf, "list", "--json")
    assert empty.exit_code == 0 and json.loads(empty.stdout) == []

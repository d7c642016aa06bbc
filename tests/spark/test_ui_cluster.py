"""``sparkstorm ui`` over a real cluster (ZooKeeper, a nimbus, Spark workers): the
``Cluster`` adapter of the web UI — the summary names the leading nimbus and the topology
with its rates and counts as fresh as ``status --json`` (the workers asked each poll, not
their 5-second heartbeats), the topology page is the report with the graph and redacted
conf, and a deactivate from the API reaches the topology's record (issue 28)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.spark.components import CountingSpout, SinkBolt
from tests.spark.helpers import wait_for
from tests.unit.test_ui_server import get_json, request
from topology import TopologyBuilder
from topology.testing import LocalStack

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]
TOKEN = "a-cluster-ui-admin-token-42"


def test_sparkstorm_ui_serves_a_cluster_and_acts_on_it(
    stack: LocalStack, zk_conf: dict[str, Any]
) -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", CountingSpout(), parallelism=1)
    builder.set_bolt("sink", SinkBolt(), parallelism=1).shuffle_grouping("numbers")
    conf = {
        "topology.workers": 1,  # heartbeats every 5 s (the default): the UI asks fresher
        "topology.max.spout.pending": 100,
        "api.token": "not-to-be-shown-1234",
    }
    with stack.cluster() as cluster:
        cluster.submit_topology("uiwc", conf, builder.create_topology())
        command = [
            *(sys.executable, "-m", "cli.main", "ui", "--port", "0"),
            *("--zookeeper", f"127.0.0.1:{zk_conf['storm.zookeeper.port']}"),
            *("-c", f"storm.zookeeper.root={zk_conf['storm.zookeeper.root']}"),
            *("-c", f"ui.admin.token={TOKEN}", "-c", "ui.publish.interval.secs=0.5"),
        ]
        ui = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
        try:
            assert ui.stdout is not None
            line = ui.stdout.readline()
            assert line.startswith("Web UI and REST API at http://127.0.0.1:"), line
            url = line.split(" at ", 1)[1].split(" ", 1)[0]

            def row() -> dict[str, Any] | None:
                _, summary = get_json(url, "/api/v1/cluster/summary")
                assert summary["nimbus"]["leader"] is not None
                return next((r for r in summary["topologies"] if r["name"] == "uiwc"), None)

            first = wait_for(lambda: (r := row()) and r["emitted"] > 0 and r, 60, "emits")
            assert first["status"] == "ACTIVE" and first["workers"] == 1
            check_counts_are_as_fresh_as_status(cluster, url)
            status, page = get_json(url, "/api/v1/topology/uiwc")
            assert status == 200 and page["nimbus"]["leader"] is not None
            assert page["conf"]["api.token"] == "****"
            # the conf its workers run with: the ZooKeeper its driver hands them, not the
            # record's defaults (2181); the window in seconds; port and pid; what runs it
            for key in ("storm.zookeeper.port", "storm.zookeeper.root"):
                assert page["conf"][key] == zk_conf[key], key
            driver = cluster.zk.driver(cluster.topology_id("uiwc"))
            assert driver["zookeeper"]["storm.zookeeper.port"] == zk_conf["storm.zookeeper.port"]
            assert "storm.zookeeper.auth.payload" not in driver["zookeeper"]
            assert page["conf"]["spark.master"] == str(stack.backend.sc.master)  # not local[*]
            assert first["window"] == 600
            (worker,) = page["workers"]
            assert isinstance(worker["port"], int) and isinstance(worker["pid"], int)
            assert re.fullmatch(r"driver \(local mode\), task \d+", worker["executor"]), worker
            assert [(e["from"], e["to"]) for e in page["graph"]["edges"]] == [("numbers", "sink")]

            _, _, raw = request(url, "GET", "/api/v1/csrf")
            csrf = json.loads(raw)["csrf_token"]
            headers = {
                "Authorization": f"Bearer {TOKEN}",
                "X-CSRF-Token": csrf,
                "Cookie": f"sparkstorm_csrf={csrf}",
            }
            status, _, raw = request(url, "POST", "/api/v1/topology/uiwc/deactivate", headers)
            assert status == 200, raw
            record = cluster.zk.read_record(cluster.topology_id("uiwc"))
            assert record["status"] == "INACTIVE"
            wait_for(lambda: (r := row()) and r["status"] == "INACTIVE", 30, "inactive")
        finally:
            ui.send_signal(signal.SIGINT)
            assert ui.wait(30) == 0


def check_counts_are_as_fresh_as_status(cluster: Any, url: str) -> None:
    """The summary's emitted count, from a poll begun after one ``stats`` call and done
    before the next, lies between them (give or take one publish interval at their rate);
    from heartbeats up to 5 s old it would lag them."""

    def emitted() -> int:
        return sum(int(s["emitted"] or 0) for s in cluster.stats("uiwc")["spouts"])

    before, started = emitted(), time.monotonic()
    polls = get_json(url, "/api/v1/ui")[1]["polls"]

    def newer() -> dict[str, Any] | None:
        summary = get_json(url, "/api/v1/topology/summary")[1]
        return summary if summary["seq"] >= polls + 2 else None

    summary = wait_for(newer, 30, "two newer polls")
    after, ended = emitted(), time.monotonic()
    shown = next(r for r in summary["topologies"] if r["name"] == "uiwc")["emitted"]
    slack = (after - before) / (ended - started) * 0.5 + 1  # one publish interval
    assert before - slack <= shown <= after + slack, (before, shown, after)

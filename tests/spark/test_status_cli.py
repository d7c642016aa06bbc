"""``sparkstorm status / list / monitor / visualize`` against a running topology with known
counts (real ZooKeeper, nimbus and Spark workers), and ``monitor`` in a real terminal (tmux).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from prometheus_client.parser import text_string_to_metric_families

from cli.main import cli
from tests.spark.components import CountingSpout, SinkBolt
from tests.spark.helpers import wait_for
from topology import TopologyBuilder
from topology.deploy.cluster.client import Cluster
from topology.deploy.cluster.metrics import ClusterMetrics

pytestmark = [pytest.mark.spark, pytest.mark.timeout(180)]

LIMIT = 500
WORKERS = 2
CONF = {"topology.workers": WORKERS, "topology.stats.interval.secs": 1}
REPO = Path(__file__).resolve().parents[2]

SCHEMA_KEYS = {
    "schema",
    "window",
    "window_name",
    "generated_at",
    "topology",
    "spouts",
    "bolts",
    "workers",
    "errors",
    "checkpoints",
    "nimbus",
    "zookeeper_ignored",
}


def _submit(cluster: Cluster, name: str) -> None:
    """Run 500 numbers through numbers -> sink and wait until every tree is complete."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", CountingSpout(limit=LIMIT), parallelism=2)
    builder.set_bolt("sink", SinkBolt(), parallelism=2).shuffle_grouping("numbers")
    cluster.submit_topology(name, CONF, builder.create_topology())
    cluster.wait_until_drained(name, timeout=60)


def _options(zk_conf: dict[str, Any]) -> list[str]:
    return [
        "--zookeeper",
        f"127.0.0.1:{zk_conf['storm.zookeeper.port']}",
        "-c",
        f"storm.zookeeper.root={zk_conf['storm.zookeeper.root']}",
    ]


def _run(zk_conf: dict[str, Any], *args: str) -> Result:
    """``sparkstorm ARGS`` pointed at this test's ZooKeeper root, on a 160-column "terminal"
    (rich reads COLUMNS; at its default of 80 some tables crop their cells)."""
    return CliRunner().invoke(cli, [*args, *_options(zk_conf)], env={"COLUMNS": "160"})


def _ok(result: Result) -> str:
    assert result.exit_code == 0, (result.exit_code, result.output, result.exception)
    return result.output


def test_status_list_monitor_and_visualize_show_the_known_counts(
    zk_conf: dict[str, Any], cluster: Cluster
) -> None:
    name = "statuscli"
    _submit(cluster, name)

    # status --json: the schema-1 report with exact counts
    report = json.loads(_ok(_run(zk_conf, "status", name, "--json")))
    assert set(report) == SCHEMA_KEYS
    assert report["schema"] == 1
    assert (report["window"], report["window_name"]) == ("600", "10m")
    assert report["topology"]["name"] == name
    assert report["topology"]["status"] == "ACTIVE"
    assert (report["topology"]["workers"], report["topology"]["workers_alive"]) == (2, 2)
    [spout] = report["spouts"]
    assert spout["id"] == "numbers" and spout["tasks"] == 2
    assert (spout["emitted"], spout["acked"], spout["failed"]) == (LIMIT, LIMIT, 0)
    assert spout["failed_by"] == {} and spout["pending"] == 0
    [sink] = report["bolts"]
    assert sink["id"] == "sink" and sink["tasks"] == 2
    assert (sink["executed"], sink["acked"], sink["failed"]) == (LIMIT, LIMIT, 0)
    assert 0.0 <= sink["capacity"] <= 1.0
    assert len(report["workers"]) == WORKERS
    worker_tasks = [t for w in report["workers"] for t in w["tasks"]]
    assert len(worker_tasks) == len(set(worker_tasks)) == 4  # 2 spout + 2 sink tasks, once each
    assert all(w["pid"] for w in report["workers"])
    assert report["errors"] == []

    # the all-time window says the same after a drain
    all_time = json.loads(_ok(_run(zk_conf, "status", name, "--json", "--window", "all")))
    assert (all_time["window"], all_time["window_name"]) == (":all-time", "all")
    assert all_time["spouts"][0]["acked"] == LIMIT

    # the Prometheus endpoint a nimbus serves: the same all-time counts, from heartbeats
    metrics = ClusterMetrics(zk_conf, port=0)
    try:

        def scraped() -> dict[str, float] | None:
            text = urllib.request.urlopen(metrics.url, timeout=10).read().decode()
            values: dict[str, float] = {}  # name/component -> summed over tasks
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    if sample.labels.get("topology") == name:
                        key = f"{sample.name}/{sample.labels.get('component')}"
                        values[key] = values.get(key, 0.0) + sample.value
            # counts come from heartbeats, histograms only from live replies (a worker
            # slower than the scrape's 1.5 s ask leaves them out of that one scrape)
            done = values.get("sparkstorm_acked_total/numbers") == LIMIT
            live = "sparkstorm_complete_latency_seconds_count/numbers" in values
            return values if done and live else None

        values = wait_for(scraped, timeout=30, what="the scraped acked counter and histogram")
    finally:
        metrics.close()
    assert values["sparkstorm_emitted_total/numbers"] == all_time["spouts"][0]["emitted"]
    assert values["sparkstorm_executed_total/sink"] == LIMIT
    assert values["sparkstorm_complete_latency_seconds_count/numbers"] == LIMIT

    # logs: worker 1's own file, read on its host through ZooKeeper; the level can change
    logged = _ok(_run(zk_conf, "logs", name, "--worker", "1"))
    assert logged.startswith("==> worker 1 on "), logged[:200]
    assert f"worker 1 of {name} starting" in logged
    tuned = _ok(_run(zk_conf, "set-log-level", name, "debug", "--timeout", "30"))
    assert tuned.strip() == f"{name}: 2 worker(s) now log at DEBUG for 30s"
    logged = _ok(_run(zk_conf, "logs", name, "--worker", "0"))
    assert "log level set to DEBUG for 30s" in logged

    # status as text
    text = _ok(_run(zk_conf, "status", name))
    for word in ("Topology statuscli", "numbers", "sink", "Spouts", "Bolts", "Workers"):
        assert word in text, (word, text)
    assert "No errors reported." in text
    assert "STALE" not in text

    # list --json: spout rates over the last 10 minutes, from the heartbeats' stats
    def rates_caught_up() -> dict[str, Any] | None:
        [entry] = json.loads(_ok(_run(zk_conf, "list", "--json")))
        expected = LIMIT / max(entry["uptime_secs"], 1.0)
        if abs(entry["acked_per_sec"] - expected) <= 0.05 * expected + 0.1:
            return entry
        return None

    entry = wait_for(rates_caught_up, timeout=15, what="list's acked_per_sec to reach 500/uptime")
    assert entry["name"] == name
    assert {"emitted_per_sec", "acked_per_sec", "failed_per_sec"} <= set(entry)
    assert entry["acked_per_sec"] > 0
    assert entry["failed_per_sec"] == 0
    assert entry["emitted_per_sec"] == entry["acked_per_sec"]
    listed = _ok(_run(zk_conf, "list"))
    assert "emit/s" in listed and "ack/s" in listed and "fail/s" in listed
    assert name in listed

    # monitor: two refreshes, then it stops by itself
    monitored = _ok(_run(zk_conf, "monitor", name, "--iterations", "2", "--interval", "0.2"))
    assert "acked/s" in monitored
    assert name in monitored
    assert "monitor stopped" in monitored

    # visualize the running topology (read from ZooKeeper)
    drawn = _ok(_run(zk_conf, "visualize", name))
    assert "numbers --shuffle--> sink x2" in drawn


def test_status_of_an_unknown_topology_is_a_one_line_error(
    zk_conf: dict[str, Any], cluster: Cluster
) -> None:
    result = _run(zk_conf, "status", "nope", "--json")
    assert result.exit_code == 1, result.output
    assert "no topology named 'nope'" in result.output
    assert "Traceback" not in result.output


# -- monitor in a real terminal -------------------------------------------------------------


def _tmux(socket: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    # env: os.environ explicitly.  GNU readline (loaded under pytest) exports COLUMNS=80 and
    # LINES=24 behind os.environ's back; inherited, they would make rich ignore the pane size.
    return subprocess.run(
        ["tmux", "-L", socket, *args],
        capture_output=True,
        text=True,
        check=check,
        timeout=10,
        env=dict(os.environ),
    )


def _screen(socket: str, session: str) -> str:
    got = _tmux(socket, "capture-pane", "-p", "-t", session, check=False)
    return got.stdout if got.returncode == 0 else ""


def test_monitor_in_a_terminal_refreshes_and_stops_on_ctrl_c(
    zk_conf: dict[str, Any], cluster: Cluster
) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    name = "tmuxmon"
    _submit(cluster, name)

    socket = f"sparkstorm-test-{uuid.uuid4().hex[:8]}"  # a private tmux server
    session = f"monitor-{uuid.uuid4().hex[:8]}"
    monitor = shlex.join(
        [sys.executable, "-m", "cli.main", "monitor", name, "--interval", "0.3", *_options(zk_conf)]
    )
    # bash outlives the Ctrl-C (the monitor handles it) and prints the exit status
    # drawn at the pane's size: not at a COLUMNS/LINES the test runner exported (xdist's 80)
    command = f"env -u COLUMNS -u LINES {monitor}; echo monitor-exit-status-$?; sleep 60"
    try:
        _tmux(
            socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "140",
            "-y",
            "50",
            "-c",
            str(REPO),
            "bash",
            "-c",
            command,
        )
        # a whole frame: the first may be drawn before the topology's first stats arrive
        drawn = (name, "acked/s", "complete latency ms", "capacity", "last heartbeat")
        screen = wait_for(
            lambda: (s := _screen(socket, session)) and all(part in s for part in drawn) and s,
            timeout=60,  # a wait, not a bound: a loaded machine draws the first frame late
            what="monitor to draw the topology, its acked/s sparkline and the workers table",
        )
        assert "numbers" in screen and "sink" in screen
        # drawn at the pane's size (140 x 50): nothing cropped, the workers table included
        assert "complete latency ms" in screen and "capacity" in screen
        assert "last heartbeat" in screen
        assert "monitor stopped" not in screen

        _tmux(socket, "send-keys", "-t", session, "C-c")
        screen = wait_for(
            lambda: (s := _screen(socket, session)) and "monitor-exit-status-" in s and s,
            timeout=20,
            what="monitor to stop after Ctrl-C",
        )
        assert "monitor stopped" in screen
        assert "monitor-exit-status-0" in screen, screen
        assert "Traceback" not in screen and "KeyboardInterrupt" not in screen, screen
    finally:
        _tmux(socket, "kill-session", "-t", session, check=False)
        _tmux(socket, "kill-server", check=False)

"""``LocalCluster.stats``: the status report (schema 1) of a topology with known counts.

After ``wait_until_drained`` every figure of the report is exact: each count is checked
against what the components were written to do, in the 10-minute window and all-time.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.integration.acking_components import NeverAck
from tests.integration.helpers import CONF, FAIL_AT_ONCE, WORKERS
from tests.integration.stats_components import CountingSink, Judge, is_explicit_failure, is_raise
from topology import TopologyBuilder
from topology.deploy.local.cluster import LocalCluster
from topology.stats import status_report
from topology.testing import FeederSpout

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

N = 70
EXPLICIT = [n for n in range(N) if is_explicit_failure(n)]
RAISED = [n for n in range(N) if is_raise(n)]
FAILURES = len(EXPLICIT) + len(RAISED)
PASSED = N - FAILURES

# -- the documented schema (topology/status_report.py) ---------------------------------------

TOP_KEYS = {
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
}
TOPOLOGY_KEYS = {"name", "id", "status", "uptime_secs", "workers", "workers_alive", "tasks"}
SPOUT_KEYS = {
    "id",
    "tasks",
    "emitted",
    "transferred",
    "acked",
    "failed",
    "failed_by",
    "dead_lettered",
    "retried",
    "errors",
    "pending",
    "complete_latency_ms",
}
BOLT_KEYS = {
    "id",
    "tasks",
    "executed",
    "emitted",
    "transferred",
    "acked",
    "failed",
    "failed_by",
    "dead_lettered",
    "retried",
    "errors",
    "execute_latency_ms",
    "process_latency_ms",
    "capacity",
}
#: A stateful bolt's row has these too (its live state's size).
STATEFUL_BOLT_KEYS = {"state_keys", "state_bytes"}
#: A disk-backed state's row has these too (its cache's reads).
CACHED_STATE_KEYS = {"state_cache_hits", "state_cache_misses", "state_cache_hit_rate"}
WORKER_KEYS = {
    "worker",
    "host",
    "pid",
    "executor",
    "uptime_secs",
    "heartbeat_age_secs",
    "stats_age_secs",
    "tasks",
    "restarts",
    "restart_reason",
    "next_start_in_secs",
    "stalled_secs",
    "busy_in",
    "dropped_frames",
    "dropped_by",
    "congested",
    "throttled_by",
    "receive_queue",
    "port",
    "components",
    "full_peers",
}
ERROR_KEYS = {"component", "task", "worker", "host", "time", "text"}


def _documented(section: str, opener: str) -> set[str]:
    """The quoted keys the module docstring lists for ``"section": {...}`` / ``[{...}]``."""
    doc = status_report.__doc__ or ""
    closer = "}]" if opener == "[{" else "}"
    pattern = rf'"{section}":\s*{re.escape(opener)}(.*?){re.escape(closer)}'
    match = re.search(pattern, doc, re.DOTALL)
    assert match, f"section {section!r} not found in the status_report docstring"
    return set(re.findall(r'"(\w+)"', match.group(1)))


def test_documented_schema_matches_the_keys_this_test_expects() -> None:
    """The keys hard-coded here are the ones the docstring documents (docs and test agree)."""
    doc = status_report.__doc__ or ""
    assert '"schema": 1' in doc
    assert {k for k in TOP_KEYS if f'"{k}"' in doc} == TOP_KEYS
    assert _documented("topology", "{") == TOPOLOGY_KEYS
    assert _documented("spouts", "[{") == SPOUT_KEYS
    assert _documented("bolts", "[{") == BOLT_KEYS | STATEFUL_BOLT_KEYS | CACHED_STATE_KEYS
    assert _documented("workers", "[{") == WORKER_KEYS
    assert _documented("errors", "[{") == ERROR_KEYS


# -- a topology with known counts -------------------------------------------------------------


def _judged_topology() -> Any:
    builder = TopologyBuilder()
    builder.set_spout("spout", FeederSpout(["n"], [[i] for i in range(N)]), 2)
    builder.set_bolt("judge", Judge(), 2).shuffle_grouping("spout")
    builder.set_bolt("sink", CountingSink(), 2).shuffle_grouping("judge")
    return builder.create_topology()


def _by_id(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in rows}


def _assert_schema(report: dict[str, Any]) -> None:
    assert set(report) == TOP_KEYS
    assert report["schema"] == 1
    assert set(report["topology"]) == TOPOLOGY_KEYS
    assert report["spouts"] and report["bolts"] and report["workers"]
    for spout in report["spouts"]:
        assert set(spout) == SPOUT_KEYS, spout["id"]
    for bolt in report["bolts"]:
        assert set(bolt) == BOLT_KEYS, bolt["id"]
    for worker in report["workers"]:
        assert set(worker) == WORKER_KEYS, worker["worker"]
    for error in report["errors"]:
        assert set(error) == ERROR_KEYS


def _assert_exact_counts(report: dict[str, Any]) -> None:
    [spout] = report["spouts"]
    assert spout["id"] == "spout" and spout["tasks"] == 2
    assert spout["emitted"] == N
    assert spout["transferred"] == N
    assert spout["acked"] == PASSED
    assert spout["failed"] == FAILURES
    assert spout["failed_by"] == {"failed": FAILURES}
    assert spout["pending"] == 0
    assert spout["complete_latency_ms"] > 0

    bolts = _by_id(report["bolts"])
    assert list(bolts) == ["judge", "sink"]
    judge, sink = bolts["judge"], bolts["sink"]
    assert judge["tasks"] == 2 and sink["tasks"] == 2
    assert judge["executed"] == N
    assert judge["acked"] == PASSED
    assert judge["failed"] == FAILURES  # explicit fails and raises alike
    assert judge["emitted"] == PASSED
    assert judge["transferred"] == PASSED
    assert sink["executed"] == PASSED
    assert sink["acked"] == PASSED
    assert sink["failed"] == 0
    assert sink["emitted"] == 0
    assert judge["execute_latency_ms"] > 0
    assert judge["process_latency_ms"] > 0
    for bolt in bolts.values():
        assert 0.0 <= bolt["capacity"] <= 1.0, bolt


def _run_judged(cluster: LocalCluster) -> None:
    cluster.submit_topology("judged", {**CONF, **FAIL_AT_ONCE}, _judged_topology())
    cluster.wait_until_drained("judged", timeout=30)


def test_report_of_a_drained_topology_is_exact_in_both_windows() -> None:
    with LocalCluster() as cluster:
        _run_judged(cluster)
        ten_minutes = cluster.stats("judged", "10m")
        all_time = cluster.stats("judged", "all")
        pids = cluster.worker_pids("judged")
        assignment = cluster.assignment("judged")

    assert (ten_minutes["window"], ten_minutes["window_name"]) == ("600", "10m")
    assert (all_time["window"], all_time["window_name"]) == (":all-time", "all")
    for report in (ten_minutes, all_time):
        _assert_schema(report)
        _assert_exact_counts(report)
        topology = report["topology"]
        assert topology["name"] == "judged"
        assert topology["status"] == "ACTIVE"
        assert (topology["workers"], topology["workers_alive"]) == (WORKERS, WORKERS)
        assert topology["tasks"] == sum(len(t) for t in assignment.worker_tasks)

        workers = report["workers"]
        assert [w["worker"] for w in workers] == list(range(WORKERS))
        assert [w["pid"] for w in workers] == pids
        for w in workers:
            user_tasks = [
                t
                for t in assignment.worker_tasks[w["worker"]]
                if not assignment.task_component[t].startswith("__")
            ]
            assert w["tasks"] == sorted(user_tasks)
            assert 0 <= w["heartbeat_age_secs"] < 10
            assert w["uptime_secs"] >= 0
    # nothing ran between the two reports: the counts agree window for window
    for key in ("emitted", "transferred", "acked", "failed", "failed_by", "pending"):
        assert ten_minutes["spouts"][0][key] == all_time["spouts"][0][key], key


def test_report_lists_the_raised_errors_with_component_and_task() -> None:
    with LocalCluster() as cluster:
        _run_judged(cluster)
        report = cluster.stats("judged", "10m")
        judge_tasks = cluster.assignment("judged").component_tasks["judge"]

    errors = report["errors"]
    assert len(RAISED) <= status_report.ERRORS_SHOWN  # else the report keeps only the newest
    assert len(errors) == len(RAISED)
    assert sorted(e["text"].splitlines()[-1] for e in errors) == sorted(
        f"ValueError: judge cannot take {n}" for n in RAISED
    )
    for error in errors:
        assert error["component"] == "judge"
        assert error["task"] in judge_tasks
        assert error["worker"] in range(WORKERS)
        assert "Traceback" in error["text"]
    # the explicit self.fail(tup, "bad value") is a failure, not an error
    assert not any("bad value" in e["text"] for e in errors)
    times = [e["time"] for e in errors]
    assert times == sorted(times, reverse=True)  # newest first


def test_unacked_tuples_are_reported_as_timeouts() -> None:
    n = 30
    builder = TopologyBuilder()
    builder.set_spout("spout", FeederSpout(["n"], [[i] for i in range(n)]), 2)
    builder.set_bolt("sink", NeverAck(), 2).shuffle_grouping("spout")
    conf = {**CONF, "topology.message.timeout.secs": 1}

    with LocalCluster() as cluster:
        cluster.submit_topology("timeouts", conf, builder.create_topology())
        cluster.wait_until_drained("timeouts", timeout=30)
        reports = [cluster.stats("timeouts", window) for window in ("10m", "all")]

    for report in reports:
        _assert_schema(report)
        [spout] = report["spouts"]
        assert spout["emitted"] == n
        assert spout["acked"] == 0
        assert spout["failed"] == n
        assert spout["failed_by"] == {"timeout": n}
        assert spout["pending"] == 0
        [sink] = report["bolts"]
        assert sink["executed"] == n
        assert (sink["acked"], sink["failed"]) == (0, 0)
        assert report["errors"] == []


def test_unknown_window_is_refused() -> None:
    builder = TopologyBuilder()
    builder.set_spout("spout", FeederSpout(["n"], [[1]]), 1)
    builder.set_bolt("sink", CountingSink(), 1).shuffle_grouping("spout")
    with LocalCluster() as cluster:
        cluster.submit_topology("windows", CONF, builder.create_topology())
        with pytest.raises(ValueError, match="unknown stats window '5m'"):
            cluster.stats("windows", "5m")

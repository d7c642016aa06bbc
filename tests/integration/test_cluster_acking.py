"""The XOR acker across real worker processes: acks, fails, timeouts, replays, max pending.

Every topology runs in two workers (one acker task each, unless a test turns ackers off).
Spout-side records come from FeederSpout / ReasonFeeder results: ``acked`` and ``failed``
msg_ids and, for ReasonFeeder, ``[msg_id, kind, component, task, error]`` per failure.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from typing import Any

import pytest

from acker import ACKER_COMPONENT
from tests.integration.acking_components import (
    BurstSpout,
    FailOnce,
    Holder,
    KeyCounter,
    NeverAck,
    PendingCounter,
    PlainRaiser,
    ReasonFeeder,
    Sleeper,
    Upper,
)
from tests.integration.components import Raiser, Recorder, Split
from tests.integration.helpers import (
    CONF,
    FAIL_AT_ONCE,
    WORKERS,
    process_gone,
    seen_values,
    wait_for,
)
from topology import LocalCluster, TopologyBuilder
from topology.testing import FeederSpout, complete_topology

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def _numbers(n: int, **kwargs: Any) -> ReasonFeeder:
    return ReasonFeeder(["n"], [[i] for i in range(n)], **kwargs)


def _spout_tasks(status: list[dict[str, Any]], component: str) -> list[dict[str, Any]]:
    """worker_status entries of every task of spout ``component``."""
    return [
        info
        for reply in status
        for info in reply["tasks"].values()
        if info["component"] == component and info["kind"] == "spout"
    ]


def _failed_by(status: list[dict[str, Any]], component: str) -> dict[str, int]:
    total: Counter[str] = Counter()
    for info in _spout_tasks(status, component):
        total.update(info["failed_by"])
    return dict(total)


def _merged(results: dict[int, Any], key: str) -> list[Any]:
    return [x for r in results.values() for x in r[key]]


def test_every_tree_of_a_three_level_topology_is_acked_once() -> None:
    sentences = [f"s{i} alpha beta gamma{i % 7}" for i in range(300)]
    builder = TopologyBuilder()
    builder.set_spout("spout", ReasonFeeder(["sentence"], [[s] for s in sentences]), 2)
    builder.set_bolt("split", Split(), 2).shuffle_grouping("spout")  # BasicBolt
    builder.set_bolt("upper", Upper(), 2).shuffle_grouping("split")  # anchors + acks
    builder.set_bolt("sink", Recorder(), 2).shuffle_grouping("upper")

    result = complete_topology(builder.create_topology(), CONF, capture=False)

    acked = result.acked("spout")
    assert sorted(acked) == list(range(len(sentences)))  # every msg_id, exactly once
    assert result.failed("spout") == []
    assert _merged(result.results["spout"], "reasons") == []
    words = [v for vs in seen_values(result.results["sink"]).values() for [v] in vs]
    assert sorted(words) == sorted(w.upper() for s in sentences for w in s.split())
    spouts = _spout_tasks(result.status, "spout")
    assert len(spouts) == 2
    for info in spouts:
        assert info["acked"] > 0
        assert info["failed"] == 0 and info["failed_by"] == {}
        assert info["pending"] == 0
        assert info["complete_latency_ms"] > 0
    assert sum(info["acked"] for info in spouts) == len(sentences)
    assert result.errors == {}
    # one acker task per worker by default, and each forgot every tree it completed
    assert len(result.status) == WORKERS
    assert [list(reply["system"]["ackers"].values()) for reply in result.status] == [[0]] * WORKERS


def test_explicit_fail_is_replayed_to_the_same_task_and_counts_stay_exact() -> None:
    n, keys = 500, 7
    builder = TopologyBuilder()
    builder.set_spout(
        "spout", ReasonFeeder(["value"], [[i] for i in range(n)], replay_failed=True), 2
    )
    builder.set_bolt("flaky", FailOnce(10), 2).fields_grouping("spout", ["value"])
    builder.set_bolt("count", KeyCounter(keys), 2).fields_grouping("flaky", ["value"])

    with LocalCluster() as cluster:
        cluster.submit_topology("fail-once", CONF, builder.create_topology())
        cluster.wait_until_drained("fail-once", timeout=30)
        results = cluster.results("fail-once")
        status = cluster.worker_status("fail-once")
        flaky_tasks = cluster.assignment("fail-once").component_tasks["flaky"]

    multiples = [i for i in range(n) if i % 10 == 0]
    spout = results["spout"]
    acked = _merged(spout, "acked")
    assert sorted(acked) == list(range(n))  # every msg_id ends acked, once
    assert sorted(_merged(spout, "failed")) == multiples  # each multiple failed once
    assert _failed_by(status, "spout") == {"failed": len(multiples)}

    failures = {value: task for r in results["flaky"].values() for value, task in r["failures"]}
    assert sorted(failures) == multiples
    reasons = _merged(spout, "reasons")
    assert len(reasons) == len(multiples)
    for msg_id, kind, component, task, error in reasons:
        assert kind == "failed"
        assert component == "flaky"
        assert task in flaky_tasks
        assert task == failures[msg_id]  # the task that called fail()
        assert error == f"rejecting {msg_id} once"

    # the failed attempts were emitted downstream before the fail: the counter saw each
    # multiple twice; deduplicated by value its counts are exact
    records = _merged(results["count"], "records")
    assert len(records) == n + len(multiples)
    assert Counter(v for v, _ in records) == Counter({i: 2 if i % 10 == 0 else 1 for i in range(n)})
    deduped = Counter(key for _value, key in {tuple(r) for r in records})
    assert deduped == Counter(i % keys for i in range(n))


def test_unacked_tuples_time_out_with_reason_timeout() -> None:
    n = 20
    builder = TopologyBuilder()
    builder.set_spout("spout", _numbers(n), 2)
    builder.set_bolt("sink", NeverAck(), 2).shuffle_grouping("spout")
    conf = {**CONF, "topology.message.timeout.secs": 1}

    started = time.monotonic()
    result = complete_topology(builder.create_topology(), conf, capture=False, timeout=20)
    elapsed = time.monotonic() - started

    spout = result.results["spout"]
    assert _merged(spout, "acked") == []
    assert sorted(_merged(spout, "failed")) == list(range(n))
    reasons = _merged(spout, "reasons")
    assert sorted(r[0] for r in reasons) == list(range(n))
    assert all(r[1:] == ["timeout", None, None, None] for r in reasons), reasons
    assert _failed_by(result.status, "spout") == {"timeout": n}
    assert sum(r["received"] for r in result.results["sink"].values()) == n
    assert elapsed < 10  # ~1-1.5 s of timeout, not the 30 s default


def test_exception_in_a_bolt_fails_the_tree_with_the_exception_text() -> None:
    bad_basic, bad_plain = [3, 40], [5, 41]
    builder = TopologyBuilder()
    builder.set_spout("a", _numbers(60), 2)
    builder.set_spout("b", _numbers(60), 2)
    builder.set_bolt("basic", Raiser(bad_basic), 2).shuffle_grouping("a")  # BasicBolt
    builder.set_bolt("plain", PlainRaiser(bad_plain), 2).shuffle_grouping("b")

    with LocalCluster() as cluster:
        cluster.submit_topology("raise", {**CONF, **FAIL_AT_ONCE}, builder.create_topology())
        cluster.wait_until_drained("raise", timeout=30)
        results = cluster.results("raise")
        tasks = cluster.assignment("raise").component_tasks

    for spout, bolt, bad, text in (
        ("a", "basic", bad_basic, "ValueError: cannot handle {}"),
        ("b", "plain", bad_plain, "ValueError: plain bolt cannot handle {}"),
    ):
        assert sorted(_merged(results[spout], "failed")) == bad
        assert sorted(_merged(results[spout], "acked")) == [i for i in range(60) if i not in bad]
        reasons = sorted(_merged(results[spout], "reasons"))
        assert [r[0] for r in reasons] == bad
        for msg_id, kind, component, task, error in reasons:
            assert (kind, component) == ("failed", bolt)
            assert task in tasks[bolt]
            assert error == text.format(msg_id)


def test_killed_worker_is_relaunched_and_every_msg_id_is_acked_at_least_once() -> None:
    n, victim = 3000, 1
    builder = TopologyBuilder()
    builder.set_spout("spout", FeederSpout(["n"], [[i] for i in range(n)], replay_failed=True), 2)
    builder.set_bolt("sink", Sleeper(0.0005), 4).shuffle_grouping("spout")
    conf = {
        **CONF,
        "topology.message.timeout.secs": 2,
        "topology.max.spout.pending": 100,
    }

    with LocalCluster() as cluster:
        cluster.submit_topology("kill", conf, builder.create_topology())
        pids = cluster.worker_pids("kill")
        # kill while trees are in flight: some acked, far from all
        status = wait_for(
            lambda: cluster.worker_status("kill"),
            lambda s: sum(t["acked"] for t in _spout_tasks(s, "spout")) >= 200,
            timeout=20,
        )
        assert sum(t["acked"] for t in _spout_tasks(status, "spout")) < n // 2
        assert sum(t["pending"] for t in _spout_tasks(status, "spout")) > 0
        os.kill(pids[victim], signal.SIGKILL)
        wait_for(lambda: process_gone(pids[victim]), bool, timeout=10)
        cluster.wait_until_drained("kill", timeout=45)
        results = cluster.results("kill")
        restarts = cluster.restarts("kill")
        new_pids = cluster.worker_pids("kill")
        worker_of = cluster.assignment("kill").worker_of()
        relaunched = cluster.errors("kill")["__worker"]

    acked = set(_merged(results["spout"], "acked"))
    assert sorted(set(range(n)) - acked) == []
    assert acked == set(range(n))
    assert restarts == {victim: 1}
    assert new_pids[victim] != pids[victim]
    assert new_pids[1 - victim] == pids[1 - victim]
    assert [e["worker"] for e in relaunched] == [victim]
    # the surviving spout's trees that went through the killed worker timed out and
    # were replayed until acked
    [survivor] = [r for task, r in results["spout"].items() if worker_of[task] != victim]
    assert survivor["failed"], "no tree of the surviving spout was lost"
    assert set(survivor["failed"]) <= set(survivor["acked"])


def test_max_spout_pending_bounds_each_spout_tasks_pending_trees() -> None:
    builder = TopologyBuilder()
    builder.set_spout("spout", PendingCounter(150), 2)
    builder.set_bolt("slow", Sleeper(0.002), 2).shuffle_grouping("spout")
    conf = {**CONF, "topology.max.spout.pending": 5}

    result = complete_topology(builder.create_topology(), conf, capture=False)

    spouts = result.results["spout"]
    assert len(spouts) == 2
    for r in spouts.values():
        assert r["emitted"] == r["acked"] == 150 and r["failed"] == 0
        assert r["max_pending"] <= 5, r
        assert r["max_pending"] > 1, r  # the cap is 5, not 1
    for info in _spout_tasks(result.status, "spout"):
        assert info["pending_cap"] == 5


def test_without_ackers_msg_ids_are_acked_at_emit() -> None:
    n = 200
    builder = TopologyBuilder()
    builder.set_spout("spout", _numbers(n), 2)
    builder.set_bolt("sink", NeverAck(), 2).shuffle_grouping("spout")  # acks nothing
    conf = {**CONF, "topology.acker.executors": 0}

    with LocalCluster() as cluster:
        cluster.submit_topology("no-ackers", conf, builder.create_topology())
        cluster.wait_until_drained("no-ackers", timeout=30)
        results = cluster.results("no-ackers")
        status = cluster.worker_status("no-ackers")
        assignment = cluster.assignment("no-ackers")

    assert ACKER_COMPONENT not in assignment.component_tasks
    assert all(c != ACKER_COMPONENT for c in assignment.task_component.values())
    assert sorted(_merged(results["spout"], "acked")) == list(range(n))
    assert _merged(results["spout"], "failed") == []
    assert sum(r["received"] for r in results["sink"].values()) == n
    for info in _spout_tasks(status, "spout"):
        assert info["pending"] == 0 and info["pending_cap"] is None
    assert all(reply["system"]["ackers"] == {} for reply in status)


def _slow_consumer(n: int, delay: float) -> Any:
    """A fast spout and a slow bolt, in different workers."""
    builder = TopologyBuilder()
    builder.set_spout("spout", _numbers(n, replay_failed=True), 1)
    builder.set_bolt("slow", Sleeper(delay), 1).shuffle_grouping("spout")
    return builder.create_topology()


#: ~5 s of work for the slow bolt.  Without the adaptive cap the spout has all 1000 pending
#: at once (queue wait up to 5 s > the 2 s timeout).  With it, the slowest tree measured
#: 1.2-1.9 s (the cap overshoots lambda * timeout / 2 by up to ~2x), so the margin to the
#: earliest expiry (2 s) is thin: see the report on the executor's whole-group turns.
SLOW_N, SLOW_DELAY, SLOW_TIMEOUT = 1000, 0.005, 2


def _assert_apart(cluster: LocalCluster, name: str) -> None:
    assignment = cluster.assignment(name)
    worker_of = assignment.worker_of()
    [spout] = assignment.component_tasks["spout"]
    [slow] = assignment.component_tasks["slow"]
    assert worker_of[spout] != worker_of[slow]


def test_adaptive_pending_keeps_trees_queued_behind_a_slow_bolt_from_timing_out() -> None:
    conf = {
        **CONF,
        "topology.message.timeout.secs": SLOW_TIMEOUT,
        "topology.max.spout.pending.adaptive": True,  # opt-in
    }
    caps: list[int] = []

    def probe() -> list[dict[str, Any]]:
        status = cluster.worker_status("adaptive")
        caps.extend(info["pending_cap"] for info in _spout_tasks(status, "spout"))
        return status

    with LocalCluster() as cluster:
        cluster.submit_topology("adaptive", conf, _slow_consumer(SLOW_N, SLOW_DELAY))
        _assert_apart(cluster, "adaptive")
        wait_for(
            probe,
            lambda s: sum(info["acked"] for info in _spout_tasks(s, "spout")) >= SLOW_N,
            timeout=25,
        )
        cluster.wait_until_drained("adaptive", timeout=10)
        results = cluster.results("adaptive")
        status = cluster.worker_status("adaptive")

    assert "timeout" not in _failed_by(status, "spout")
    assert _merged(results["spout"], "failed") == []
    assert sorted(_merged(results["spout"], "acked")) == list(range(SLOW_N))
    # while running, the cap followed the bolt's rate (~200/s * 2 s / 2): above the floor
    # of 16, below what the spout could have had in flight without it
    assert 16 < max(caps) < SLOW_N / 2, caps


def test_without_adaptive_pending_trees_queued_behind_a_slow_bolt_time_out() -> None:
    # the control for the test above: same topology, adaptive cap off (the default) and
    # no auto cap (Storm's unbounded pending)
    conf = {
        **CONF,
        "topology.message.timeout.secs": SLOW_TIMEOUT,
        "topology.max.spout.pending.auto": False,
    }
    with LocalCluster() as cluster:
        cluster.submit_topology("fixed", conf, _slow_consumer(SLOW_N, SLOW_DELAY))
        _assert_apart(cluster, "fixed")
        # never drains by itself (replays queue up behind stale tuples): stop once seen
        status = wait_for(
            lambda: cluster.worker_status("fixed"),
            lambda s: _failed_by(s, "spout").get("timeout", 0) > 0,
            timeout=15,
        )
    [info] = _spout_tasks(status, "spout")
    assert info["pending_cap"] is None
    assert _failed_by(status, "spout")["timeout"] > 0


def test_acks_leave_while_a_bolt_works_through_a_large_received_batch() -> None:
    # 400 tuples emitted in one next_tuple call reach the slow bolt as one group (~2 s of
    # work); the first ~100 are done within 0.5 s and must be acked before they can time
    # out (1-1.5 s after emit)
    builder = TopologyBuilder()
    builder.set_spout("spout", BurstSpout(400), 1)
    builder.set_bolt("slow", Sleeper(0.005), 1).shuffle_grouping("spout")
    conf = {**CONF, "topology.message.timeout.secs": 1}

    with LocalCluster() as cluster:
        cluster.submit_topology("burst", conf, builder.create_topology())
        _assert_apart(cluster, "burst")
        cluster.wait_until_drained("burst", timeout=20)
        [spout] = cluster.results("burst")["spout"].values()

    assert len(spout["acked"]) + len(spout["failed"]) == 400
    # today: 0 acked, all 400 failed by timeout; every ack would have arrived at ~2.0 s
    assert len(spout["acked"]) >= 50, f"{len(spout['acked'])} acked"
    assert min(seconds for _msg_id, seconds in spout["acked"]) < 0.5


@pytest.mark.parametrize("reset", [True, False])
def test_reset_timeout_keeps_a_long_running_tuple_alive(reset: bool) -> None:
    hold, n = 2.5, 3  # held 2.5 s; the timeout (1 s) fires 1-1.5 s after the last reset
    builder = TopologyBuilder()
    builder.set_spout("spout", _numbers(n), 1)
    builder.set_bolt("hold", Holder(hold, reset), 1).shuffle_grouping("spout").add_configuration(
        "topology.tick.tuple.freq.secs", 0.2
    )
    conf = {**CONF, "topology.message.timeout.secs": 1}

    with LocalCluster() as cluster:
        cluster.submit_topology("reset", conf, builder.create_topology())
        wait_for(
            lambda: cluster.results("reset")["hold"],
            lambda r: sum(len(x["acked"]) for x in r.values()) == n,
            timeout=15,
        )
        cluster.wait_until_drained("reset", timeout=15)
        results = cluster.results("reset")
        status = cluster.worker_status("reset")

    [held] = results["hold"].values()
    assert all(seconds >= hold for _n, seconds in held["acked"])
    spout = results["spout"]
    if reset:
        assert held["resets"] >= n * 5
        assert sorted(_merged(spout, "acked")) == list(range(n))
        assert _merged(spout, "failed") == []
    else:  # the control: without resets the same tuples time out
        assert held["resets"] == 0
        assert _merged(spout, "acked") == []
        assert sorted(_merged(spout, "failed")) == list(range(n))
        assert _failed_by(status, "spout") == {"timeout": n}

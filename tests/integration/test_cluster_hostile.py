"""Hostile bytes on every port a running topology listens on: garbage, truncated msgpack,
wrong shapes, unknown tasks, forged backpressure, huge announced sizes, and well-formed
tuples without the worker's data token.  No worker process may change, no msg id may be
lost, every count stays exact, and the cluster keeps answering.  A worker killed and
relaunched loses nothing, and backpressure from it is honoured."""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Any

import msgpack
import pytest
import zmq

from tests.integration.components import Recorder, Split
from tests.integration.flow_components import SlowSink
from tests.integration.helpers import CONF, kill_worker, wait_for
from topology import LocalCluster, TopologyBuilder
from topology.runtime.net.backpressure import BACKPRESSURE_TTL
from topology.runtime.net.data_token import new_token
from topology.testing import FeederSpout

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

N = 3000


def pack(obj: object) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def hostile_frames(seed: int) -> list[bytes]:
    """Every malformed case and random frames."""
    frames = [
        b"\xc1\xc1\xc1",
        pack([0, [[1, 2, "default", [[1]], None]]])[:-2],
        b"\x92\x00\xdd\xff\xff\xff\xff",  # [0, <array of 4G elements>]
        b"\xdb\xff\xff\xff\xff" + b"x" * 64,  # a 4 GB string header
        pack({"a": 1}),
        pack([7, []]),
        pack([0, "groups"]),
        pack([0, [[1, 2, "default"]]]),
        pack([0, [[999, 1, "default", [[1]], None]]]),
        pack([0, [[1, 999, "default", [["x"]], None]]]),
        pack([0, [[1, 1, "no-such-stream", [["x"]], None]]]),
        pack([0, [[1, 1, "default", [["x"], ["y"]], [[5]]]]]),
        pack([1, 77, True]),  # backpressure from a worker that does not exist
        pack([1, 0, "on"]),
        pack([1, 1, True, [5]]),  # the shape that quoted link tokens
        pack([2, 1, 5]),  # a link token: no such frame any more
        pack([0, [[[]] * 10, []]]),
        b"",
    ]
    rng = random.Random(seed)
    frames += [bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300))) for _ in range(200)]
    return frames


def pushes(context: zmq.Context, endpoints: dict[int, str]) -> dict[int, zmq.Socket]:
    """A plain ZeroMQ client on every worker's data port (worker -> socket)."""
    out = {}
    for worker, endpoint in endpoints.items():
        push = context.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 2000)
        push.connect(endpoint)
        out[int(worker)] = push
    return out


def dropped_by(cluster: LocalCluster, name: str) -> Counter[str]:
    total: Counter[str] = Counter()
    for reply in cluster.worker_status(name):
        total.update(reply["dropped_by"])
    return total


def test_garbage_on_every_port_changes_no_worker_and_loses_no_msg_id() -> None:
    """Sent without the token the door refuses every frame for that; sent with it (as
    only a peer could), each for what is wrong with it."""
    builder = TopologyBuilder()
    builder.set_spout(
        "numbers", FeederSpout(["n"], [[i] for i in range(N)], replay_failed=True), parallelism=2
    )
    builder.set_bolt("record", Recorder(), parallelism=2).shuffle_grouping("numbers")
    context = zmq.Context()
    with LocalCluster() as cluster:
        cluster.submit_topology(
            "hostile", {**CONF, "topology.message.timeout.secs": 5}, builder.create_topology()
        )
        pids = cluster.worker_pids("hostile")
        endpoints = cluster.endpoints("hostile")
        sockets = pushes(context, endpoints["workers"])
        control = context.socket(zmq.DEALER)
        control.setsockopt(zmq.IDENTITY, b"w0")  # pretends to be worker 0
        control.setsockopt(zmq.LINGER, 0)
        control.connect(endpoints["control"])
        try:
            plain = 0
            for worker, push in sockets.items():
                for frame in hostile_frames(worker):
                    push.send(frame)
                    plain += 1
                for frame in hostile_frames(worker):
                    push.send(endpoints["tokens"][worker] + frame)
            junk = [b"", b"\xc1", pack([1, 2]), pack({"type": "fatal", "worker": 5})]
            junk += [pack({"type": "register", "worker": "w0"}), pack({"worker": 0})]
            for message in junk:
                control.send(message)
            control.send_multipart([b"a", b"b", b"c"])
            by_reason = wait_for(  # the control thread still answers
                lambda: dropped_by(cluster, "hostile"),
                lambda by: by["bad-token"] == plain and len(by) >= 5,
                timeout=30,
            )
            assert "bad-token" in by_reason and "undecodable" in by_reason
            cluster.wait_until_drained("hostile", timeout=60)
            results = cluster.results("hostile")
            acked = sorted(m for r in results["numbers"].values() for m in r["acked"])
            assert acked == list(range(N))
            seen = Counter(e[3][0] for r in results["record"].values() for e in r["seen"])
            assert seen == Counter(range(N))
            assert cluster.worker_pids("hostile") == pids
            assert cluster.restarts("hostile") == {}
        finally:
            for sock in [*sockets.values(), control]:
                sock.close(0)
            context.term()


SENTENCES = [f"w{i % 7} w{i % 11} w{i % 13}" for i in range(N)]


def word_count() -> Any:
    builder = TopologyBuilder()
    builder.set_spout(
        "sentences",
        FeederSpout(["sentence"], [[s] for s in SENTENCES], replay_failed=True),
        parallelism=2,
    )
    builder.set_bolt("split", Split(), parallelism=2).shuffle_grouping("sentences")
    builder.set_bolt("count", Recorder(), parallelism=2).fields_grouping("split", ["word"])
    return builder.create_topology()


def forged_groups(cluster: LocalCluster, name: str, worker: int) -> list[list[Any]]:
    """Groups that worker ``worker`` would take from its peers: a task it hosts, a source
    and stream it subscribes to, as many values as the stream's fields, envelopes of
    64-bit ids (issue 40: "a", "b" were counted once extra)."""
    tasks = cluster.assignment(name).component_tasks
    hosted = set(cluster.assignment(name).worker_tasks[worker])
    groups = []
    for task in tasks["count"]:
        if task in hosted:
            groups.append([task, tasks["split"][0], "default", [["a"], ["b"]], None])
            groups.append([task, tasks["split"][-1], "default", [["a"]], [[7, 9]]])
    for task in tasks["split"]:
        if task in hosted:
            groups.append([task, tasks["sentences"][0], "default", [["a b"]], None])
    return groups


def test_well_formed_forged_tuples_without_the_token_are_dropped_and_counted() -> None:
    """The words "a" and "b" are never counted, every word is counted exactly once per
    sentence, every sentence acked; every forgery counted as ``bad-token``."""
    context = zmq.Context()
    with LocalCluster() as cluster:
        cluster.submit_topology(
            "forged", {**CONF, "topology.message.timeout.secs": 10}, word_count()
        )
        pids = cluster.worker_pids("forged")
        endpoints = cluster.endpoints("forged")
        tokens: dict[int, bytes] = endpoints["tokens"]
        sockets = pushes(context, endpoints["workers"])
        sent = 0
        try:
            for _ in range(20):
                for worker, push in sockets.items():
                    real = tokens[worker]
                    others = [t for w, t in tokens.items() if w != worker]
                    frame = pack([0, forged_groups(cluster, "forged", worker)])
                    near = real[:-1] + bytes([real[-1] ^ 1])
                    for token in [new_token(), near, real.hex().encode(), *others]:
                        push.send(token + frame)  # guessed, one bit off, as text, another's
                    push.send(frame)  # none at all
                    push.send(frame + real)  # after the frame
                    sent += len(others) + 5
                time.sleep(0.05)
            cluster.wait_until_drained("forged", timeout=60)
            results = cluster.results("forged")
            by_reason = dropped_by(cluster, "forged")
            assert cluster.worker_pids("forged") == pids
        finally:
            for push in sockets.values():
                push.close(0)
            context.term()
    acked = sorted(m for r in results["sentences"].values() for m in r["acked"])
    assert acked == list(range(N))
    counted = Counter(e[3][0] for r in results["count"].values() for e in r["seen"])
    assert counted == Counter(w for s in SENTENCES for w in s.split())
    assert "a" not in counted and "b" not in counted
    assert by_reason == {"bad-token": sent}


def test_forged_backpressure_cannot_stop_the_spouts() -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", FeederSpout(["n"], [[i] for i in range(N)]), parallelism=2)
    builder.set_bolt("record", Recorder(), parallelism=2).shuffle_grouping("numbers")
    context = zmq.Context()
    with LocalCluster() as cluster:
        cluster.submit_topology("forged", CONF, builder.create_topology())
        push = context.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 2000)
        endpoints = cluster.endpoints("forged")
        push.connect(endpoints["workers"][0])
        try:
            # worker 1's "on" in the shape worker 1 sends it, without worker 0's token,
            # with a guess, with worker 1's own; and the older shapes
            push.send(pack([1, 1, True]))
            push.send(new_token() + pack([1, 1, True]))
            push.send(endpoints["tokens"][1] + pack([1, 1, True]))
            push.send(pack([2, 1, 5]))
            push.send(pack([1, 1, True, [5]]))
            wait_for(
                lambda: sum(len(r["acked"]) for r in cluster.results("forged")["numbers"].values()),
                lambda acked: acked == N,
                timeout=60,
            )
            wait_for(  # each refused, for its token
                lambda: cluster.worker_status("forged")[0]["dropped_by"],
                lambda by: by == {"bad-token": 5},
                timeout=30,
            )
            assert all(r["throttled_by"] == [] for r in cluster.worker_status("forged"))
        finally:
            push.close(0)
            context.term()


def throttled_by(cluster: LocalCluster, name: str, worker: int, killed: float) -> list[int]:
    """Whom ``worker``'s spouts are held back for, once the signals of a process killed at
    ``killed`` would have lapsed (so only its successor's can count)."""
    return wait_for(
        lambda: (
            time.monotonic() > killed + BACKPRESSURE_TTL + 0.5
            and cluster.worker_status(name)[worker]["throttled_by"]
        ),
        bool,
        timeout=30,
    )


def test_a_killed_worker_is_relaunched_loses_nothing_and_its_backpressure_counts() -> None:
    """A fast spout's worker and a slow bolt's, which holds the spout back.  SIGKILL the
    spout's worker: the slow bolt's worker's signals to the successor count (before
    issue 40 they were dropped as ``unconfirmed-backpressure``); then SIGKILL the slow
    bolt's worker: its successor's signals count.  No genuine frame is refused, and every
    msg id is acked once."""
    n = 3000
    builder = TopologyBuilder()
    builder.set_spout("numbers", FeederSpout(["n"], [[i] for i in range(n)], replay_failed=True))
    builder.set_bolt("slow", SlowSink(0.005)).shuffle_grouping("numbers")
    conf = {
        **CONF,
        "topology.message.timeout.secs": 10,
        "topology.executor.receive.buffer.size": 200,
    }
    with LocalCluster() as cluster:
        cluster.submit_topology("relaunch", conf, builder.create_topology())
        assignment = cluster.assignment("relaunch")
        worker_of = assignment.worker_of()
        [spout_task], [slow_task] = (assignment.component_tasks[c] for c in ("numbers", "slow"))
        spouts, slow = worker_of[spout_task], worker_of[slow_task]
        assert spouts != slow
        acked = lambda: len(cluster.results("relaunch")["numbers"][spout_task]["acked"])  # noqa: E731
        wait_for(acked, lambda a: a >= 100, timeout=30)
        killed = time.monotonic()
        kill_worker(cluster, "relaunch", spouts)  # (its spout starts over)
        assert throttled_by(cluster, "relaunch", spouts, killed) == [slow]  # to it
        killed = time.monotonic()
        kill_worker(cluster, "relaunch", slow)
        assert throttled_by(cluster, "relaunch", spouts, killed) == [slow]  # from it
        cluster.wait_until_drained("relaunch", timeout=90)
        results = cluster.results("relaunch")
        by_reason = dropped_by(cluster, "relaunch")
    counts = Counter(m for r in results["numbers"].values() for m in r["acked"])
    assert sorted(counts) == list(range(n)) and set(counts.values()) == {1}
    assert by_reason == {}  # no genuine frame was refused, before or after the relaunches


def test_with_a_cluster_secret_a_plain_zeromq_client_cannot_deliver_a_frame() -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", FeederSpout(["n"], [[i] for i in range(500)]), parallelism=2)
    builder.set_bolt("record", Recorder(), parallelism=2).shuffle_grouping("numbers")
    context = zmq.Context()
    secured = LocalCluster({"sparkstorm.cluster.secret": "a-cluster-secret-for-tests"})
    with secured as cluster:
        cluster.submit_topology("curve", CONF, builder.create_topology())
        assignment = cluster.assignment("curve")
        record_task = assignment.component_tasks["record"][0]
        worker = assignment.worker_of()[record_task]
        spout_task = assignment.component_tasks["numbers"][0]
        forged = pack([0, [[record_task, spout_task, "default", [[-42]], None]]])  # well formed
        endpoints = cluster.endpoints("curve")
        push = context.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 0)
        push.connect(endpoints["workers"][worker])
        try:  # even with the worker's token: without the secret, no handshake
            push.send(endpoints["tokens"][worker] + forged, zmq.NOBLOCK)
        except zmq.Again:
            pass  # no handshake, so nothing to send it on: as it should be
        try:
            cluster.wait_until_drained("curve", timeout=30)
            seen = [e[3] for r in cluster.results("curve")["record"].values() for e in r["seen"]]
            assert len(seen) == 500 and [-42] not in seen
            assert all(r["dropped_frames"] == 0 for r in cluster.worker_status("curve"))
        finally:
            push.close(0)
            context.term()

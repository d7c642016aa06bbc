"""Hostile bytes on every port a running topology listens on: garbage, truncated msgpack,
wrong shapes, unknown tasks, forged backpressure, huge announced sizes.  No worker process
may change, no msg id may be lost, and the cluster keeps answering."""

from __future__ import annotations

import random
import time

import msgpack
import pytest
import zmq

from tests.integration.components import Recorder
from tests.integration.helpers import CONF, wait_for
from topology import LocalCluster, TopologyBuilder
from topology.testing import FeederSpout

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

N = 3000


def pack(obj: object) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def hostile_frames(seed: int) -> list[bytes]:
    """Every malformed case, a forged but well-formed tuple group and random frames."""
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
        pack([1, 77, True, []]),  # backpressure from a worker that does not exist
        pack([1, 0, "on", []]),
        pack([1, 0, True]),  # without the tokens it must quote
        pack([2, 1, 5]),  # a link token in worker 1's name ...
        pack([1, 1, True, [5]]),  # ... quoted by a forger: not the token sent to worker 1
        pack([0, [[[]] * 10, []]]),
        b"",
    ]
    rng = random.Random(seed)
    frames += [bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300))) for _ in range(200)]
    return frames


def test_garbage_on_every_port_changes_no_worker_and_loses_no_msg_id() -> None:
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
        sockets = []
        for endpoint in endpoints["workers"].values():
            push = context.socket(zmq.PUSH)
            push.setsockopt(zmq.LINGER, 2000)
            push.connect(endpoint)
            sockets.append(push)
        control = context.socket(zmq.DEALER)
        control.setsockopt(zmq.IDENTITY, b"w0")  # pretends to be worker 0
        control.setsockopt(zmq.LINGER, 0)
        control.connect(endpoints["control"])
        try:
            for seed, push in enumerate(sockets):
                for frame in hostile_frames(seed):
                    push.send(frame)
            junk = [b"", b"\xc1", pack([1, 2]), pack({"type": "fatal", "worker": 5})]
            junk += [pack({"type": "register", "worker": "w0"}), pack({"worker": 0})]
            for message in junk:
                control.send(message)
            control.send_multipart([b"a", b"b", b"c"])
            time.sleep(1.0)
            status = cluster.worker_status("hostile")  # the control thread still answers
            assert sum(r["dropped_frames"] for r in status) > 0
            cluster.wait_until_drained("hostile", timeout=60)
            results = cluster.results("hostile")
            acked = sorted(m for r in results["numbers"].values() for m in r["acked"])
            assert acked == list(range(N))
            assert cluster.worker_pids("hostile") == pids
            assert cluster.restarts("hostile") == {}
        finally:
            for sock in [*sockets, control]:
                sock.close(0)
            context.term()


def test_forged_backpressure_cannot_stop_the_spouts() -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", FeederSpout(["n"], [[i] for i in range(N)]), parallelism=2)
    builder.set_bolt("record", Recorder(), parallelism=2).shuffle_grouping("numbers")
    context = zmq.Context()
    with LocalCluster() as cluster:
        cluster.submit_topology(
            "forged",
            CONF,
            builder.create_topology(),
        )
        push = context.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 2000)
        push.connect(cluster.endpoints("forged")["workers"][0])
        try:
            # from a worker that does not exist, then in a real peer's name: quoting no
            # token, then a token the forger planted itself
            push.send(pack([1, 77, True, []]))
            push.send(pack([1, 1, True, []]))
            push.send(pack([2, 1, 5]))
            push.send(pack([1, 1, True, [5]]))
            wait_for(
                lambda: sum(len(r["acked"]) for r in cluster.results("forged")["numbers"].values()),
                lambda acked: acked == N,
                timeout=60,
            )
            wait_for(  # each refused, with its reason
                lambda: cluster.worker_status("forged")[0]["dropped_by"],
                lambda by: (
                    by.get("unconfirmed-backpressure") == 2 and by.get("bad-backpressure") == 1
                ),
                timeout=30,
            )
            assert all(r["throttled_by"] == [] for r in cluster.worker_status("forged"))
        finally:
            push.close(0)
            context.term()


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
        push = context.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 0)
        push.connect(cluster.endpoints("curve")["workers"][worker])
        try:
            push.send(forged, zmq.NOBLOCK)
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

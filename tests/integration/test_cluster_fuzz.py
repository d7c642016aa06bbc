"""A corpus generated from the frame grammar (``tests/frame_grammar.py``), every frame of
it one the door must refuse, sent to every worker's data port of a running acked
topology, with the worker's data token (as only its peers could: the door looks past the
token) and without (as anyone else can): no worker process changes, every msg id is
acked, every count is exact, and the workers' status counts every frame under its
reason."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import zmq

from acker import ACK_ACK, ACK_FAIL, ACK_INIT, ACK_RESET
from tests.frame_grammar import corpus_of, hostile_frames, refused_only
from tests.integration.components import Recorder
from tests.integration.helpers import CONF
from topology import LocalCluster, TopologyBuilder
from topology.assignment import Assignment
from topology.runtime.net.frames import REASONS, FrameCheck, inbound_routes
from topology.testing import FeederSpout

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

N = 3000
#: Frames of the corpus sent to each worker.
CORPUS = 300


def good_groups(assignment: Assignment, worker: int) -> list[list[Any]]:
    """Well-formed groups of every kind ``worker`` takes (values the topology never
    emits: a mutation that leaves one well formed is filtered out before sending, and
    would not touch a real count anyway)."""
    tasks = set(assignment.worker_tasks[worker])
    numbers = assignment.component_tasks["numbers"]
    groups: list[list[Any]] = []
    for record in (t for t in assignment.component_tasks["record"] if t in tasks):
        groups += [
            [record, numbers[0], "default", [[-1], [-2]], None],
            [record, numbers[-1], "default", [[-3]], [[7, 9]]],
        ]
    for acker in (t for t in assignment.component_tasks["__acker"] if t in tasks):
        groups += [
            [acker, -1, ACK_INIT, [[[[5, 6, numbers[0]]]]], None],
            [acker, -1, ACK_ACK, [[{5: 6}]], None],
            [acker, -2, ACK_FAIL, [[5, ["failed", "record", 3, "boom"]]], None],
            [acker, -2, ACK_RESET, [[[5]]], None],
        ]
    return groups or [[min(tasks), numbers[0], "default", [[-1]], None]]


def test_a_generated_corpus_on_every_port_changes_no_worker_and_loses_nothing() -> None:
    builder = TopologyBuilder()
    builder.set_spout(
        "numbers", FeederSpout(["n"], [[i] for i in range(N)], replay_failed=True), parallelism=2
    )
    builder.set_bolt("record", Recorder(), parallelism=2).shuffle_grouping("numbers")
    topology = builder.create_topology()
    context = zmq.Context()
    sockets: list[zmq.Socket] = []
    with LocalCluster() as cluster:
        cluster.submit_topology("fuzzed", {**CONF, "topology.message.timeout.secs": 10}, topology)
        pids = cluster.worker_pids("fuzzed")
        assignment = cluster.assignment("fuzzed")
        endpoints = cluster.endpoints("fuzzed")
        try:
            sent = plain = 0
            for w, endpoint in endpoints["workers"].items():
                token = endpoints["tokens"][w]
                routes = inbound_routes(topology, assignment, w)
                check = FrameCheck(w, assignment.num_workers, routes, 2**24, token=token)
                frames = corpus_of(hostile_frames(good_groups(assignment, w)), CORPUS)
                sock = context.socket(zmq.PUSH)
                sock.setsockopt(zmq.LINGER, 5000)
                sock.connect(endpoint)
                sockets.append(sock)
                for i, frame in enumerate(refused_only(frames, check)):
                    if i % 4:
                        sock.send(token + frame)
                    else:
                        sock.send(frame)
                        plain += 1
                    sent += 1
            cluster.wait_until_drained("fuzzed", timeout=90)
            results = cluster.results("fuzzed")
            acked = sorted(m for r in results["numbers"].values() for m in r["acked"])
            assert acked == list(range(N))
            seen = Counter(e[3][0] for r in results["record"].values() for e in r["seen"])
            assert seen == Counter(range(N))
            assert cluster.worker_pids("fuzzed") == pids
            assert cluster.restarts("fuzzed") == {}
            status = cluster.worker_status("fuzzed")
            by_reason: Counter[str] = Counter()
            for row in status:
                by_reason.update(row["dropped_by"])
            assert sent > 200  # most of the corpus is refused; all of that is counted
            assert sum(by_reason.values()) == sum(r["dropped_frames"] for r in status) == sent
            assert set(by_reason) <= set(REASONS)
            assert by_reason["bad-token"] == plain > 0
            assert len(by_reason) >= 6  # past the token the corpus reaches many faults
        finally:
            for sock in sockets:
                sock.close(0)
            context.term()

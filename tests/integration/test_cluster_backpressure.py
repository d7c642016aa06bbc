"""Backpressure between workers: a fast spout in one worker, a slow bolt in the other."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.integration.components import EndlessSpout, SlowBolt
from tests.integration.helpers import WORKERS, wait_for
from topology import LocalCluster, TopologyBuilder
from topology.runtime.net.codec import encode_data
from topology.runtime.net.transport import SOCKET_BUFFER_BYTES
from topology.runtime.tasks.executor import SPOUT_CALLS_PER_TURN

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

RECEIVE_BUFFER = 1000  # tuples a worker queues before it stops reading its socket
TRANSFER_BUFFER = 4  # frames queued toward a peer (ZeroMQ high-water mark)
BATCH = 100  # tuples per frame

#: Wire bytes of one EndlessSpout(0) tuple in a full frame.
TUPLE_BYTES = len(encode_data([[1, 2, "default", [[10**6, b""]] * BATCH, None]])) / BATCH
#: Tuples the kernel's TCP buffers can hold on the way (send + receive side; Linux doubles
#: the requested size).  ZeroMQ's high-water marks do not count them.
SOCKET_SLACK = 2 * 2 * SOCKET_BUFFER_BYTES / TUPLE_BYTES

#: Tuples that may sit between the spout's emit and the bolt's execute when backpressure
#: works: the receiver's inbound queue (plus the frame read past its limit), a full ZeroMQ
#: queue on each side of the socket, what the spout emits in the turn that congests (its
#: lanes and the frames held back), and the kernel socket buffers.  Doubled for ZeroMQ's
#: approximate high-water marks, its I/O batching and the kernel's buffer accounting.
#: (Without backpressure between workers the gap passes 500,000 within 3 s.)
GAP_BOUND = 2 * (
    RECEIVE_BUFFER
    + BATCH
    + 2 * TRANSFER_BUFFER * BATCH
    + 2 * BATCH
    + SPOUT_CALLS_PER_TURN
    + SOCKET_SLACK
)


def _topology(payload_bytes: int) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("spout", EndlessSpout(payload_bytes))
    builder.set_bolt("slow", SlowBolt(0.0002)).shuffle_grouping("spout")
    return builder.create_topology()


def _counts(status: list[dict[str, Any]]) -> tuple[int, int]:
    """(tuples the spout emitted, tuples the slow bolt executed)."""
    emitted = executed = 0
    for reply in status:
        for info in reply["tasks"].values():
            if info["component"] == "spout":
                emitted += info["emitted"]["default"]
            elif info["component"] == "slow":
                executed += info["executed"]
    return emitted, executed


def _assert_in_other_workers(cluster: LocalCluster, name: str) -> None:
    assignment = cluster.assignment(name)
    worker_of = assignment.worker_of()
    [spout] = assignment.component_tasks["spout"]
    [slow] = assignment.component_tasks["slow"]
    assert assignment.num_workers == WORKERS
    assert worker_of[spout] != worker_of[slow]


def _drain_and_check(cluster: LocalCluster, name: str) -> int:
    cluster.deactivate(name)
    cluster.wait_until_drained(name, timeout=30)
    emitted, executed = _counts(cluster.worker_status(name))
    results = cluster.results(name)
    [spout] = results["spout"].values()
    [slow] = results["slow"].values()
    assert executed == emitted == spout["emitted"] == slow["executed"]
    assert slow["out_of_order"] == []  # nothing dropped, duplicated or reordered
    return emitted


def test_backpressure_bounds_tuples_in_flight_by_the_configured_buffers() -> None:
    conf = {
        "topology.workers": WORKERS,
        "topology.executor.receive.buffer.size": RECEIVE_BUFFER,
        "topology.transfer.buffer.size": TRANSFER_BUFFER,
        "topology.transfer.batch.size": BATCH,
    }
    with LocalCluster() as cluster:
        cluster.submit_topology("bp", conf, _topology(0))
        _assert_in_other_workers(cluster, "bp")
        gaps = []
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            emitted, executed = _counts(cluster.worker_status("bp"))
            gaps.append(emitted - executed)
            assert gaps[-1] < GAP_BOUND, f"{gaps[-1]} tuples in flight (bound {GAP_BOUND})"
            time.sleep(0.1)
        assert executed > 500  # the bolt kept working all along
        _drain_and_check(cluster, "bp")


def test_congested_transfer_drops_nothing() -> None:
    # big tuples and the smallest buffers fill the path to the slow worker within a
    # second; the spout's worker then holds frames back (congested) and stops its spout
    conf = {
        "topology.workers": WORKERS,
        "topology.executor.receive.buffer.size": 100,
        "topology.transfer.buffer.size": TRANSFER_BUFFER,
        "topology.transfer.batch.size": 1,
    }
    with LocalCluster() as cluster:
        cluster.submit_topology("congest", conf, _topology(64 * 1024))
        _assert_in_other_workers(cluster, "congest")
        wait_for(
            lambda: cluster.worker_status("congest"),
            lambda status: any(reply["congested"] for reply in status),
            timeout=20.0,
        )
        emitted = _drain_and_check(cluster, "congest")
    # congestion begins after about receive-buffer (100) + queued frames (8) big tuples;
    # what matters is that every one of them arrived, in order
    assert emitted > 50

"""Forged backpressure on every worker's data port, without a cluster secret: a plain
ZeroMQ client sends "on" in every worker's name, in every shape it can make, five times a
second.  The spouts must keep their pace and every msg id must be acked."""

from __future__ import annotations

import random
import time

import msgpack
import pytest
import zmq

from tests.integration.components import Recorder
from tests.integration.flow_components import PacedIds
from tests.integration.helpers import CONF, WORKERS, wait_for
from topology import LocalCluster, TopologyBuilder
from topology.runtime.backpressure import MAX_TOKENS, TOKEN_BITS
from topology.runtime.serialization import BACKPRESSURE, LINK_TOKEN

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SPOUTS = 2
PER_TASK = 3500
EVERY = 0.002  # seconds between a spout task's tuples: 1,000 tuples/s in all
WINDOW = 2.0  # seconds each rate is measured over
FORGE_EVERY = 0.2


def pack(obj: object) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def forged_round(rng: random.Random) -> list[bytes]:
    """Backpressure "on" in every worker's name: the old shape, quoting nothing, quoting
    guesses, and quoting tokens the forger first sent in that worker's name (more than a
    worker keeps, so the real peer's token is pushed out too)."""
    frames = []
    for worker in range(WORKERS):
        frames += [pack([BACKPRESSURE, worker, True]), pack([BACKPRESSURE, worker, True, []])]
        guesses = [rng.getrandbits(TOKEN_BITS) for _ in range(MAX_TOKENS)]
        frames.append(pack([BACKPRESSURE, worker, True, guesses]))
        planted = [rng.getrandbits(TOKEN_BITS) for _ in range(MAX_TOKENS + 1)]
        frames += [pack([LINK_TOKEN, worker, token]) for token in planted]
        frames.append(pack([BACKPRESSURE, worker, True, planted[-MAX_TOKENS:]]))
    return frames


def test_forged_backpressure_does_not_slow_the_spouts() -> None:
    builder = TopologyBuilder()
    builder.set_spout("ids", PacedIds(PER_TASK, EVERY), parallelism=SPOUTS)
    builder.set_bolt("record", Recorder(), parallelism=2).shuffle_grouping("ids")
    context = zmq.Context()
    with LocalCluster() as cluster:
        cluster.submit_topology("forged", CONF, builder.create_topology())
        pids = cluster.worker_pids("forged")

        def acked() -> int:
            return sum(len(r["acked"]) for r in cluster.results("forged")["ids"].values())

        def rate(during: float, between: object = None) -> float:
            start, began = acked(), time.monotonic()
            deadline = began + during
            while time.monotonic() < deadline:
                if callable(between):
                    between()
                time.sleep(FORGE_EVERY)
            return (acked() - start) / (time.monotonic() - began)

        wait_for(acked, lambda n: n > 0, timeout=30)
        honest = rate(WINDOW)
        sockets = []
        for endpoint in cluster.endpoints("forged")["workers"].values():
            push = context.socket(zmq.PUSH)
            push.setsockopt(zmq.LINGER, 0)
            push.connect(endpoint)
            sockets.append(push)
        rng = random.Random(24)

        def forge() -> None:
            for push in sockets:
                for frame in forged_round(rng):
                    push.send(frame)

        try:
            forge()
            forged = rate(WINDOW + 1.0, between=forge)
            status = cluster.worker_status("forged")
            assert all(r["throttled_by"] == [] for r in status)
            dropped = [r["dropped_by"].get("unconfirmed-backpressure", 0) for r in status]
            assert all(n > 0 for n in dropped), dropped
        finally:
            for push in sockets:
                push.close(0)
            context.term()
        assert honest > 100, honest
        assert forged >= 0.3 * honest, (forged, honest)
        cluster.wait_until_drained("forged", timeout=60)
        results = cluster.results("forged")["ids"].values()
        assert sorted(m for r in results for m in r["acked"]) == list(range(SPOUTS * PER_TASK))
        assert cluster.worker_pids("forged") == pids

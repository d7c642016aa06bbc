"""Forged backpressure on every worker's data port, without a cluster secret: a plain
ZeroMQ client sends "on" in every worker's name, in every shape it can make and with every
token it can come by but the worker's own, five times a second.  The spouts must keep
their pace and every msg id must be acked."""

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
from topology.runtime.net.codec import BACKPRESSURE
from topology.runtime.net.data_token import TOKEN_BYTES

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SPOUTS = 2
PER_TASK = 3500
EVERY = 0.002  # seconds between a spout task's tuples: 1,000 tuples/s in all
WINDOW = 2.0  # seconds each rate is measured over
FORGE_EVERY = 0.2


def pack(obj: object) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def forged_round(rng: random.Random, others: list[bytes]) -> list[bytes]:
    """Backpressure "on" in every worker's name: in the shape workers send it, without a
    token, after guessed tokens and after ``others`` (the other workers' tokens, as one
    who learnt them would); and the old shape that quoted link tokens."""
    messages = []
    for worker in range(WORKERS):
        on = pack([BACKPRESSURE, worker, True])
        messages += [on, pack([BACKPRESSURE, worker, True, []])]
        messages += [rng.randbytes(TOKEN_BYTES) + on for _ in range(3)]
        messages += [token + on for token in others]
    return messages


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
        endpoints = cluster.endpoints("forged")
        for worker, endpoint in endpoints["workers"].items():
            push = context.socket(zmq.PUSH)
            push.setsockopt(zmq.LINGER, 0)
            push.connect(endpoint)
            others = [t for w, t in endpoints["tokens"].items() if w != worker]
            sockets.append((push, others))
        rng = random.Random(24)

        def forge() -> None:
            for push, others in sockets:
                for message in forged_round(rng, others):
                    push.send(message)

        try:
            forge()
            forged = rate(WINDOW + 1.0, between=forge)
            status = cluster.worker_status("forged")
            assert all(r["throttled_by"] == [] for r in status)
            assert all(set(r["dropped_by"]) == {"bad-token"} for r in status), status
        finally:
            for push, _ in sockets:
                push.close(0)
            context.term()
        assert honest > 100, honest
        assert forged >= 0.3 * honest, (forged, honest)
        cluster.wait_until_drained("forged", timeout=60)
        results = cluster.results("forged")["ids"].values()
        assert sorted(m for r in results for m in r["acked"]) == list(range(SPOUTS * PER_TASK))
        assert cluster.worker_pids("forged") == pids

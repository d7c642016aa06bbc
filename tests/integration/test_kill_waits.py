"""Issue 40: killing a topology waits while it has something in flight — tuple trees
pending, tuples buffered — and no longer (the message timeout, 30 s, bounds the wait as
before); the wait says what it waits for."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.acking_components import Holder
from topology import LocalCluster, Spout, TopologyBuilder, TopologyContext

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

CONF = {"topology.workers": 1, "topology.tick.tuple.freq.secs": 0.25}


class LoggedBurst(Spout):
    """Emits ``[0] .. [n-1]`` at once (msg_id = n) and appends each acked msg_id to
    ``path``: what was acked before the workers stopped outlives them."""

    outputs = ["n"]

    def __init__(self, n: int, path: str) -> None:
        self.n, self.path = n, path

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.sent = False

    def next_tuple(self) -> None:
        if not self.sent:
            self.sent = True
            for i in range(self.n):
                self.emit([i], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        with open(self.path, "a") as log:
            log.write(f"{msg_id}\n")


def _topology(n: int, hold: float, log: Path) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("burst", LoggedBurst(n, str(log)))
    builder.set_bolt("hold", Holder(hold, reset=False), parallelism=2).shuffle_grouping("burst")
    return builder.create_topology()


def _pending(status: list[dict[str, Any]]) -> int:
    return sum(task.get("pending", 0) for reply in status for task in reply["tasks"].values())


def _drained_after(lines: list[str]) -> float:
    [seconds] = [
        float(m[1]) for line in lines if (m := re.match(r"nothing in flight after (.*)s$", line))
    ]
    return seconds


def test_a_kill_waits_for_pending_trees_and_no_longer(tmp_path: Path) -> None:
    held, idle = tmp_path / "held.log", tmp_path / "idle.log"
    with LocalCluster() as cluster:
        cluster.submit_topology("held", CONF, _topology(40, 2.0, held))
        while _pending(cluster.worker_status("held")) < 40:  # emitted, held by the bolt
            time.sleep(0.05)
        lines: list[str] = []
        started = time.monotonic()
        cluster.kill_topology("held", wait_secs=None, progress=lines.append)
        took = time.monotonic() - started
        # every tree the bolt held 2 s was acked before the workers stopped
        assert sorted(int(n) for n in held.read_text().split()) == list(range(40))
        assert any(
            line.startswith("waiting for ") and "tuple trees pending" in line for line in lines
        )
        assert 0.5 < _drained_after(lines) < 30 and took < 30

        cluster.submit_topology("idle", CONF, _topology(5, 0.0, idle))
        while len(idle.read_text().split() if idle.exists() else []) < 5:
            time.sleep(0.05)
        lines = []
        started = time.monotonic()
        cluster.kill_topology("idle", wait_secs=None, progress=lines.append)
        assert _drained_after(lines) < 5 and time.monotonic() - started < 10
        assert lines[0] == "'idle' deactivated: in-flight tuples have up to 30s to finish"
        assert lines[-1] == "stopping the workers of 'idle'"

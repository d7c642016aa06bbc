"""Issue 28 (papercut 4): counts survive a SIGKILL between two stats reports.

``sparkstorm local --kill-worker-at 5`` showed 593,390 sentences emitted while the run
verified 761,080: a worker's windows were saved for its successor only when it published
them (every ``topology.stats.interval.secs``, 5 s), so a worker killed before its first
report lost everything it had counted.  They are now saved every second between reports,
and ``sparkstorm local``'s tables read the all-time windows (every incarnation's)."""

from __future__ import annotations

from typing import Any

import pytest

from cli.progress import component_totals
from tests.integration.helpers import kill_worker, wait_for
from topology import Spout, TopologyBuilder
from topology.deploy.local.cluster import LocalCluster
from topology.stats.rolling import ALL_TIME

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

BURST = 500


class Burst(Spout):
    """Emits BURST tuples per incarnation, then nothing."""

    outputs = ["n"]

    def open(self, conf: Any, context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < BURST:
            self.emit([self.i])
            self.i += 1


def _saved_emits(cluster: LocalCluster, name: str, worker: int) -> int:
    lumps = cluster._get(name).carried.get(worker, {}).get("burst#0") or []
    return sum(sum(lump[1][ALL_TIME]["emitted"].values()) for lump in lumps)


def test_a_worker_killed_before_its_first_report_keeps_its_counts() -> None:
    builder = TopologyBuilder()
    builder.set_spout("burst", Burst())
    topology = builder.create_topology()
    conf = {"topology.workers": 2, "topology.acker.executors": 0}
    conf["topology.stats.interval.secs"] = 60  # no report during the test: only saves
    with LocalCluster() as cluster:
        cluster.submit_topology("burst", conf, topology)
        [worker] = [
            reply["worker"]
            for reply in cluster.worker_status("burst")
            if any(t["component"] == "burst" for t in reply["tasks"].values())
        ]
        wait_for(lambda: _saved_emits(cluster, "burst", worker), lambda n: n == BURST, 30)
        kill_worker(cluster, "burst", worker)

        def emitted() -> int:
            [spout] = cluster.stats("burst", "all")["spouts"]
            return int(spout["emitted"])

        wait_for(emitted, lambda n: n == 2 * BURST, 30)  # both incarnations
        totals = component_totals(cluster.worker_status("burst"))
        assert totals["burst"]["emitted"] == 2 * BURST  # what `sparkstorm local` shows

"""Run a topology to completion on a fresh LocalCluster and return what it did."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from topology.spec import Topology

from .capture import Observed, with_capture

#: Simulated seconds :func:`complete_topology` advances per look while it waits to drain.
TIME_STEP_SECS = 1.0


@dataclass
class CompletedTopology(Observed):
    """What :func:`complete_topology` observed (plus the errors and the workers' last
    status)."""

    errors: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    status: list[dict[str, Any]] = field(default_factory=list)


def complete_topology(
    topology: Topology,
    conf: dict[str, Any] | None = None,
    timeout: float = 60.0,
    capture: bool = True,
    name: str = "completed",
    simulated_time: bool = False,
    time_step: float = TIME_STEP_SECS,
) -> CompletedTopology:
    """Run ``topology`` on a fresh LocalCluster until it drains; return what it did.

    ``simulated_time``: run on simulated time (see :mod:`topology.deploy.local.cluster`),
    advanced by ``time_step`` seconds before every look at whether the topology drained,
    as Storm's ``completeTopology`` does: trees nobody acks time out and timer-driven
    windows fire without the test waiting for them in real time.  How far simulated time
    gets depends on how long draining takes; use ``LocalCluster(simulated_time=True)``
    and ``advance_time`` to control it exactly.
    """
    from topology.deploy.local.cluster import LocalCluster

    run = with_capture(topology) if capture else topology
    with LocalCluster(simulated_time=simulated_time) as cluster:
        cluster.submit_topology(name, conf, run)
        cluster.wait_until_drained(
            name, timeout=timeout, advance_secs=time_step if simulated_time else 0.0
        )
        results = cluster.results(name)
        status = cluster.worker_status(name)
        errors = cluster.errors(name)
    observed = Observed.from_results(results)
    return CompletedTopology(observed.captured, observed.results, errors, status)

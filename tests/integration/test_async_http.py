"""AsyncBolt against a real local HTTP server (issue 27): 1,000 lookups of 50 ms each at
capacity 100 run concurrently in a LocalCluster worker (the server sees many at once, and
they finish in a fraction of the 50 s they take one by one), every input is acked or
failed exactly once, and the lookups the server refuses are failed and go to the error
stream.  The components are examples/enrich_async.py's; the server runs in this process.
How fast they finish is measured in bench/, not bounded tightly here (docs/TESTING.md)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from cli.loader import load_topology
from tests.integration.helpers import wait_for
from topology import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
USERS = 1000
#: The ideal is 10 rounds of 50 ms (0.5 s), one by one 50 s; observed 0.6-4.3 s on a
#: 2-core machine running the rest of the suite.  Loose on purpose: a wait, not a claim.
BOUND_SECS = 10.0
#: Lookups the server answers at once at some point, at least: far more than one, though a
#: CPU-starved worker dispatches fewer than the capacity of 100 within one 50 ms latency.
MIN_PEAK_IN_FLIGHT = 10


def example() -> ModuleType:
    """examples/enrich_async.py loaded as ``sparkstorm`` loads it (classes travel by value)."""
    _, module = load_topology(f"{EXAMPLES / 'enrich_async.py'}:topology")
    return module


def outcomes(results: dict) -> int:
    spouts = results.get("users", {}).values()
    return sum(len(s["acked"]) + len(s["failed"]) for s in spouts)


def test_a_thousand_lookups_of_50_ms_at_capacity_100_finish_fast_each_acked_once() -> None:
    module = example()
    service = module.LookupService(latency=0.05).start()
    try:
        topology = module.build(USERS, ("127.0.0.1", service.port), capacity=100)
        with LocalCluster() as cluster:
            cluster.submit_topology("enrich", {"topology.workers": 1}, topology)
            wait_for(lambda: outcomes(cluster.results("enrich")), lambda n: n >= USERS, 60)
            cluster.wait_until_drained("enrich", timeout=30)
            results = cluster.results("enrich")
    finally:
        service.stop()
    [spout] = results["users"].values()
    refused = [u for u in range(USERS) if module.refused(u)]
    assert sorted(spout["failed"]) == refused  # each refused lookup failed, once
    assert sorted(spout["acked"]) == sorted(set(range(USERS)) - set(refused))  # the rest acked once
    assert service.requests == USERS  # no lookup made twice
    assert "980 users enriched, 20 refused" in module.verify(results)
    print(f"{USERS} lookups of 50 ms at capacity 100: {spout['secs']:.2f} s, "
          f"{service.peak_in_flight} at once at most")  # fmt: skip
    assert service.peak_in_flight >= MIN_PEAK_IN_FLIGHT, service.peak_in_flight
    assert spout["secs"] < BOUND_SECS, f"{USERS} lookups took {spout['secs']:.2f} s"

"""examples/auctions_streams.py on LocalCluster as ``sparkstorm local`` loads it: its four
views (a regular join, an interval join, a running top-N and an event-time window with
its bounds) equal the same computations in plain Python."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.loader import load_topology
from tests.integration.helpers import wait_for
from topology import LocalCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "auctions_streams.py"


def test_every_view_of_the_auction_site_is_exact() -> None:
    conf = {"topology.workers": 2}
    topology, module = load_topology(f"{EXAMPLE}:topology", conf)
    with LocalCluster() as cluster:
        cluster.submit_topology("auctions", conf, topology)
        # the views fill as the events flow; a wrong one never matches (the timeout's
        # message then says which)
        message = wait_for(
            lambda: module.verify(cluster.results("auctions")),
            lambda said: not said.startswith("MISMATCH"),
            90,
            0.5,
        )
    assert message.startswith("every view exact: 200 auctions with their sellers, 1,015 early"), (
        message
    )


def test_a_wrong_view_is_named() -> None:
    """``verify`` can fail: a missing row makes it name the view."""
    module = load_topology(f"{EXAMPLE}:topology", {})[1]
    assert module.verify({}) == "MISMATCH in sellers, early-bids, top-bids, best-per-minute"

"""A running topology's live graph for ``sparkstorm visualize NAME``: the web UI's own.

The graph is :func:`topology.ui.graph.build_graph` of the topology's recorded components,
its status report over a window (capacities, latencies) and live rates; the SVG is
:func:`topology.ui.svg.graph_svg` of it — what ``/api/v1/topology/NAME/graph.svg`` serves.
The UI's poller has rates from its successive polls; a one-shot command asks the workers
until one of them has given two samples (:class:`topology.ui.rates.RateTracker`), a second
or so apart.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import click

from topology.stats.prometheus import TopologySnapshot
from topology.ui.graph import build_graph
from topology.ui.rates import Key, RateTracker

#: Seconds between two asks of the workers while waiting for rates.
SAMPLE_EVERY_SECS = 1.0
#: Seconds to wait for a second sample before drawing without rates.
RATES_WITHIN_SECS = 10.0


class Snapshots(Protocol):
    """What :func:`live_graph` reads of a cluster client (:class:`Cluster`)."""

    def snapshot(self, name: str, window: str = ...) -> TopologySnapshot: ...


def live_graph(
    cluster: Snapshots,
    name: str,
    components: dict[str, Any],
    window: str = "10m",
    within: float = RATES_WITHIN_SECS,
    every: float = SAMPLE_EVERY_SECS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[dict[str, Any], bool]:
    """``name``'s graph (the UI's schema, :mod:`topology.ui.graph`) and whether it has live
    rates: the workers are asked every ``every`` seconds until some worker has given two
    samples, for ``within`` seconds at most (a topology whose workers do not answer is
    drawn without rates, its capacities still from the report)."""
    tracker: RateTracker[Key] = RateTracker()
    report, replies = cluster.snapshot(name, window)
    rates = tracker.update(replies)
    deadline = clock() + within
    while not tracker.ready and clock() < deadline:
        sleep(every)
        report, replies = cluster.snapshot(name, window)
        rates = tracker.update(replies)
    return build_graph(components, report, rates), tracker.ready


def say_without_rates(name: str, within: float = RATES_WITHIN_SECS) -> None:
    """One line on stderr: the drawing has no rates (no worker gave two samples)."""
    click.echo(
        f"Note: no live rates for {name}: no worker gave two samples within {within:g}s "
        "(drawn with its structure and capacities only)",
        err=True,
    )

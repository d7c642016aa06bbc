"""``sparkstorm monitor NAME``: a live, top-like view of a running topology."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import click
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from topology.stats.status_report import stale_secs
from topology.status import TopologyStatus

from .common import cluster_session
from .options import ConfigSource, config_options, topology_name
from .rates import RateTracker
from .reconnect import announce_connection, unreachable
from .status import window_option
from .status_view import (
    bolts_table,
    sparkline,
    spouts_table,
    worker_flow_table,
    workers_table,
)

HISTORY = 40


def rates_table(
    rates: dict[str, float] | None, history: deque[float], interval: float | None
) -> Table:
    """Spout rates between the last two samples of each worker (``None``: no second
    sample yet), the acked/s history, and how often samples arrive."""
    every = f"samples every {interval:.1f}s" if interval is not None else "waiting for samples"
    table = Table(title=f"Spout rates (per second, {every})", title_justify="left")
    for column in ("emitted/s", "acked/s", "failed/s", f"acked/s, last {HISTORY} refreshes"):
        table.add_column(column, justify="right")
    if rates is None:
        table.add_row("-", "-", "-", "")
        return table
    table.add_row(
        f"{rates['emitted']:,.0f}",
        f"{rates['acked']:,.0f}",
        Text(f"{rates['failed']:,.0f}", style="red" if rates["failed"] else ""),
        sparkline(list(history)),
    )
    return table


def monitor_view(
    report: dict[str, Any],
    rates: dict[str, float] | None,
    history: deque[float],
    stale_after: float,
    interval: float | None = None,
) -> Group:
    t = report["topology"]
    header = Text.assemble(
        (f"{t['name']} ", "bold"),
        (f"{t['status']}", "green" if t["status"] == TopologyStatus.ACTIVE else "yellow"),
        f"  workers {t['workers_alive']}/{t['workers']}  tasks {t['tasks']}  "
        f"window {report['window_name']}  {time.strftime('%H:%M:%S')}  (Ctrl-C to quit)",
    )
    return Group(
        header,
        rates_table(rates, history, interval),
        spouts_table(report),
        bolts_table(report),
        workers_table(report, stale_after),
        worker_flow_table(report),
    )


@click.command()
@click.argument("name", callback=topology_name)
@window_option
@click.option(
    "--interval", type=float, default=1.0, show_default=True, help="Seconds between refreshes."
)
@click.option(
    "--iterations", type=int, default=0, help="Stop after this many refreshes (0 = until Ctrl-C)."
)
@config_options
def monitor(name: str, window: str, interval: float, iterations: int, config: ConfigSource) -> None:
    """Refresh NAME's rates, acked/s sparkline, failures and workers in place, like top."""
    console = Console()
    history: deque[float] = deque(maxlen=HISTORY)
    with cluster_session(config) as cluster:
        announce_connection(cluster)
        stale_after = stale_secs(cluster.conf)
        tracker = RateTracker()
        tracker.update(cluster.snapshot(name, window).replies)
        count = 0
        try:
            with Live(console=console, refresh_per_second=4, screen=False) as live:
                while iterations <= 0 or count < iterations:
                    time.sleep(interval)
                    # fresh replies, each stamped with when its worker took it (a worker busy
                    # in user code answers with its last heartbeat's sample)
                    try:
                        report, replies = cluster.snapshot(name, window)
                    except Exception as exc:  # ZooKeeper away: keep the view, try again
                        if not unreachable(exc):
                            raise
                        continue
                    rates = tracker.update(replies)
                    if rates is not None:
                        history.append(rates["acked"])
                    live.update(
                        monitor_view(report, rates, history, stale_after, tracker.sample_interval)
                    )
                    count += 1
        except KeyboardInterrupt:
            pass
    console.print("\nmonitor stopped")

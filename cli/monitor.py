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

from topology import config as cfg

from .common import cluster_session
from .options import ConfigSource, config_options
from .status import window_option
from .status_view import STALE_INTERVALS, bolts_table, sparkline, spouts_table, workers_table

HISTORY = 40


def rates_table(rates: dict[str, float], history: deque[float]) -> Table:
    table = Table(title="Rates (per second, since the last refresh)", title_justify="left")
    for column in ("emitted/s", "acked/s", "failed/s", f"acked/s, last {HISTORY} refreshes"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{rates['emitted']:,.0f}",
        f"{rates['acked']:,.0f}",
        Text(f"{rates['failed']:,.0f}", style="red" if rates["failed"] else ""),
        sparkline(list(history)),
    )
    return table


def _totals(report: dict[str, Any]) -> dict[str, float]:
    spouts = report["spouts"]
    return {key: float(sum(s[key] for s in spouts)) for key in ("emitted", "acked", "failed")}


def monitor_view(
    report: dict[str, Any], rates: dict[str, float], history: deque[float], stale_after: float
) -> Group:
    t = report["topology"]
    header = Text.assemble(
        (f"{t['name']} ", "bold"),
        (f"{t['status']}", "green" if t["status"] == "ACTIVE" else "yellow"),
        f"  workers {t['workers_alive']}/{t['workers']}  tasks {t['tasks']}  "
        f"window {report['window_name']}  {time.strftime('%H:%M:%S')}  (Ctrl-C to quit)",
    )
    return Group(
        header,
        rates_table(rates, history),
        spouts_table(report),
        bolts_table(report),
        workers_table(report, stale_after),
    )


@click.command()
@click.argument("name")
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
        stale_after = STALE_INTERVALS * float(cluster.conf[cfg.TOPOLOGY_STATS_INTERVAL_SECS])
        previous = _totals(cluster.stats(name, ":all-time"))
        last = time.monotonic()
        count = 0
        try:
            with Live(console=console, refresh_per_second=4, screen=False) as live:
                while iterations <= 0 or count < iterations:
                    time.sleep(interval)
                    report = cluster.stats(name, window)
                    totals = _totals(cluster.stats(name, ":all-time", fresh=False))
                    now = time.monotonic()
                    rates = {k: max(0.0, (totals[k] - previous[k]) / (now - last)) for k in totals}
                    history.append(rates["acked"])
                    previous, last = totals, now
                    live.update(monitor_view(report, rates, history, stale_after))
                    count += 1
        except KeyboardInterrupt:
            pass
    console.print("\nmonitor stopped")

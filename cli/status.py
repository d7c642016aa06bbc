"""``sparkstorm status NAME``: the ack status of a running topology, in the terminal."""

from __future__ import annotations

import click

from topology.stats.rolling import parse_window
from topology.stats.status_report import stale_secs

from .common import cluster_session, echo_json
from .options import ConfigSource, config_options, topology_name
from .status_view import status_view, view_console


def _window(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        return parse_window(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


window_option = click.option(
    "--window",
    default="10m",
    show_default=True,
    callback=_window,
    help="Stats window: 10m, 3h, 1d or all.",
)


@click.command()
@click.argument("name", callback=topology_name)
@window_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the report as JSON (schema 1, see docs/STATUS.md).",
)
@config_options
def status(name: str, window: str, as_json: bool, config: ConfigSource) -> None:
    """Show NAME's spouts, bolts, workers and last errors over a stats window."""
    with cluster_session(config) as cluster:
        report = cluster.stats(name, window)
        stale = stale_secs(cluster.conf)
    if as_json:
        echo_json(report)
        return
    view_console().print(status_view(report, stale))

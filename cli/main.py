"""``sparkstorm``: the click group; each command lives in its own module."""

from __future__ import annotations

from typing import Any

import click

from topology import SparkstormError
from topology.logs import configure_logging

from .dev_zookeeper import dev_zookeeper
from .local import local
from .logs import logs, set_log_level
from .monitor import monitor
from .nimbus import nimbus
from .operations import activate, deactivate, kill, list_topologies, rebalance
from .savepoint import savepoint
from .status import status
from .submit import submit
from .ui import ui
from .version import version
from .visualize import visualize


class _Commands(click.Group):
    """The ``sparkstorm`` group: a :class:`SparkstormError` that a command lets through is
    still a user's error (a bad topology, config or state), shown as ``Error: ...`` with
    exit status 1, never as a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SparkstormError as exc:
            raise click.ClickException(str(exc)) from exc


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """sparkstorm: Storm's programming model in Python, on Spark executors.

    Log lines go to stderr at $SPARKSTORM_LOG_LEVEL (default WARNING)."""
    configure_logging()


for command in (
    dev_zookeeper,
    nimbus,
    submit,
    local,
    list_topologies,
    kill,
    activate,
    deactivate,
    rebalance,
    savepoint,
    version,
    visualize,
    status,
    monitor,
    logs,
    set_log_level,
    ui,
):
    cli.add_command(command)

if __name__ == "__main__":
    cli()

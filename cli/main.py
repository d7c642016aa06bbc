"""``sparkstorm``: the click group; each command lives in its own module."""

from __future__ import annotations

import click

from .dev_zookeeper import dev_zookeeper
from .local import local
from .monitor import monitor
from .nimbus import nimbus
from .operations import activate, deactivate, kill, list_topologies, rebalance
from .status import status
from .submit import submit
from .version import version
from .visualize import visualize


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """sparkstorm: Storm's programming model in Python, on Spark executors."""


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
    version,
    visualize,
    status,
    monitor,
):
    cli.add_command(command)

if __name__ == "__main__":
    cli()

"""``sparkstorm``: the click group; each command lives in its own module."""

from __future__ import annotations

import click

from .local import local
from .version import version


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """sparkstorm: Storm's programming model in Python."""


cli.add_command(local)
cli.add_command(version)

if __name__ == "__main__":
    cli()

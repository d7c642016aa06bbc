"""``sparkstorm version``."""

from __future__ import annotations

import platform

import click

import topology


@click.command()
def version() -> None:
    """Print the sparkstorm version."""
    click.echo(f"sparkstorm {topology.__version__} (Python {platform.python_version()})")

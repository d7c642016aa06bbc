"""``sparkstorm dev-zookeeper``: a real ZooKeeper for development, from pyspark's jars."""

from __future__ import annotations

import threading

import click

from topology import SparkstormError
from topology.deploy.embedded_zookeeper import EmbeddedZooKeeper

from .common import exit_cleanly_on_sigterm


@click.command(name="dev-zookeeper")
@click.option("--port", type=int, default=2181, show_default=True, help="Client port.")
@click.option(
    "--dir",
    "data_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Data directory (default: a temporary one, removed on exit).",
)
def dev_zookeeper(port: int, data_dir: str | None) -> None:
    """Run a single-node ZooKeeper on 127.0.0.1 until Ctrl-C (no separate install)."""
    exit_cleanly_on_sigterm()
    server = EmbeddedZooKeeper(port=port, data_dir=data_dir)
    try:
        server.start()
    except SparkstormError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"ZooKeeper running at {server.address} (data in {server.data_dir}); Ctrl-C to stop")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        click.echo("Stopping ZooKeeper")
    finally:
        server.stop()

"""``sparkstorm dev-zookeeper``: a real ZooKeeper for development, from pyspark's jars."""

from __future__ import annotations

import threading

import click

from topology import SparkstormError
from topology.deploy.cluster.zookeeper_server import EmbeddedZooKeeper

from .common import exit_cleanly_on_sigterm, raise_open_file_limit


@click.command(name="dev-zookeeper")
@click.option("--port", type=int, default=2181, show_default=True, help="Client port.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; 0.0.0.0 for every interface (then set a cluster secret "
    "and ZooKeeper credentials: see docs/SECURITY.md).",
)
@click.option(
    "--require-auth",
    is_flag=True,
    help="Serve only clients that authenticate (digest); anonymous ones can do nothing.",
)
@click.option(
    "--dir",
    "data_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Data directory, made if missing (default: a temporary one, removed on exit).",
)
def dev_zookeeper(port: int, host: str, require_auth: bool, data_dir: str | None) -> None:
    """Run a single-node ZooKeeper until Ctrl-C (no separate install); loopback only unless
    --host says otherwise."""
    exit_cleanly_on_sigterm()
    raise_open_file_limit()  # the server inherits it
    server = EmbeddedZooKeeper(port=port, data_dir=data_dir, host=host, require_auth=require_auth)
    try:
        server.start()
    except SparkstormError as exc:
        raise click.ClickException(str(exc)) from exc
    auth = "; only authenticated clients are served" if require_auth else ""
    click.echo(
        f"ZooKeeper listening on {server.address}{auth} (data in {server.data_dir}); Ctrl-C to stop"
    )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        click.echo("Stopping ZooKeeper")
    finally:
        server.stop()

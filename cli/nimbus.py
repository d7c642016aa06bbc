"""``sparkstorm nimbus``: the driver holding the SparkSession; leader-elected via ZooKeeper."""

from __future__ import annotations

import threading

import click

from topology import SparkstormError

from .common import exit_cleanly_on_sigterm
from .options import ConfigSource, config_options


@click.command()
@config_options
def nimbus(config: ConfigSource) -> None:
    """Run a nimbus until Ctrl-C: stand by, or lead when elected.

    The leader launches every topology's workers as long-running tasks of its Spark
    application (spark.* keys configure it; spark.master defaults to local[*]).
    """
    from topology.deploy.nimbus import Nimbus
    from topology.deploy.spark_backend import SparkBackend

    exit_cleanly_on_sigterm()
    conf = config.build()
    spark = {k: v for k, v in conf.items() if k.startswith("spark.")}
    stop = threading.Event()
    try:
        backend = SparkBackend(spark, app_name="sparkstorm-nimbus")
    except Exception as exc:  # Spark could not start: say so in one line
        raise click.ClickException(f"Spark failed to start: {exc}") from exc
    server = Nimbus(conf, backend)
    click.echo(
        f"nimbus {server.identifier}: ZooKeeper {server.zk.hosts}, "
        f"Spark {backend.sc.master}; waiting to lead"
    )
    try:
        server.run(stop)
    except KeyboardInterrupt:
        click.echo("Stopping nimbus")
    except SparkstormError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        stop.set()
        backend.close()

"""``sparkstorm nimbus``: the leader-elected driver of the cluster, through ZooKeeper."""

from __future__ import annotations

import threading

import click

from topology import SparkstormError
from topology import config as cfg
from topology.deploy.cluster.nimbus import Nimbus
from topology.deploy.security import refuse_insecure
from topology.deploy.spark.backend import SparkBackend

from .common import exit_cleanly_on_sigterm, raise_open_file_limit, warn_if_unsecured
from .options import ConfigSource, config_options


@click.command()
@click.option(
    "--insecure",
    is_flag=True,
    help="Run without a cluster secret although ZooKeeper is not on loopback (anyone who can "
    "write to ZooKeeper could then run code here).",
)
@config_options
def nimbus(insecure: bool, config: ConfigSource) -> None:
    """Run a nimbus until Ctrl-C: stand by, or lead when elected.

    The leader starts each topology's driver: by default a process of its own holding the
    topology's own Spark application (spark.* keys configure it: spark.master, executor
    cores and memory), which keeps running when this nimbus stops or fails over. With
    -c nimbus.driver.mode=inline every topology runs on this nimbus's SparkContext.
    """
    exit_cleanly_on_sigterm()
    raise_open_file_limit()
    conf = config.build()
    resolved = cfg.resolve(conf, where="nimbus")
    try:
        refuse_insecure(resolved, "start a nimbus", insecure)
    except SparkstormError as exc:
        raise click.ClickException(str(exc)) from exc
    warn_if_unsecured(resolved)
    backend = None
    if resolved[cfg.NIMBUS_DRIVER_MODE] == "inline":
        spark = {k: v for k, v in conf.items() if k.startswith("spark.")}
        try:
            backend = SparkBackend(spark, app_name="sparkstorm-nimbus")
        except Exception as exc:  # Spark could not start: say so in one line
            raise click.ClickException(f"Spark failed to start: {exc}") from exc
    stop = threading.Event()
    server = Nimbus(conf, backend, insecure=insecure)
    where = backend.sc.master if backend is not None else resolved["spark.master"]
    click.echo(
        f"nimbus {server.identifier}: ZooKeeper {server.zk.hosts}, Spark {where} "
        f"(drivers: {resolved[cfg.NIMBUS_DRIVER_MODE]}); waiting to lead"
    )
    try:
        server.run(stop)
    except KeyboardInterrupt:
        click.echo("Stopping nimbus")
    except SparkstormError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        stop.set()
        if backend is not None:
            backend.close()

"""``sparkstorm submit FILE:ATTR --name NAME``: hand a topology to the running nimbus."""

from __future__ import annotations

import click

from topology import SparkstormError

from .common import cluster_session, warn_if_unsecured
from .loader import load_topology
from .options import ConfigSource, config_options, topology_name


@click.command()
@click.argument("target", metavar="FILE:ATTR")
@click.option(
    "--name", callback=topology_name, required=True, help="Name to run the topology under."
)
@click.option("--inactive", is_flag=True, help="Start with the spouts deactivated.")
@click.option(
    "--insecure",
    is_flag=True,
    help="Submit without a cluster secret although ZooKeeper is not on loopback.",
)
@click.option(
    "--timeout",
    type=float,
    default=120.0,
    show_default=True,
    help="Seconds to wait for every worker to run.",
)
@config_options
def submit(
    target: str, name: str, inactive: bool, insecure: bool, timeout: float, config: ConfigSource
) -> None:
    """Submit FILE:ATTR to the cluster; returns once every worker runs its tasks.

    Config keys from --config/-c become the topology's conf (spark.* keys configure the
    nimbus's Spark, not a submitted topology)."""
    topology, _ = load_topology(target, config.build())
    from topology import config as cfg
    from topology.deploy.security import refuse_insecure

    resolved = cfg.resolve(config.build(), where="config")
    try:  # before anything reaches an unprotected ZooKeeper
        refuse_insecure(resolved, "submit a topology", insecure)
    except SparkstormError as exc:
        raise click.ClickException(str(exc)) from exc
    warn_if_unsecured(resolved)
    with cluster_session(config) as cluster:
        topology_id = cluster.submit_topology(
            name,
            {k: v for k, v in cluster.conf.items()},
            topology,
            timeout=timeout,
            active=not inactive,
            insecure=insecure,
        )
    click.echo(f"Finished submitting topology: {name} ({topology_id})")

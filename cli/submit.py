"""``sparkstorm submit FILE:ATTR --name NAME``: hand a topology to the running nimbus."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from topology import SparkstormError
from topology import config as cfg
from topology.deploy.security import refuse_insecure

from .common import cluster_session, warn_if_unsecured
from .loader import load_topology
from .options import ConfigSource, UsageError, config_options, topology_name


def savepoint_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--from-savepoint PATH`` and ``--allow-non-restored-state`` (submit, local)."""
    command = click.option(
        "--allow-non-restored-state",
        is_flag=True,
        help="With --from-savepoint: drop the savepoint's state that no component takes "
        "(by uid) instead of refusing it.",
    )(command)
    return click.option(
        "--from-savepoint",
        metavar="PATH",
        default=None,
        help="Start from the state of the savepoint at PATH (a path or fsspec URL; see "
        "`sparkstorm savepoint`).",
    )(command)


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
@savepoint_options
@config_options
def submit(
    target: str,
    name: str,
    inactive: bool,
    insecure: bool,
    timeout: float,
    from_savepoint: str | None,
    allow_non_restored_state: bool,
    config: ConfigSource,
) -> None:
    """Submit FILE:ATTR to the cluster; returns once every worker runs its tasks.

    Config keys from --config/-c become the topology's conf (spark.* keys configure the
    nimbus's Spark, not a submitted topology). --from-savepoint starts it from a
    savepoint's state, matched to components by uid (the component id, or uid= on
    set_bolt/set_spout) and checked before anything runs."""
    if allow_non_restored_state and from_savepoint is None:
        raise UsageError("submit: --allow-non-restored-state goes with --from-savepoint PATH")
    topology, _ = load_topology(target, config.build())
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
            from_savepoint=from_savepoint,
            allow_non_restored_state=allow_non_restored_state,
        )
    click.echo(f"Finished submitting topology: {name} ({topology_id})")

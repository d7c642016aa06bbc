"""``sparkstorm list | kill | activate | deactivate | rebalance``: operate running topologies."""

from __future__ import annotations

import click

from topology.deploy.limits import worker_count_problem

from .common import cluster_session, echo_json
from .options import ConfigSource, UsageError, config_options, topology_name
from .status_view import key_width, nimbus_line, table_with_key, view_console


def say_progress(line: str) -> None:
    """One step of a long wait (``kill``, ``rebalance``), on stderr as it happens: stdout
    keeps only the result line for scripts."""
    click.echo(f"{line}...", err=True)


@click.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print the topologies as JSON.")
@config_options
def list_topologies(as_json: bool, config: ConfigSource) -> None:
    """List the topologies in the cluster with their status, workers and uptime."""
    with cluster_session(config) as cluster:
        topologies = cluster.topologies()
        nimbus = cluster.nimbuses()
    if as_json:
        echo_json(topologies)
        return
    console = view_console()
    console.print(nimbus_line(nimbus))
    if not topologies:
        click.echo("No topologies running.")
        return
    table = table_with_key(  # ids: `list --json` and `status`
        "Topologies",
        ("name", "status", "workers", "tasks", "uptime", "emit/s", "ack/s", "fail/s"),
        key_width=key_width(topologies, "name"),
    )
    for t in topologies:
        status = t["status"] if not t["error"] else f"{t['status']} ({t['error']})"
        workers = f"{t['workers_alive']}/{t['workers']}"
        table.add_row(
            t["name"],
            status,
            workers,
            str(t["tasks"]),
            f"{t['uptime_secs']:.0f}s",
            f"{t['emitted_per_sec']:,.0f}",
            f"{t['acked_per_sec']:,.0f}",
            f"{t['failed_per_sec']:,.0f}",
        )
    console.print(table)


@click.command()
@click.argument("name", callback=topology_name)
@click.option(
    "--wait",
    "wait_secs",
    type=float,
    default=None,
    help="Seconds between deactivating and stopping the workers "
    "(default: topology.message.timeout.secs).",
)
@config_options
def kill(name: str, wait_secs: float | None, config: ConfigSource) -> None:
    """Deactivate NAME, wait for in-flight tuples, stop its workers and remove it."""
    with cluster_session(config) as cluster:
        cluster.kill_topology(name, wait_secs, progress=say_progress)
    click.echo(f"Killed topology: {name}")


@click.command()
@click.argument("name", callback=topology_name)
@config_options
def activate(name: str, config: ConfigSource) -> None:
    """Resume NAME's spouts."""
    with cluster_session(config) as cluster:
        cluster.activate(name)
    click.echo(f"Activated topology: {name}")


@click.command()
@click.argument("name", callback=topology_name)
@config_options
def deactivate(name: str, config: ConfigSource) -> None:
    """Stop calling next_tuple on NAME's spouts (in-flight tuples finish)."""
    with cluster_session(config) as cluster:
        cluster.deactivate(name)
    click.echo(f"Deactivated topology: {name}")


@click.command()
@click.argument("name", callback=topology_name)
@click.option("--workers", "-n", type=int, required=True, help="New number of workers.")
@click.option(
    "--wait",
    "wait_secs",
    type=float,
    default=None,
    help="Seconds to let in-flight tuples finish before moving workers "
    "(default: topology.message.timeout.secs).",
)
@config_options
def rebalance(name: str, workers: int, wait_secs: float | None, config: ConfigSource) -> None:
    """Reassign NAME's tasks to --workers workers and relaunch them.

    Only the number of workers changes: every component keeps its tasks (parallelism),
    and keyed state stays with them.

    Refused at once, before anything is written, for more workers than the limit (10,000),
    than fit one ZooKeeper node, or than a local[N] master's N slots."""
    problem = worker_count_problem(workers)
    if problem is not None:
        raise UsageError(f"rebalance of {name!r}: {problem}")
    with cluster_session(config) as cluster:
        cluster.rebalance(name, workers, wait_secs, progress=say_progress)
    click.echo(f"Rebalanced topology: {name} now runs on {workers} worker(s)")

"""``sparkstorm list | kill | activate | deactivate | rebalance``: operate running topologies."""

from __future__ import annotations

import click

from topology.deploy.limits import worker_count_problem
from topology.deploy.rescale import MAX_COMPONENT_TASKS
from topology.names import name_problem, quoted

from .common import cluster_session, echo_json
from .options import ConfigSource, UsageError, config_options, topology_name
from .progress import wait_lines
from .status_view import key_width, nimbus_line, table_with_key, view_console

#: What --dir says wherever a savepoint is taken (kill --savepoint, savepoint).
DIR_HELP = (
    "Where to write the savepoint: a path or fsspec URL (s3://, hdfs://, ...); default "
    "topology.state.savepoints.dir."
)


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
@click.option(
    "--savepoint",
    "with_savepoint",
    is_flag=True,
    help="Take a savepoint after deactivating, then stop; prints its path.",
)
@click.option("--dir", "directory", metavar="URL", help=f"With --savepoint. {DIR_HELP}")
@config_options
def kill(
    name: str,
    wait_secs: float | None,
    with_savepoint: bool,
    directory: str | None,
    config: ConfigSource,
) -> None:
    """Deactivate NAME, wait for in-flight tuples, stop its workers and remove it (and its
    checkpoints; savepoints stay)."""
    if directory is not None and not with_savepoint:
        raise UsageError("kill: --dir goes with --savepoint")
    path = None
    with cluster_session(config) as cluster, wait_lines() as say:
        if with_savepoint:
            path = cluster.stop_with_savepoint(name, directory, wait_secs, progress=say)
        else:
            cluster.kill_topology(name, wait_secs, progress=say)
    if path is not None:
        click.echo(f"Savepoint: {path}")
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


def component_counts(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, int]:
    """Click callback of ``--component/-e NAME=COUNT`` (repeatable): component -> task
    count, each pair checked for its form here (the names and counts against the
    topology by :meth:`topology.deploy.cluster.client.Cluster.rebalance`)."""
    counts: dict[str, int] = {}
    for item in values:
        component, sep, count = item.partition("=")
        component = component.strip()
        problem = name_problem("component", component) if sep else None
        if not sep or problem is not None:
            raise UsageError(
                f"--component: expected NAME=COUNT (e.g. count=4), got {quoted(item)}"
                + (f": {problem}" if problem else "")
            )
        digits = count.strip()
        if not (digits.isascii() and digits.isdigit() and len(digits) <= 9) or not (
            1 <= int(digits) <= MAX_COMPONENT_TASKS
        ):
            raise UsageError(
                f"--component {component}: the task count must be an integer from 1 to "
                f"{MAX_COMPONENT_TASKS:,}, got {quoted(count)}"
            )
        if component in counts:
            raise UsageError(f"--component: {component!r} given twice")
        counts[component] = int(digits)
    return counts


@click.command()
@click.argument("name", callback=topology_name)
@click.option("--workers", "-n", type=int, default=None, help="New number of workers.")
@click.option(
    "--component",
    "-e",
    "components",
    multiple=True,
    metavar="NAME=COUNT",
    callback=component_counts,
    help="Run component NAME as COUNT tasks (repeatable; Storm's -e). Keyed state and "
    "spout positions move to the new tasks.",
)
@click.option(
    "--wait",
    "wait_secs",
    type=float,
    default=None,
    help="Seconds to let in-flight tuples finish before moving workers "
    "(default: topology.message.timeout.secs).",
)
@config_options
def rebalance(
    name: str,
    workers: int | None,
    components: dict[str, int],
    wait_secs: float | None,
    config: ConfigSource,
) -> None:
    """Reassign NAME's tasks to --workers workers and/or run components as a new number
    of tasks (--component count=4), and relaunch its workers; give at least one of them.

    A rescaled component's keyed state (fields groupings) moves with its key groups,
    and a replayable spout's positions move to its new tasks, through the last
    checkpoint; a component that keeps state per task cannot be rescaled.

    Refused at once, before anything is written, for an unknown component, a count its
    state cannot take (over topology.state.max.parallelism key groups), more workers
    than the limit (10,000), than fit one ZooKeeper node, or than a local[N] master's N
    slots."""
    if workers is None and not components:
        raise UsageError(
            f"rebalance of {name!r}: nothing to change: give --workers N and/or "
            "--component NAME=COUNT"
        )
    problem = None if workers is None else worker_count_problem(workers)
    if problem is not None:
        raise UsageError(f"rebalance of {name!r}: {problem}")
    with cluster_session(config) as cluster, wait_lines() as say:
        done = cluster.rebalance(
            name, workers, wait_secs, progress=say, components=components or None
        )
    click.echo(f"Rebalanced topology: {name} now runs {done.describe()}")

"""``sparkstorm logs NAME`` and ``sparkstorm set-log-level NAME LEVEL``: the workers' own
log files, read and tuned through the cluster (each worker reads its file on its host)."""

from __future__ import annotations

import time
from typing import Any

import click

from topology.runtime.worker_log import LEVELS

from .common import cluster_session
from .options import ConfigSource, config_options, topology_name
from .reconnect import announce_connection, unreachable

#: Seconds between two reads of ``--follow``.
FOLLOW_INTERVAL = 1.0


def _header(chunk: dict[str, Any]) -> str:
    where = f"{chunk.get('host')} (pid {chunk.get('pid')})"
    return f"==> worker {chunk['worker']} on {where}: {chunk.get('path')} <=="


def _remember(chunk: dict[str, Any], offsets: dict[int, int], files: dict[int, int]) -> None:
    """Where the next read of this chunk's worker starts: its offset, in its file."""
    if isinstance(chunk.get("offset"), int):
        offsets[chunk["worker"]] = chunk["offset"]
    if isinstance(chunk.get("file_id"), int):
        files[chunk["worker"]] = chunk["file_id"]


@click.command()
@click.argument("name", callback=topology_name)
@click.option("--worker", type=click.IntRange(min=0), default=None, help="Only this worker.")
@click.option(
    "--component", default=None, help="Only lines written while this component's code ran."
)
@click.option(
    "--bytes",
    "max_bytes",
    type=click.IntRange(1, 256 * 1024),
    default=16 * 1024,
    show_default=True,
    help="How much of the end of each log to show first.",
)
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines (Ctrl-C to stop).")
@config_options
def logs(
    name: str,
    worker: int | None,
    component: str | None,
    max_bytes: int,
    follow: bool,
    config: ConfigSource,
) -> None:
    """Print the end of NAME's worker logs (user code's output and logging, each line
    tagged with the task that wrote it), read by each worker on its own host."""
    with cluster_session(config) as cluster:
        chunks = cluster.worker_logs(name, worker, None, component, max_bytes)
        offsets: dict[int, int] = {}
        files: dict[int, int] = {}
        for chunk in chunks:
            if len(chunks) > 1 or not follow:
                click.echo(_header(chunk))
            if chunk.get("missing"):
                click.echo("(no log file yet)")
            if chunk.get("error"):
                click.echo(f"(not readable: {chunk['error']})")
            click.echo(chunk["text"], nl=False)
            _remember(chunk, offsets, files)
        if follow:
            announce_connection(cluster)
        try:
            while follow:
                time.sleep(FOLLOW_INTERVAL)
                try:
                    new = cluster.worker_logs(name, worker, offsets, component, files=files)
                except Exception as exc:  # ZooKeeper away: try again (said on stderr)
                    if not unreachable(exc):
                        raise
                    continue
                for chunk in new:
                    if chunk.get("rotated"):
                        click.echo(f"==> worker {chunk['worker']}: log rotated <==")
                    prefix = f"[worker {chunk['worker']}] " if len(chunks) > 1 else ""
                    for line in chunk["text"].splitlines():
                        click.echo(prefix + line)
                    _remember(chunk, offsets, files)
        except KeyboardInterrupt:
            pass


@click.command("set-log-level")
@click.argument("name", callback=topology_name)
@click.argument("level", type=click.Choice(LEVELS, case_sensitive=False))
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds until the level goes back to topology.worker.log.level (default: stays).",
)
@config_options
def set_log_level(name: str, level: str, timeout: float | None, config: ConfigSource) -> None:
    """Set the Python log level of every worker of NAME (Storm's set_log_level)."""
    with cluster_session(config) as cluster:
        replies = cluster.set_log_level(name, level, timeout)
    until = f" for {timeout:g}s" if timeout is not None else ""
    click.echo(f"{name}: {len(replies)} worker(s) now log at {level.upper()}{until}")

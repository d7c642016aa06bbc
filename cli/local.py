"""``sparkstorm local FILE:ATTR``: ZooKeeper + Spark local mode + nimbus in one command."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.live import Live

from topology import SparkstormError
from topology import config as cfg
from topology.deploy.cluster.client import Cluster, ClusterOperationError
from topology.deploy.cluster.stack import LocalStack
from topology.deploy.ops import ClusterOps
from topology.names import safe_name

from .common import (
    LOCAL_UNSECURED_NOTE,
    exit_cleanly_on_sigterm,
    raise_open_file_limit,
    warn_if_unsecured,
)
from .loader import load_topology
from .options import ConfigSource, config_options, topology_name
from .progress import component_totals, progress_table
from .reconnect import announce_connection, retrying, unreachable
from .status_view import error_counts, error_lines, view_console
from .submit import savepoint_options
from .ui import serving

T = TypeVar("T")


def _silent(line: str) -> None:
    """The progress printer of ``--quiet``."""


@click.command()
@click.argument("target", metavar="FILE:ATTR")
@click.option(
    "--name", callback=topology_name, default=None, help="Topology name (default: the file's stem)."
)
@click.option(
    "--duration",
    type=float,
    default=10.0,
    show_default=True,
    help="Seconds to run before deactivating, draining and stopping. 0 = until Ctrl-C.",
)
@click.option("--workers", type=int, default=None, help="Shortcut for -c topology.workers=N.")
@click.option(
    "--kill-worker-at",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Kill the topology's last worker with SIGKILL this many seconds into the run "
    "(it is relaunched): see what a crash does to your topology's results.",
)
@click.option(
    "--ui",
    "with_ui",
    is_flag=True,
    help="Serve the web UI and REST API while it runs, at ui.host:ui.port "
    "(127.0.0.1:8080; -c ui.port=0: any free port); the URL is printed (docs/UI.md). "
    "Its actions need an admin token: -c ui.admin.token.file=FILE (a file only you can "
    "read) or $SPARKSTORM_UI_ADMIN_TOKEN.",
)
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Leave out the start-up lines: the no-cluster-secret note, starting ZooKeeper and "
    "Spark, the nimbus's election (each said once otherwise).",
)
@savepoint_options
@config_options
def local(
    target: str,
    name: str | None,
    duration: float,
    workers: int | None,
    kill_worker_at: float | None,
    with_ui: bool,
    from_savepoint: str | None,
    allow_non_restored_state: bool,
    quiet: bool,
    config: ConfigSource,
) -> None:
    """Run FILE:ATTR on an embedded ZooKeeper, Spark in local mode and a nimbus.

    Everything runs on this machine and is cleaned up on exit. Progress is shown live; after
    --duration (or a first Ctrl-C) the spouts are deactivated, in-flight tuples drain, and if
    FILE defines verify(results) it is called with each component's collect_results() (a
    failed verification exits with status 1). Ctrl-C at any other time, or SIGTERM, stops
    every process it started (ZooKeeper, drivers, Spark) at once, within 10 seconds. A
    lost ZooKeeper connection is waited out (and said on stderr).
    """
    exit_cleanly_on_sigterm()
    raise_open_file_limit()
    conf = config.build()
    topology, module = load_topology(target, conf)
    if workers is not None:
        conf[cfg.TOPOLOGY_WORKERS] = workers
    name = name or safe_name(target.rpartition(":")[0].rsplit("/", 1)[-1].removesuffix(".py"))
    if not quiet:
        warn_if_unsecured(conf, LOCAL_UNSECURED_NOTE)
    console = view_console()
    try:
        with (
            LocalStack(conf, progress=_silent if quiet else console.print) as stack,
            stack.cluster() as cluster,
            serving(cluster, conf) if with_ui else nullcontext(),
        ):
            announce_connection(cluster)
            started = time.monotonic()
            cluster.submit_topology(
                name,
                conf,
                topology,
                from_savepoint=from_savepoint,
                allow_non_restored_state=allow_non_restored_state,
            )
            console.print(
                f"Finished submitting topology: {name} ({time.monotonic() - started:.1f}s)"
            )
            zookeeper = stack.zookeeper.address if stack.zookeeper is not None else "?"
            console.print(  # one line, however narrow: it is meant to be copied
                f"In another terminal: sparkstorm status|monitor|logs {name} "
                f"--zookeeper {zookeeper}",
                soft_wrap=True,
            )
            kill = None
            if kill_worker_at is not None:
                kill = (kill_worker_at, lambda: _kill_last_worker(cluster, name))
            _watch(cluster, name, duration, console, kill)
            results, errors, counts = _finish(cluster, name, console)
    except SparkstormError as exc:
        raise click.ClickException(str(exc)) from exc
    except Exception as exc:
        if not unreachable(exc):
            raise
        raise click.ClickException(
            f"ZooKeeper stopped answering ({type(exc).__name__}) and did not come back; "
            "every process this run started has been stopped"
        ) from None
    for line in error_lines(errors, counts):
        console.print(line)
    verify = getattr(module, "verify", None)
    if callable(verify):
        try:
            message = verify(results)
        except AssertionError as exc:
            console.print(f"[red]Verification failed:[/red] {exc}")
            raise SystemExit(1) from exc
        console.print(f"[green]Verified:[/green] {message}")


def _finish(cluster: Cluster, name: str, console: Console) -> tuple[Any, Any, Any]:
    """Deactivate ``name``, let it drain, show its final totals and kill it; its
    results, errors and error counts.  Each step waits out a lost ZooKeeper connection
    (:func:`~cli.reconnect.retrying`)."""
    console.print("\nDeactivating spouts and draining in-flight tuples ...")
    retrying(lambda: cluster.deactivate(name), cluster)
    retrying(lambda: cluster.wait_until_drained(name, timeout=120), cluster)
    totals = component_totals(retrying(lambda: cluster.worker_status(name), cluster))
    results = retrying(lambda: cluster.results(name), cluster)
    errors = retrying(lambda: cluster.errors(name), cluster)
    counts = error_counts(retrying(lambda: cluster.stats(name, "all"), cluster))  # restarts too
    console.print(progress_table(f"{name}: final", totals, {}, 0))
    retrying(lambda: cluster.kill_topology(name, wait_secs=0), cluster)
    return results, errors, counts


def _watch(
    cluster: ClusterOps,
    name: str,
    duration: float,
    console: Console,
    kill: tuple[float, Callable[[], str]] | None,
) -> None:
    """Show ``name``'s progress live for ``duration`` seconds (0: until Ctrl-C); ``kill``:
    when (seconds into the run) to kill a worker, and how (returns what to print).

    A first Ctrl-C ends the watch between two refreshes, never inside a request to the
    workers or ZooKeeper: a KeyboardInterrupt raised there could leave a request or a lock
    half done for the drain that follows to wait on."""
    start = time.monotonic()
    previous: dict[str, Any] = {}
    last = start
    with _ctrl_c_deferred() as interrupted:
        with Live(console=console, refresh_per_second=2, transient=False) as live:
            while duration <= 0 or time.monotonic() - start < duration:
                remaining = start + duration - time.monotonic()
                if interrupted.wait(min(1.0, max(0.05, remaining)) if duration > 0 else 1.0):
                    break
                now = time.monotonic()
                if kill is not None and now - start >= kill[0]:
                    done = _unless_unreachable(kill[1])
                    if done is not None:  # else: ZooKeeper is away, try again next round
                        live.console.print(done)
                        kill = None
                title = f"{name}: running {now - start:4.1f}s" + (
                    f" of {duration:g}s" if duration > 0 else " (Ctrl-C to stop)"
                )
                try:
                    status = _unless_unreachable(lambda: cluster.worker_status(name, timeout=2.0))
                    note = " - ZooKeeper not answering" if status is None else ""
                except ClusterOperationError:  # a worker is (re)starting: keep the last figures
                    status, note = None, " - waiting for workers"
                if status is None:
                    live.update(progress_table(title + note, previous, {}, 0))
                    continue
                totals = component_totals(status)
                live.update(progress_table(title, totals, previous, now - last))
                previous, last = totals, now
    if interrupted.is_set():
        console.print("Interrupted: stopping")


@contextmanager
def _ctrl_c_deferred() -> Iterator[threading.Event]:
    """Within the block, SIGINT sets the yielded event instead of raising
    KeyboardInterrupt (in the main thread only: elsewhere the event is never set); the
    previous handler is back after it, so a second Ctrl-C during the drain interrupts."""
    interrupted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.set())
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


def _unless_unreachable(fn: Callable[[], T]) -> T | None:
    """``fn()``, or None when ZooKeeper is not answering (the client reconnects
    meanwhile; the caller tries again on its next round)."""
    try:
        return fn()
    except Exception as exc:
        if not unreachable(exc):
            raise
        return None


def _kill_last_worker(cluster: Cluster, name: str) -> str:
    """SIGKILL the highest-numbered worker of ``name`` (all run on this machine); say so."""
    beats = cluster.current_beats(cluster.topology_id(name))
    if not beats:
        return "--kill-worker-at: no worker of the topology is running; nothing killed"
    worker = max(beats)
    pid = int(beats[worker]["pid"])
    os.kill(pid, signal.SIGKILL)
    return f"[yellow]Killed worker {worker} (pid {pid}) with SIGKILL[/yellow]"

"""Helpers shared by the commands that talk to a running cluster."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from topology import SparkstormError
from topology import config as cfg
from topology.deploy.cluster.client import Cluster
from topology.deploy.zk.state import ZkState

from .options import ConfigSource


@contextmanager
def cluster_session(config: ConfigSource) -> Iterator[Cluster]:
    """A connected :class:`Cluster`; sparkstorm errors become one-line click errors."""
    conf = config.build()
    cluster = Cluster(conf)
    try:
        with cluster:
            yield cluster
    except SparkstormError as exc:
        raise click.ClickException(str(exc)) from exc
    except Exception as exc:
        if ZkState.unreachable(exc):  # ZooKeeper went away in the middle of the command
            raise click.ClickException(
                f"ZooKeeper at {cluster.zk.hosts} stopped answering ({type(exc).__name__}); "
                "the topologies keep running: try again once it is back"
            ) from exc
        raise


#: What ``nimbus``, ``submit`` and ``sparkstorm local`` print (stderr) without a secret.
UNSECURED_WARNING = (
    "Warning: no cluster secret, so this cluster is unsecured: only ZooKeeper's ACLs keep "
    "others from making it run their code (this OS user's identity on a loopback "
    "ZooKeeper), and anyone who can read the traffic between its workers can read their "
    "tuples and send them more; set "
    f"{cfg.CLUSTER_SECRET_FILE} to a file only you can read (docs/SECURITY.md)"
)


#: What ``sparkstorm local`` says instead (stderr, once; ``--quiet`` silences it): its
#: cluster lives and dies with the command, on loopback, as this OS user.
LOCAL_UNSECURED_NOTE = (
    "Note: no cluster secret: this local run is guarded by your OS user alone (loopback, "
    "per-user ZooKeeper ACLs and files; docs/SECURITY.md); --quiet hides this"
)


def warn_if_unsecured(conf: dict[str, Any], text: str = UNSECURED_WARNING) -> None:
    """Print ``text`` (:data:`UNSECURED_WARNING`) to stderr, as one line, when ``conf`` has
    no secret (a secret file that cannot be read raises its own one-line error instead)."""
    if cfg.cluster_secret(conf) is None:
        click.echo(text, err=True)


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))


def open_file_target(soft: int, hard: int, infinity: int) -> int:
    """The soft open-file limit to ask for: the hard limit (``infinity``: unlimited, then
    :data:`UNLIMITED_OPEN_FILES`), never lower than ``soft`` now.

    >>> open_file_target(1024, 524288, -1)
    524288
    >>> open_file_target(1024, -1, -1)
    1048576
    """
    target = UNLIMITED_OPEN_FILES if hard == infinity else hard
    return soft if soft == infinity or soft >= target else target


#: The soft limit asked for when the hard open-file limit is unlimited (Linux's default
#: ceiling, ``/proc/sys/fs/nr_open``).
UNLIMITED_OPEN_FILES = 1 << 20


def raise_open_file_limit() -> None:
    """Raise this process's soft limit on open files to its hard limit (children started
    later inherit it): the long-running commands (``local``, ``ui``, ``nimbus``,
    ``dev-zookeeper``) hold ZooKeeper sessions, workers' sockets and UI clients at once.
    Silently keeps the limit where the system refuses (or has none)."""
    try:
        import resource
    except ImportError:  # not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = open_file_target(soft, hard, resource.RLIM_INFINITY)
    if target != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):  # over the system's ceiling: keep what we have
            pass


def exit_cleanly_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit so ``finally`` blocks stop what the command started
    (ZooKeeper servers, Spark, workers) instead of leaving them orphaned."""

    def handler(signum: int, frame: object) -> None:
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, handler)

"""``sparkstorm ui``: the web UI and REST API of a cluster (docs/UI.md); also what
``sparkstorm local --ui`` serves."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from topology.config import ConfigError
from topology.deploy.cluster.client import Cluster
from topology.deploy.cluster.ui_view import ClusterClientView
from topology.ui.auth import HOW_TO_ENABLE, UiSettings

from .common import cluster_session, raise_open_file_limit
from .options import ConfigSource, config_options
from .reconnect import announce_connection

if TYPE_CHECKING:
    from topology.ui.server import UiServer


def make_server(
    cluster: Cluster, conf: dict[str, Any], host: str | None = None, port: int | None = None
) -> UiServer:
    """A bound (not yet serving) UI of ``cluster``; one-line click errors for a missing
    ``ui`` extra, a bad secret file or a port that cannot be bound."""
    try:
        from topology.ui.server import UiServer
    except ImportError as exc:
        raise click.ClickException(
            f"the web UI needs {exc.name}: pip install 'sparkstorm[ui]'"
        ) from None
    try:
        settings = UiSettings.from_conf(conf)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        return UiServer(ClusterClientView(cluster), settings, host, port)
    except OSError as exc:
        where = f"{host or settings.host}:{settings.port if port is None else port}"
        raise click.ClickException(f"web UI: cannot listen on {where}: {exc.strerror}") from None


def announce(server: UiServer) -> None:
    """Print the URL (stdout) and what a user should know about access (stderr)."""
    click.echo(f"Web UI and REST API at {server.url} (API: {server.url}api/v1/openapi.json)")
    if not _loopback(server.host):
        click.echo(
            f"Warning: the UI listens on {server.host}, not only this machine: anyone who "
            "reaches it reads every topology's statistics, logs and (redacted) conf",
            err=True,
        )
    if server.app.state.ui.guard.enabled:
        click.echo("Actions enabled for holders of the admin token (Authorization: Bearer).")
    else:
        click.echo(f"Actions disabled (read-only): {HOW_TO_ENABLE} to enable them.")


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


@contextmanager
def serving(cluster: Cluster, conf: dict[str, Any]) -> Iterator[UiServer]:
    """The UI of ``cluster`` serving in a background thread (its URL printed) while the
    block runs; stopped after it."""
    server = make_server(cluster, conf)
    server.start()
    announce(server)
    try:
        yield server
    finally:
        server.stop()


@click.command()
@click.option("--host", default=None, help="Address to listen on (default: ui.host, 127.0.0.1).")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Port to listen on (default: ui.port, 8080; 0 = any free port).",
)
@config_options
def ui(host: str | None, port: int | None, config: ConfigSource) -> None:
    """Serve the cluster's web UI and REST API until Ctrl-C: topologies, their graph,
    statistics and logs live, and actions for holders of the admin token (docs/UI.md).

    The admin token: -c ui.admin.token.file=FILE (its first line; a file only you can
    read), or the environment variable SPARKSTORM_UI_ADMIN_TOKEN (at least 16
    characters); -c ui.admin.token=... works too but shows in the process list. Without
    one the UI only reads. A lost ZooKeeper connection is waited out (the UI answers 503
    meanwhile) and said on stderr.
    """
    raise_open_file_limit()
    conf = config.build()
    with cluster_session(config) as cluster:
        announce_connection(cluster)
        server = make_server(cluster, conf, host, port)
        announce(server)
        try:
            server.serve()
        except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it shut down on
            pass

"""``sparkstorm visualize FILE:ATTR|NAME``: draw a topology as text, Graphviz DOT or Mermaid."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from cli.drawing import to_dot, to_mermaid, to_rich, to_text
from topology.spec import describe_components

from .common import cluster_session
from .loader import load_topology
from .options import ConfigSource, check_topology_name, config_options


def is_file_target(target: str) -> bool:
    """``FILE:ATTR`` rather than a running topology's name?

    Yes when the part before the last ``:`` is an existing file, and also when it plainly
    names a file (ends in ``.py`` or holds a ``/``, which topology names cannot) so that a
    mistyped path gets "no such file" instead of a ZooKeeper lookup."""
    path, sep, attr = target.rpartition(":")
    if not sep or not path:
        return False
    return Path(path).is_file() or path.endswith(".py") or "/" in path


def load_file_components(target: str, conf: dict[str, Any] | None = None) -> dict[str, Any]:
    topology, _ = load_topology(target, conf)  # user errors: one-line ClickExceptions
    return describe_components(topology)


def load_running_components(name: str, config: ConfigSource) -> dict[str, Any]:
    with cluster_session(config) as cluster:
        record = cluster.zk.read_record(cluster.topology_id(name))
    if not record or "components" not in record:
        raise click.ClickException(f"topology {name!r} has no recorded components")
    components: dict[str, Any] = record["components"]
    return components


@click.command()
@click.argument("target", metavar="FILE:ATTR|NAME")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "dot", "mermaid"]),
    default="text",
    show_default=True,
    help="text (coloured trees on a terminal, plain lines otherwise), Graphviz dot, "
    "or a Mermaid flowchart.",
)
@config_options
def visualize(target: str, fmt: str, config: ConfigSource) -> None:
    """Draw the topology in FILE:ATTR, or the running topology NAME (read from ZooKeeper).

    \b
    sparkstorm visualize examples/wordcount.py:topology
    sparkstorm visualize examples/wordcount.py:topology --format dot | dot -Tsvg > wc.svg
    sparkstorm visualize wordcount --format mermaid
    """
    if is_file_target(target):
        components = load_file_components(target, config.build())
    else:
        components = load_running_components(check_topology_name(target), config)
    if fmt == "dot":
        click.echo(to_dot(components, target), nl=False)
    elif fmt == "mermaid":
        click.echo(to_mermaid(components, target), nl=False)
    elif sys.stdout.isatty():
        Console().print(to_rich(components, target))
    else:
        click.echo(to_text(components, target), nl=False)

"""``sparkstorm savepoint NAME [--dir URL]`` and ``sparkstorm savepoint --inspect PATH``: take
a savepoint of a running topology, or show what one holds (docs/STATE.md)."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape

from topology import SparkstormError
from topology.printable import printable
from topology.state.savepoint import read_savepoint

from .common import cluster_session, echo_json
from .operations import DIR_HELP
from .options import ConfigSource, UsageError, config_options, topology_name
from .progress import wait_lines
from .status_view import count, data_size, key_width, table_with_key, view_console


@click.command()
@click.argument("name", required=False, callback=topology_name)
@click.option("--dir", "directory", metavar="URL", default=None, help=DIR_HELP)
@click.option(
    "--inspect",
    "inspect_path",
    metavar="PATH",
    default=None,
    help="Show what the savepoint at PATH holds instead of taking one.",
)
@click.option("--json", "as_json", is_flag=True, help="With --inspect: print it as JSON.")
@config_options
def savepoint(
    name: str | None,
    directory: str | None,
    inspect_path: str | None,
    as_json: bool,
    config: ConfigSource,
) -> None:
    """Take a savepoint of NAME and print its path (progress goes to stderr).

    The savepoint is the committed state of the first checkpoint to complete from now, in a
    new directory under --dir; restore it with `sparkstorm submit FILE:ATTR --name NAME
    --from-savepoint PATH`. NAME keeps running."""
    if inspect_path is not None:
        if name is not None or directory is not None:
            raise UsageError("savepoint --inspect PATH takes no NAME or --dir")
        _inspect(inspect_path, as_json)
        return
    if name is None:
        raise UsageError("savepoint: give the NAME of a running topology, or --inspect PATH")
    if as_json:
        raise UsageError("savepoint: --json goes with --inspect PATH")
    with cluster_session(config) as cluster, wait_lines() as say:
        path = cluster.savepoint(name, directory, progress=say)
    click.echo(path)


def _inspect(path: str, as_json: bool) -> None:
    """Print what the savepoint at ``path`` holds: its fields are hostile input, shown
    with every non-printable character escaped (JSON escapes them itself)."""
    try:
        described = read_savepoint(path).describe()
    except SparkstormError as exc:
        raise click.ClickException(printable(str(exc))) from exc
    if as_json:
        echo_json(described)
        return
    console = view_console()
    for line in inspect_lines(described):
        console.print(escape(printable(line)), soft_wrap=True)
    rows = [{"id": c, **info} for c, info in sorted(described["components"].items())]
    table = table_with_key(
        "Components",
        ("component", "uid", "kinds of state", "tasks", "entries", "bytes"),
        numeric_from=3,
        key_width=key_width(rows),
    )
    for row in rows:
        table.add_row(
            escape(printable(row["id"])),
            escape(printable(row["uid"])),
            escape(printable(", ".join(row["state"])) or "-"),
            str(row["tasks"]),
            count(row["entries"]),
            data_size(row["bytes"]),
        )
    console.print(table)


def inspect_lines(described: dict[str, Any]) -> list[str]:
    """The header of ``savepoint --inspect``: where, whose, which checkpoint."""
    return [
        f"Savepoint {described['path']} (format {described['format']})",
        f"Topology: {described['topology']} (from {described['topology_id']})",
        f"Checkpoint: #{described['checkpoint']}, taken {described['created_at']} from the "
        f"{described['backend']} state provider",
        f"Key groups: {described['key_groups']} (topology.state.max.parallelism)",
    ]

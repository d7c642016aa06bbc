"""Helpers shared by the commands that talk to a running cluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from topology import SparkstormError
from topology.cluster import Cluster

from .options import ConfigSource


@contextmanager
def cluster_session(config: ConfigSource) -> Iterator[Cluster]:
    """A connected :class:`Cluster`; sparkstorm errors become one-line click errors."""
    conf = config.build()
    try:
        with Cluster(conf) as cluster:
            yield cluster
    except SparkstormError as exc:
        raise click.ClickException(str(exc)) from exc


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True, default=str))

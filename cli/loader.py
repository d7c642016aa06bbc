"""Load ``FILE:ATTR`` (a topology in a Python file) with errors that say what is wrong."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import click
import cloudpickle

from topology import Topology, TopologyBuilder


def load_module(path: str) -> ModuleType:
    """Import the Python file at ``path`` under a private name; ship it to workers by value."""
    file = Path(path)
    if not file.is_file():
        raise click.BadParameter(f"no such file: {path}", param_hint="FILE:ATTR")
    name = f"sparkstorm_user_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise click.BadParameter(f"{path} is not a Python file", param_hint="FILE:ATTR")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(file.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise click.ClickException(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    cloudpickle.register_pickle_by_value(module)
    return module


def load_topology(target: str) -> tuple[Topology, ModuleType]:
    """``FILE:ATTR`` -> the Topology (a builder is finished with ``create_topology()``)."""
    path, sep, attr = target.rpartition(":")
    if not sep or not path or not attr:
        raise click.BadParameter(
            f"expected FILE:ATTR such as examples/wordcount.py:topology, got {target!r}",
            param_hint="FILE:ATTR",
        )
    module = load_module(path)
    if not hasattr(module, attr):
        names = sorted(
            n for n, v in vars(module).items() if isinstance(v, Topology | TopologyBuilder)
        )
        hint = f" (topologies in it: {', '.join(names)})" if names else ""
        raise click.BadParameter(f"{path} has no attribute {attr!r}{hint}", param_hint="FILE:ATTR")
    value: Any = getattr(module, attr)
    if callable(value) and not isinstance(value, Topology | TopologyBuilder | type):
        value = value()
    if isinstance(value, TopologyBuilder):
        value = value.create_topology()
    if not isinstance(value, Topology):
        raise click.BadParameter(
            f"{path}:{attr} is a {type(value).__name__}, not a topology (expected the result "
            "of TopologyBuilder.create_topology(), a builder, or a function returning one)",
            param_hint="FILE:ATTR",
        )
    return value, module

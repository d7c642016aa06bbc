"""Load ``FILE:ATTR`` (a topology in a Python file) with errors that say what is wrong.

Every command that takes ``FILE:ATTR`` loads it here, so a user's mistake reads the same
everywhere: one ``Error: ...`` (no traceback, no usage text) naming the file.  A target that
names no topology (no such file, no such attribute, not a topology) is a usage error, exit
status 2 (:class:`BadTarget`); the user's code failing (an import or factory that raises,
with its message and the last line of their code it passed through, or a topology that
fails validation) exits with status 1.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import click
import cloudpickle

from topology import SparkstormError, StreamBuilder, Topology, TopologyBuilder


class BadTarget(click.ClickException):
    """``FILE:ATTR`` names no topology: a usage error (exit status 2) in one line."""

    exit_code = 2


def user_error(what: str, exc: BaseException, user_dir: Path) -> click.ClickException:
    """A one-line error for ``exc`` raised by the user's code while doing ``what``.

    Names the last frame of the traceback in a file under ``user_dir`` (the directory of
    the topology file), e.g. ``(at /home/me/wc.py:12 in make_topology)``; sparkstorm's
    own frames are left out.  A :class:`SparkstormError` (a topology that fails validation)
    already names the component at fault and is shown as it is.
    """
    if isinstance(exc, SparkstormError):
        return click.ClickException(f"{what}: {exc}")
    root = user_dir.resolve()
    mine = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if Path(frame.filename).resolve().is_relative_to(root)
    ]
    where = f" (at {mine[-1].filename}:{mine[-1].lineno} in {mine[-1].name})" if mine else ""
    return click.ClickException(f"{what}: {type(exc).__name__}: {exc}{where}")


def load_module(path: str) -> ModuleType:
    """Import the Python file at ``path`` under a private name; ship it to workers by value."""
    file = Path(path)
    if not file.is_file():
        raise BadTarget(f"no such file: {path}")
    name = f"sparkstorm_user_{file.stem}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise BadTarget(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(file.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise user_error(f"importing {path} failed", exc, file.parent) from exc
    cloudpickle.register_pickle_by_value(module)
    return module


def load_topology(
    target: str, conf: Mapping[str, Any] | None = None
) -> tuple[Topology, ModuleType]:
    """``FILE:ATTR`` -> the Topology (a builder is finished with ``create_topology()``, a
    :class:`StreamBuilder` with ``build(conf)`` — so ``-c topology.streams.fusion=false``
    applies —, a function is called first); any user error is a one-line
    ``ClickException`` (:class:`BadTarget` when ``target`` names no topology)."""
    path, sep, attr = target.rpartition(":")
    if not sep or not path or not attr:
        raise BadTarget(
            f"expected FILE:ATTR such as examples/wordcount.py:topology, got {target!r}"
        )
    module = load_module(path)
    if not hasattr(module, attr):
        names = sorted(
            n
            for n, v in vars(module).items()
            if isinstance(v, Topology | TopologyBuilder | StreamBuilder)
        )
        hint = f" (topologies in it: {', '.join(names)})" if names else ""
        raise BadTarget(f"{path} has no attribute {attr!r}{hint}")
    value: Any = getattr(module, attr)
    try:
        if callable(value) and not isinstance(value, Topology | TopologyBuilder | type):
            value = value()
        if isinstance(value, TopologyBuilder):
            value = value.create_topology()
        elif isinstance(value, StreamBuilder):
            value = value.build(conf)
    except Exception as exc:  # the user's factory or components
        raise user_error(f"{target}", exc, Path(path).parent) from exc
    if not isinstance(value, Topology):
        raise BadTarget(
            f"{path}:{attr} is a {type(value).__name__}, not a topology (expected the result "
            "of TopologyBuilder.create_topology(), a builder, a StreamBuilder, or a function "
            "returning one)"
        )
    return value, module

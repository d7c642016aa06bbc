"""Which import paths a topology's workers need, and how they take them.

Classes defined in the file given to ``submit`` travel inside the pickled topology; classes
the topology imports by name (``from mycompany.bolts import Parse``) must be importable on
the workers.  At submit, :func:`module_paths` finds the ``sys.path`` entries those modules
come from — only those, and never the standard library's or site-packages' — and they are
recorded with the topology.  A worker appends them to the *end* of its ``sys.path`` and
drops its current directory from it (:func:`adopt_module_paths`), so nothing shipped or
lying around can shadow the standard library or sparkstorm itself.

The runtime's own child processes (LocalCluster workers, topology drivers) take
:func:`child_env`, so a checkout that was never pip-installed runs them too.

What is shipped is pickled by :func:`dumps`: cloudpickle, except that code pickled by value
(the submitted file's functions and methods) keeps its file name, which cloudpickle
replaces by ``<dynamic-code>`` — so a traceback from a worker names the user's file and
line, as it would on the submitting machine.
"""

from __future__ import annotations

import io
import os
import sys
import sysconfig
import types
from collections import ChainMap
from collections.abc import Iterable
from typing import Any

import cloudpickle
from cloudpickle import cloudpickle as _cloudpickle_impl


def _system_dirs() -> set[str]:
    names = ("stdlib", "platstdlib", "purelib", "platlib")
    return {os.path.realpath(p) for p in (sysconfig.get_paths().get(n) for n in names) if p}


def module_paths(objects: Iterable[Any], search: list[str] | None = None) -> list[str]:
    """The ``sys.path`` entries (absolute) holding the modules that define the classes of
    ``objects`` (and their bases), except the standard library and site-packages."""
    entries = sorted(
        {os.path.realpath(os.path.abspath(p) if p else os.getcwd()) for p in search or sys.path},
        key=len,
        reverse=True,
    )
    system = _system_dirs()
    found: set[str] = set()
    for obj in objects:
        for cls in type(obj).__mro__:
            module = sys.modules.get(cls.__module__)
            path = getattr(module, "__file__", None)
            if not path:
                continue
            path = os.path.realpath(path)
            root = next((e for e in entries if path.startswith(e + os.sep)), None)
            if root is not None and root not in system:
                found.add(root)
    return sorted(found)


def topology_objects(topology: Any) -> list[Any]:
    """What a topology pickles that may come from a module: components, custom groupings."""
    objects: list[Any] = []
    for component in topology.components.values():
        objects.append(component.instance)
        wrapped = getattr(component.instance, "spout", None)  # (a spout with Streams
        if wrapped is not None:  # operators chained to it, an AckTracker: the author's)
            objects.append(wrapped)
        objects.extend(i.grouping.custom for i in component.inputs if i.grouping.custom is not None)
    return objects


def adopt_module_paths(paths: Iterable[str]) -> None:
    """Drop the current directory from ``sys.path``, then append ``paths`` after everything
    else (they can add modules, never replace one)."""
    cwd = os.path.realpath(os.getcwd())
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != cwd]
    for entry in paths:
        if entry not in sys.path:
            sys.path.append(entry)


def package_root() -> str:
    """The directory the ``topology`` package was imported from (a checkout or
    site-packages): the directory above ``topology/``, two levels above this module's."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python process that runs a sparkstorm module
    (``python -P -m topology...``), with ``extra`` variables set.

    When sparkstorm is imported from outside the standard library and site-packages (a
    checkout, run without ``pip install``), that directory goes first on ``PYTHONPATH`` so
    the child imports the same code as this process; an installed sparkstorm is found by
    the child as it is (site-packages is never put ahead of the standard library)."""
    env = {**os.environ, **extra}
    root = package_root()
    if root not in _system_dirs():
        current = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        if root not in current:
            env["PYTHONPATH"] = os.pathsep.join([root, *current])
    return env


#: What cloudpickle puts in place of a code object's file name.
_DYNAMIC = "<dynamic-code>"


def _code_reduce(code: types.CodeType) -> tuple[Any, tuple[Any, ...]]:
    """cloudpickle's reduction of ``code`` with its own ``co_filename`` put back."""
    constructor, args = _cloudpickle_impl._code_reduce(code)
    return constructor, tuple(code.co_filename if a == _DYNAMIC else a for a in args)


class _Pickler(cloudpickle.Pickler):
    """A cloudpickle Pickler that keeps the file names of code pickled by value."""

    dispatch_table = ChainMap({types.CodeType: _code_reduce}, cloudpickle.Pickler.dispatch_table)


def dumps(obj: Any) -> bytes:
    """``cloudpickle.dumps(obj)`` (read back with ``cloudpickle.loads``), except that code
    shipped by value keeps its file name: tracebacks on the workers name the user's file
    and line instead of ``<dynamic-code>``."""
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=cloudpickle.DEFAULT_PROTOCOL).dump(obj)
    return buffer.getvalue()

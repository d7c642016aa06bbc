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
import inspect
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
    folder = file.resolve().parent
    sys.path.insert(0, str(folder))
    before = set(sys.modules)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise user_error(f"importing {path} failed", exc, file.parent) from exc
    cloudpickle.register_pickle_by_value(module)
    for sibling in _sibling_modules(folder, set(sys.modules) - before):
        cloudpickle.register_pickle_by_value(sibling)
    return module


def _sibling_modules(folder: Path, names: set[str]) -> list[ModuleType]:
    """The modules among ``names`` that are plain files in ``folder`` (a helper module next
    to the topology's file, imported by it): shipped by value like the file itself, so the
    nimbus and the workers need not find them (sparkstorm's own packages never are)."""
    own = {"topology", "grouping", "acker", "cli"}
    found = []
    for name in names:
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None)
        if module is None or not where or name.split(".")[0] in own:
            continue
        if Path(where).resolve().parent == folder and "." not in name:
            found.append(module)
    return found


def load_topology(
    target: str, conf: Mapping[str, Any] | None = None
) -> tuple[Topology, ModuleType]:
    """``FILE:ATTR`` -> the Topology (a builder is finished with ``create_topology()``, a
    :class:`StreamBuilder` with ``build(conf)`` — so ``-c topology.streams.fusion=false``
    applies —, a function is called first); any user error is a one-line
    ``ClickException`` (:class:`BadTarget` when ``target`` names no topology)."""
    path, sep, attr = target.rpartition(":")
    file, attr = (path, attr) if sep else (target, "")
    if not attr and file and names_a_file(file):  # FILE without :ATTR: say what ATTR may be
        module = load_module(file)
        example = (candidates(module) or ["topology"])[0]
        raise BadTarget(
            f"{file} is a file: name the topology in it, e.g. {file}:{example}{offered(module)}"
        )
    if not sep or not path or not attr:
        raise BadTarget(
            f"expected FILE:ATTR such as examples/wordcount.py:topology, got {target!r}"
        )
    module = load_module(path)
    if not hasattr(module, attr):
        raise BadTarget(f"{path} has no attribute {attr!r}{offered(module)}")
    value: Any = getattr(module, attr)
    if callable(value) and not isinstance(value, (*TOPOLOGY_TYPES, type)):
        refusal = not_a_factory(value)
        if refusal is not None:
            raise BadTarget(f"{path}:{attr} {refusal}{offered(module)}")
    try:
        if callable(value) and not isinstance(value, (*TOPOLOGY_TYPES, type)):
            value = value()
        if isinstance(value, TopologyBuilder):
            value = value.create_topology()
        elif isinstance(value, StreamBuilder):
            value = value.build(conf)
    except Exception as exc:  # the user's factory or components
        raise user_error(f"{target}", exc, Path(path).parent) from exc
    if not isinstance(value, Topology):
        made = " returned" if callable(getattr(module, attr)) else " is"
        raise BadTarget(
            f"{path}:{attr}{made} a {type(value).__name__}, not a topology (expected the "
            "result of TopologyBuilder.create_topology(), a builder, a StreamBuilder, or a "
            f"function returning one){offered(module)}"
        )
    return value, module


#: What ``FILE:ATTR`` may name besides a function returning one of them.
TOPOLOGY_TYPES = (Topology, TopologyBuilder, StreamBuilder)


def not_a_factory(fn: Any) -> str | None:
    """Why ``fn`` cannot be a topology factory, or None when it may be one: a factory is
    called with no arguments, so a function with a required parameter is refused before
    it runs, and so is one annotated to return something other than a topology."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: try calling it
        return None
    required = [
        p.name
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if required:
        return (
            f"takes arguments ({', '.join(required)}): not a topology factory (a function "
            "called with no arguments that returns a topology)"
        )
    returns = signature.return_annotation
    if returns is not signature.empty and not _may_be_topology(returns):
        shown = returns if isinstance(returns, str) else getattr(returns, "__name__", returns)
        return f"is annotated to return {shown}, not a topology: not a topology factory"
    return None


def _may_be_topology(annotation: Any) -> bool:
    """False only for an annotation that surely names no topology type (``None``,
    ``str``, ``dict``...); a string or anything unusual may, so it is given the benefit."""
    if annotation is None or annotation is type(None):
        return False
    if isinstance(annotation, type):
        return issubclass(annotation, TOPOLOGY_TYPES)
    if isinstance(annotation, str):
        words = annotation.replace("|", " ").replace(",", " ").replace("[", " ").split()
        names = {t.__name__ for t in TOPOLOGY_TYPES} | {"Any", "object"}
        return any(w.split(".")[-1].strip("]") in names for w in words)
    return True


def names_a_file(target: str) -> bool:
    """Whether ``target`` (with no ``:ATTR``) names a Python file rather than a running
    topology: an existing file, or plainly a path (ends in ``.py`` or holds a ``/``,
    which topology names cannot), so a mistyped path gets "no such file"."""
    return Path(target).is_file() or target.endswith(".py") or "/" in target


def _offers(module: ModuleType) -> tuple[list[str], list[str]]:
    """The names in ``module`` that ``FILE:ATTR`` could name: its topologies (and
    builders), and its functions that may build one."""
    own = vars(module)
    topologies = sorted(n for n, v in own.items() if isinstance(v, TOPOLOGY_TYPES))
    factories = sorted(
        n
        for n, v in own.items()
        if inspect.isfunction(v)
        and getattr(v, "__module__", None) == module.__name__
        and not n.startswith("_")
        and not_a_factory(v) is None
    )
    return topologies, factories


def candidates(module: ModuleType) -> list[str]:
    """Every name :func:`offered` lists, ``topology`` first when the file has one."""
    topologies, factories = _offers(module)
    return sorted(topologies + factories, key=lambda n: n != "topology")


def offered(module: ModuleType) -> str:
    """`` (topologies in it: a, b; functions that may build one: f)`` — what ``FILE:ATTR``
    could name in ``module`` — or "" when it offers nothing."""
    topologies, factories = _offers(module)
    parts = []
    if topologies:
        parts.append(f"topologies in it: {', '.join(topologies)}")
    if factories:
        parts.append(f"functions that may build one: {', '.join(factories)}")
    return f" ({'; '.join(parts)})" if parts else ""

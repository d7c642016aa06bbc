"""The public API's docstrings are contracts: every name exported by ``topology``,
``topology.streams`` and ``topology.connectors`` says what it takes, returns and raises
(Google style: ``Args:``, ``Returns:``, ``Raises:``) and shows a ``>>>`` example, and
those examples run here."""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import textwrap
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

#: The packages whose exports are the public API.
PACKAGES = ("topology", "topology.streams", "topology.connectors")

#: Exported names that are plain values (constants, the version): no docstring of their own.
VALUES = {
    "topology.DEAD_LETTER_FIELDS",
    "topology.DEAD_LETTER_STREAM",
    "topology.DEFAULT_STREAM",
    "topology.TICK_STREAM",
    "topology.__version__",
    "topology.streams.FUSION_KEY",
}

#: Exported names without a ``>>>`` example, and why (none so far: ``LocalCluster`` and
#: ``Cluster`` show what they do without starting workers or reaching ZooKeeper).
NO_EXAMPLE: dict[str, str] = {}

#: Classes whose public methods (their own and inherited from this project's bases) each
#: state their arguments, returns and raises: the ones authors call or override.  The
#: connectors built on the bases (Kafka, PostgreSQL, Redis, files) are held to their class
#: docstring: their methods are the bases' hooks, documented there.
METHOD_CLASSES = (
    "topology.Spout",
    "topology.Bolt",
    "topology.BasicBolt",
    "topology.OutputFieldsDeclarer",
    "topology.TopologyBuilder",
    "topology.SpoutDeclarer",
    "topology.BoltDeclarer",
    "topology.Tuple",
    "topology.TopologyContext",
    "topology.Topology",
    "topology.Config",
    "topology.CustomGrouping",
    "topology.GroupingContext",
    "topology.KeyValueState",
    "topology.StatefulBolt",
    "topology.ReplayableSpout",
    "topology.AsyncBolt",
    "topology.AsyncMapBolt",
    "topology.WindowedBolt",
    "topology.StatefulWindowedBolt",
    "topology.JoinBolt",
    "topology.LocalCluster",
    "topology.Cluster",
    "topology.streams.StreamBuilder",
    "topology.streams.Stream",
    "topology.streams.PairStream",
    "topology.streams.WindowedStream",
    "topology.streams.WindowedPairStream",
    "topology.streams.Windowing",
    "topology.connectors.PartitionedSource",
    "topology.connectors.BatchingSink",
    "topology.connectors.TransactionalSink",
    "topology.connectors.Backoff",
)

_OWN_PACKAGES = ("topology", "grouping", "acker")


def _exports() -> dict[str, Any]:
    names = {}
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            names[f"{package}.{name}"] = getattr(module, name)
    return names


def _resolve(qualified: str) -> Any:
    package, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(package), name)


def _parameters(function: Callable[..., Any]) -> list[str]:
    signature = inspect.signature(function)
    return [name for name in signature.parameters if name not in ("self", "cls")]


def _returns_value(function: Callable[..., Any]) -> bool:
    annotation = inspect.signature(function).return_annotation
    return annotation not in (None, "None", "NoReturn", inspect.Signature.empty)


def _raises(function: Callable[..., Any]) -> bool:
    """Whether the function's own body raises an exception it names (not a bare re-raise)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    body = tree.body[0]
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)

    def walk(node: ast.AST) -> Iterator[ast.AST]:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, nested):
                yield child
                yield from walk(child)

    return any(isinstance(node, ast.Raise) and node.exc is not None for node in walk(body))


def _contract_problems(name: str, function: Callable[..., Any], doc: str | None) -> list[str]:
    if not doc:
        return [f"{name}: no docstring"]
    problems = []
    if _parameters(function) and "Args:" not in doc:
        problems.append(f"{name}: takes arguments, no 'Args:'")
    if _returns_value(function) and "Returns:" not in doc and "Yields:" not in doc:
        problems.append(f"{name}: returns a value, no 'Returns:'")
    if _raises(function) and "Raises:" not in doc:
        problems.append(f"{name}: raises, no 'Raises:'")
    return problems


def _own_methods(cls: type) -> Iterator[tuple[str, Callable[..., Any]]]:
    """Public methods of ``cls`` defined by it or by a base of this project."""
    seen: set[str] = set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] not in _OWN_PACKAGES:
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            function = value.__func__ if isinstance(value, staticmethod | classmethod) else value
            if inspect.isfunction(function):
                yield name, function


def _public_api_problems() -> list[str]:
    problems = []
    for name, obj in _exports().items():
        if name in VALUES:
            continue
        doc = obj.__doc__ and inspect.cleandoc(obj.__doc__)
        if not doc:
            problems.append(f"{name}: no docstring")
            continue
        if ">>>" not in doc and name not in NO_EXAMPLE:
            problems.append(f"{name}: no '>>>' example")
        if inspect.isfunction(obj):
            problems += _contract_problems(name, obj, doc)
        elif "__init__" in vars(obj) and _parameters(obj.__init__) and "Args:" not in doc:
            problems.append(f"{name}: its constructor takes arguments, no 'Args:'")
    for name in METHOD_CLASSES:
        cls = _resolve(name)
        for method, function in _own_methods(cls):
            doc = inspect.getdoc(getattr(cls, method))  # an override inherits the base's
            problems += _contract_problems(f"{name}.{method}", function, doc)
    return problems


def test_every_public_name_states_its_contract_with_an_example() -> None:
    assert _public_api_problems() == []


def test_the_allow_lists_name_only_public_names() -> None:
    exports = _exports()
    assert set(NO_EXAMPLE) <= set(exports)
    assert VALUES <= set(exports)
    assert set(METHOD_CLASSES) <= set(exports)


def _documented_modules() -> list[ModuleType]:
    """The packages and every module of this project defining one of their exports."""
    names = set(PACKAGES)
    for obj in _exports().values():
        module = getattr(obj, "__module__", None)
        if module and module.split(".")[0] in _OWN_PACKAGES and module != "builtins":
            names.add(module)
    return [importlib.import_module(name) for name in sorted(names)]


@pytest.mark.parametrize("module", _documented_modules(), ids=lambda module: module.__name__)
def test_the_examples_run(module: ModuleType) -> None:
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags, verbose=False)
    assert result.failed == 0, f"{result.failed} of {module.__name__}'s examples failed"

"""The shape of the code, checked: module sizes, package cycles, the layers imports point
down (:data:`LAYERS`), and which packages may import ZooKeeper, ZeroMQ and Spark clients.

The first two are ratchets (issue 25): :data:`OVER_SIZE` and :data:`KNOWN_CYCLES` list what
is still to be fixed, each test fails when something new joins a list *and* when an entry
no longer needs to be there — so the lists only shrink.

``topology/__init__.py`` is the facade: the top layer, re-exporting the author API from
every layer below.  In the package graph it is its own node, :data:`FACADE`, apart from the
root's modules (``topology.components``, ``topology.config``, ...: the core, node
``topology``); only ``cli`` may import it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
#: The product's packages (tests, bench and examples are not held to these rules).
PACKAGES = ("topology", "acker", "grouping", "cli")
#: The node of ``topology/__init__.py`` (and of imports of the bare ``topology`` package).
FACADE = "topology (facade)"
#: The packages that may import the facade (the rest import the modules that define things).
FACADE_USERS = ("cli",)
#: Longest module, in lines.
MAX_LINES = 450
#: Modules still over :data:`MAX_LINES`, with the most lines each may have until split.
OVER_SIZE: dict[str, int] = {}
#: The layers, top to bottom: a package imports packages of its own layer or lower ones
#: (docs/ARCHITECTURE.md; ``topology`` is the core, the root's modules, under the facade).
LAYERS = (
    ("cli",),
    (FACADE,),
    ("topology.testing",),
    ("topology.deploy",),
    ("topology.runtime",),
    ("topology.stats", "topology.windows"),
    ("topology.state",),
    ("topology",),
    ("acker", "grouping"),
)
#: Package-level import cycles still to break: each group of packages that reach each
#: other through imports (issue 25); imports inside a group are let through the layer check.
KNOWN_CYCLES: set[tuple[str, ...]] = set()
#: Third-party clients and the only packages that may import them.
CONFINED = {
    "kazoo": ("topology/deploy/zk/",),
    "pyspark": ("topology/deploy/spark/backend.py",),
    "zmq": (
        "topology/runtime/transport.py",
        "topology/runtime/curve.py",
        "topology/deploy/local/worker_main.py",
        "topology/testing/feed.py",  # a FeederSpout's test feed, kept out of the runtime
    ),
}


def modules() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def package_of(module: str) -> str:
    """``topology.runtime.executor`` -> ``topology.runtime``; a module directly in the
    ``topology`` root belongs to ``topology`` (the core); the bare package ``topology``
    (its ``__init__``) is :data:`FACADE`; ``acker.x`` belongs to ``acker``."""
    if module in ("topology", "topology.__init__"):
        return FACADE
    parts = module.split(".")
    if parts[0] == "topology" and len(parts) > 2:
        return ".".join(parts[:2])
    if parts[0] == "topology" and len(parts) == 2 and (ROOT / "topology" / parts[1]).is_dir():
        return ".".join(parts[:2])
    return parts[0]


def is_module(name: str) -> bool:
    """Is ``name`` one of the product's modules or packages?"""
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports(path: Path) -> Iterator[str]:
    """Absolute names of the modules ``path`` imports, anywhere in it but under ``if
    TYPE_CHECKING:`` (lazy imports inside functions count: they are real at run time)."""
    tree = ast.parse(path.read_text(), str(path))
    package = rel(path.parent).replace("/", ".")  # what a relative import starts from

    def visit(node: ast.AST) -> Iterator[str]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from (m for n in child.orelse for m in visit_one(n))
                continue
            yield from visit_one(child)

    def visit_one(node: ast.AST) -> Iterator[str]:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, node.module] if node.module else parts)
            else:
                base = node.module or ""
            # ``from topology import config`` imports the module topology.config, not the
            # names topology/__init__.py defines
            for alias in node.names:
                yield f"{base}.{alias.name}" if is_module(f"{base}.{alias.name}") else base
        else:
            yield from visit(node)

    yield from visit(tree)


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in modules():
        source = package_of(rel(path)[: -len(".py")].replace("/", "."))
        for target in imports(path):
            if target.split(".")[0] not in PACKAGES:
                continue
            dest = package_of(target)
            if dest != source:
                graph.setdefault(source, set()).add(dest)
    return graph


def cycles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """Every strongly connected group of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: set[tuple[str, ...]] = set()

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                out.add(tuple(sorted(group)))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return out


def test_no_module_grows_past_the_limit_and_the_list_of_big_ones_only_shrinks() -> None:
    sizes = {rel(p): len(p.read_text().splitlines()) for p in modules()}
    over = {m: n for m, n in sizes.items() if n > MAX_LINES}
    new = {m: n for m, n in over.items() if m not in OVER_SIZE}
    assert not new, f"modules over {MAX_LINES} lines (split them): {new}"
    grown = {
        m: (sizes[m], OVER_SIZE[m]) for m in over if m in OVER_SIZE and sizes[m] > OVER_SIZE[m]
    }
    assert not grown, f"listed modules that grew (lines, ceiling): {grown}"
    done = sorted(m for m in OVER_SIZE if sizes.get(m, 0) <= MAX_LINES)
    assert not done, f"now within {MAX_LINES} lines: remove them from OVER_SIZE: {done}"


def test_no_new_package_cycle_and_the_list_of_known_ones_only_shrinks() -> None:
    found = cycles(package_graph())
    assert found <= KNOWN_CYCLES, f"new package cycles: {sorted(found - KNOWN_CYCLES)}"
    assert KNOWN_CYCLES <= found, f"broken already: remove {sorted(KNOWN_CYCLES - found)}"


def test_every_import_points_down_the_layers() -> None:
    graph = package_graph()
    layer = {package: n for n, group in enumerate(LAYERS) for package in group}
    unplaced = sorted({p for p, targets in graph.items() for p in {p, *targets}} - set(layer))
    assert not unplaced, f"packages without a layer (add them to LAYERS): {unplaced}"
    upward = sorted(
        (source, dest)
        for source, targets in graph.items()
        for dest in targets
        if layer[dest] < layer[source]
        and not any(source in group and dest in group for group in KNOWN_CYCLES)
    )
    assert not upward, f"imports of a higher layer (importer, imported): {upward}"


def test_nothing_in_the_product_imports_the_facade() -> None:
    """``topology/__init__.py`` re-exports from every layer: a module below it that imports
    it (``from topology import Spout``) depends on all of them (import the defining module;
    under ``if TYPE_CHECKING:`` is fine)."""
    offenders = [
        rel(p)
        for p in modules()
        if not rel(p).startswith(FACADE_USERS)
        and rel(p) != "topology/__init__.py"
        and any(package_of(t) == FACADE for t in imports(p))
    ]
    assert not offenders, f"modules importing the topology facade: {offenders}"


@pytest.mark.parametrize("client", sorted(CONFINED))
def test_a_client_library_is_imported_only_where_it_belongs(client: str) -> None:
    allowed = CONFINED[client]
    offenders = [
        rel(p)
        for p in modules()
        if any(t.split(".")[0] == client for t in imports(p))
        and not any(rel(p).startswith(a) for a in allowed)
    ]
    assert not offenders, f"{client} imported outside {allowed}: {offenders}"


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The checks above must be able to fail."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == {("a", "b", "c")}
    assert package_of("topology.runtime.executor") == "topology.runtime"
    assert package_of("topology.config") == "topology"
    assert package_of("acker.ledger") == "acker"
    assert package_of("topology") == FACADE
    assert is_module("topology.config") and not is_module("topology.Spout")

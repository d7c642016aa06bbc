"""The shape of the code, checked: function sizes, import cycles between packages and
between modules, the layers imports point down, imports inside functions, the rooms of
topology/runtime/ and topology/deploy/, and which modules may import ZooKeeper, ZeroMQ and
Spark clients.

Cohesion, not a line budget: a module is one concept, however long (two halves that import
each other were one module, so no two modules may import each other, even through a chain,
an import inside a function or one under ``if TYPE_CHECKING:``); a function fits on a
screen (:data:`MAX_FUNCTION_LINES`).

The layers and the confined client libraries are read from docs/ARCHITECTURE.md (its
``<!-- layers -->`` and ``<!-- confined -->`` lists), so the page's claims are the rules
this test holds the code to: change one and the other must follow.

``topology/__init__.py`` is the facade: the top layer, re-exporting the author API from
every layer below.  In the package graph it is its own node, :data:`FACADE`, apart from the
root's modules (``topology.components``, ``topology.config``, ...: the core, node
``topology``); only ``cli`` may import it.
"""

from __future__ import annotations

import ast
import re
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
#: Longest function or method, in lines from ``def`` to its end (docstring included).
MAX_FUNCTION_LINES = 80
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
#: The most modules directly in topology/runtime/ (``__init__.py`` included) ...
MAX_RUNTIME_ROOT_MODULES = 15
#: ... and the fewest rooms (subpackages) the rest lives in.
MIN_RUNTIME_ROOMS = 3
#: Imports of the product's own modules that may stay inside a function, by module: each
#: defers a heavy or optional dependency that its importer must not load up front.
LATE_IMPORTS = {
    # lmdb is opened only for ``topology.state.backend: lmdb``
    "topology/state/live/factory.py": {
        "topology.state.live.lmdb_store",
        "topology.state.live.lmdb_ttl",
    },
    # the ``ui`` extra (starlette, uvicorn): a missing extra is reported, not an ImportError
    "topology/deploy/local/cluster.py": {"topology.ui.server"},
    "cli/ui.py": {"topology.ui.server"},
    # topology.testing is loaded by workers (FeederSpout, CaptureBolt): the cluster stack
    # and the feed's ZeroMQ sockets only when a test asks for them
    "topology/testing/__init__.py": {"topology.deploy.cluster.stack"},
    "topology/testing/complete.py": {"topology.deploy.local.cluster"},
    "topology/testing/feeder.py": {"topology.testing.feed"},
}
#: Cycles that only ``if TYPE_CHECKING:`` imports close (annotations, no import at run
#: time), each with why it stays; any other such cycle fails.
TYPING_CYCLES = {
    # the author API's signatures name TopologyContext (``open(conf, context)``), which is
    # built from the specs of the components it annotates
    (
        "topology.assignment",
        "topology.components",
        "topology.context",
        "topology.spec",
        "topology.stateful",
    ),
    # LocalCluster serves its web UI through LocalClusterView, which names LocalCluster
    ("topology.deploy.local.cluster", "topology.deploy.local.ui_view"),
}


def documented_list(marker: str) -> list[str]:
    """The lines of the list that follows ``<!-- marker -->`` in docs/ARCHITECTURE.md."""
    lines = ARCHITECTURE.read_text().splitlines()
    begin = lines.index(f"<!-- {marker} -->") + 1
    out = []
    for line in lines[begin:]:
        if not line.strip():
            break
        out.append(line)
    assert out, f"docs/ARCHITECTURE.md has no list after <!-- {marker} -->"
    return out


def documented_layers() -> list[tuple[str, ...]]:
    """Top to bottom; a line is ``N. `pkg`, `pkg` — what it is``."""
    layers = []
    for line in documented_list("layers"):
        head = line.split(" — ")[0]
        layers.append(tuple(re.findall(r"`([^`]+)`", head)))
    return layers


def documented_confinement() -> dict[str, tuple[str, ...]]:
    """Client library -> the paths that may import it; a line is ``- `lib`: `path`, ...``."""
    out = {}
    for line in documented_list("confined"):
        names = re.findall(r"`([^`]+)`", line.split(" — ")[0])
        out[names[0]] = tuple(names[1:])
    return out


#: The layers, top to bottom: a package imports packages of its own layer or lower ones.
LAYERS = documented_layers()
#: Third-party clients and the only modules (or folders) that may import them.
CONFINED = documented_confinement()
#: The rooms of topology/deploy/ and the rooms each may import.
DEPLOY_ROOMS = {
    "local": set(),
    "cluster": {"spark", "zk"},
    "spark": {"cluster", "zk"},
    "zk": set(),
}


def modules() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def package_of(module: str) -> str:
    """``topology.runtime.tasks.executor`` -> ``topology.runtime``; a module directly in the
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


def module_name(path: Path) -> str:
    """``topology/runtime/net/codec.py`` -> ``topology.runtime.net.codec``; a package's
    ``__init__.py`` -> the package."""
    name = rel(path)[: -len(".py")].replace("/", ".")
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def imports(
    path: Path, *, type_checking: bool = False, where: list[str] | None = None
) -> Iterator[str]:
    """Absolute names of the modules ``path`` imports, anywhere in it (lazy imports inside
    functions count: they are real at run time), and under ``if TYPE_CHECKING:`` too when
    ``type_checking``.  ``where``, when given, gets ``"function"`` or ``"module"`` for each
    name yielded (where its import statement is)."""
    tree = ast.parse(path.read_text(), str(path))
    package = rel(path.parent).replace("/", ".")  # what a relative import starts from

    def visit(node: ast.AST, in_function: bool) -> Iterator[str]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                if type_checking:
                    yield from (m for n in child.body for m in visit_one(n, in_function))
                yield from (m for n in child.orelse for m in visit_one(n, in_function))
                continue
            yield from visit_one(child, in_function)

    def visit_one(node: ast.AST, in_function: bool) -> Iterator[str]:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
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
                names.append(f"{base}.{alias.name}" if is_module(f"{base}.{alias.name}") else base)
        else:
            inside = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            yield from visit(node, inside)
            return
        for name in names:
            if where is not None:
                where.append("function" if in_function else "module")
            yield name

    yield from visit(tree, False)


def module_graph(*, type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the product's modules importing it runs first: each imported module and
    the packages above it whose ``__init__`` runs first (not the importer's own packages,
    which are already running)."""
    graph: dict[str, set[str]] = {}
    for path in modules():
        source = module_name(path)
        for target in imports(path, type_checking=type_checking):
            parts = target.split(".")
            if parts[0] not in PACKAGES:
                continue
            for cut in range(1, len(parts) + 1):
                name = ".".join(parts[:cut])
                if name != source and not source.startswith(name + ".") and is_module(name):
                    graph.setdefault(source, set()).add(name)
    return graph


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


def test_no_function_is_over_the_limit() -> None:
    over = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    over.append(f"{rel(path)}:{node.lineno} {node.name} ({length} lines)")
    assert not over, f"functions over {MAX_FUNCTION_LINES} lines: {over}"


def test_no_package_cycle() -> None:
    found = cycles(package_graph())
    assert not found, f"package import cycles: {sorted(found)}"


def test_no_module_import_cycle() -> None:
    """No module imports itself through others, counting imports inside functions (they
    run too) and the ``__init__`` of every package an import goes through."""
    found = cycles(module_graph())
    assert not found, f"module import cycles: {sorted(found)}"


def test_type_checking_imports_close_no_new_cycle() -> None:
    """An ``if TYPE_CHECKING:`` import that closes a cycle hides it; only the cycles
    :data:`TYPING_CYCLES` explains may be closed that way."""
    found = cycles(module_graph(type_checking=True))
    new = sorted(found - TYPING_CYCLES)
    assert not new, f"cycles closed by TYPE_CHECKING imports: {new}"
    gone = sorted(TYPING_CYCLES - found)
    assert not gone, f"cycles TYPING_CYCLES lists that no longer exist (drop them): {gone}"


def test_no_project_import_inside_a_function() -> None:
    """Imports of the product's modules are at the top of a module, where the graph above
    sees them, except the deferred ones :data:`LATE_IMPORTS` lists."""
    late = []
    for path in modules():
        where: list[str] = []
        names = list(imports(path, type_checking=True, where=where))
        allowed = LATE_IMPORTS.get(rel(path), set())
        late += [
            f"{rel(path)} imports {name}"
            for name, place in zip(names, where, strict=True)
            if place == "function" and name.split(".")[0] in PACKAGES and name not in allowed
        ]
    assert not late, "imports inside functions (move them to the top):\n" + "\n".join(
        sorted(set(late))
    )


def test_the_runtime_is_in_rooms() -> None:
    """topology/runtime/ keeps at most :data:`MAX_RUNTIME_ROOT_MODULES` modules at its root
    (the worker and what assembles it); the rest is in rooms by concept."""
    runtime = ROOT / "topology" / "runtime"
    root_modules = sorted(p.name for p in runtime.glob("*.py"))
    rooms = sorted(p.name for p in runtime.iterdir() if (p / "__init__.py").is_file())
    assert len(root_modules) <= MAX_RUNTIME_ROOT_MODULES, root_modules
    assert len(rooms) >= MIN_RUNTIME_ROOMS, rooms


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


def test_the_deploy_rooms_import_only_the_rooms_they_may() -> None:
    """``deploy/`` itself (what local/ and cluster/ share) imports no room; each room only
    those :data:`DEPLOY_ROOMS` lists (docs/ARCHITECTURE.md, "topology/deploy/")."""
    rooms = set(DEPLOY_ROOMS)
    wrong = []
    for path in (ROOT / "topology" / "deploy").rglob("*.py"):
        parts = path.relative_to(ROOT / "topology" / "deploy").parts
        room = parts[0] if len(parts) > 1 else None
        allowed = DEPLOY_ROOMS.get(room, set()) if room else set()
        for target in imports(path):
            names = target.split(".")
            if names[:2] == ["topology", "deploy"] and len(names) > 2 and names[2] in rooms:
                if names[2] != room and names[2] not in allowed:
                    wrong.append(f"{rel(path)} imports {target}")
    assert not wrong, "\n".join(wrong)


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
    """The checks above must be able to fail, and the page's lists were read."""
    assert ("cli",) == LAYERS[0] and len(LAYERS) >= 8
    assert {"kazoo", "pyspark", "zmq", "redis", "psycopg", "confluent_kafka"} <= set(CONFINED)
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == {("a", "b", "c")}
    assert module_graph()["topology.runtime.worker"] >= {
        "topology.runtime.net",  # the room's __init__ runs before the module
        "topology.runtime.net.transport",
    }
    assert package_of("topology.runtime.tasks.executor") == "topology.runtime"
    assert package_of("topology.config") == "topology"
    assert package_of("acker.ledger") == "acker"
    assert package_of("topology") == FACADE
    assert is_module("topology.config") and not is_module("topology.Spout")

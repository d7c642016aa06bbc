"""What a stream component carries to the workers, and how it runs its operators.

A :class:`Step` is one operator as the component needs it (its function and settings, the
steps after it inside the component, and the output stream when components downstream
read it) — no reference to the rest of the graph, so a component pickles only its own
functions.  :func:`compile_steps` turns a component's steps into nested plain function
calls: fused operators pass elements to each other as Python values, with no queue, no
serialisation and no acker edge between them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from topology.errors import SparkstormError
from topology.state.checkpoint import hashable

Push = Callable[[Any], None]
#: ``emit(values, anchors, stream)``: send one tuple downstream (``anchors`` is always None:
#: the component binds anchoring).
Emit = Callable[[list[Any], Any, str], Any]


@dataclass
class Step:
    """One operator inside a component.

    Attributes:
        id: the node's id (unique in the topology).
        kind: the operator (see :class:`~topology.streams.graph.Node`).
        name: the node's name (for errors).
        fn: the user's function, if the operator has one.
        pair: whether its output elements are ``(key, value)`` pairs.
        after: the ids of the steps that read it inside the component.
        stream: the output stream other components read it on, or None.
        options: the operator's other settings.
    """

    id: int
    kind: str
    name: str
    fn: Any
    pair: bool
    after: list[int] = field(default_factory=list)
    stream: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


def compile_steps(steps: dict[int, Step], start: int, emit: Emit, where: str = "stream") -> Push:
    """The function that runs step ``start`` on an element, then every step after it
    (depth first, in declaration order), emitting where a step has an output stream.

    The operators are written out as the statements of one generated function — a ``map``
    is an assignment, a ``filter`` an ``if``, a ``flat_map`` a ``for`` — calling only the
    users' functions and ``emit(values, None, stream)``: no call per operator on top of
    the user's own (``where`` names the generated code in tracebacks).  Past
    :data:`MAX_DEPTH` nested blocks the rest goes into a function of its own (Python
    refuses deeper nesting)."""
    writer = _Writer(steps, emit, where)
    writer.write(start, "e", 1)
    return writer.function()


def compile_after(steps: dict[int, Step], start: int, emit: Emit, where: str = "stream") -> Push:
    """Like :func:`compile_steps` for what follows ``start`` (a head whose own work is done
    by its component: an aggregation, a window): its element goes on as it is."""
    writer = _Writer(steps, emit, where)
    writer.write_after(steps[start], "e", 1)
    return writer.function()


#: Most nested blocks in one generated function (Python allows 20).
MAX_DEPTH = 12

#: How each kind is written: (statement, whether its children go one level deeper); ``{f}``
#: is the step's function, ``{v}`` its input variable, ``{o}`` its output variable, ``{i}``
#: the indentation, ``{n}`` the step's name, ``{b}`` / ``{x}`` a route's branch and index.
_STATEMENTS: dict[str, tuple[str, bool]] = {
    "map": ("{o} = {f}({v})", False),
    "map_to_pair": ("{o} = pair({f}({v}), {n!r})", False),
    "key_by": ("{o} = ({f}({v}), {v})", False),
    "map_values": ("{o} = ({v}[0], {f}({v}[1]))", False),
    "filter": ("if {f}({v}):\n{i}    {o} = {v}", True),
    "flat_map": ("for {o} in {f}({v}):", True),
    "flat_map_to_pair": ("for {o}_ in {f}({v}):\n{i}    {o} = pair({o}_, {n!r})", True),
    "flat_map_values": ("for {o}_ in {f}({v}[1]):\n{i}    {o} = ({v}[0], {o}_)", True),
    "peek": ("{f}({v})\n{i}{o} = {v}", False),
    "for_each": ("{f}({v})", False),
    "branch": ("e{b}c = {f}({v})\n{i}{o} = {v}", False),
    "route": ("if e{b}c == {x}:\n{i}    {o} = {v}", True),
}


class StreamOperatorError(SparkstormError):
    """A stream operator got something it cannot use (the message names the operator)."""


def pair(value: Any, operator: str) -> Any:
    """``value`` as a ``(key, value)`` pair, or an error naming ``operator``."""
    if type(value) is tuple and len(value) == 2:
        return value
    if isinstance(value, list | tuple) and len(value) == 2:
        return tuple(value)
    raise StreamOperatorError(
        f"{operator}: the function must return a (key, value) pair, got {value!r:.80}"
    )


class _Writer:
    """The source of one generated function, and the names it uses."""

    def __init__(self, steps: dict[int, Step], emit: Emit, where: str) -> None:
        self.steps, self.emit, self.where = steps, emit, where
        self.body: list[str] = []
        self.names: dict[str, Any] = {"emit": emit, "pair": pair}

    def function(self) -> Push:
        source = "def run(e):\n" + "\n".join(self.body or ["    pass"]) + "\n"
        code = compile(source, f"<sparkstorm fused operators of {self.where}>", "exec")
        exec(code, self.names)  # noqa: S102 - our own code, made of the operator kinds only
        return self.names["run"]

    def write(self, step_id: int, var: str, depth: int) -> None:
        step = self.steps[step_id]
        statement = _STATEMENTS.get(step.kind)
        if statement is None:  # identity, group, late: the element as it is
            self.write_after(step, var, depth)
            return
        indent = "    " * depth
        fn, out = f"f{step.id}", f"e{step.id}"
        self.names[fn] = step.fn
        text, deeper = statement
        branch, index = step.options.get("branch", step.id), step.options.get("index")
        self.body.append(
            indent + text.format(f=fn, v=var, o=out, i=indent, n=step.name, b=branch, x=index)
        )
        before = len(self.body)
        self.write_after(step, out, depth + 1 if deeper else depth)
        if deeper and len(self.body) == before:  # nothing after it: a block needs a body
            self.body.append(indent + "    pass")

    def write_after(self, step: Step, var: str, depth: int) -> None:
        for after in step.after:
            if depth >= MAX_DEPTH and self.steps[after].kind != "route":  # (a route reads
                # its branch's choice: it stays in the function that made it)
                # the rest in a function of its own, called here
                nested = compile_steps(self.steps, after, self.emit, self.where)
                self.names[f"g{after}"] = nested
                self.body.append("    " * depth + f"g{after}({var})")
            else:
                self.write(after, var, depth)
        if step.stream is not None:
            values = f"[{var}[0], {var}[1]]" if step.pair else f"[{var}]"
            self.body.append("    " * depth + f"emit({values}, None, {step.stream!r})")


def decoder(kind: str, fields: list[str] | None) -> Callable[[list[Any]], Any]:
    """How a component reads an element from a tuple's values: ``value`` (the first),
    ``pair`` (the first two as a tuple) or ``record`` (a dict of ``fields``)."""
    if kind == "pair":  # a key that was a tuple comes back from msgpack a list: a tuple again
        return lambda values: (
            hashable(values[0]) if type(values[0]) is list else values[0],
            values[1],
        )
    if kind == "record":
        names = list(fields or [])
        return lambda values: dict(zip(names, values, strict=False))
    return lambda values: values[0]

"""Topology validation: every problem found at once, each naming its component."""

from __future__ import annotations

import cloudpickle

from grouping import GROUPING_KINDS, KEYED_KINDS

from .component_checks import declared_configuration_problems, method_problems
from .components import Component, Stream
from .constants import (
    DEAD_LETTER_FIELDS,
    DEAD_LETTER_STREAM,
    PROGRESS_FIELDS,
    PROGRESS_STREAM,
    RESERVED_PREFIX,
)
from .errors import TopologyValidationError
from .names import name_problem
from .spec import ComponentSpec, InputSpec, Topology

#: The dead-letter stream every component is given (docs/ERRORS.md).
DEAD_LETTERS = Stream(DEAD_LETTER_FIELDS)
PROGRESS = Stream(PROGRESS_FIELDS)


def validate(components: list[ComponentSpec], problems: list[str]) -> Topology:
    """Return the topology built from ``components`` or raise listing every problem.

    ``problems`` are those already found while declaring (e.g. a non-Spout passed to
    ``set_spout``); they are reported together with the ones found here.
    """
    problems = list(problems)
    by_id: dict[str, ComponentSpec] = {}
    for spec in components:
        where = f"{spec.kind} {spec.id!r}"
        if not isinstance(spec.id, str) or not spec.id:
            problems.append(f"{spec.kind} {spec.id!r}: component id must be a non-empty string")
        elif spec.id.startswith(RESERVED_PREFIX):
            problems.append(f"{where}: ids starting with {RESERVED_PREFIX!r} are reserved")
        elif (problem := name_problem("component", spec.id)) is not None:
            problems.append(problem)
        if spec.id in by_id:
            problems.append(
                f"{where}: duplicate component id (already used by a {by_id[spec.id].kind})"
            )
            continue
        by_id[spec.id] = spec
        problems.extend(_count_problems(where, spec))
        if spec.uid is not None and (problem := name_problem("uid", spec.uid)) is not None:
            problems.append(f"{where}: {problem}")
        if isinstance(spec.instance, Component):  # else already reported as the wrong type
            problems.extend(method_problems(spec.kind, spec.id, spec.instance))
        problems.extend(declared_configuration_problems(spec.kind, spec.id, spec.conf))
        for stream, declared in spec.streams.items():
            if not isinstance(stream, str) or not stream or _reserved(stream, declared):
                problems.append(f"{where}: invalid stream id {stream!r}")
        for stream, declared in spec.streams.items():
            if len(set(declared.fields)) != len(declared.fields):
                problems.append(f"{where}: stream {stream!r} declares a field twice")
        spec.streams[DEAD_LETTER_STREAM] = DEAD_LETTERS  # every component has one
    if not any(c.kind == "spout" for c in by_id.values()):
        problems.append("topology: no spout (set_spout at least one)")
    for spec in by_id.values():
        if spec.kind == "spout" and spec.inputs:
            problems.append(f"spout {spec.id!r}: spouts cannot subscribe to streams")
        for inp in spec.inputs:
            problems.extend(_input_problems(spec, inp, by_id))
        own_checks = getattr(spec.instance, "topology_problems", None)
        if callable(own_checks):  # components with settings of their own (windowed bolts)
            problems.extend(own_checks(spec, by_id))
    problems.extend(_pickle_problems(by_id))
    problems.extend(_state_id_problems(list(by_id.values())))
    if problems:
        raise TopologyValidationError(problems)
    return Topology(by_id)


def _reserved(stream: str, declared: Stream) -> bool:
    """A stream id the author may not declare (the dead-letter stream as the validation
    declared it, on a second ``create_topology``, is fine; so are a stream component's
    progress marks)."""
    return stream.startswith(RESERVED_PREFIX) and not (
        (stream == DEAD_LETTER_STREAM and declared == DEAD_LETTERS)
        or (stream == PROGRESS_STREAM and declared == PROGRESS)
    )


def _state_id_problems(specs: list[ComponentSpec]) -> list[str]:
    """Two components whose state would be kept under one id (a ``uid=`` equal to another
    component's id or uid)."""
    owners: dict[str, str] = {}
    problems = []
    for spec in specs:
        state_id = spec.state_id
        if state_id in owners:
            problems.append(
                f"{spec.kind} {spec.id!r}: its state id {state_id!r} (uid) is already that of "
                f"{owners[state_id]!r}: give each component its own uid"
            )
        else:
            owners[state_id] = spec.id
    return problems


def _count_problems(where: str, spec: ComponentSpec) -> list[str]:
    """A bad parallelism or task count; ``num_tasks`` only when the author gave it (else
    it is the parallelism, whose problem is reported once)."""
    counts = [("parallelism", spec.parallelism)]
    if spec.num_tasks_given:
        counts.append(("num_tasks", spec.num_tasks))
    out = []
    for name, value in counts:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            out.append(f"{where}: {name} must be an integer >= 1, got {value!r}")
    return out


def _input_problems(
    spec: ComponentSpec, inp: InputSpec, by_id: dict[str, ComponentSpec]
) -> list[str]:
    g = inp.grouping
    where = f"bolt {spec.id!r}: {g.kind.replace('_', '-')} grouping on {inp.component!r}"
    if g.kind not in GROUPING_KINDS:
        return [f"bolt {spec.id!r}: unknown grouping kind {g.kind!r}"]
    source = by_id.get(inp.component)
    if source is None:
        known = ", ".join(sorted(map(str, by_id))) or "none"
        return [f"{where}: unknown component {inp.component!r} (components: {known})"]
    declared = source.streams.get(inp.stream)
    if declared is None:
        known = ", ".join(sorted(set(source.streams) - {DEAD_LETTER_STREAM})) or "none declared"
        return [f"{where}: {inp.component!r} declares no stream {inp.stream!r} (streams: {known})"]
    out = []
    if g.kind in KEYED_KINDS:
        if not g.fields:
            out.append(f"{where}: needs at least one field")
        for f in g.fields:
            if f not in declared.fields:
                out.append(
                    f"{where} stream {inp.stream!r}: undeclared field {f!r} "
                    f"(declared: {list(declared.fields)})"
                )
    if g.kind == "direct" and not declared.direct:
        out.append(
            f"{where}: stream {inp.stream!r} is not direct "
            "(declare it with Stream(fields, direct=True))"
        )
    if g.kind != "direct" and declared.direct:
        out.append(f"{where}: stream {inp.stream!r} is direct; subscribe with direct_grouping")
    if g.kind == "custom":
        if isinstance(g.custom, type):
            out.append(f"{where}: custom grouping {g.custom.__name__} is a class: instantiate it")
        else:
            missing = [
                m for m in ("prepare", "choose_tasks") if not callable(getattr(g.custom, m, None))
            ]
            if missing:
                out.append(
                    f"{where}: custom grouping {g.custom!r} lacks "
                    + " and ".join(f"{m}()" for m in missing)
                    + " (subclass topology.CustomGrouping)"
                )
    return out


def _pickle_problems(by_id: dict[str, ComponentSpec]) -> list[str]:
    """Components and custom groupings must pickle: they are shipped to every worker."""
    out = []
    for spec in by_id.values():
        where = f"{spec.kind} {spec.id!r}"
        if not isinstance(spec.instance, Component):
            continue  # already reported as the wrong type
        shipped = [(where, spec.instance)] + [
            (f"{where}: custom grouping on {i.component!r}", i.grouping.custom)
            for i in spec.inputs
            if i.grouping.kind == "custom" and not isinstance(i.grouping.custom, type)
        ]
        for what, obj in shipped:
            try:
                cloudpickle.dumps(obj)
            except Exception as exc:
                out.append(
                    f"{what}: cannot be pickled to ship it to workers "
                    f"({type(exc).__name__}: {exc}); open connections and locks in "
                    "open/prepare, not in __init__"
                )
    return out

"""``JoinBolt``: Storm's ``org.apache.storm.bolt.JoinBolt``, joins of streams per window.

Example (purchases joined to users on the user id, every 10 s of processing time)::

    joiner = (
        JoinBolt("purchases", "user_id")                # from purchases (by component)
        .join("users", "id", "purchases")               # on users.id = purchases.user_id
        .left_join("coupons", "user_id", "purchases")   # on coupons.user_id = ditto
        .select("purchases:user_id, name, amount, coupons:code")
        .with_tumbling_window(seconds=10)
    )
    builder.set_bolt("joiner", joiner, 2).fields_grouping("purchases", ["user_id"]) \\
        .fields_grouping("users", ["id"]).fields_grouping("coupons", ["user_id"])

Contract:

* The streams are named by the component that sends them (``by="source"``, the default,
  Storm's ``Selector.SOURCE``) or by stream id (``by="stream"``, ``Selector.STREAM``).  Each
  stream has one join field: the one it was introduced with.  ``join(name, field, prior)``
  matches ``name.field`` with ``prior``'s join field; ``prior`` must already be in the join.
* At each window firing the window's tuples are split by stream and joined in the order the
  joins were declared (a hash join).  Rows come out in the order of the first stream's
  tuples in the window, then of each joined stream's.  An inner join drops a row without a
  match; a left join keeps it with None for the missing stream's selected fields.  A None
  key matches nothing (as in SQL; unlike Storm, a left join keeps such a row).
* Each output is anchored to exactly the input tuples it was made from (not the whole
  window), so a failed output fails only those; inputs are acked when they leave their
  last window, as for every :class:`~topology.windows.bolt.WindowedBolt`.
* Output fields are the selected field names; when two selected entries share a field name
  (``gender:id, age:id``), those are named as written (``"gender:id"``, ``"age:id"``).
  Call ``select`` and ``with_output_stream`` before ``set_bolt``: outputs are declared then.
* Unknown streams, inputs outside the join, missing join or selected fields, ambiguous
  bare fields and a missing ``select`` are reported when the topology is built, each
  naming the bolt, the stream and the field.  See docs/WINDOWS.md, "JoinBolt".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from topology.components import OutputFieldsDeclarer
from topology.constants import DEFAULT_STREAM
from topology.errors import WindowError
from topology.state.checkpoint import hashable

from .bolt import WindowedBolt
from .engine import Window

if TYPE_CHECKING:
    from topology.context import TopologyContext
    from topology.spec import ComponentSpec
    from topology.tuple import Tuple

#: ``by=`` values: streams named by their source component, or by their stream id.
SOURCE, STREAM = "source", "stream"
INNER, LEFT = "inner", "left"


@dataclass(frozen=True)
class JoinStep:
    """One stream of the join: ``name``, its join ``field``, and (but for the first) the
    ``prior`` stream it joins to and how (``kind``: ``"inner"`` or ``"left"``)."""

    name: str
    field: str
    prior: str | None = None
    kind: str = INNER


@dataclass(frozen=True)
class Selected:
    """One selected field: ``stream:field`` (``stream`` None for a bare field), and the
    output field name it gets."""

    stream: str | None
    field: str
    output: str

    @property
    def text(self) -> str:
        return self.field if self.stream is None else f"{self.stream}:{self.field}"


def parse_selection(fields: str | Sequence[str]) -> tuple[Selected, ...]:
    """``"a:x, y"`` or ``["a:x", "y"]`` -> the selection, output names given (ValueError
    for an empty entry, an empty part or an entry selected twice)."""
    entries = fields.split(",") if isinstance(fields, str) else list(fields)
    parsed: list[tuple[str | None, str]] = []
    for entry in entries:
        if not isinstance(entry, str) or not entry.strip():
            raise ValueError(f"select: empty or non-string entry {entry!r} in {fields!r}")
        stream, sep, field = (part.strip() for part in entry.strip().rpartition(":"))
        if (sep and not stream) or not field:
            raise ValueError(f"select: {entry.strip()!r} is not 'field' or 'stream:field'")
        parsed.append((stream or None, field))
    if len(set(parsed)) != len(parsed):
        raise ValueError(f"select: an entry is selected twice in {fields!r}")
    names = [field for _, field in parsed]
    return tuple(
        Selected(s, f, f if names.count(f) == 1 else (f if s is None else f"{s}:{f}"))
        for s, f in parsed
    )


@dataclass(frozen=True)
class JoinPlan:
    """A join resolved against the topology: for each stream in join order its name, join
    field, the position of the stream it joins to (-1 for the first) and whether that join
    is a left one; each output column as (stream position, field)."""

    component: str
    by_source: bool
    names: tuple[str, ...]
    keys: tuple[str, ...]
    priors: tuple[int, ...]
    left: tuple[bool, ...]
    columns: tuple[tuple[int, str], ...]

    def rows(self, tuples: Iterable[Tuple]) -> list[tuple[list[Any], list[Tuple]]]:
        """The join of ``tuples`` (one window's): each row's output values and the input
        tuples it was made from, in the order the module docstring states.  Tuples of
        streams outside the join are ignored."""
        position = {name: i for i, name in enumerate(self.names)}
        buckets: list[list[Tuple]] = [[] for _ in self.names]
        for tup in tuples:
            at = position.get(tup.source.component if self.by_source else tup.source.stream)
            if at is not None:
                buckets[at].append(tup)
        rows: list[list[Tuple | None]] = [[tup] for tup in buckets[0]]
        for at in range(1, len(self.names)):
            table: dict[Any, list[Tuple]] = {}
            for tup in buckets[at]:
                key = self._key(tup, self.keys[at])
                if key is not None:
                    table.setdefault(key, []).append(tup)
            prior, prior_key = self.priors[at], self.keys[self.priors[at]]
            joined: list[list[Tuple | None]] = []
            for row in rows:
                side = row[prior]
                matches = table.get(self._key(side, prior_key)) if side is not None else None
                if matches:
                    joined.extend([*row, match] for match in matches)
                elif self.left[at]:
                    joined.append([*row, None])
            rows = joined
        return [(self.project(row), [t for t in row if t is not None]) for row in rows]

    def project(self, row: Sequence[Tuple | None]) -> list[Any]:
        """The selected values of one joined row (None where its stream is missing)."""
        out = []
        for at, field in self.columns:
            tup = row[at]
            out.append(None if tup is None else tup[field])
        return out

    def _key(self, tup: Tuple, field: str) -> Any:
        value = hashable(tup[field])
        try:
            hash(value)
        except TypeError:
            raise WindowError(
                f"join bolt {self.component!r}: join field {field!r} of a tuple from "
                f"{tup.source_component!r} on stream {tup.stream!r} is {value!r}, which "
                "cannot be a join key (use a number, a string or a list of them)"
            ) from None
        return value


#: One input of the bolt: (component, stream, the fields it declares).
Input = tuple[str, str, tuple[str, ...]]


class JoinBolt(WindowedBolt):
    """Joins two or more streams per window (see the module docstring).

    ``JoinBolt(name, field, by="source")`` starts the join with stream ``name`` (a
    component id, or with ``by="stream"`` a stream id) joined on ``field``; then
    :meth:`join` / :meth:`left_join`, :meth:`select`, optionally
    :meth:`with_output_stream`, and the window settings of :class:`WindowedBolt`.

    Args:
        name: the first stream of the join: a component id (or with ``by="stream"`` a
            stream id).
        field: its join field.
        by: ``"source"`` (streams named by component) or ``"stream"`` (by stream id).

    Raises:
        ValueError: ``by`` is neither, or ``field`` is not a plain field name.

    Example: purchases joined to users on the user id, every 10 s:

        >>> from topology import TopologyBuilder
        >>> from topology.testing import FeederSpout
        >>> builder = TopologyBuilder()
        >>> _ = builder.set_spout("purchases", FeederSpout(["user_id", "amount"]))
        >>> _ = builder.set_spout("users", FeederSpout(["id", "name"]))
        >>> joiner = (
        ...     JoinBolt("purchases", "user_id")
        ...     .join("users", "id", "purchases")
        ...     .select("purchases:user_id, name, amount")
        ...     .with_tumbling_window(seconds=10)
        ... )
        >>> joiner.output_fields
        ['user_id', 'name', 'amount']
        >>> declarer = builder.set_bolt("joiner", joiner, 2)
        >>> _ = declarer.fields_grouping("purchases", ["user_id"])
        >>> _ = declarer.fields_grouping("users", ["id"])
        >>> topology = builder.create_topology()

        A join to a stream not in the join yet is refused at once:

        >>> JoinBolt("purchases", "user_id").join("coupons", "user_id", "users")
        Traceback (most recent call last):
        ...
        ValueError: JoinBolt: join of 'coupons' to 'users', which is not part of the join yet ...
    """

    def __init__(self, name: str, field: str, by: str = SOURCE) -> None:
        if by not in (SOURCE, STREAM):
            raise ValueError(f"JoinBolt: by must be {SOURCE!r} or {STREAM!r}, got {by!r}")
        self.by = by
        self.steps: tuple[JoinStep, ...] = (JoinStep(name, _join_field(name, field)),)
        self.selection: tuple[Selected, ...] | None = None
        self.output_stream = DEFAULT_STREAM

    # -- configuration (chaining) -----------------------------------------------------------

    def join(self, name: str, field: str, prior: str) -> JoinBolt:
        """Inner join: rows of ``prior`` with a tuple of ``name`` whose ``field`` equals
        ``prior``'s join field; rows without one are dropped.

        Args:
            name: the stream to join in: a component id (or with ``by="stream"`` a
                stream id).
            field: its join field.
            prior: a stream already in the join, whose join field ``field`` must equal.

        Returns:
            This bolt, so calls chain.

        Raises:
            ValueError: ``name`` is already in the join, ``prior`` is not, or ``field``
                is not a plain field name.
        """
        return self._add(JoinStep(name, _join_field(name, field), prior, INNER))

    def left_join(self, name: str, field: str, prior: str) -> JoinBolt:
        """Left join: as :meth:`join`, but a row without a match is kept, with None for
        ``name``'s selected fields.

        Args:
            name: the stream to join in: a component id (or with ``by="stream"`` a
                stream id).
            field: its join field.
            prior: a stream already in the join, whose join field ``field`` must equal.

        Returns:
            This bolt, so calls chain.

        Raises:
            ValueError: ``name`` is already in the join, ``prior`` is not, or ``field``
                is not a plain field name.
        """
        return self._add(JoinStep(name, _join_field(name, field), prior, LEFT))

    def _add(self, step: JoinStep) -> JoinBolt:
        known = [s.name for s in self.steps]
        if step.name in known:
            raise ValueError(f"JoinBolt: {step.name!r} is already part of the join")
        if step.prior not in known:
            raise ValueError(
                f"JoinBolt: join of {step.name!r} to {step.prior!r}, which is not part of the "
                f"join yet (joined so far: {', '.join(map(repr, known))})"
            )
        self.steps = (*self.steps, step)
        return self

    def select(self, fields: str | Sequence[str]) -> JoinBolt:
        """Choose the output fields (call it before ``set_bolt``).

        Args:
            fields: ``"stream:field, field, ..."`` or a list of such names (a bare field
                must be declared by one joined stream only).

        Returns:
            This bolt, so calls chain.

        Raises:
            ValueError: an entry is empty, malformed or selected twice.
        """
        self.selection = parse_selection(fields)
        return self

    def with_output_stream(self, stream: str) -> JoinBolt:
        """Emit the joined rows on another stream (call it before ``set_bolt``).

        Args:
            stream: the output stream (default: ``"default"``).

        Returns:
            This bolt, so calls chain.
        """
        self.output_stream = stream
        return self

    @property
    def output_fields(self) -> list[str] | None:
        """The declared output field names (None until :meth:`select`)."""
        return None if self.selection is None else [s.output for s in self.selection]

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare the selected fields on the output stream (and the late stream, if set).

        Args:
            declarer: where the streams are declared.
        """
        super().declare_output_fields(declarer)
        if self.output_fields is not None:
            declarer.declare(self.output_fields, self.output_stream)

    # -- checks -----------------------------------------------------------------------------

    def topology_problems(
        self, spec: ComponentSpec, components: Mapping[str, ComponentSpec]
    ) -> list[str]:
        """The window settings' problems, then the join's (see the module docstring).

        Args:
            spec: this bolt's declaration.
            components: every component of the topology, by id.

        Returns:
            The problems found, one line each (none: empty).
        """
        out = super().topology_problems(spec, components)
        where = f"join bolt {spec.id!r}"
        if self.selection is None:
            first = self.steps[0]
            out.append(
                f"{where}: no select(...): name the output fields, e.g. "
                f'select("{first.name}:{first.field}, ...")'
            )
        out.extend(self.plan(spec.id, _inputs(spec, components))[1])
        out.extend(self._grouping_problems(where, spec))
        declared = spec.streams.get(self.output_stream)
        if self.selection is not None and (
            declared is None or list(declared.fields) != self.output_fields
        ):
            out.append(
                f"{where}: outputs were declared at set_bolt before this selection "
                f"({self.output_fields} on stream {self.output_stream!r}): call select() and "
                "with_output_stream() before set_bolt"
            )
        if self.output_stream == self.window_spec.late_stream:
            out.append(
                f"{where}: the output stream and the late stream are both {self.output_stream!r}"
            )
        return out

    def _grouping_problems(self, where: str, spec: ComponentSpec) -> list[str]:
        """With several tasks, tuples with equal keys must meet in one task: each input
        grouped by fields on its join field (or all / global; direct and custom groupings
        are the author's business)."""
        if spec.num_tasks <= 1:
            return []
        keys = {s.name: s.field for s in self.steps}
        out = []
        for inp in spec.inputs:
            field = keys.get(inp.component if self.by == SOURCE else inp.stream)
            kind, grouped = inp.grouping.kind, tuple(inp.grouping.fields)
            if field is None or kind in ("all", "global", "direct", "custom"):
                continue
            if kind != "fields" or grouped != (field,):
                how = f"{kind} grouping" + (f" on {list(grouped)}" if grouped else "")
                out.append(
                    f"{where}: input {inp.component!r} stream {inp.stream!r} reaches its "
                    f"{spec.num_tasks} tasks by {how}: tuples with equal {field!r} may land in "
                    f"different tasks and never join (group it by fields [{field!r}])"
                )
        return out

    def plan(self, component: str, inputs: Sequence[Input]) -> tuple[JoinPlan | None, list[str]]:
        """Resolve the join against the bolt's inputs.

        Args:
            component: this bolt's id (for the messages).
            inputs: (component, stream, fields) of each input.

        Returns:
            (the plan, []) or (None, the problems found).
        """
        where = f"join bolt {component!r}"
        noun = "component" if self.by == SOURCE else "stream"
        of: dict[str, list[Input]] = {}
        for inp in inputs:
            of.setdefault(inp[0] if self.by == SOURCE else inp[1], []).append(inp)
        names = [s.name for s in self.steps]
        out = [
            f"{where}: input {c!r} stream {s!r} is not part of the join (joined {noun}s: "
            f"{', '.join(map(repr, names))}): join it or drop the subscription"
            for c, s, _ in inputs
            if (c if self.by == SOURCE else s) not in names
        ]
        for step in self.steps:
            if step.name not in of:
                listed = ", ".join(f"{c!r} stream {s!r}" for c, s, _ in inputs) or "none"
                out.append(
                    f"{where}: the join names {noun} {step.name!r}, but the bolt has no input "
                    f"from {noun} {step.name!r} (inputs: {listed})"
                )
                continue
            out.extend(
                _missing(
                    where, f"join field {step.field!r} of {step.name!r}", of[step.name], step.field
                )
            )
        columns = [_column(where, noun, sel, names, of, out) for sel in self.selection or ()]
        if out:
            return None, out
        return (
            JoinPlan(
                component,
                self.by == SOURCE,
                tuple(names),
                tuple(s.field for s in self.steps),
                tuple(-1 if s.prior is None else names.index(s.prior) for s in self.steps),
                tuple(s.kind == LEFT for s in self.steps),
                tuple(c for c in columns if c is not None),
            ),
            [],
        )

    # -- the runtime's part ---------------------------------------------------------------

    def start_windows(self, context: TopologyContext, clock: Callable[[], float]) -> None:
        """Build the engine (:class:`WindowedBolt`), then resolve the join against the
        topology (checked when it was built, so this cannot fail on a validated one).

        Args:
            context: the task's context.
            clock: processing time (wall-clock seconds).

        Raises:
            WindowError: the join does not fit the topology (only for one never validated).
        """
        super().start_windows(context, clock)
        components = context._topology.components
        inputs = _inputs(components[context.component_id], components)
        plan, problems = self.plan(context.component_id, inputs)
        if plan is None:
            raise WindowError("; ".join(problems))
        self._plan = plan

    def execute(self, window: Window) -> None:  # type: ignore[override]
        """Join the window's tuples; emit each row anchored to the tuples it came from.

        Args:
            window: the window's tuples.
        """
        for values, anchors in self._plan.rows(window.tuples):
            self.emit(values, anchors, self.output_stream)


def _join_field(name: str, field: str) -> str:
    if not isinstance(field, str) or not field or ":" in field:
        raise ValueError(
            f"JoinBolt: join field of {name!r} must be a plain field name (the stream is "
            f"implicit), got {field!r}"
        )
    return field


def _inputs(spec: ComponentSpec, components: Mapping[str, ComponentSpec]) -> list[Input]:
    """The bolt's inputs whose stream is declared (the rest are reported by the input
    checks)."""
    out = []
    for inp in spec.inputs:
        source = components.get(inp.component)
        stream = source.streams.get(inp.stream) if source is not None else None
        if stream is not None:
            out.append((inp.component, inp.stream, tuple(stream.fields)))
    return out


def _missing(where: str, what: str, inputs: Sequence[Input], field: str) -> list[str]:
    """One problem per input of ``inputs`` that does not declare ``field``."""
    return [
        f"{where}: {what}: input {c!r} stream {s!r} has no field {field!r} (fields: {list(f)})"
        for c, s, f in inputs
        if field not in f
    ]


def _column(
    where: str,
    noun: str,
    sel: Selected,
    names: list[str],
    of: Mapping[str, list[Input]],
    out: list[str],
) -> tuple[int, str] | None:
    """Where selected field ``sel`` comes from, as (stream position, field); None and a
    problem appended to ``out`` when it is unknown, missing or ambiguous."""
    what = f"select {sel.text!r}"
    stream = sel.stream
    if stream is None:
        having = [n for n in names if any(sel.field in f for _, _, f in of.get(n, ()))]
        if not having:
            fields = "; ".join(
                f"{n}: {sorted({x for _, _, f in of.get(n, ()) for x in f})}" for n in names
            )
            out.append(f"{where}: {what}: no joined {noun} declares field {sel.field!r} ({fields})")
            return None
        if len(having) > 1:
            qualified = " or ".join(f"'{n}:{sel.field}'" for n in having)
            out.append(
                f"{where}: {what}: field {sel.field!r} is declared by {noun}s "
                f"{', '.join(map(repr, having))}: write {qualified}"
            )
            return None
        stream = having[0]
    elif stream not in names:
        out.append(
            f"{where}: {what}: {stream!r} is not a joined {noun} (joined: "
            f"{', '.join(map(repr, names))})"
        )
        return None
    problems = _missing(where, what, of.get(stream, []), sel.field)
    out.extend(problems)
    return None if problems else (names.index(stream), sel.field)

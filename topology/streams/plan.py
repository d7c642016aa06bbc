"""From the stream graph to components: fusion, names, groupings.

A node heads a new component unless fusion is on and it is stateless, reads exactly one
node, that node is a stream operator or a spout (not a hand-written bolt) and it has the
same parallelism: then it runs inside its parent's component (Flink's chaining; after a
spout, in the spout's task: :mod:`.chained_spout`, the component keeping the spout's
name).  A
window's ``late`` stream always runs inside its window's component, a branch's streams
inside the branch's.  Keyed operators read
their input with a fields grouping on ``key``, a window of a plain stream with a global
grouping (two phases: the first with a forward grouping, the second a global one), a
repartition with a shuffle, anything else local-or-shuffle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from topology.builder import BoltDeclarer, TopologyBuilder
from topology.components import OutputFieldsDeclarer
from topology.constants import DEFAULT_STREAM, PROGRESS_STREAM
from topology.errors import TopologyValidationError
from topology.names import MAX_NAME_CHARS, name_problem
from topology.stateful import StatefulBolt, is_checkpointed

from . import progress
from .async_component import AsyncOperatorBolt
from .chained_spout import chained
from .components import (
    FusedBolt,
    FusedValueBolt,
    Input,
    KeyedStateBolt,
    Operators,
    RunningAggregateBolt,
)
from .graph import KEYED, Node, sanitized
from .joins import JOIN_KINDS, join_component, set_timer
from .keyed_operators import OPS, CheckpointedKeyedOperatorBolt, KeyedOperatorBolt
from .steps import Step
from .window_aggregates import ForwardGrouping
from .window_components import (
    AggregateWindowBolt,
    CombineWindowBolt,
    StatefulAggregateWindowBolt,
    StatefulCombineWindowBolt,
    StatefulWindowOperatorBolt,
    WindowOperatorBolt,
)

#: Node kinds written by the author (a spout's stream chains into it: :func:`_chains`).
HAND_WRITTEN = ("spout", "bolt")


@dataclass(eq=False)
class Planned:
    """One component: its head node and the nodes fused after it."""

    head: Node
    nodes: list[Node] = field(default_factory=list)
    id: str = ""
    streams: dict[int, str] = field(default_factory=dict)  # node id -> its output stream


def plan(nodes: list[Node], builder: TopologyBuilder, fusion: bool) -> list[Planned]:
    """Add the components of ``nodes`` (in creation order: parents first) to ``builder``."""
    _name_nodes(nodes)
    owner: dict[int, Planned] = {}
    planned: list[Planned] = []
    for node in nodes:
        parent = node.parents[0] if len(node.parents) == 1 else None
        fused = node.kind in ("late", "route") or (
            fusion
            and node.stateless
            and parent is not None
            and (parent.kind != "bolt" and (parent.kind != "spout" or _chains(parent)))
            and parent.parallelism == node.parallelism
        )
        if fused and parent is not None:
            owner[node.id] = owner[parent.id]
            owner[node.id].nodes.append(node)
        else:
            owner[node.id] = Planned(node, [node])
            planned.append(owner[node.id])
    taken = {spec.id for spec in builder._components}
    for component in planned:
        component.id = _component_id(component, taken)
        _output_streams(component, owner)
    checkpointed = _checkpointed(nodes, builder)
    marking = _marking(planned, owner)
    for component in planned:
        _add(component, owner, builder, checkpointed, marking)
    return planned


def _event_time(node: Node) -> bool:
    windowing = node.options.get("windowing")
    if node.kind == "interval_join":
        return True
    return node.kind in ("window", "join") and getattr(windowing, "timestamp", None) is not None


def _marking(planned: list[Planned], owner: dict[int, Planned]) -> set[str]:
    """The components that send progress marks (:mod:`topology.streams.progress`): the
    stream components an event-time window reads (not a hand-written one, nor
    ``map_async``'s; a spout when the window reads operators chained to it)."""
    return {
        owner[parent.id].id
        for component in planned
        if _event_time(component.head)
        for parent in component.head.parents
        if _marks(owner[parent.id], parent)
    }


def _marks(component: Planned, node: Node) -> bool:
    """Whether ``component`` can send progress marks behind ``node``'s results."""
    head = component.head
    if head.kind == "spout":  # from its task, behind the operators chained to it
        return node is not head
    return head.kind not in ("bolt", "async")


def _chains(spout: Node) -> bool:
    """Whether stateless operators reading ``spout`` may run in its task: its stream is not
    a direct one (its tuples go to the task it says).  Components reading the spout's own
    tuples still get them (:mod:`.chained_spout`)."""
    stream = spout.options.get("stream", DEFAULT_STREAM)
    return not _streams(spout.options["instance"]).get(stream, (None, False))[1]


def _streams(spout: Any) -> dict[str, tuple[list[str], bool]]:
    """The streams ``spout`` declares: ``{stream: (fields, direct)}``."""
    declarer = OutputFieldsDeclarer()
    spout.declare_output_fields(declarer)
    return {s: (list(d.fields), d.direct) for s, d in declarer.streams.items()}


def _unused(name: str, streams: Mapping[str, Any]) -> str:
    """``name``, or ``name`` with ``_`` after it, as a stream the spout does not declare."""
    while name in streams:
        name += "_"
    return name


def _checkpointed(nodes: list[Node], builder: TopologyBuilder) -> bool:
    """Whether the topology will take checkpoints: an ``update_state_by_key``, or a
    hand-written ``StatefulBolt`` (given to ``to()`` or already in the builder).  Then the
    running aggregations and windows keep their contents in checkpointed state too, or a
    rollback would replay into them what they already hold."""
    return (
        any(n.kind == "state" for n in nodes)
        or any(isinstance(n.options.get("instance"), StatefulBolt) for n in nodes)
        or is_checkpointed(builder._components)
    )


def _name_nodes(nodes: list[Node]) -> None:
    """Names given by the author stay as they are (checked by the name rule, unique);
    the others are made unique with ``-2``, ``-3``... around them."""
    problems = []
    taken: set[str] = set()
    for node in nodes:
        if node.options.get("phase") == "partial":  # a window's first phase: after its second
            second = next(c for c in node.children if c.kind == "window_combine")
            node.name = f"{second.name}-partial"
    for node in nodes:
        if node.options.get("named"):
            problem = name_problem("stream operator", node.name)
            if node.name in taken:
                problem = f"two stream operators are named {node.name!r}: name one differently"
            if problem:
                problems.append(problem)
            taken.add(node.name)
    if problems:
        raise TopologyValidationError(problems)
    for node in nodes:
        if node.options.get("named"):
            continue
        base = sanitized(node.name) or node.kind
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        node.name = name
        taken.add(name)


def _component_id(component: Planned, taken: set[str]) -> str:
    """The component's id: its operators' names; made unique with ``-2``... unless it is a
    name the author gave, which must not clash with a hand-written component."""
    nodes = [component.head] if component.head.kind == "spout" else component.nodes
    name = "-".join(n.name for n in nodes if n.kind not in ("late", "route"))
    name = name[:MAX_NAME_CHARS]
    given = len(nodes) == 1 and component.head.options.get("named")
    if given and name in taken:
        raise TopologyValidationError(
            [
                f"stream operator {name!r}: the topology has a component of that name already; "
                "name it differently"
            ]
        )
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        suffix = f"-{n}"
        candidate = name[: MAX_NAME_CHARS - len(suffix)] + suffix
    taken.add(candidate)
    return candidate


def _output_streams(component: Planned, owner: dict[int, Planned]) -> None:
    """Give each node read by another component an output stream — and each last node of
    a stream but ``for_each`` (as a hand-written bolt declares and emits its results even
    when nothing subscribes: the testing kit's capture, and bolts added later, read them)."""
    exits = []
    for node in component.nodes:
        results = [c for c in node.children if c.kind != "late"]  # a window's late stream
        if any(owner[c.id] is not component for c in results) or (
            not results and node.kind not in ("for_each", "late")
        ):
            exits.append(node)
    head = component.head
    for node in exits:
        if node is head and head.kind in HAND_WRITTEN:
            component.streams[node.id] = head.options.get("stream", DEFAULT_STREAM)
        elif head.kind == "spout":  # operators chained to it: beside the spout's streams
            component.streams[node.id] = _unused(node.name, _streams(head.options["instance"]))
        elif len(exits) == 1:
            component.streams[node.id] = DEFAULT_STREAM
        else:
            component.streams[node.id] = node.name


def _add(
    component: Planned,
    owner: dict[int, Planned],
    builder: TopologyBuilder,
    checkpointed: bool,
    marking: set[str],
) -> None:
    head = component.head
    if head.kind == "spout":
        spout = head.options["instance"]
        if len(component.nodes) > 1:  # operators chained to it
            component.streams.setdefault(head.id, head.options.get("stream", DEFAULT_STREAM))
            operators = _operators(component, owner)
            if component.id in marking:
                progress.progress_outputs(operators.outputs)
            spout = chained(spout, operators)
            if component.id in marking:
                spout.send_progress_marks(progress.PROGRESS_SECS)
        builder.set_spout(component.id, spout, head.parallelism)
        return
    if head.kind == "bolt":
        declarer = builder.set_bolt(component.id, head.options["instance"], head.parallelism)
    else:
        operators = _operators(component, owner)
        cls = _component_class(head, operators, checkpointed)
        marks = component.id in marking
        if marks:
            progress.progress_outputs(operators.outputs)
            cls = progress.marking(cls) or cls
        instance = cls(operators)
        if marks and isinstance(instance, WindowOperatorBolt):  # marks from its own timer
            instance.send_progress_marks(progress.PROGRESS_SECS)
        # state is kept under the stateful operator's name, not the component's (which
        # grows when operators fuse after it), so adding a map keeps the state found
        uid = head.name if head.kind in STATE_HEADS and head.name != component.id else None
        declarer = builder.set_bolt(component.id, instance, head.parallelism, uid=uid)
        if head.kind in JOIN_KINDS:  # its own timer: expiry, watermark (and marks)
            set_timer(declarer, instance, marks)
        else:
            progress.set_ticks(declarer, marks and not isinstance(instance, WindowOperatorBolt))
    for parent in head.parents:
        source = owner[parent.id]
        _subscribe(declarer, head, source.id, source.streams[parent.id])
    for source_id in sorted({owner[p.id].id for p in head.parents} & marking):
        if _event_time(head):
            declarer.all_grouping(source_id, PROGRESS_STREAM)


#: Operators that head a component keeping state (its uid is theirs).
STATE_HEADS = frozenset({"state", "aggregate", "window", "window_combine", "join", *JOIN_KINDS})


def _component_class(head: Node, operators: Operators, checkpointed: bool) -> Any:
    if head.kind == "async":
        return AsyncOperatorBolt
    if head.kind in JOIN_KINDS:
        return join_component(checkpointed)
    if head.kind == "window_combine":
        return StatefulCombineWindowBolt if checkpointed else CombineWindowBolt
    if head.kind == "window" and head.options.get("incremental"):
        return StatefulAggregateWindowBolt if checkpointed else AggregateWindowBolt
    if head.kind in ("window", "join"):
        return StatefulWindowOperatorBolt if checkpointed else WindowOperatorBolt
    if head.kind == "aggregate" and head.options["op"] in OPS:  # top-N, dedup, distinct...
        return CheckpointedKeyedOperatorBolt if checkpointed else KeyedOperatorBolt
    if head.kind == "state" or (head.kind == "aggregate" and checkpointed):
        return KeyedStateBolt
    if head.kind == "aggregate":
        return RunningAggregateBolt
    if all(i.decode == "value" for i in operators.inputs):
        return FusedValueBolt
    return FusedBolt


def _subscribe(declarer: BoltDeclarer, head: Node, component: str, stream: str) -> None:
    keyed = head.kind in KEYED or (head.kind == "window" and head.pair) or head.options.get("keyed")
    if keyed:
        declarer.fields_grouping(component, ["key"], stream)
    elif head.options.get("forward"):  # a two-phase window's first phase: task i to task i
        declarer.custom_grouping(component, ForwardGrouping(), stream)
    elif head.kind in ("window", "window_combine"):
        declarer.global_grouping(component, stream)
    elif head.options.get("shuffle"):
        declarer.shuffle_grouping(component, stream)
    else:
        declarer.local_or_shuffle_grouping(component, stream)


def _operators(component: Planned, owner: dict[int, Planned]) -> Operators:
    inside = {n.id for n in component.nodes}
    steps = {
        n.id: Step(
            n.id,
            n.kind,
            n.name,
            n.options.get("fn"),
            n.pair,
            [c.id for c in n.children if c.id in inside],
            component.streams.get(n.id),
            {k: v for k, v in n.options.items() if k not in ("fn", "instance", "named")},
        )
        for n in component.nodes
    }
    inputs = []
    head = component.head
    if head.kind == "spout":  # operators chained to it read its stream in its task
        steps[head.id].stream = None  # (its own tuples: the spout emits them itself)
        own = head.fields or []
        kind = "value" if len(own) == 1 else "record"
        inputs.append(Input(component.id, component.streams[head.id], kind, own))
    for side, parent in enumerate(head.parents):
        source = owner[parent.id]
        kind = "pair" if parent.pair else "value"
        fields = parent.fields
        if fields is not None:  # a hand-written component: its value, or a dict of fields
            kind = "value" if len(fields) == 1 else "record"
        inputs.append(Input(source.id, source.streams[parent.id], kind, fields, side))
    by_id = {n.id: n for n in component.nodes}
    outputs = {
        stream: by_id[node_id].output_fields for node_id, stream in component.streams.items()
    }
    return Operators(steps, component.head.id, inputs, outputs)

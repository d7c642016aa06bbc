"""The immutable description of a topology that ``TopologyBuilder.create_topology`` returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from grouping import GroupingSpec

from .components import Component, Stream
from .constants import DEAD_LETTER_STREAM, PROGRESS_STREAM

ComponentKind = Literal["spout", "bolt"]


@dataclass(frozen=True)
class InputSpec:
    """A subscription: tuples of ``component`` on ``stream`` routed by ``grouping``."""

    component: str
    stream: str
    grouping: GroupingSpec


@dataclass
class ComponentSpec:
    """One spout or bolt: the author's instance, its task count, streams and inputs."""

    id: str
    kind: ComponentKind
    instance: Component
    parallelism: int
    num_tasks: int
    streams: dict[str, Stream]
    inputs: list[InputSpec] = field(default_factory=list)
    conf: dict[str, Any] = field(default_factory=dict)
    #: Whether the author gave ``num_tasks`` (else it is ``parallelism``, and a bad value
    #: is reported once, as the parallelism's).
    num_tasks_given: bool = True
    #: The stable id its state is stored and restored under (savepoints, upgrades): the
    #: author's ``uid=``, else the component id.  Give a renamed component its old id.
    uid: str | None = None

    @property
    def state_id(self) -> str:
        """The id its state is kept under: ``uid`` if given, else ``id``."""
        return self.uid or self.id

    @property
    def data_inputs(self) -> list[InputSpec]:
        """Its subscriptions to elements: all but the event-time progress marks a stream
        window takes from every input task (an all grouping that says nothing of how its
        state is keyed)."""
        return [i for i in self.inputs if i.stream != PROGRESS_STREAM]


@dataclass
class Topology:
    """A validated topology: components in declaration order, ready to submit.

    Made by :meth:`TopologyBuilder.create_topology`; submit it to a
    :class:`~topology.LocalCluster` or a :class:`~topology.Cluster`.

    Args:
        components: component id -> its :class:`ComponentSpec`, in declaration order.

    Example:
        >>> from topology import TopologyBuilder
        >>> from topology.testing import CaptureBolt, FeederSpout
        >>> builder = TopologyBuilder()
        >>> _ = builder.set_spout("words", FeederSpout(["word"]))
        >>> _ = builder.set_bolt("count", CaptureBolt(), 2).shuffle_grouping("words")
        >>> built = builder.create_topology()
        >>> [c.id for c in built.spouts], [(c.id, c.num_tasks) for c in built.bolts]
        (['words'], [('count', 2)])
        >>> [c.id for c, _ in built.subscribers("words", "default")]
        ['count']
    """

    components: dict[str, ComponentSpec]

    @property
    def spouts(self) -> list[ComponentSpec]:
        """The spouts, in declaration order."""
        return [c for c in self.components.values() if c.kind == "spout"]

    @property
    def bolts(self) -> list[ComponentSpec]:
        """The bolts, in declaration order."""
        return [c for c in self.components.values() if c.kind == "bolt"]

    def subscribers(self, component: str, stream: str) -> list[tuple[ComponentSpec, InputSpec]]:
        """Who consumes a stream.

        Args:
            component: the emitting component's id.
            stream: its stream.

        Returns:
            Every (subscribing component, its subscription) pair, in declaration order.
        """
        return [
            (c, i)
            for c in self.components.values()
            for i in c.inputs
            if i.component == component and i.stream == stream
        ]

    def with_component(self, spec: ComponentSpec) -> Topology:
        """A copy with one more component, or with one replaced (for testing helpers).

        Args:
            spec: the component to add (replacing the one with the same id).

        Returns:
            The new topology; this one is unchanged.
        """
        components = dict(self.components)
        components[spec.id] = spec
        return Topology(components)


def describe_components(topology: Topology) -> dict[str, Any]:
    """A JSON summary of the components (for ``list``, status and humans reading ZooKeeper);
    a Streams API component also lists its ``operators`` (several: fused).  The dead-letter
    stream every component has is listed where something subscribes to it."""
    return {
        c.id: {
            **_operators(c.instance),
            "kind": c.kind,
            "uid": c.state_id,
            "tasks": c.num_tasks,
            "streams": {
                s: list(d.fields)
                for s, d in c.streams.items()
                if s != DEAD_LETTER_STREAM or topology.subscribers(c.id, s)
            },
            "inputs": [
                {
                    "component": i.component,
                    "stream": i.stream,
                    "grouping": i.grouping.kind,
                    "fields": list(i.grouping.fields),
                }
                for i in c.inputs
            ],
        }
        for c in topology.components.values()
    }


def _operators(instance: Any) -> dict[str, list[str]]:
    operators = getattr(instance, "stream_operators", None)
    return {"operators": [str(o) for o in operators]} if isinstance(operators, list) else {}

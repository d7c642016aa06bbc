"""What a task knows about itself and the topology (passed to ``open`` / ``prepare``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .assignment import Assignment
from .constants import DEFAULT_STREAM
from .metrics import Counter, Gauge, Histogram, MetricsRegistry
from .spec import Topology


@dataclass(frozen=True)
class TopologyContext:
    """Read-only facts for one task, passed to ``open`` / ``prepare`` (the runtime makes it).

    Example: the context of task 3 of ``count`` (built by hand here; a component
    receives its own):

        >>> from topology import TopologyBuilder
        >>> from topology.assignment import assign
        >>> from topology.testing import CaptureBolt, FeederSpout
        >>> builder = TopologyBuilder()
        >>> _ = builder.set_spout("words", FeederSpout(["word"]), parallelism=2)
        >>> _ = builder.set_bolt("count", CaptureBolt(), 3).shuffle_grouping("words")
        >>> assignment = assign({"words": 2, "count": 3}, 1)
        >>> context = TopologyContext(
        ...     "wc", "count", 3, 2, 0, (1, 2, 3, 4, 5), builder.create_topology(), assignment
        ... )
        >>> context.component_tasks(), context.component_tasks("words")
        ([1, 2, 3], [4, 5])
        >>> context.component_of(4), context.output_fields("words")
        ('words', ['word'])
        >>> context.subscribers()  # nothing reads what count emits
        []
        >>> seen = context.register_counter("seen", "words seen")
        >>> seen.inc()

    Args:
        topology_name: as in Attributes.
        component_id: as in Attributes.
        task_id: as in Attributes.
        task_index: as in Attributes.
        worker_index: as in Attributes.
        worker_tasks: as in Attributes.
        _topology: the validated topology.
        _assignment: which task runs in which worker.
        metrics: this task's user metrics (default: a new registry).

    Attributes:
        topology_name: the name the topology was submitted under.
        component_id: this task's component.
        task_id: this task's id (unique in the topology).
        task_index: 0-based position of this task among its component's tasks.
        worker_index: the worker hosting this task.
        worker_tasks: every task id hosted by this worker.
    """

    topology_name: str
    component_id: str
    task_id: int
    task_index: int
    worker_index: int
    worker_tasks: tuple[int, ...]
    _topology: Topology
    _assignment: Assignment
    #: This task's user metrics (see :mod:`topology.metrics`).
    metrics: MetricsRegistry = field(default_factory=MetricsRegistry, compare=False)

    def component_tasks(self, component_id: str | None = None) -> list[int]:
        """The task ids of a component.

        Args:
            component_id: the component (default: this task's own).

        Returns:
            Its task ids, ascending.

        Raises:
            KeyError: no such component.
        """
        return list(self._assignment.component_tasks[component_id or self.component_id])

    def component_of(self, task_id: int) -> str:
        """The component a task belongs to.

        Args:
            task_id: the task's id.

        Returns:
            The component's id.

        Raises:
            KeyError: no such task.
        """
        return self._assignment.task_component[task_id]

    def subscribers(self, stream: str = DEFAULT_STREAM) -> list[str]:
        """The components that subscribe to one of this task's component's streams
        (Storm's ``getThisTargets``, for one stream).

        Args:
            stream: the stream.

        Returns:
            Their ids, sorted (empty: what it emits there reaches no one).
        """
        me = self.component_id
        return sorted(
            c.id
            for c in self._topology.components.values()
            if any(i.component == me and i.stream == stream for i in c.inputs)
        )

    def output_fields(
        self, component_id: str | None = None, stream: str = DEFAULT_STREAM
    ) -> list[str]:
        """The declared fields of a component's stream.

        Args:
            component_id: the component (default: this task's own).
            stream: its stream.

        Returns:
            The field names, in order.

        Raises:
            KeyError: no such component or stream.
        """
        spec = self._topology.components[component_id or self.component_id]
        return list(spec.streams[stream].fields)

    # -- user metrics (Storm's registerCounter / registerGauge / registerHistogram) ---------

    def register_counter(self, name: str, description: str = "") -> Counter:
        """A counter of this task, exported as ``sparkstorm_user_<name>_total``.

        Args:
            name: the metric's name (letters, digits, underscores).
            description: its help text.

        Returns:
            The counter (``inc(amount)`` it); registering the name again returns it.

        Raises:
            MetricError: ``name`` is not made of letters, digits and underscores, is
                already another kind of metric, or the task has too many metrics.
        """
        return self.metrics.register(name, lambda: Counter(description))

    def register_gauge(
        self, name: str, read: Callable[[], float] | None = None, description: str = ""
    ) -> Gauge:
        """A gauge of this task.

        Args:
            name: the metric's name (letters, digits, underscores).
            read: called at each export to read the value (else ``set()`` the gauge).
            description: its help text.

        Returns:
            The gauge; registering the name again returns it.

        Raises:
            MetricError: ``name`` is not made of letters, digits and underscores, is
                already another kind of metric, or the task has too many metrics.
        """
        return self.metrics.register(name, lambda: Gauge(read, description))

    def register_histogram(
        self, name: str, buckets: Iterable[float] | None = None, description: str = ""
    ) -> Histogram:
        """A histogram of this task.

        Args:
            name: the metric's name (letters, digits, underscores).
            buckets: the buckets' upper bounds, ascending (default: the standard ones).
            description: its help text.

        Returns:
            The histogram (``observe(value)`` it); registering the name again returns it.

        Raises:
            MetricError: ``name`` is not made of letters, digits and underscores, is
                already another kind of metric, or the task has too many metrics.
        """
        return self.metrics.register(name, lambda: Histogram(buckets, description))

    def __repr__(self) -> str:
        return (
            f"TopologyContext({self.topology_name!r}, {self.component_id!r}, task={self.task_id})"
        )

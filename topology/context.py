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
    """Read-only facts for one task.

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
        """Task ids of ``component_id`` (default: this component), ascending."""
        return list(self._assignment.component_tasks[component_id or self.component_id])

    def component_of(self, task_id: int) -> str:
        """The component a task id belongs to."""
        return self._assignment.task_component[task_id]

    def output_fields(
        self, component_id: str | None = None, stream: str = DEFAULT_STREAM
    ) -> list[str]:
        """Declared fields of a component's stream."""
        spec = self._topology.components[component_id or self.component_id]
        return list(spec.streams[stream].fields)

    # -- user metrics (Storm's registerCounter / registerGauge / registerHistogram) ---------

    def register_counter(self, name: str, description: str = "") -> Counter:
        """A counter of this task, exported as ``sparkstorm_user_<name>_total``."""
        return self.metrics.register(name, lambda: Counter(description))

    def register_gauge(
        self, name: str, read: Callable[[], float] | None = None, description: str = ""
    ) -> Gauge:
        """A gauge of this task: ``set()`` it, or pass ``read`` (called at each export)."""
        return self.metrics.register(name, lambda: Gauge(read, description))

    def register_histogram(
        self, name: str, buckets: Iterable[float] | None = None, description: str = ""
    ) -> Histogram:
        """A histogram of this task with ``buckets`` (ascending upper bounds)."""
        return self.metrics.register(name, lambda: Histogram(buckets, description))

    def __repr__(self) -> str:
        return (
            f"TopologyContext({self.topology_name!r}, {self.component_id!r}, task={self.task_id})"
        )

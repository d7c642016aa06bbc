"""What a task knows about itself and the topology (passed to ``open`` / ``prepare``)."""

from __future__ import annotations

from dataclasses import dataclass

from .assignment import Assignment
from .constants import DEFAULT_STREAM
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

    def __repr__(self) -> str:
        return (
            f"TopologyContext({self.topology_name!r}, {self.component_id!r}, task={self.task_id})"
        )

"""Task ids and the assignment of tasks to workers (pure: no I/O).

Task ids are 1..N, given component by component in sorted component-id order (system
components such as ackers included), so every process derives the same ids from the same
topology.  Tasks are dealt round-robin to workers component by component, which spreads
every component evenly and balances the total.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .config import num_ackers
from .constants import ACKER_COMPONENT, COORDINATOR_COMPONENT
from .spec import Topology
from .stateful import is_checkpointed


@dataclass(frozen=True)
class Assignment:
    """Which task runs where.

    Attributes:
        component_tasks: component id -> its task ids, ascending.
        task_component: task id -> component id.
        worker_tasks: worker index -> the task ids it hosts, ascending.
    """

    component_tasks: dict[str, list[int]]
    task_component: dict[int, str]
    worker_tasks: list[list[int]]

    @property
    def num_workers(self) -> int:
        return len(self.worker_tasks)

    def worker_of(self) -> dict[int, int]:
        """task id -> worker index."""
        return {t: w for w, tasks in enumerate(self.worker_tasks) for t in tasks}


def task_counts(topology: Topology, conf: Mapping[str, Any]) -> dict[str, int]:
    """Tasks per component, with the system components: the ackers when acking is on, or,
    in a checkpointed topology (one with state), the checkpoint coordinator instead (its
    msg ids complete with checkpoints, not tuple trees)."""
    counts = {c.id: c.num_tasks for c in topology.components.values()}
    if is_checkpointed(topology.components.values()):
        counts[COORDINATOR_COMPONENT] = 1
        return counts
    ackers = num_ackers(conf)
    if ackers:
        counts[ACKER_COMPONENT] = ackers
    return counts


def with_task_counts(topology: Topology, assignment: Assignment) -> Topology:
    """``topology`` with each component's ``num_tasks`` and ``parallelism`` equal to its
    number of tasks in ``assignment`` (the nimbus assigns a rescaled component its new
    count, ``rebalance --component``; the pickled topology still has the count it was
    submitted with), so that contexts, groupings and the checkpoint restore see the tasks
    that run.  The same topology when every count agrees; a component the assignment does
    not list keeps its own."""
    components = {}
    for cid, spec in topology.components.items():
        tasks = assignment.component_tasks.get(cid)
        if tasks is None or len(tasks) == spec.num_tasks:
            components[cid] = spec
        else:
            components[cid] = replace(spec, num_tasks=len(tasks), parallelism=len(tasks))
    if all(components[c] is spec for c, spec in topology.components.items()):
        return topology
    return replace(topology, components=components)


def assign(task_counts: Mapping[str, int], num_workers: int) -> Assignment:
    """Number the tasks of each component and deal them to ``num_workers`` workers."""
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    component_tasks: dict[str, list[int]] = {}
    task_component: dict[int, str] = {}
    worker_tasks: list[list[int]] = [[] for _ in range(num_workers)]
    next_id = 1
    deal = 0
    for component in sorted(task_counts):
        ids = list(range(next_id, next_id + task_counts[component]))
        next_id += len(ids)
        component_tasks[component] = ids
        for t in ids:
            task_component[t] = component
            worker_tasks[deal % num_workers].append(t)
            deal += 1
    return Assignment(component_tasks, task_component, [sorted(w) for w in worker_tasks])


def to_json(assignment: Assignment, attempt: int) -> dict[str, Any]:
    """The assignment as stored in ZooKeeper (JSON keys are strings)."""
    return {
        "attempt": attempt,
        "workers": assignment.num_workers,
        "component_tasks": assignment.component_tasks,
        "worker_tasks": assignment.worker_tasks,
    }


def from_json(data: Mapping[str, Any]) -> Assignment:
    """Inverse of :func:`to_json` (the attempt number is read separately)."""
    component_tasks = {c: list(tasks) for c, tasks in data["component_tasks"].items()}
    task_component = {t: c for c, tasks in component_tasks.items() for t in tasks}
    return Assignment(component_tasks, task_component, [list(w) for w in data["worker_tasks"]])

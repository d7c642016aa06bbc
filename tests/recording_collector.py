"""A stand-in for the runtime's collector that records what a component does, and a
context, for tests that drive a spout or bolt by hand (the connector tests)."""

from __future__ import annotations

from typing import Any

from topology.assignment import Assignment
from topology.components import Component
from topology.connectors.source import PartitionedSource
from topology.constants import COORDINATOR_COMPONENT
from topology.context import TopologyContext


class Recorder:
    """Stands in for the runtime collector: records what the component does."""

    #: The component and task it stands for (what dead letters name).
    component = "c"
    task = 0

    def __init__(self) -> None:
        #: Inputs handed to the failure policy: (tuple, error, attempt, how).
        self.input_failures: list[tuple[Any, BaseException, int, dict[str, bool]]] = []
        self.emitted: list[tuple[str, list[Any], Any]] = []
        self.acked: list[Any] = []
        self.failed: list[Any] = []
        self.errors: list[Any] = []
        self.logged: list[str] = []

    def emit(self, values: Any, msg_id_or_anchors: Any = None, stream: str = "default") -> list:
        self.emitted.append((stream, list(values), msg_id_or_anchors))
        return []

    def ack(self, tup: Any) -> None:
        self.acked.append(tup)

    def fail(self, tup: Any, error: Any = None) -> None:
        self.failed.append(tup)

    def input_failed(self, tup: Any, error: BaseException, attempts: int = 1, **how: bool) -> None:
        self.input_failures.append((tup, error, attempts, how))

    def report_error(self, error: Any) -> None:
        self.errors.append(error)

    def log(self, message: str) -> None:
        self.logged.append(message)

    def on(self, stream: str = "default") -> list[list[Any]]:
        return [values for s, values, _ in self.emitted if s == stream]


def context(component: str, tasks: int = 1, index: int = 0, checkpointed: bool = False) -> Any:
    """Task ``index`` of ``tasks`` of ``component`` (with a checkpoint coordinator when
    ``checkpointed``), in a topology of nothing else."""
    counts = {component: tasks, **({COORDINATOR_COMPONENT: 1} if checkpointed else {})}
    ids: dict[str, list[int]] = {}
    next_id = 1
    for name in sorted(counts):
        ids[name] = list(range(next_id, next_id + counts[name]))
        next_id += counts[name]
    owners = {t: c for c, ts in ids.items() for t in ts}
    assignment = Assignment(ids, owners, [sorted(owners)])
    task = ids[component][index]
    return TopologyContext("t", component, task, index, 0, (task,), None, assignment)  # type: ignore[arg-type]


def bound(component: Component, tasks: int = 1, index: int = 0, **kw: Any) -> Recorder:
    """``component`` opened (a source) or prepared as task ``index`` of ``tasks`` of
    component ``c`` (``kw``: :func:`context`'s), recording what it does."""
    recorder = Recorder()
    component._collector = recorder
    ctx = context("c", tasks, index, **kw)
    if isinstance(component, PartitionedSource):
        component.open({}, ctx)
    else:
        component.prepare({}, ctx)  # type: ignore[attr-defined]
    return recorder

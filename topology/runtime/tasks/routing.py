"""Per-task output routes: for each declared stream, who subscribes and through which lanes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grouping import GroupingContext, create_grouping
from topology.assignment import Assignment
from topology.spec import Topology

from ..checkpoint.state_layout import keeps_keyed_state
from ..net.transfer import Transfer


class Target:
    """One subscribing component of a stream: its grouping and one lane per task."""

    __slots__ = ("component", "choose", "push", "tasks")

    def __init__(
        self,
        component: str,
        choose: Callable[[Any], list[int]],
        push: dict[int, tuple[Callable[[Any], None], Callable[[Any], None]]],
        tasks: frozenset[int],
    ) -> None:
        self.component = component
        self.choose = choose
        self.push = push
        self.tasks = tasks


class StreamRoute:
    """Everything an emit on one stream of one task needs, precomputed.

    Attributes:
        arity: number of declared fields (emits must match it).
        direct: the stream is a direct stream (``emit_direct`` only).
        targets: subscribers; empty when nobody listens (emits are then dropped, as in Storm).
        push: task id -> (append value, append meta) of that task's lane, for every target.
        choose_one: the grouping's ``choose_tasks`` when exactly one component subscribes
            with a built-in grouping (the common case: its list is copied, not rebuilt),
            else None.
        emitted: emit calls so far (stats): those of the Python paths (``counted``) and
            those a compiled emit took (``fast``, its FastRoute, when it has one:
            :mod:`topology.runtime.basic_path`, :mod:`topology.runtime.spout_path`).
    """

    __slots__ = (
        "stream",
        "fields",
        "arity",
        "direct",
        "targets",
        "push",
        "choose_one",
        "counted",
        "fast",
    )

    def __init__(self, stream: str, fields: tuple[str, ...], direct: bool) -> None:
        self.stream = stream
        self.fields = fields
        self.arity = len(fields)
        self.direct = direct
        self.targets: list[Target] = []
        self.push: dict[int, tuple[Callable[[Any], None], Callable[[Any], None]]] = {}
        self.choose_one: Callable[[Any], list[int]] | None = None
        self.counted = 0
        self.fast: Any = None

    @property
    def emitted(self) -> int:
        fast = self.fast
        return self.counted if fast is None else self.counted + fast.emitted


def build_routes(
    topology: Topology,
    assignment: Assignment,
    component_id: str,
    task_id: int,
    transfer: Transfer,
    worker_tasks: frozenset[int],
    key_groups: int = 128,
) -> dict[str, StreamRoute]:
    """Routes for every stream ``component_id`` declares, as seen from ``task_id``."""
    spec = topology.components[component_id]
    routes: dict[str, StreamRoute] = {}
    for stream, declared in spec.streams.items():
        route = routes[stream] = StreamRoute(stream, declared.fields, declared.direct)
        for subscriber, inp in topology.subscribers(component_id, stream):
            tasks = tuple(assignment.component_tasks[subscriber.id])
            grouping = create_grouping(inp.grouping)
            grouping.prepare(
                GroupingContext(
                    source_component=component_id,
                    source_task=task_id,
                    stream=stream,
                    source_fields=declared.fields,
                    target_component=subscriber.id,
                    target_tasks=tasks,
                    local_tasks=frozenset(t for t in tasks if t in worker_tasks),
                    grouping_fields=inp.grouping.fields,
                    # keyed state's key groups where the subscriber keeps some; else
                    # plain modulo (0), which spreads keys evenly over any task count
                    key_groups=key_groups if keeps_keyed_state(topology, subscriber.id) else 0,
                )
            )
            push = {}
            for t in tasks:
                lane = transfer.lane(task_id, stream, t)
                push[t] = (lane.push_val, lane.push_meta)
            route.push.update(push)
            route.targets.append(
                Target(subscriber.id, grouping.choose_tasks, push, frozenset(tasks))
            )
        subscribers = topology.subscribers(component_id, stream)
        if len(subscribers) == 1 and subscribers[0][1].grouping.kind != "custom":
            route.choose_one = route.targets[0].choose  # built-in: returns a list
    return routes

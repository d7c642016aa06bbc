"""Where each component's state lives in a checkpoint, and what kinds of state it has (pure).

Every piece of state is stored under a *scope* named after the component's stable id
(:attr:`~topology.spec.ComponentSpec.state_id`: its ``uid=``, else its id), so a new version
of a topology finds its state by uid whatever its components are now called:

========================  ================================================================
scope                     what it holds
========================  ================================================================
``<uid>``                 keyed key-value state (every input a fields grouping): keys
                          prefixed by their key group (:func:`topology.state.kv.key_bytes`),
                          any task count reads the groups it owns
``<uid>#<i>``             task ``i``'s own key-value state (other groupings), or a spout
                          task's ``position`` / ``pending`` msg ids and ``tasks`` (how many
                          tasks the spout had when it wrote them)
``<uid>/windows``         keyed windows' contents, one entry per window key, key-group
                          prefixed (the windows move with their keys)
``<uid>#<i>/windows``     task ``i``'s windows (not keyed), and each windowed task's clocks
========================  ================================================================

:func:`state_kinds` names the kinds a component has (they go into the topology's record,
so savepoint tooling and ``rebalance`` read them without the author's code).
"""

from __future__ import annotations

from typing import Any

from topology.spec import ComponentSpec, Topology
from topology.stateful import ReplayableSpout, StatefulBolt
from topology.windows.bolt import WindowedBolt

#: Kinds of state (:func:`state_kinds`).
KEYED = "keyed"  # key-value state partitioned by key group
TASK = "task"  # key-value state per task
KEYED_WINDOWS = "keyed-windows"  # window contents per window key
TASK_WINDOWS = "task-windows"  # window contents per task
TASK_BOUND = "task-bound"  # state its class ties to its tasks (``rescalable = False``)
POSITION = "position"  # a replayable spout's read position per task
MSG_IDS = "msg-ids"  # a spout's msg ids awaiting a checkpoint, per task
#: Kinds that a change of task count redistributes (the others are refused, or dropped).
RESCALABLE = frozenset({KEYED, KEYED_WINDOWS, POSITION, MSG_IDS})
#: The separators of scope names (never in a uid: names allow ``A-Za-z0-9_.-`` only).
_SEPARATORS = ("#", "/")


def keyed_scope(uid: str) -> str:
    return uid


def task_scope(uid: str, index: int) -> str:
    return f"{uid}#{index}"


def keyed_windows_scope(uid: str) -> str:
    return f"{uid}/windows"


def task_windows_scope(uid: str, index: int) -> str:
    return f"{uid}#{index}/windows"


def scope_uid(scope: str) -> str:
    """The uid a scope belongs to (the part before ``#`` or ``/``)."""
    cut = min((scope.find(s) for s in _SEPARATORS if s in scope), default=len(scope))
    return scope[:cut]


def keyed_inputs(topology: Topology, component: str) -> bool:
    """Whether every input of ``component`` is a fields grouping (its state is keyed)."""
    inputs = topology.components[component].data_inputs
    return bool(inputs) and all(i.grouping.kind == "fields" for i in inputs)


def keyed_windows(topology: Topology, component: str) -> bool:
    """Whether a windowed bolt's windows are keyed the way its tuples are routed: every
    input a fields grouping on exactly the window's key fields (``with_key``), so each
    window key lives in one key group and moves with it."""
    spec = topology.components[component]
    instance: Any = spec.instance
    if not isinstance(instance, WindowedBolt) or not keyed_inputs(topology, component):
        return False
    key = tuple(instance.window_spec.key_fields)
    return bool(key) and all(tuple(i.grouping.fields) == key for i in spec.data_inputs)


def state_kinds(topology: Topology, component: str) -> list[str]:
    """The kinds of state ``component`` keeps in a checkpointed topology (none: [])."""
    spec: ComponentSpec = topology.components[component]
    instance: Any = spec.instance
    if spec.kind == "spout":
        return [POSITION if isinstance(instance, ReplayableSpout) else MSG_IDS]
    kinds = []
    if isinstance(instance, StatefulBolt):
        kinds.append(KEYED if keyed_inputs(topology, component) else TASK)
        if not instance.rescalable:
            kinds.append(TASK_BOUND)
    if isinstance(instance, WindowedBolt):
        kinds.append(KEYED_WINDOWS if keyed_windows(topology, component) else TASK_WINDOWS)
    return kinds


def keeps_keyed_state(topology: Topology, component: str) -> bool:
    """Whether ``component`` keeps state by key group (so a fields grouping into it must
    route by key group too)."""
    return bool({KEYED, KEYED_WINDOWS} & set(state_kinds(topology, component)))


def describe_state(topology: Topology) -> dict[str, list[str]]:
    """Component id -> :func:`state_kinds` (for the topology's record)."""
    return {c: state_kinds(topology, c) for c in topology.components}


def rescale_problem(component: str, kinds: list[str], tasks: int, key_groups: int) -> str | None:
    """Why ``component`` (with state ``kinds``) cannot run as ``tasks`` tasks after a
    rescale, or None."""
    if TASK_BOUND in kinds:
        return (
            f"component {component!r} keeps state tied to its tasks (its class sets "
            "rescalable = False, as a transactional sink does for its open transactions), "
            "so its task count cannot change"
        )
    fixed = [k for k in kinds if k not in RESCALABLE]
    if fixed:
        return (
            f"component {component!r} keeps its state per task ({', '.join(fixed)}: its "
            "inputs are not all fields groupings on the state's key), so its task count "
            "cannot change; subscribe it with fields_grouping on the key it keeps state by"
        )
    if (KEYED in kinds or KEYED_WINDOWS in kinds) and tasks > key_groups:
        return (
            f"component {component!r} has keyed state in {key_groups} key groups "
            f"(topology.state.max.parallelism), so it cannot run as {tasks} tasks"
        )
    return None


def key_group_problems(topology: Topology, key_groups: int) -> list[str]:
    """Components with keyed state and more tasks than key groups (checked at submit: the
    fields grouping and the state would disagree on where keys belong)."""
    return [
        f"component {c.id!r} has keyed state and {c.num_tasks} tasks, more than its "
        f"{key_groups} key groups: raise topology.state.max.parallelism to at least "
        f"{c.num_tasks} or lower its parallelism"
        for c in topology.components.values()
        if c.num_tasks > key_groups and keeps_keyed_state(topology, c.id)
    ]

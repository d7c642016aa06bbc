"""A rebalance that changes components' task counts (Storm's ``rebalance -e``): its checks
and its outcome, from the topology's record alone (pure: no user code, no I/O).

A rebalance request (``record["rebalance"]``) may carry ``components``: component id -> its
new task count.  The client checks it before it writes anything
(:meth:`~topology.deploy.cluster.client.Cluster.rebalance`), and the nimbus again before it
deactivates anything and before it assigns (the request is an unsigned field anyone who
reaches ZooKeeper may write): :func:`components_problem`.  The new counts then become part
of the topology: the nimbus writes them into ``record["components"][c]["tasks"]`` (a signed
field, re-signed by the nimbus after it verified the record) and assigns from them, so later
restarts and rebalances keep them; a worker takes its components' counts from the
assignment (:func:`topology.assignment.with_task_counts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from topology import config as cfg
from topology.constants import ACKER_COMPONENT, COORDINATOR_COMPONENT
from topology.runtime.checkpoint.state_layout import KEYED, TASK, rescale_problem
from topology.state.kv import DEFAULT_KEY_GROUPS

from .limits import local_slots, rebalance_problem

#: Most tasks one component may be rescaled to (the most an assignment holds).
MAX_COMPONENT_TASKS = 100_000
#: Most components one request may rescale.
MAX_RESCALED_COMPONENTS = 1_000


@dataclass(frozen=True)
class Rebalanced:
    """What a rebalance did: the topology's worker count now, and each rescaled
    component's task count before and after (``{"count": (2, 4)}``)."""

    workers: int
    tasks: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def describe(self) -> str:
        """``on 3 worker(s); count: 2 -> 4 tasks, split: 1 -> 2 tasks``."""
        moved = ", ".join(f"{c}: {old} -> {new} tasks" for c, (old, new) in self.tasks.items())
        return f"on {self.workers} worker(s)" + (f"; {moved}" if moved else "")


def checkpointed(components: Mapping[str, Any]) -> bool:
    """Whether the record's ``components`` describe a checkpointed topology: one with a
    stateful bolt (key-value state, keyed or per task), as
    :func:`topology.stateful.is_checkpointed` decides from the code."""
    return any(
        KEYED in kinds or TASK in kinds
        for kinds in (_kinds(info) for info in components.values() if isinstance(info, Mapping))
    )


def components_problem(name: str, record: Mapping[str, Any], components: object) -> str | None:
    """Why topology ``name`` (its ``record``) cannot run its components with the task counts
    in ``components`` (component id -> count), or None when it can.

    Every name must be a component of the topology (the message lists them), every count
    an integer from 1 to :data:`MAX_COMPONENT_TASKS`; in a checkpointed topology, a
    component whose count changes must keep state that can be redistributed
    (:func:`topology.runtime.checkpoint.state_layout.rescale_problem`: per-task state cannot; keyed
    state runs on at most ``topology.state.max.parallelism`` tasks)."""
    if not isinstance(components, Mapping):
        return f"--component: expected NAME=COUNT pairs, got {type(components).__name__}"
    if len(components) > MAX_RESCALED_COMPONENTS:
        return f"--component: {len(components):,} components, more than {MAX_RESCALED_COMPONENTS:,}"
    known = record.get("components") or {}
    for component, count in components.items():
        if component not in known:
            listed = ", ".join(sorted(map(str, known))) or "none"
            return (
                f"topology {name!r} has no component {str(component)[:80]!r} "
                f"(its components: {listed})"
            )
        if type(count) is not int or not 1 <= count <= MAX_COMPONENT_TASKS:
            return (
                f"component {component!r}: the task count must be an integer from 1 to "
                f"{MAX_COMPONENT_TASKS:,}, got {count!r}"
            )
    if not checkpointed(known):
        return None  # no state is kept: any count will do
    conf = record.get("conf") or {}
    key_groups = conf.get(cfg.STATE_MAX_PARALLELISM, DEFAULT_KEY_GROUPS)
    for component, count in components.items():
        if count != known[component].get("tasks"):
            problem = rescale_problem(component, _kinds(known[component]), count, key_groups)
            if problem is not None:
                return problem
    return None


def rescaled_tasks(record: Mapping[str, Any], components: Mapping[str, int]) -> dict[str, int]:
    """Tasks per component once ``components`` are rescaled, the system components
    included (the checkpoint coordinator in a checkpointed topology, else the ackers):
    what the new assignment holds, for its size check."""
    known = record["components"]
    counts = {c: int(components.get(c, info["tasks"])) for c, info in known.items()}
    if checkpointed(known):
        counts[COORDINATOR_COMPONENT] = 1
    else:
        ackers = cfg.num_ackers(record["conf"])
        if ackers:
            counts[ACKER_COMPONENT] = ackers
    return counts


def rebalanced(
    record: Mapping[str, Any], workers: int, components: Mapping[str, int]
) -> Rebalanced:
    """The outcome a rebalance of ``record`` to ``workers`` workers and ``components``
    counts will have (components whose count does not change are left out)."""
    known = record["components"]
    moved = {
        c: (int(known[c]["tasks"]), n) for c, n in components.items() if known[c]["tasks"] != n
    }
    return Rebalanced(workers, moved)


def rebalance_refusal(
    name: str,
    record: Mapping[str, Any],
    workers: int,
    components: Mapping[str, int],
    client_conf: Mapping[str, Any],
) -> str | None:
    """Why a client must not ask for the rebalance of ``name`` (its ``record``) to
    ``workers`` workers and ``components`` counts, or None: :func:`components_problem`,
    then :func:`~topology.deploy.limits.rebalance_problem` with the new task counts and
    the slots of a ``local[N]`` master (the topology's own ``spark.master``, else the
    client's)."""
    problem = components_problem(name, record, components)
    if problem is not None:
        return problem
    own = record["conf"].get("spark.master")
    if not own or own == cfg.defaults().get("spark.master"):
        own = client_conf.get("spark.master")
    master = str(own or "")
    return rebalance_problem(
        name,
        workers,
        rescaled_tasks(record, components),
        local_slots(master),
        f"spark.master={master}",
    )


def _kinds(info: Mapping[str, Any]) -> list[str]:
    kinds = info.get("state")
    return [str(k) for k in kinds] if isinstance(kinds, list) else []

"""Bounds on what a request may write to ZooKeeper and ask of the cluster (pure).

ZooKeeper refuses a request larger than ``jute.maxbuffer`` (1 MiB by default, path and
ACLs included) by dropping the client's connection, so an oversized write does not fail:
it hangs the writer and breaks its session.  Every verb therefore checks what it will
write against :data:`ZNODE_MAX_BYTES` first, and a worker count against
:data:`~topology.config.MAX_WORKERS` and the slots of the master, and refuses in one line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from topology import config as cfg
from topology.errors import TopologyValidationError
from topology.runtime.checkpoint.state_layout import key_group_problems
from topology.spec import Topology
from topology.state.merges import merge_problems
from topology.state.value_formats import format_problems

#: Largest JSON a sparkstorm znode holds: below ZooKeeper's default ``jute.maxbuffer``
#: (1,048,575 bytes for the whole request) with room for the path and the ACLs.
ZNODE_MAX_BYTES = 1_000_000

_LOCAL_SLOTS = re.compile(r"local\[(\d+)(?:,\s*\d+)?\]")


def json_bytes(data: Any) -> int:
    """Bytes of ``data`` as a znode stores it (JSON, like ``ZkState``)."""
    return len(json.dumps(data, sort_keys=True, default=str).encode())


def node_size_problem(what: str, size: int) -> str | None:
    """Why ``size`` bytes of ``what`` cannot be written to one znode, or None."""
    if size <= ZNODE_MAX_BYTES:
        return None
    return (
        f"{what} would be {size:,} bytes; a ZooKeeper node holds at most "
        f"{ZNODE_MAX_BYTES:,} (jute.maxbuffer)"
    )


def assignment_bytes(task_counts: Mapping[str, int], workers: int) -> int:
    """An upper bound of the size of the assignment of ``task_counts`` to ``workers``
    (``assignment.to_json``), computed without building it: every task id appears twice,
    every worker is a list."""
    tasks = sum(task_counts.values())
    digits = len(str(max(tasks, 1)))
    names = sum(len(name) + 8 for name in task_counts)
    return 2 * tasks * (digits + 2) + 4 * workers + names + 128


def worker_count_problem(workers: object) -> str | None:
    """Why ``workers`` is no worker count (not an integer from 1 to ``MAX_WORKERS``)."""
    if type(workers) is int and 1 <= workers <= cfg.MAX_WORKERS:
        return None
    return f"--workers must be an integer from 1 to {cfg.MAX_WORKERS:,}, got {workers!r}"


def local_slots(master: str) -> int | None:
    """Task slots of a ``local[N]`` or ``local[N,F]`` master (N cores: a worker holds one
    for its life); None for any other master (``local[*]`` is sized per topology)."""
    match = _LOCAL_SLOTS.fullmatch(master.strip())
    return int(match.group(1)) if match else None


def rebalance_problem(
    name: str,
    workers: int,
    task_counts: Mapping[str, int],
    slots: int | None = None,
    where: str = "",
) -> str | None:
    """Why ``name`` cannot be rebalanced to ``workers`` workers: not a worker count, an
    assignment over the znode limit, or more workers than the ``slots`` of its master
    (``where`` describes them); None when it can."""
    problem = worker_count_problem(workers)
    if problem is not None:
        return problem
    size = node_size_problem(
        f"the assignment of {name!r} to {workers:,} workers", assignment_bytes(task_counts, workers)
    )
    if size is not None:
        return size
    if slots is not None and workers > slots:
        return (
            f"{workers:,} worker(s) need {workers:,} task slot(s) for their whole life, but "
            f"{where or 'the master'} has {slots}; use fewer workers or a bigger master"
        )
    return None


def nesting_problem(value: Any, max_depth: int, max_items: int | None = None) -> str | None:
    """Why ``value`` (lists and dicts of anything) nests deeper than ``max_depth`` levels or
    holds more than ``max_items`` items in all (YAML aliases can make a few bytes expand to
    billions), walked without recursion; None when it does not."""
    items, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        items += 1
        if max_items is not None and items > max_items:
            return f"more than {max_items:,} items"
        if isinstance(item, (list, dict)):
            if level > max_depth:
                return f"nested deeper than {max_depth} levels"
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
    return None


def check_components(topology: Topology, conf: Mapping[str, Any]) -> None:
    """Before a submit writes anything: every component's own configuration is valid
    (:func:`topology.config.component_conf`, raises naming the component and key), and no
    keyed component has more tasks than key groups, and every ``state_values`` a stateful
    bolt declares is one the state backends store, and every ``state_merge`` a function
    (``TopologyValidationError``)."""
    for component in topology.components.values():
        cfg.component_conf(conf, component.id, component.conf)
    problems = key_group_problems(topology, int(conf[cfg.STATE_MAX_PARALLELISM]))
    instances = {c.id: c.instance for c in topology.components.values()}
    problems = [*problems, *format_problems(instances, conf)]  # state_values storable
    problems = [*problems, *merge_problems(instances)]  # state_merge a function
    if problems:
        raise TopologyValidationError(problems)

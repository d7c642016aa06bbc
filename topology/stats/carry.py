"""Statistics that outlive a worker: what a relaunched worker carries over (pure data).

A worker's counters live in its process; when it dies, its replacement starts from zero.
So that ``status`` never goes down across a restart, every worker's stats windows are saved
with the topology (LocalCluster: in the parent; a cluster: a persistent ZooKeeper node per
worker), each time the worker reports them.  A relaunched worker reads what was saved for
its tasks and adds it to its own windows.

A task's *carry* is a list of *lumps* ``[saved_at, windows]`` (wall-clock seconds, and a
window id -> :meth:`StatsRecorder.window` dict), one per earlier incarnation.  Carries
are keyed by :func:`carry_key` — the component and the task's index among its tasks —,
not by task id: task ids are numbered with the system tasks (the ackers, one per worker
by default) among the components, so a rebalance to another number of workers can give
a spout the id a bolt had, and it must not inherit the bolt's counts.  A lump counts
in a finite window while ``now - saved_at`` is shorter than the window, and always in the
all-time window: a dead incarnation's work leaves a 10-minute window all at once, 10
minutes after it was last saved (rather than bucket by bucket) — the only inexactness.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from .rolling import ALL_TIME, WINDOW_SECS, WINDOWS, merge_windows

#: Lumps kept per task; older ones are merged into one all-time lump.
MAX_LUMPS = 8

#: A task's carry: ``[[saved_at, {window id: window dict}], ...]``, oldest first.
Lumps = list[list[Any]]


def with_carry(
    own: dict[str, dict[str, Any]], lumps: Lumps, now: float
) -> dict[str, dict[str, Any]]:
    """``own`` windows plus every lump still inside each window (capacity stays ``own``'s:
    it is a rate of this incarnation)."""
    if not lumps:
        return own
    out = {}
    for wid, window in own.items():
        length = WINDOW_SECS.get(wid)
        parts = [window] + [
            lump[1][wid]
            for lump in lumps
            if wid in lump[1] and (length is None or now - float(lump[0]) < length)
        ]
        try:
            merged = merge_windows(parts)
        except (TypeError, ValueError, AttributeError):  # a malformed save: own windows only
            merged = dict(window)
        merged["capacity"] = window.get("capacity", 0.0)
        out[wid] = merged
    return out


def carry_key(component: str, index: int) -> str:
    """What a task's carry is saved under: ``component#index`` (its 0-based index among
    the component's tasks), the same whatever ids a rebalance gives the tasks."""
    return f"{component}#{index}"


def for_tasks(carried: dict[str, Lumps], tasks: Iterable[tuple[int, str, int]]) -> dict[int, Lumps]:
    """Task id -> its carry, for ``tasks`` given as ``(task id, component, index)``: each
    finds its own component's history, whatever id it had when that was saved."""
    keyed = ((tid, carry_key(component, index)) for tid, component, index in tasks)
    return {tid: carried[key] for tid, key in keyed if key in carried}


def saved(task_entry: dict[str, Any], saved_at: float) -> Lumps:
    """What to save for a task of a status reply: its carry plus its own windows now."""
    lumps = list(task_entry.get("carried") or [])
    own = task_entry.get("own_windows") or task_entry.get("windows")
    if own:
        lumps.append([saved_at, own])
    return lumps


def save_reply(reply: dict[str, Any]) -> dict[str, Lumps]:
    """:func:`carry_key` -> lumps to save, from a worker's status reply ({} when it has
    none or it is malformed: only a forger sends that; a task entry without its
    ``component`` and ``index`` is left out)."""
    tasks = reply.get("tasks")
    try:
        at = float(reply.get("time") or 0.0)
    except (TypeError, ValueError):
        return {}
    if not isinstance(tasks, dict):
        return {}
    return {
        carry_key(entry["component"], entry["index"]): saved(entry, at)
        for entry in tasks.values()
        if isinstance(entry, dict)
        and isinstance(entry.get("component"), str)
        and type(entry.get("index")) is int
    }


def newest(saves: list[dict[str, Any]]) -> dict[str, Lumps]:
    """:func:`carry_key` -> the most recent lumps among several saves (after a rebalance a
    task's history may sit in another worker's save); malformed entries, and saves keyed
    by task id (before carry keys), are skipped."""
    best: dict[str, Lumps] = {}
    for save in saves:
        if not isinstance(save, dict):
            continue
        for key, lumps in save.items():
            try:
                task = str(key)
                at = float(lumps[-1][0])
            except (TypeError, ValueError, IndexError, KeyError):
                continue
            if "#" not in task:
                continue
            held = best.get(task)
            if held is None or at > float(held[-1][0]):
                best[task] = lumps
    return {task: pruned(lumps) for task, lumps in best.items()}


def pruned(lumps: Lumps) -> Lumps:
    """At most :data:`MAX_LUMPS` well-formed lumps: the oldest beyond that are merged into
    one lump that only counts in the all-time window."""
    good: Lumps = []
    for lump in lumps:
        if isinstance(lump, list) and len(lump) == 2 and isinstance(lump[1], dict):
            try:
                good.append([float(lump[0]), lump[1]])
            except (TypeError, ValueError):
                continue
    if len(good) <= MAX_LUMPS:
        return good
    old, keep = good[: -(MAX_LUMPS - 1)], good[-(MAX_LUMPS - 1) :]
    all_time = merge_windows([lump[1][ALL_TIME] for lump in old if ALL_TIME in lump[1]])
    return [[old[-1][0], {ALL_TIME: all_time}], *keep]


def stand_ins(
    assignment: Mapping[str, Any],
    components: Mapping[str, Mapping[str, Any]],
    carried: Mapping[str, Lumps],
    missing: Collection[int],
    now: float,
) -> dict[int, dict[str, Any]]:
    """Worker -> a status reply standing in for each worker of ``missing``: its tasks (of
    ``assignment`` as stored: ``worker_tasks`` and ``component_tasks``; their kind from
    ``components``, the record's) with only the windows they carried (``carried``, the
    :func:`newest` saves) at ``now``, wall clock; no live gauge or histogram, and
    ``"stand_in": True``.  ``time`` is when the newest of those windows was saved.

    >>> assignment = {"worker_tasks": [[1], [2]], "component_tasks": {"count": [1, 2]}}
    >>> lumps = [[90.0, {w: {**merge_windows([]), "executed": 7} for w in WINDOWS}]]
    >>> [reply] = stand_ins(assignment, {}, {"count#1": lumps}, [1], 100.0).values()
    >>> reply["worker"], reply["time"], reply["tasks"][2]["windows"][ALL_TIME]["executed"]
    (1, 90.0, 7)
    """
    workers = assignment.get("worker_tasks") or []
    component_tasks = assignment.get("component_tasks") or {}
    component_of = {t: c for c, tasks in component_tasks.items() for t in tasks}
    out = {}
    for worker in sorted(missing):
        tasks: dict[int, dict[str, Any]] = {}
        saved_at = 0.0
        for task in workers[worker] if 0 <= worker < len(workers) else []:
            component = component_of.get(task)
            if component is None:
                continue
            index = list(component_tasks[component]).index(task)
            lumps = pruned(carried.get(carry_key(component, index)) or [])
            saved_at = max([saved_at, *(float(lump[0]) for lump in lumps)])
            empty = {wid: merge_windows([]) for wid in WINDOWS}
            tasks[task] = {
                "component": component,
                "index": index,
                "kind": (components.get(component) or {}).get("kind", "bolt"),
                "windows": with_carry(empty, lumps, now),
            }
        out[worker] = {"worker": worker, "tasks": tasks, "time": saved_at, "stand_in": True}
    return out

"""A new submission restored from a savepoint: what :class:`~topology.deploy.cluster.client.
Cluster` and :class:`~topology.deploy.local.cluster.LocalCluster` do before the topology
starts (taking a savepoint is :mod:`.savepoints`, the format :mod:`topology.state.savepoint`).

Before anything of the new topology runs: the savepoint's key groups must equal the new
``topology.state.max.parallelism``; every uid with state in it must be a component's
``state_id`` in the new topology (else refused, unless ``allow_non_restored_state``: its
state is then dropped); each kind of state it has for a uid must be one the new component
keeps, and per-task state needs the same task count (keyed state and spout positions move
to any); a component class with a ``check_state(key, value)`` method sees every key-value
entry restored into it (an exception refuses the submission, naming the component and the
key), and so does the ``state_values`` format a stateful bolt declares
(:mod:`topology.state.value_formats`).  Then the savepoint's scopes are written into the
new topology's state backend as one complete checkpoint, which its workers restore at their
first start.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from topology import config as cfg
from topology.printable import printable
from topology.runtime.checkpoint.restored_state import Refused, check_key, check_value, shown_key
from topology.runtime.checkpoint.state_layout import KEYED, TASK, rescale_problem, state_kinds
from topology.runtime.checkpoint.window_snapshots import CLOCKS
from topology.spec import ComponentSpec, Topology
from topology.state.backends import StateBackend, open_backend, remove_state
from topology.state.kv import stored_key
from topology.state.live.codec import stored_value
from topology.state.savepoint import SavepointError, SavepointInfo, read_savepoint, read_scope
from topology.state.value_formats import declared as declared_format
from topology.state.value_formats import format_name, value_problem

from .progress import Progress, say
from .savepoints import shared_store_problem

#: Entries written to the new topology's backend at once.
SEED_CHUNK = 10_000
#: Stored keys that are names, not state keys (a spout task's, a windowed task's clocks).
PLAIN_KEYS = frozenset({b"position", b"pending", b"tasks", CLOCKS})


@dataclass
class RestorePlan:
    """What a savepoint restores into a new topology: the scopes to write, the uids whose
    state is dropped (``allow_non_restored_state``)."""

    info: SavepointInfo
    scopes: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def plan_restore(
    info: SavepointInfo, topology: Topology, conf: Mapping[str, Any], allow_non_restored: bool
) -> RestorePlan:
    """Check ``info`` against the new ``topology`` and ``conf`` (see the module docstring);
    :class:`SavepointError` naming the uid, component and kind at fault and the fix."""
    where = f"savepoint {info.path}"
    key_groups = int(conf[cfg.STATE_MAX_PARALLELISM])
    if info.key_groups != key_groups:
        raise SavepointError(
            f"{where} has keyed state in {info.key_groups} key groups, the new topology "
            f"{key_groups} ({cfg.STATE_MAX_PARALLELISM}): submit it with "
            f"-c {cfg.STATE_MAX_PARALLELISM}={info.key_groups}"
        )
    by_uid = {spec.state_id: spec for spec in topology.components.values()}
    saved = {str(c["uid"]): (cid, c) for cid, c in info.components.items()}
    plan = RestorePlan(info)
    for uid, (entries, _) in sorted(info.uids_with_state().items()):
        spec = by_uid.get(uid)
        saved_id, saved_info = saved[uid]
        if spec is None:
            if not allow_non_restored:
                raise SavepointError(
                    f"{where} holds state of uid {uid!r} (component {saved_id!r}, {entries:,} "
                    "entries) that no component of the new topology has: give the component "
                    f"that takes it over uid={uid!r}, or pass --allow-non-restored-state "
                    "(allow_non_restored_state=True) to drop it"
                )
            plan.dropped.append(uid)
            continue
        _check_kinds(where, topology, spec, saved_info, key_groups)
    plan.scopes = [s for s, f in info.scopes.items() if f.uid in by_uid and f.entries]
    return plan


def _check_kinds(
    where: str, topology: Topology, spec: ComponentSpec, saved: Mapping[str, Any], groups: int
) -> None:
    kinds = state_kinds(topology, spec.id)
    for kind in saved["state"]:
        if kind not in kinds:
            raise SavepointError(
                f"{where}: component {spec.id!r} (uid {spec.state_id!r}) had {kind} state, "
                f"but the new {spec.id!r} keeps {', '.join(kinds) or 'no state'}; restore it "
                f"into a component that keeps {kind} state, or give this one another uid"
            )
    if spec.num_tasks != saved["tasks"]:
        problem = rescale_problem(spec.id, list(saved["state"]), spec.num_tasks, groups)
        if problem is not None:
            raise SavepointError(
                f"{where} had {saved['tasks']} task(s) of {spec.id!r}, the new topology "
                f"{spec.num_tasks}: {problem}"
            )


def check_values(plan: RestorePlan, topology: Topology) -> None:
    """Give every key-value entry restored into a component whose class defines
    ``check_state(key, value)`` to it; an exception it raises refuses the savepoint."""
    by_uid = {spec.state_id: spec for spec in topology.components.values()}
    info = plan.info
    for scope in plan.scopes:
        spec = by_uid[info.scopes[scope].uid]
        check = getattr(spec.instance, "check_state", None)
        fmt = declared_format(spec.instance)
        kv = {KEYED, TASK} & set(state_kinds(topology, spec.id))
        if not (callable(check) or fmt is not None) or not kv or "/" in scope:
            continue
        for raw_key, raw_value in read_scope(info, scope):
            _check_entry(info, scope, spec.id, raw_key, raw_value, state_key=True)
            key = stored_key(raw_key)
            value = stored_value(raw_value)  # a TTL wrapper removed
            wrong = None if fmt is None else value_problem(value, fmt)
            if wrong is not None:
                raise SavepointError(
                    f"savepoint {info.path}: component {spec.id!r} declares state_values "
                    f"{format_name(fmt)}, but key {printable(repr(key))[:200]} of scope "
                    f"{scope!r} holds {wrong}; deploy code that reads it, or convert the "
                    "state first"
                )
            if not callable(check):
                continue
            try:
                check(key, value)
            except Exception as exc:
                raise SavepointError(
                    f"savepoint {info.path}: component {spec.id!r} refuses key "
                    f"{printable(repr(key))[:200]} of scope {scope!r} in check_state: "
                    f"{type(exc).__name__}: {printable(str(exc))[:400]}; deploy code that "
                    "reads it, or convert the state first"
                ) from None


def _check_entry(
    info: SavepointInfo,
    scope: str,
    component: str,
    key: bytes,
    value: bytes,
    state_key: bool = False,
) -> None:
    """:class:`SavepointError` naming the savepoint, component, scope and key when an entry
    would decode past the door's budget (:mod:`topology.runtime.checkpoint.restored_state`); its key
    is checked as a state key when ``state_key`` or when it is not one of
    :data:`PLAIN_KEYS`."""
    try:
        if state_key or key not in PLAIN_KEYS:
            check_key(key)
        check_value(value)
    except Refused as exc:
        raise SavepointError(
            f"savepoint {info.path}: component {component!r} (scope {scope!r}): key "
            f"{shown_key(key)}: {exc}; it is not restored"
        ) from None


def seed(plan: RestorePlan, backend: StateBackend, progress: Progress = None) -> int:
    """Write the planned scopes into ``backend`` as one complete checkpoint (its id)."""
    checkpoint = backend.reserve()
    components = {str(c["uid"]): cid for cid, c in plan.info.components.items()}
    for scope in plan.scopes:
        component = components.get(plan.info.scopes[scope].uid, plan.info.scopes[scope].uid)
        for chunk in _chunks(read_scope(plan.info, scope), SEED_CHUNK):
            for key, value in chunk:
                _check_entry(plan.info, scope, component, key, value)
            backend.write(checkpoint, 0, scope, list(chunk))
        say(progress, f"restored scope {scope!r}: {plan.info.scopes[scope].entries:,} entries")
    backend.complete(
        checkpoint,
        0,
        {"savepoint": plan.info.path, "from": plan.info.topology_id, "of": plan.info.checkpoint},
    )
    return checkpoint


def _chunks(entries: Iterable[tuple[bytes, bytes]], size: int) -> Iterable[list[Any]]:
    chunk: list[Any] = []
    for entry in entries:
        chunk.append(entry)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def restore_savepoint(
    path: str,
    topology: Topology,
    conf: Mapping[str, Any],
    state_id: str,
    allow_non_restored_state: bool = False,
    progress: Progress = None,
) -> SavepointInfo:
    """Check the savepoint at ``path`` against the new ``topology`` (resolved ``conf``) and
    write its state as the first complete checkpoint of ``state_id``; nothing is left in
    the backend when it is refused or fails."""
    problem = shared_store_problem(conf)
    if problem is not None:
        raise SavepointError(f"--from-savepoint: {problem}")
    info = read_savepoint(path)
    plan = plan_restore(info, topology, conf, allow_non_restored_state)
    for uid in plan.dropped:
        say(progress, f"dropping the savepoint's state of uid {uid!r} (no such component)")
    check_values(plan, topology)
    backend = open_backend(conf, state_id)
    try:
        seed(plan, backend, progress)
    except BaseException:
        backend.close()
        remove_state(conf, state_id)
        raise
    backend.close()
    return info

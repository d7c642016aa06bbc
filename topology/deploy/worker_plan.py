"""Supervising the workers of one topology: pure decisions from what the supervisor sees.

A topology's supervisor — its driver (:mod:`topology.deploy.cluster.topology_driver`) on
Spark, or :class:`~topology.deploy.local.topology.LocalTopology` — calls :func:`supervise` every
round with an :class:`AttemptView` of the current assignment attempt, its
:class:`WorkerHistory`, the :class:`RestartPolicy` and the time, and carries out the
actions it returns.  Nothing here does I/O or reads a clock.  The restart backoff and the
``FailTopology`` / ``Log`` actions are shared with the nimbus's planner
(:mod:`topology.deploy.cluster.plan`).

Rules:

* **Adopt what runs.** On a new attempt (or when a supervisor starts and finds one), a
  worker whose heartbeat of that attempt is alive, or whose job the supervisor's backend
  still runs (a driver that replaced another on the same Spark application), is adopted as
  it is; only the others are launched.  So a nimbus failover or a restarted driver leaves
  running workers running.
* **A worker that never got going fails the topology.** It ended before it was ever
  ready (``open`` / ``prepare`` raised, it cannot start): relaunching would loop.
* **Otherwise relaunch, with backoff.** The first restart is immediate; each further one
  within ``RestartPolicy.reset_secs`` waits twice as long as the previous
  (``base_secs``, then 2x..., at most ``max_secs``) — Storm's supervisor and Flink's
  failure-rate strategy in one rule.  The reason and the next retry time are kept in the
  history for ``status``.
* **A process its backend replaced counts as a restart.** A worker seen running in a
  process other than the one seen before, though this supervisor did not launch it (Spark
  retried its task), died: its restart count goes up and the reason is kept, as for a
  relaunch of its own.
* **A stuck worker is reported** (its executor made no progress for ``stuck_secs``
  while its process lives), once per stall, and killed so that it is relaunched when
  ``RestartPolicy.kill_stuck`` is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from topology import config as cfg

# -- shared with the nimbus's planner (cluster/plan.py) ----------------------------------


@dataclass(frozen=True)
class Backoff:
    """Exponential restart backoff: the first restart at once, then ``base_secs``, twice
    that, ... at most ``max_secs``; restarts older than ``reset_secs`` no longer count."""

    base_secs: float = 1.0
    max_secs: float = 60.0
    reset_secs: float = 120.0

    def delay(self, recent_restarts: int) -> float:
        """Seconds to wait before the next restart after ``recent_restarts`` restarts."""
        if recent_restarts <= 0:
            return 0.0
        return min(self.max_secs, self.base_secs * 2 ** (recent_restarts - 1))

    def recent(self, restarts: tuple[float, ...], now: float) -> int:
        """How many of the ``restarts`` (times) still count at ``now``."""
        return sum(1 for t in restarts if now - t < self.reset_secs)


@dataclass(frozen=True)
class FailTopology:
    """The topology cannot run: remove its assignment, mark it ``FAILED`` with ``error``."""

    topology_id: str
    error: str


@dataclass(frozen=True)
class Log:
    """A line for the supervisor's log."""

    text: str


# -- what the supervisor sees ------------------------------------------------------------


@dataclass(frozen=True)
class WorkerView:
    """One worker of the current attempt, as observed.

    ``launched``: this supervisor started it, so ``ended`` (its process or Spark job is
    over; ``error`` says why) is known; for a worker it did not start, ``alive`` (an
    ephemeral heartbeat exists) is all there is.  ``stalled_secs``: how long its executor
    has made no progress, measured by the worker itself; ``busy_in`` names the task whose
    user code it is in; ``process`` names the process its heartbeat comes from (e.g.
    ``pid 7 on host-1``; None when unknown).
    """

    alive: bool = False
    ready: bool = False
    launched: bool = False
    ended: bool = False
    error: str | None = None
    stalled_secs: float | None = None
    busy_in: str | None = None
    process: str | None = None

    @property
    def dead(self) -> bool:
        return self.ended if self.launched else not self.alive


@dataclass(frozen=True)
class AttemptView:
    """The current assignment attempt of one topology and its workers."""

    topology_id: str
    attempt: int
    workers: int
    worker_views: Mapping[int, WorkerView] = field(default_factory=dict)


@dataclass(frozen=True)
class RestartPolicy(Backoff):
    """How dying workers (the backoff) and stuck ones are handled."""

    stuck_secs: float = 30.0
    kill_stuck: bool = False


def restart_policy(conf: dict[str, Any]) -> RestartPolicy:
    """The restart and stuck-worker policy from a topology's conf."""
    return RestartPolicy(
        base_secs=float(conf[cfg.WORKER_RESTART_DELAY_SECS]),
        max_secs=float(conf[cfg.WORKER_RESTART_MAX_DELAY_SECS]),
        reset_secs=float(conf[cfg.WORKER_RESTART_RESET_SECS]),
        stuck_secs=float(conf[cfg.WORKER_TIMEOUT_SECS]),
        kill_stuck=bool(conf[cfg.WORKER_KILL_WHEN_STUCK]),
    )


@dataclass(frozen=True)
class Pending:
    """A worker waiting to be relaunched: since when, until when, and why."""

    since: float
    due: float
    reason: str


@dataclass(frozen=True)
class WorkerHistory:
    """What the supervisor of one topology remembers between rounds (plain data).

    ``attempt``: the attempt it supervises (None before the first round); ``launched``:
    workers it started in that attempt; ``ready``: workers seen ready; ``restarts``: relaunch
    times per worker; ``pending``: workers waiting for their next start; ``stuck``: workers
    reported stuck in the current stall; ``reasons``: why each last died; ``processes``: the
    process each worker was last seen in; ``relaunched``: workers this supervisor launched
    again since (the next process seen is theirs, not a restart by the backend);
    ``replaced``: restarts the backend did by itself (counted, but not in the backoff).
    """

    attempt: int | None = None
    launched: frozenset[int] = frozenset()
    ready: frozenset[int] = frozenset()
    restarts: Mapping[int, tuple[float, ...]] = field(default_factory=dict)
    pending: Mapping[int, Pending] = field(default_factory=dict)
    stuck: frozenset[int] = frozenset()
    reasons: Mapping[int, str] = field(default_factory=dict)
    processes: Mapping[int, str] = field(default_factory=dict)
    relaunched: frozenset[int] = frozenset()
    replaced: Mapping[int, int] = field(default_factory=dict)

    def restart_count(self, worker: int) -> int:
        """Every restart of ``worker``: this supervisor's and its backend's own."""
        return len(self.restarts.get(worker, ())) + self.replaced.get(worker, 0)


# -- actions only this level takes ------------------------------------------------------------


@dataclass(frozen=True)
class Launch:
    """Start worker ``worker`` of ``attempt`` (the assignment is already written)."""

    topology_id: str
    worker: int
    attempt: int


@dataclass(frozen=True)
class KillWorker:
    """End worker ``worker``'s process or job now (it is stuck); it will be relaunched."""

    topology_id: str
    worker: int


@dataclass(frozen=True)
class StopAttempt:
    """End what still runs of an older ``attempt`` (its workers stop by themselves on
    seeing a new one; this cancels stragglers after ``grace`` seconds)."""

    topology_id: str
    attempt: int
    grace: float = 0.0


@dataclass(frozen=True)
class ReportWorker:
    """Record ``text`` about ``worker`` where ``status`` shows errors."""

    topology_id: str
    worker: int
    text: str


WorkerAction = Launch | KillWorker | StopAttempt | ReportWorker | FailTopology | Log


@dataclass(frozen=True)
class WorkerPlan:
    actions: list[WorkerAction]
    history: WorkerHistory


def supervise(
    view: AttemptView,
    history: WorkerHistory,
    policy: RestartPolicy,
    now: float,
    grace: float = 0.0,
) -> WorkerPlan:
    """Every action the supervisor of ``view.topology_id`` should take now."""
    tid, attempt = view.topology_id, view.attempt
    out: list[WorkerAction] = []
    if history.attempt != attempt:
        if history.attempt is not None:
            out.append(StopAttempt(tid, history.attempt, grace))
        history = WorkerHistory(attempt=attempt)
        for worker in range(view.workers):
            seen = view.worker_views.get(worker, WorkerView())
            if not seen.dead:  # a live heartbeat, or a job of this backend still running
                out.append(Log(f"{tid}: adopting running worker {worker} of attempt {attempt}"))
                if seen.launched:
                    history = replace(history, launched=history.launched | {worker})
            else:
                out.append(Launch(tid, worker, attempt))
                history = replace(history, launched=history.launched | {worker})
        return WorkerPlan(out, history)

    ready = set(history.ready)
    ready.update(w for w, seen in view.worker_views.items() if seen.ready)
    history = replace(history, ready=frozenset(ready))
    for worker in range(view.workers):
        seen = view.worker_views.get(worker, WorkerView(launched=worker in history.launched))
        if worker in history.pending:
            history = _maybe_relaunch(tid, attempt, worker, history, now, out)
        elif seen.dead:
            if fails_start(worker, seen.ready, history):
                text = (seen.error or "worker ended").strip().splitlines()[0]
                out.append(Log(f"{tid}: worker {worker} failed to start: {text}"))
                out.append(FailTopology(tid, f"worker {worker} failed to start: {text}"))
                return WorkerPlan(out, history)
            history = _schedule_restart(tid, worker, seen, history, policy, now, out)
            history = _maybe_relaunch(tid, attempt, worker, history, now, out)
        else:
            history = _check_replaced(tid, worker, seen, history, out)
            history = _check_stuck(tid, worker, seen, history, policy, out)
    return WorkerPlan(out, history)


def fails_start(worker: int, ready_now: bool, history: WorkerHistory) -> bool:
    """Whether ``worker`` dying now (or reporting a fatal error) fails the topology rather
    than being relaunched: it was never ready in this attempt (``ready_now`` is what the
    supervisor sees of its current process).  A worker that failed while starting would
    fail again; one that had been running is relaunched, even if a later process of it
    then fails to start (with backoff)."""
    return not ready_now and worker not in history.ready


def _schedule_restart(
    tid: str,
    worker: int,
    seen: WorkerView,
    history: WorkerHistory,
    policy: RestartPolicy,
    now: float,
    out: list[WorkerAction],
) -> WorkerHistory:
    delay = policy.delay(policy.recent(tuple(history.restarts.get(worker, ())), now))
    count = history.restart_count(worker) + 1
    cause = f"worker {worker} ended" + (f": {seen.error}" if seen.error else "")
    when = "relaunching" if delay == 0 else f"relaunching in {delay:g}s"
    text = f"{cause}; {when} (restart {count})"
    out.append(Log(f"{tid}: {text}"))
    out.append(ReportWorker(tid, worker, text))
    pending = {**history.pending, worker: Pending(now, now + delay, cause)}
    reasons = {**history.reasons, worker: cause}
    return replace(history, pending=pending, stuck=history.stuck - {worker}, reasons=reasons)


def _maybe_relaunch(
    tid: str,
    attempt: int,
    worker: int,
    history: WorkerHistory,
    now: float,
    out: list[WorkerAction],
) -> WorkerHistory:
    waiting = history.pending[worker]
    if now < waiting.due:
        return history
    out.append(Launch(tid, worker, attempt))
    restarts = {**history.restarts, worker: (*history.restarts.get(worker, ()), now)}
    pending = {w: p for w, p in history.pending.items() if w != worker}
    return replace(
        history,
        restarts=restarts,
        pending=pending,
        launched=history.launched | {worker},
        relaunched=history.relaunched | {worker},
    )


def _check_replaced(
    tid: str, worker: int, seen: WorkerView, history: WorkerHistory, out: list[WorkerAction]
) -> WorkerHistory:
    """Count a process the backend put in place of the one seen before as a restart."""
    known = history.processes.get(worker)
    if seen.process is None or seen.process == known:
        return history
    relaunched = worker in history.relaunched
    history = replace(
        history,
        processes={**history.processes, worker: seen.process},
        relaunched=history.relaunched - {worker},
    )
    if known is None or relaunched:  # the first process seen, or the one we launched
        return history
    count = history.restart_count(worker) + 1
    cause = f"worker {worker} ended ({known})" + (f": {seen.error}" if seen.error else "")
    text = f"{cause}; its backend relaunched it ({seen.process}; restart {count})"
    out.append(Log(f"{tid}: {text}"))
    out.append(ReportWorker(tid, worker, text))
    return replace(
        history,
        replaced={**history.replaced, worker: history.replaced.get(worker, 0) + 1},
        reasons={**history.reasons, worker: cause},
        stuck=history.stuck - {worker},
    )


def _check_stuck(
    tid: str,
    worker: int,
    seen: WorkerView,
    history: WorkerHistory,
    policy: RestartPolicy,
    out: list[WorkerAction],
) -> WorkerHistory:
    stalled = seen.stalled_secs
    if stalled is None or stalled < policy.stuck_secs:
        if worker in history.stuck:
            return replace(history, stuck=history.stuck - {worker})
        return history
    if worker in history.stuck:
        return history
    where = f" in {seen.busy_in}" if seen.busy_in else ""
    action = "; killing it to relaunch" if policy.kill_stuck else ""
    text = f"worker {worker} stuck{where}: no executor progress for {stalled:.0f}s{action}"
    out.append(Log(f"{tid}: {text}"))
    out.append(ReportWorker(tid, worker, text))
    if policy.kill_stuck:
        out.append(KillWorker(tid, worker))
    return replace(history, stuck=history.stuck | {worker})


def pending_restarts(history: WorkerHistory) -> dict[int, dict[str, object]]:
    """Per worker: restarts so far, the reason of the last death and, while waiting, when
    the next start is due (for the supervisor's status record)."""
    out: dict[int, dict[str, object]] = {}
    for worker in sorted(set(history.restarts) | set(history.pending) | set(history.replaced)):
        waiting = history.pending.get(worker)
        out[worker] = {
            "restarts": history.restart_count(worker),
            "reason": history.reasons.get(worker),
            "next_start_at": waiting.due if waiting else None,
        }
    return out

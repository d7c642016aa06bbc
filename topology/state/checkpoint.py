"""The checkpoint protocol as pure state machines (no I/O, the clock passed in).

Flink's aligned barriers in the tuple model:

* the :class:`CheckpointCoordinator` (one system task) starts checkpoint ``k`` every
  ``topology.state.checkpoint.interval.ms`` by telling every spout task ``begin(k)``;
* a spout task closes its epoch (:class:`SpoutEpochs`), snapshots its position, and sends
  barrier ``k`` down every output lane, in line with its tuples;
* a bolt task with several input channels (source task, stream) *aligns*
  (:class:`BarrierAligner`): once a channel delivered barrier ``k``, what comes after it on
  that channel is held until every channel delivered ``k``; then the task snapshots its
  state (written asynchronously), forwards barrier ``k`` and lets the held tuples in;
* every task reports ``done(k)``; when all did, ``k`` is complete: its metadata is made
  durable and spouts hear ``commit(k)``, which acks the msg ids whose effects it holds.

A checkpoint not complete within its timeout is abandoned (the next one covers its epoch).

Recovery works in *epochs*.  The coordinator starts a new epoch when it starts, when a
worker reports that it (re)started, and when a tuple fails: every worker drops what it has
in flight, restores the last complete checkpoint (stateful tasks their state, spouts their
position; a spout without positions is told ``fail`` for every msg id not covered by that
checkpoint, so it replays them), pauses, and reports; once all did, the coordinator
resumes them.  Every data frame carries its sender's epoch and a worker drops frames of
any other epoch, so nothing from before a rollback leaks into the state after it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

# the control streams (what each carries: topology.constants) and the coordinator's component
from topology.constants import CHECKPOINT_BEGIN as BEGIN
from topology.constants import CHECKPOINT_COMMIT as COMMIT
from topology.constants import CHECKPOINT_DONE as DONE
from topology.constants import CHECKPOINT_FAILED as FAILED
from topology.constants import CHECKPOINT_RESUME as RESUME
from topology.constants import CHECKPOINT_ROLLBACK as ROLLBACK
from topology.constants import CHECKPOINT_STATUS as STATUS
from topology.constants import COORDINATOR_COMPONENT as COORDINATOR_COMPONENT

FROM_COORDINATOR = frozenset({BEGIN, COMMIT, ROLLBACK, RESUME})
TO_COORDINATOR = frozenset({DONE, STATUS, FAILED})
STREAMS = FROM_COORDINATOR | TO_COORDINATOR
#: Each control stream's values: their count, and the index of the one that is a bool
#: (None: all ints).  ``DONE`` is ``[epoch, checkpoint, task, ok, alignment_us, bytes]``:
#: how long the task held inputs back aligning (microseconds) and what it stored.
_CONTROL_SHAPES: dict[str, tuple[int, int | None]] = {
    BEGIN: (2, None),
    COMMIT: (2, None),
    ROLLBACK: (2, None),
    RESUME: (1, None),
    DONE: (6, 3),
    STATUS: (2, None),
    FAILED: (2, None),
}


def check_control(stream: str, vals: list[Any]) -> str | None:
    """None when every tuple of a received group of control stream ``stream`` has the
    shape given above (ints; ``DONE``'s ``ok`` a bool), else what is wrong."""
    shape = _CONTROL_SHAPES.get(stream)
    if shape is None:
        return f"{stream!r} is not a checkpoint control stream"
    count, flag = shape
    for values in vals:
        if type(values) is not list or len(values) != count:
            return f"checkpoint control on {stream!r} that is not {count} values"
        if any(type(v) is not (bool if i == flag else int) for i, v in enumerate(values)):
            return f"checkpoint control on {stream!r} of the wrong types"
    return None


#: Recovery epochs per coordinator incarnation: epoch = incarnation * EPOCH_SPAN + n, so the
#: epochs of a restarted coordinator are above every epoch of the ones before it.
EPOCH_SPAN = 1_000_000
#: Seconds between repeats of an unanswered rollback (coordinator) or status (worker).
RESEND_SECS = 1.0


# -- the coordinator ------------------------------------------------------------------------


@dataclass(frozen=True)
class Begin:
    """Tell every spout task to take ``checkpoint``."""

    epoch: int
    checkpoint: int


@dataclass(frozen=True)
class Store:
    """Make ``checkpoint`` durable as complete (backend I/O), then call
    :meth:`CheckpointCoordinator.stored`."""

    epoch: int
    checkpoint: int
    info: dict[str, Any]


@dataclass(frozen=True)
class Commit:
    """Tell every spout task and stateful bolt task that ``checkpoint`` is complete."""

    epoch: int
    checkpoint: int


@dataclass(frozen=True)
class Abandon:
    checkpoint: int
    reason: str


@dataclass(frozen=True)
class RollBack:
    """Tell ``workers`` to restore ``checkpoint`` and pause, in ``epoch``."""

    workers: tuple[int, ...]
    epoch: int
    checkpoint: int


@dataclass(frozen=True)
class Resume:
    workers: tuple[int, ...]
    epoch: int


Action = Begin | Store | Commit | Abandon | RollBack | Resume


class CheckpointCoordinator:
    """Recovery epochs and checkpoints of one topology (the ``__checkpoint`` task).

    It starts in recovery: every worker must restore the last complete checkpoint
    (``restore``) and report before anything flows.  A worker that reports from an older
    epoch while the topology runs has restarted, and a failed tuple asks for a replay: both
    start a new recovery (a new epoch; everything in flight is dropped).  While running,
    checkpoint ``k`` begins every ``interval`` seconds, completes when every task in
    ``tasks`` stored it (it is then :class:`Store`-d, then :class:`Commit`-ted), and is
    abandoned past ``timeout`` or when a task declines.
    """

    def __init__(
        self,
        workers: int,
        tasks: frozenset[int],
        interval: float,
        timeout: float,
        now: float,
        incarnation: int,
        restore: int,
    ) -> None:
        self.workers = tuple(range(workers))
        self.tasks = tasks
        self.interval = interval
        self.timeout = timeout
        self.epoch = incarnation * EPOCH_SPAN
        self.restore = restore
        self.next_id = max(incarnation, restore) + 1
        self.in_flight: int | None = None
        self.storing: int | None = None
        self.recovering = False
        self.rolled: set[int] = set()
        self.completed = 0
        self.abandoned = 0
        self.recoveries = 0
        self.last_duration = 0.0
        #: When the last checkpoint completed (the clock of ``now``), or None.
        self.completed_at: float | None = None
        self._started = 0.0
        self._reported: set[int] = set()
        self._due = now + interval
        self._resend_at = now
        self._replay_at: float | None = None
        self._resumed_at = now
        self.pending: list[Action] = self._recover(now)
        self.recoveries = 0  # the first recovery is the start, not a failure

    # -- inputs ---------------------------------------------------------------------------

    def tick(self, now: float) -> list[Action]:
        """What is due at ``now``: a repeat of the rollback, a timeout, the next checkpoint."""
        out, self.pending = self.pending, []
        if self.recovering:
            if self.storing is None and now >= self._resend_at:
                self._resend_at = now + RESEND_SECS
                missing = tuple(w for w in self.workers if w not in self.rolled)
                out.append(RollBack(missing, self.epoch, self.restore))
            return out
        if self._replay_at is not None and now >= self._replay_at:
            return out + self._recover(now)
        if self.in_flight is not None and now - self._started >= self.timeout:
            silent = len(self.tasks - self._reported)
            out.append(Abandon(self.in_flight, f"{silent} task(s) did not report in time"))
            self._abandon(now)
        if self.in_flight is None and self.storing is None and now >= self._due:
            self.in_flight = self.next_id
            self.next_id += 1
            self._started = now
            self._reported = set()
            out.append(Begin(self.epoch, self.in_flight))
        return out

    def status(self, worker: int, epoch: int, now: float) -> list[Action]:
        """A paused worker says which epoch it restored (0: it just started)."""
        if worker not in self.workers or epoch > self.epoch:
            return []
        if epoch < self.epoch:
            if self.recovering:
                if self.storing is not None:
                    return []  # the rollback goes to everyone once the store finished
                return [RollBack((worker,), self.epoch, self.restore)]
            return self._recover(now)  # it restarted while the topology ran
        if not self.recovering:
            return [Resume((worker,), self.epoch)]  # it missed the resume
        self.rolled.add(worker)
        if len(self.rolled) < len(self.workers):
            return []
        self.recovering = False
        self._resumed_at = now
        self._due = now + self.interval
        return [Resume(self.workers, self.epoch)]

    def failed(self, epoch: int, now: float) -> list[Action]:
        """A tuple failed in ``epoch``: replay from the last checkpoint (at most once per
        ``interval`` after the last recovery, so a tuple that always fails costs a replay
        per interval, not a storm of them)."""
        if epoch != self.epoch or self.recovering or self._replay_at is not None:
            return []
        self._replay_at = max(now, self._resumed_at + self.interval)
        return self.tick(now) if now >= self._replay_at else []

    def awaits(self, epoch: int, checkpoint: int, task: int) -> bool:
        """Whether a ``done`` from ``task`` for ``checkpoint`` in ``epoch`` would count (it
        is in flight and the task has not reported it yet)."""
        return (
            epoch == self.epoch
            and checkpoint == self.in_flight
            and task in self.tasks
            and task not in self._reported
        )

    def done(self, epoch: int, checkpoint: int, task: int, ok: bool, now: float) -> list[Action]:
        """A task stored (``ok``) or declined ``checkpoint``."""
        if epoch != self.epoch or checkpoint != self.in_flight or task not in self.tasks:
            return []  # late, foreign or from before a rollback: ignored
        if not ok:
            self._abandon(now)
            return [Abandon(checkpoint, f"task {task} declined it")]
        self._reported.add(task)
        if self._reported != self.tasks:
            return []
        self.in_flight = None
        self.storing = checkpoint
        self.last_duration = now - self._started
        return [Store(self.epoch, checkpoint, {"duration": round(self.last_duration, 3)})]

    def stored(self, checkpoint: int, ok: bool, now: float) -> list[Action]:
        """The :class:`Store` of ``checkpoint`` finished (``ok``: it is durable)."""
        if checkpoint != self.storing:
            return []
        self.storing = None
        self._due = now + self.interval
        if not ok:
            self.abandoned += 1
            return [Abandon(checkpoint, "it could not be stored")]
        self.restore = checkpoint
        self.completed += 1
        self.completed_at = now
        out: list[Action] = [Commit(self.epoch, checkpoint)]
        if self.recovering:  # a recovery waited for this store: restore it instead
            out.append(RollBack(self.workers, self.epoch, self.restore))
        return out

    # -- internals ----------------------------------------------------------------------

    def _recover(self, now: float) -> list[Action]:
        """Start a new epoch: every worker restores the last complete checkpoint."""
        self.epoch += 1
        self.recoveries += 1
        self.recovering = True
        self.rolled = set()
        self._replay_at = None
        if self.in_flight is not None:
            self.in_flight = None
            self.abandoned += 1
        self._resend_at = now + RESEND_SECS
        if self.storing is not None:
            return []  # the rollback goes out once that store says which checkpoint is last
        return [RollBack(self.workers, self.epoch, self.restore)]

    def _abandon(self, now: float) -> None:
        self.abandoned += 1
        self.in_flight = None
        self._due = now  # try again at once (the next id covers the abandoned epoch)


# -- a bolt task's alignment ----------------------------------------------------------------


Channel = tuple[int, str]


class BarrierAligner:
    """Barrier alignment for one bolt task over its input ``channels``.

    :meth:`arrive` is called with each barrier; while aligning, :meth:`held` says whether a
    group from a channel must wait, and :meth:`hold` keeps it.  When every channel
    delivered the epoch, :meth:`arrive` returns True and the caller snapshots, forwards the
    barrier and takes :meth:`release` (the held groups, in arrival order) back in.
    """

    def __init__(self, channels: frozenset[Channel]) -> None:
        self.channels = channels
        self.aligning: int | None = None
        self.last_aligned = 0
        self._arrived: set[Channel] = set()
        self._held: deque[Any] = deque()
        self.held_tuples = 0

    def arrive(self, channel: Channel, epoch: int) -> bool:
        """Barrier ``epoch`` on ``channel``; True when the task is aligned on it.  (A
        barrier newer than the one being aligned: call :meth:`give_up` first.)"""
        if epoch <= self.last_aligned or channel not in self.channels:
            return False  # a stale barrier of an abandoned checkpoint, or not an input
        if self.aligning is None:
            self.aligning, self._arrived = epoch, set()
        elif epoch != self.aligning:
            return False
        self._arrived.add(channel)
        if self._arrived != self.channels:
            return False
        self.last_aligned, self.aligning, self._arrived = epoch, None, set()
        return True

    def held(self, channel: Channel) -> bool:
        return self.aligning is not None and channel in self._arrived

    def hold(self, group: Any, tuples: int) -> None:
        self._held.append(group)
        self.held_tuples += tuples

    def release(self) -> list[Any]:
        """The held groups, oldest first (after an alignment completed)."""
        groups, self._held, self.held_tuples = list(self._held), deque(), 0
        return groups

    def give_up(self) -> list[Any]:
        """Stop aligning (the checkpoint is declined, overtaken or rolled back): later
        barriers of it are ignored; return the held groups, oldest first."""
        if self.aligning is not None:
            self.last_aligned = max(self.last_aligned, self.aligning)
        self.aligning, self._arrived = None, set()
        return self.release()

    def reset(self) -> None:
        """Forget everything (a rollback: barrier ids start over from the restored one)."""
        self.give_up()
        self.last_aligned = 0


# -- a spout task's epochs --------------------------------------------------------------------


@dataclass
class SpoutEpochs:
    """Deferred acks of one spout task: a msg id is acked once the checkpoint that holds
    its effects is complete, never before.

    ``epoch`` is the checkpoint the tuples emitted now belong to.  ``replayed`` holds the
    msg ids whose effects the restored checkpoint already holds but whose ack the spout may
    have missed (the crash fell between the commit and its acks): emitted again, they are
    acked at once instead of being processed twice.  ``cap`` bounds the msg ids waiting
    (``topology.max.spout.pending``; None: unbounded).
    """

    epoch: int = 1
    pending: dict[int, list[Any]] = field(default_factory=dict)
    replayed: set[Any] = field(default_factory=set)
    cap: int | None = None
    waiting: int = 0
    #: Held: emits nothing (a spout that could not follow a rescale).
    held: bool = False

    def emitted(self, msg_id: Any) -> None:
        self.pending.setdefault(self.epoch, []).append(msg_id)
        self.waiting += 1

    def is_replayed(self, msg_id: Any) -> bool:
        """True (once) when ``msg_id`` is already in the restored state: ack, do not emit."""
        if not self.replayed:
            return False
        try:
            self.replayed.remove(hashable(msg_id))
        except (KeyError, TypeError):
            return False
        return True

    def can_emit(self) -> bool:
        return not self.held and (self.cap is None or self.waiting < self.cap)

    def begin(self, checkpoint: int) -> list[Any]:
        """Close the epoch at barrier ``checkpoint``; the msg ids not acked yet whose effects
        the checkpoint will hold (to store with it)."""
        open_ids = self.pending.pop(self.epoch, [])
        if open_ids:
            self.pending.setdefault(checkpoint, []).extend(open_ids)
        self.epoch = checkpoint + 1
        return [m for k in sorted(self.pending) if k <= checkpoint for m in self.pending[k]]

    def commit(self, checkpoint: int) -> list[Any]:
        """The msg ids to ack now that ``checkpoint`` is complete."""
        done = [k for k in sorted(self.pending) if k <= checkpoint]
        acked = [m for k in done for m in self.pending.pop(k)]
        self.waiting -= len(acked)
        return acked

    def roll_back(self, restored: int) -> tuple[list[Any], list[Any]]:
        """Back to checkpoint ``restored``: (msg ids it holds: ack them, msg ids after it:
        fail them, so the spout replays them)."""
        acked = self.commit(restored)
        failed = [m for k in sorted(self.pending) for m in self.pending[k]]
        self.pending, self.waiting, self.epoch = {}, 0, restored + 1
        return acked, failed


def hashable(value: Any) -> Any:
    """Lists (how msgpack gives arrays back) as tuples, so they can be keys or set members."""
    if isinstance(value, list):
        return tuple(hashable(v) for v in value)
    return value

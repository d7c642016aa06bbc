"""Where checkpointing meets the executor, its frame reader and the transfer (pure).

The executor, the :class:`~topology.runtime.net.frame_reader.FrameReader` and the
:class:`~topology.runtime.net.transfer.Transfer` are given these at construction; they never
look at whether a topology is checkpointed:

* :class:`CheckpointHooks`: what the executor and its frame reader ask of a worker's
  checkpoint agent (:class:`~topology.runtime.checkpoint.worker.WorkerCheckpoints`), or of
  :data:`NO_CHECKPOINTS` when the topology takes no checkpoints;
* :class:`FrameStamp`: the recovery epoch the transfer stamps on every data frame it
  sends — a :class:`RecoveryEpoch` the checkpoint agent moves, or :data:`UNSTAMPED`;
* :class:`InFlight`: what the agent asks of the executor during a rollback.

A collector's own hooks are constructor arguments of the collectors: a bolt collector's
``on_fail`` (:meth:`WorkerCheckpoints.tuple_failed`) and a spout collector's ``epochs``
(:class:`~topology.state.checkpoint.SpoutEpochs`).

Everything here runs on the executor thread.
"""

from __future__ import annotations

from typing import Any, Protocol


class FrameStamp(Protocol):
    """The recovery epoch stamped on data frames (read once per frame sent)."""

    @property
    def epoch(self) -> int | None:
        """The current epoch; None: frames carry none (no checkpoints)."""
        ...


class RecoveryEpoch:
    """A checkpointed worker's recovery epoch: moved by its checkpoint agent only (on a
    rollback), read by the transfer for every data frame it sends."""

    __slots__ = ("epoch",)

    def __init__(self, epoch: int = 0) -> None:
        self.epoch = epoch


class _Unstamped:
    __slots__ = ()

    @property
    def epoch(self) -> None:
        return None


#: The stamp of a worker without checkpoints: data frames carry no epoch.
UNSTAMPED: FrameStamp = _Unstamped()


class InFlight(Protocol):
    """The executor's side of a rollback."""

    def drop_in_flight(self) -> None:
        """Drop every queued tuple and barrier (inbound, lanes, frames held for full
        peers); checkpoint control groups stay."""
        ...


class CheckpointHooks(Protocol):
    """What the executor and its frame reader ask of a worker's checkpoint agent.

    ``paused`` is read once per turn: while it is true no spout emits and no tick tuple
    runs.  :meth:`barrier` and :meth:`hold` are only called for bolt tasks that were given
    a barrier aligner (only a checkpointed worker gives them one).
    """

    @property
    def paused(self) -> bool: ...

    def accepts(self, epoch: Any) -> bool:
        """Whether a data frame stamped ``epoch`` belongs to this worker's epoch (once per
        data frame read; frames that do not only let their checkpoint control in)."""
        ...

    def barrier(self, dest: int, src: int, stream: str, checkpoint: Any) -> list[list[Any]]:
        """Barrier ``checkpoint`` reached bolt task ``dest`` on (src, stream): the groups
        held back that may go in again, oldest first."""
        ...

    def hold(self, dest: int, group: list[Any]) -> list[list[Any]]:
        """Keep ``group``, which arrived behind a barrier; the groups to run now (when the
        agent gives the checkpoint up)."""
        ...

    def deliver(
        self, dest: int, stream: str, vals: list[Any], now: float, in_flight: InFlight
    ) -> bool:
        """Checkpoint control (``topology.state.checkpoint`` streams) for task ``dest`` at
        topology time ``now``; False when there is no agent to take it.  A rollback asks
        ``in_flight`` to drop what is queued before it restores state."""
        ...

    def poll(self, now: float) -> None:
        """Once per turn, at topology time ``now``: finished writes, timers, status."""
        ...

    def saturated(self) -> bool:
        """Whether the worker's stateful tasks hold so many changes not yet in a complete
        checkpoint that its spouts, and its peers', must wait (read every turn)."""
        ...


class NoCheckpoints:
    """The :class:`CheckpointHooks` of a topology that takes no checkpoints."""

    __slots__ = ()

    #: A plain class attribute: read every turn.
    paused = False

    def accepts(self, epoch: Any) -> bool:
        return True

    def barrier(self, dest: int, src: int, stream: str, checkpoint: Any) -> list[list[Any]]:
        return []

    def hold(self, dest: int, group: list[Any]) -> list[list[Any]]:
        return []  # never called: no task has an aligner

    def deliver(
        self, dest: int, stream: str, vals: list[Any], now: float, in_flight: InFlight
    ) -> bool:
        return False

    def poll(self, now: float) -> None:
        pass

    def saturated(self) -> bool:
        return False


#: The hooks of every worker of a topology without checkpoints.
NO_CHECKPOINTS: CheckpointHooks = NoCheckpoints()

"""The spout side of acking: starting trees at emit, and turning acker outcomes and timeouts
into the spout's ``ack`` / ``fail`` callbacks (pure: the clock is passed in).

A spout task's collector and task hold :class:`SpoutAcking` with ackers and
:class:`NoSpoutAcking` without; both answer the same calls (``track``, ``bind``,
``can_emit``, ``fail_all``, ``pending``, ``compiled_trees``), so neither asks which it has.
"""

from __future__ import annotations

from collections.abc import Callable
from random import getrandbits
from typing import Any

from . import fastpath
from .envelope import Push, push_tracked
from .outbox import AckOutbox
from .pending import LatencyHistogram, PendingTrees
from .protocol import ACK_ACK, ACK_FAIL, ACK_RESET, TIMEOUT, FailReason

#: ``on_acked(msg_ids)`` / ``on_failed(msg_id, reason)``: the runtime's spout callbacks
#: (completed trees come in batches: every one an acker reported in one message).
OnAcked = Callable[[list[Any]], None]
OnFailed = Callable[[Any, FailReason], None]
#: One tuple of a tree: where to push it, the tasks chosen, its values.
Send = tuple[Push, list[int], list[Any]]


def _unbound(*args: Any) -> None:
    raise RuntimeError("SpoutAcking outcome before bind(): the spout task was not attached")


class SpoutAcking:
    """Tracked trees of one spout task.

    The callbacks given to :meth:`bind` are called on the executor thread when a tree
    completes, fails, or times out; the runtime wraps them around the user's ``ack`` /
    ``fail``.
    """

    def __init__(
        self,
        task_id: int,
        outbox: AckOutbox,
        pending: PendingTrees,
        local_ackers: tuple[int, ...] = (),
    ) -> None:
        self.task_id = task_id
        self.pending = pending
        self._outbox = outbox
        #: The positions in ``outbox.ackers`` of the acker tasks in this worker: when some
        #: but not all ackers are here, roots are drawn so that a local one owns them
        #: (``root % ackers``), so that a tree's init and its completion never leave the
        #: worker (empty: any acker).
        self._acker_count = n = len(outbox.ackers)
        self._local_ackers = local_ackers if 0 < len(local_ackers) < n else ()
        #: False while the pending trees are at their cap (max spout pending): the pending
        #: trees' own ``can_emit``, bound once (it is asked before every ``next_tuple``).
        self.can_emit: Callable[[], bool] = pending.can_emit
        self._on_acked: OnAcked = _unbound
        self._on_failed: OnFailed = _unbound

    def bind(
        self, on_acked: OnAcked, on_failed: OnFailed, latencies: LatencyHistogram | None = None
    ) -> None:
        """Set the callbacks outcomes go to, and where complete latencies are observed
        (the runtime's spout task, once)."""
        self._on_acked = on_acked
        self._on_failed = on_failed
        if latencies is not None:
            self.pending.latencies = latencies

    def track(
        self, push: Push, tasks: list[int], values: list[Any], msg_id: Any, now: float
    ) -> bool:
        """Send ``values`` to ``tasks`` as the root of a new tree for ``msg_id``.

        Returns False when nobody received it: the tree is complete at once and the caller
        acks ``msg_id`` itself.
        """
        if not tasks:  # nobody received it: no tree (and no id drawn)
            return False
        local = self._local_ackers  # (_root and _started, inlined: once per spout tuple)
        if not local:
            root = getrandbits(64) or 1  # a random non-zero 64-bit root id
        else:  # random, but a multiple of the acker count plus a local acker's position
            n = self._acker_count
            root = getrandbits(63)
            root = root - root % n + local[root % len(local)] or n
        edges = push_tracked(push, tasks, values, root)
        if edges == 0:
            return False
        self._outbox.init(root, edges, self.task_id)
        self.pending.add(root, msg_id, now)
        return True

    def track_tree(self, sends: list[Send], msg_id: Any, now: float) -> bool:
        """Like :meth:`track`, for several tuples (``(push, tasks, values)`` each) that are
        the roots of one tree for ``msg_id``: it completes when all of them did (a Streams
        chain's outputs for one spout tuple, :mod:`topology.streams.chained_spout`)."""
        if not any(tasks for _, tasks, _ in sends):
            return False
        root = self._root()
        edges = 0
        for push, tasks, values in sends:
            edges ^= push_tracked(push, tasks, values, root)
        return self._started(root, edges, msg_id, now)

    def _root(self) -> int:
        local = self._local_ackers
        if not local:
            return getrandbits(64) or 1  # a random non-zero 64-bit root id
        # random, but a multiple of the acker count plus a local acker's position
        n = self._acker_count
        root = getrandbits(63)
        return root - root % n + local[root % len(local)] or n

    def _started(self, root: int, edges: int, msg_id: Any, now: float) -> bool:
        if edges == 0:
            return False
        self._outbox.init(root, edges, self.task_id)
        self.pending.add(root, msg_id, now)
        return True

    def compiled_trees(self) -> Any:
        """This task's trees for a compiled emit (``topology/runtime/_spout.c``): an
        ``acker._fastpath.SpoutTrees`` whose ``start_tree`` (the acker's C API) starts a
        tree as :meth:`track` does — this task's id, the outbox's acker ids, the positions
        among them of this worker's ackers, the outbox's per-acker init lists
        (:attr:`AckOutbox.inits`) and :meth:`PendingTrees.insertion`.  The acker's C code
        writes into these objects, so they stay the ones the outbox and the pending trees
        keep using."""
        outbox = self._outbox
        return fastpath.SpoutTrees(
            self.task_id,
            tuple(outbox.ackers),
            tuple(self._local_ackers),
            outbox.inits,
            *self.pending.insertion(),
        )

    def receive(self, stream: str, vals: list[Any], now: float) -> None:
        """Outcomes from the ackers (one group of an ``__ack_*`` stream)."""
        pending = self.pending
        if stream == ACK_ACK:
            for (roots,) in vals:
                msg_ids: list[Any] = []
                try:
                    pending.complete_all(roots, now, msg_ids)
                finally:  # the trees completed before a malformed root are still acked
                    if msg_ids:
                        self._on_acked(msg_ids)
        elif stream == ACK_FAIL:
            for root, reason in vals:
                msg_id = pending.fail(root)
                if msg_id is not None:
                    self._on_failed(msg_id, FailReason.from_wire(reason))
        elif stream == ACK_RESET:
            for (roots,) in vals:
                for root in roots:
                    pending.reset(root, now)

    def fail_all(self, reason: FailReason) -> int:
        """Fail every pending tree with ``reason`` (a worker died: trees that passed through
        it will never complete, and which ones did is not known here).  Returns how many.

        Trees that would still have completed are replayed too; at-least-once allows it,
        and it is bounded by what was in flight.  Their late acks find no pending tree.
        """
        msg_ids = self.pending.fail_all()
        for msg_id in msg_ids:
            self._on_failed(msg_id, reason)
        return len(msg_ids)

    def expire(self, now: float) -> None:
        """Fail (reason: timeout) every tree pending longer than the message timeout."""
        pending = self.pending
        pending.update_rate(now)
        for msg_id in pending.expire(now):
            self._on_failed(msg_id, TIMEOUT)


class NoSpoutAcking:
    """A spout task's acking when the topology runs without ackers: a tuple emitted with a
    msg id is sent untracked and is complete at once (:meth:`track` says False, and the
    task acks the msg id right after ``next_tuple``: Storm's behaviour)."""

    #: No pending trees.
    pending = None

    @staticmethod
    def bind(
        on_acked: OnAcked, on_failed: OnFailed, latencies: LatencyHistogram | None = None
    ) -> None:
        pass  # no outcome ever arrives

    @staticmethod
    def can_emit() -> bool:
        return True

    @staticmethod
    def compiled_trees() -> None:
        """No trees to start (a compiled emit sends untracked)."""
        return None

    @staticmethod
    def track(push: Push, tasks: list[int], values: list[Any], msg_id: Any, now: float) -> bool:
        for t in tasks:  # push_untracked, inlined
            push_val, push_meta = push[t]
            push_val(values)
            push_meta(None)
        return False

    @staticmethod
    def track_tree(sends: list[Send], msg_id: Any, now: float) -> bool:
        for push, tasks, values in sends:
            NoSpoutAcking.track(push, tasks, values, msg_id, now)
        return False

    @staticmethod
    def fail_all(reason: FailReason) -> int:
        return 0


#: The acking of every spout task of a topology without ackers (it holds no state).
NO_SPOUT_ACKING = NoSpoutAcking()

"""The bolt side of acking: anchored emits, and ack / fail / reset of received tuples."""

from __future__ import annotations

from typing import Any

from .envelope import Anchorable, Push, Roots, anchor, anchor_roots, push_tracked, root_ids
from .outbox import AckOutbox
from .protocol import MAX_REASON_CHARS, FailReason, clip_text


class BoltAcking:
    """Acking for one bolt task: what its collector's emit / ack / fail do to tuple trees."""

    def __init__(self, component: str, task_id: int, outbox: AckOutbox) -> None:
        self.component = component
        self.task_id = task_id
        self._outbox = outbox
        #: root -> XOR of this turn's acks (the outbox's; collectors may add to it).
        self.combined_acks = outbox.acks

    @staticmethod
    def anchored_to(anchors: Any) -> tuple[list[Anchorable], Roots] | None:
        """The tracked inputs among ``anchors`` and their trees; None when untracked."""
        return anchor_roots(anchors)

    @staticmethod
    def push_anchored(
        push: Push,
        tasks: list[int],
        values: list[Any],
        anchored: tuple[list[Anchorable], Roots],
    ) -> None:
        """Send ``values`` to ``tasks`` as new edges of the trees ``anchored`` names."""
        anchor(anchored[0], push_tracked(push, tasks, values, anchored[1]))

    @staticmethod
    def push_child(push: Push, tasks: list[int], values: list[Any], parent: Anchorable) -> bool:
        """Send ``values`` to ``tasks`` anchored to the tracked tuple ``parent`` (a
        BasicBolt's emit); False when ``parent`` is untracked (nothing was sent)."""
        roots = parent.anchors
        if roots is None:
            return False
        if not isinstance(roots, int):
            roots = dict.fromkeys(roots, 1)
        parent.ack_val ^= push_tracked(push, tasks, values, roots)
        return True

    def ack(self, tup: Anchorable) -> None:
        """``tup`` and every edge anchored to it are done: tell each of its trees."""
        roots = tup.anchors
        if roots is None:
            return
        if isinstance(roots, int):  # (the collector inlines this case on its hot path)
            self._outbox.ack(roots, tup.id ^ tup.ack_val)  # type: ignore[operator]
        else:
            value = tup.ack_val
            ack = self._outbox.ack
            for root, edge in roots.items():
                ack(root, edge ^ value)
        tup.anchors = None

    def fail(self, tup: Anchorable, error: str | BaseException | None = None) -> None:
        """Fail ``tup``'s trees now; their spouts learn this task and ``error``."""
        if tup.anchors is None:
            return
        if isinstance(error, BaseException):
            error = f"{type(error).__name__}: {error}"
        if error is not None:
            error = clip_text(error, MAX_REASON_CHARS)
        reason = FailReason("failed", self.component, self.task_id, error)
        for root in root_ids(tup):
            self._outbox.fail(root, reason)
        tup.anchors = None

    def reset_timeout(self, tup: Anchorable) -> None:
        """Restart the timeout of ``tup``'s trees."""
        for root in root_ids(tup):
            self._outbox.reset(root)

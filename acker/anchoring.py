"""The bolt side of acking: anchored emits, and ack / fail / reset of received tuples.

A bolt task's collector binds the five calls of its acking once, when it is built, and
calls them once per emit or ack: :class:`BoltAcking` with ackers, :class:`NoBoltAcking`
without (what it does then is what an untracked tuple needs: its values on the lanes, and
nothing to tell any tree).  Both have the same calls:

* ``emit(push, tasks, values, anchors)`` — ``values`` to the lane of every task in
  ``tasks``, as a new edge of the trees of the tracked tuples among ``anchors`` (a tuple,
  an iterable of them, or None); untracked when none is tracked;
* ``emit_child(push, tasks, values, parent)`` — a BasicBolt's emit: anchored to ``parent``
  (the input being processed, or None);
* ``ack(tup)`` — ``tup`` and every edge anchored to it are done; once per tuple (an acked
  tuple is untracked afterwards);
* ``fail(tup, error)`` — fail ``tup``'s trees now;
* ``reset_timeout(tup)`` — restart the timeout of ``tup``'s trees.

``push`` maps a task id to its lane's ``(append value, append meta)``.  With ackers,
``emit_child`` and ``ack`` are the compiled twins of this module's code
(:mod:`acker.fastpath`) when they were built; they run in C without a Python frame for a
tuple in one tree sent to one task, the common case, and call back here for the others.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from random import getrandbits
from typing import Any

from . import fastpath
from .envelope import (
    Anchorable,
    Push,
    anchor,
    anchor_roots,
    push_tracked,
    push_untracked,
    root_ids,
)
from .outbox import AckOutbox
from .protocol import MAX_REASON_CHARS, FailReason, clip_text


class NoBoltAcking:
    """A bolt task's acking when the topology runs without ackers: every emit is untracked,
    and ack / fail / reset have no tree to tell.  (Its emits push without a further call,
    and its ``ack`` is compiled where it can be: each is once per word.)"""

    @staticmethod
    def emit(push: Push, tasks: list[int], values: list[Any], anchors: Any) -> None:
        for t in tasks:  # push_untracked, inlined
            push_val, push_meta = push[t]
            push_val(values)
            push_meta(None)

    @staticmethod
    def emit_child(push: Push, tasks: list[int], values: list[Any], parent: Any) -> None:
        for t in tasks:  # push_untracked, inlined
            push_val, push_meta = push[t]
            push_val(values)
            push_meta(None)

    #: ``ack(tup)``: nothing to do.
    ack: Callable[[Anchorable], None] = staticmethod(fastpath.ignore)
    #: No outbox of combined acks (a compiled loop acks nothing: see ``BoltAcking``).
    combined_acks: dict[int, int] | None = None

    @staticmethod
    def fail(tup: Anchorable, error: str | BaseException | None = None) -> None:
        pass

    @staticmethod
    def reset_timeout(tup: Anchorable) -> None:
        pass


#: The acking of every bolt task of a topology without ackers (it holds no state).
NO_BOLT_ACKING = NoBoltAcking()


class BoltAcking:
    """Acking for one bolt task: what its collector's emit / ack / fail do to tuple trees.

    ``ack`` and ``emit_child`` are attributes set when it is built: the compiled twins
    (bound to this task with :func:`functools.partial`) when :data:`acker.fastpath.COMPILED`
    is true then, else this class's pure-Python methods.
    """

    #: See the module's docstring.
    ack: Callable[[Anchorable], None]
    emit_child: Callable[[Push, list[int], list[Any], Any], None]

    def __init__(self, component: str, task_id: int, outbox: AckOutbox) -> None:
        self.component = component
        self.task_id = task_id
        self._outbox = outbox
        #: root -> XOR of this turn's acks: the outbox's own dict, which the one-tree ack
        #: adds to without a call (it is the same dict for the outbox's lifetime).  A
        #: BasicBolt's compiled loop (``topology.runtime.basic_path``) hands it, opaque,
        #: to this package's C API (``run_ack``), which folds into it and hands ``ack``
        #: the tuples in several trees.
        self._acks = self.combined_acks = outbox.acks
        if fastpath.COMPILED:
            self.ack = partial(fastpath.ack, outbox.acks, self._ack_trees)
            self.emit_child = partial(fastpath.emit_child, self._emit_child)
        else:
            self.ack = self._ack
            self.emit_child = self._emit_child

    @staticmethod
    def emit(push: Push, tasks: list[int], values: list[Any], anchors: Any) -> None:
        """``values`` to ``tasks`` as new edges of the trees of the tracked ``anchors``."""
        anchored = anchor_roots(anchors)
        if anchored is None:
            push_untracked(push, tasks, values)
        else:
            anchor(anchored[0], push_tracked(push, tasks, values, anchored[1]))

    @staticmethod
    def _emit_child(push: Push, tasks: list[int], values: list[Any], parent: Any) -> None:
        """``values`` to ``tasks`` anchored to ``parent`` (a BasicBolt's emit)."""
        roots = None if parent is None else parent.anchors
        if roots is None:
            push_untracked(push, tasks, values)
        elif type(roots) is int and len(tasks) == 1:  # one tree, one task: the common case
            push_val, push_meta = push[tasks[0]]
            edge = getrandbits(64)
            push_val(values)
            push_meta((edge, roots))
            parent.ack_val ^= edge
        else:
            if not isinstance(roots, int):
                roots = dict.fromkeys(roots, 1)
            parent.ack_val ^= push_tracked(push, tasks, values, roots)

    def _ack(self, tup: Anchorable) -> None:
        """``tup`` and every edge anchored to it are done: tell each of its trees."""
        roots = tup.anchors
        if type(roots) is int:  # one tree: into the outbox's combined acks, without a call
            acks = self._acks
            acks[roots] = acks.get(roots, 0) ^ tup.id ^ tup.ack_val  # type: ignore[operator]
            tup.anchors = None
        elif roots is not None:
            self._ack_trees(tup)

    def _ack_trees(self, tup: Anchorable) -> None:
        """:meth:`_ack` for any tracked tuple (in several trees, or of any type)."""
        roots = tup.anchors
        if roots is None:
            return
        if isinstance(roots, int):
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

"""The tracking envelope of a tuple and XOR anchoring (pure; the hot path of tracked emits).

Every tracked tuple travels with a *meta* next to its values:

* ``None`` — untracked (no tree);
* ``(edge, root)`` — one tree (the common case): ``edge`` is a fresh random 64-bit id for
  this (tuple, destination task), ``root`` the tree's root id;
* ``(edge, {root: value, ...})`` — several trees (a tuple anchored to inputs of a join):
  ``value`` is ``edge`` for a tree the tuple joins and ``0`` where two anchors of the same
  tree cancel out.

Emits make 2-tuples (one allocation each); envelopes decoded from a frame are 2-item
lists or, for a group whose envelopes are all one-tree, the tuples
:func:`topology.runtime.net.codec.expand_metas` rebuilds from the frame's packed form.  Readers
take either (``meta[0]``, ``meta[1]``).

A received tuple keeps the meta's two parts as ``Tuple.id`` and ``Tuple.anchors`` and an
``ack_val`` that starts at 0; every edge anchored to it is XORed into its ``ack_val``, so
acking it tells each root ``edge ^ ack_val`` (Storm's algorithm: every edge id is XORed in
exactly twice, once when created and once when acked).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from random import getrandbits
from typing import Any, Protocol

#: ``task id -> (append value, append meta)`` of that task's outbound lane.
Push = dict[int, tuple[Callable[[Any], None], Callable[[Any], None]]]
#: The trees a new tuple belongs to: one root id, or root id -> parity (1 joins, 0 cancels).
Roots = int | dict[int, int]


class Anchorable(Protocol):
    """What the acking code reads and writes on a received tuple (``topology.Tuple``)."""

    id: int | None
    anchors: int | dict[int, int] | None
    ack_val: int


def push_untracked(push: Push, tasks: Iterable[int], values: list[Any]) -> None:
    """Append ``values`` to the lane of every task in ``tasks``, untracked (meta None)."""
    for t in tasks:
        push_val, push_meta = push[t]
        push_val(values)
        push_meta(None)


def push_tracked(push: Push, tasks: Iterable[int], values: list[Any], roots: Roots) -> int:
    """Append ``values`` to the lane of every task in ``tasks`` as a new edge of ``roots``.

    Returns the XOR of the new edge ids (what the emitter anchors or registers).
    """
    edges = 0
    if isinstance(roots, int):
        for t in tasks:
            edge = getrandbits(64)
            edges ^= edge
            push_val, push_meta = push[t]
            push_val(values)
            push_meta((edge, roots))
        return edges
    for t in tasks:
        edge = getrandbits(64)
        edges ^= edge
        push_val, push_meta = push[t]
        push_val(values)
        push_meta((edge, {r: (edge if p else 0) for r, p in roots.items()}))
    return edges


def anchor_roots(anchors: Any) -> tuple[list[Anchorable], Roots] | None:
    """The tracked tuples among ``anchors`` (a tuple or an iterable of them) and the trees a
    tuple anchored to them joins; ``None`` when no anchor is tracked."""
    if anchors is None:
        return None
    if hasattr(anchors, "ack_val"):  # a single tuple
        roots = anchors.anchors
        if roots is None:
            return None
        return [anchors], (roots if isinstance(roots, int) else dict.fromkeys(roots, 1))
    tracked = [a for a in anchors if getattr(a, "anchors", None) is not None]
    if not tracked:
        return None
    parity: dict[int, int] = {}
    for a in tracked:
        for root in root_ids(a):
            parity[root] = parity.get(root, 0) ^ 1
    if len(parity) == 1:
        root, p = next(iter(parity.items()))
        if p:
            return tracked, root
    return tracked, parity


def anchor(inputs: list[Anchorable], edges: int) -> None:
    """Record that edges ``edges`` were anchored to each of ``inputs``."""
    for tup in inputs:
        tup.ack_val ^= edges


def root_ids(tup: Anchorable) -> Iterable[int]:
    """The root ids of the trees ``tup`` belongs to (none when untracked)."""
    roots = tup.anchors
    if roots is None:
        return ()
    return (roots,) if isinstance(roots, int) else roots.keys()

"""The per-word steps of a tracked tuple, compiled when the install could build them.

Under every acked word sit the storage of a received tuple (:class:`TupleBase`, the base of
``topology.Tuple``), a BasicBolt's anchored emit and the ack of a tuple in one tree.
``pip install`` compiles them from ``acker/_fastpath.c`` when the machine has a C compiler
and Python's headers; there the acking state of a tuple sits in a C struct and an acked
word costs fewer instructions (docs/BENCHMARKS.md, "A compiled tuple and ack").  Without
them the install still succeeds and everything runs in pure Python: :class:`PyTupleBase`,
and the pure-Python twins of the two steps, methods of :class:`acker.anchoring.BoltAcking`
(``COMPILED`` is False, :func:`edge_meta`, :func:`ack_one`, :func:`ack` and
:func:`emit_child` are None, :func:`ignore` a Python function).
:class:`~acker.anchoring.BoltAcking` picks one or the other when it is built, reading
``COMPILED`` then (a test may set it False to run the twins).
tests/unit/test_speedups.py and the acking tests run both.

Set ``SPARKSTORM_PURE_PYTHON=1`` to run pure Python although the compiled module is there
(a worker takes its environment from the process that starts it); it turns off the
acker's compiled ledger loops (``acker._ledger``) too.  Workers of one topology may mix
the two: the envelopes they exchange are the same.  One difference, for forged envelopes
only: an edge id that is not an int in 0 .. 2**64 - 1 makes the compiled ack raise (the
executor drops the rest of that group and counts it, or the bolt's input fails), where
pure Python XORs it in and the tree times out.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .compiled import load


class PyTupleBase:
    """Storage of a received tuple: values, source, edge id, anchors and ack value, and
    the two reads user code makes per tuple: ``tup[key]`` and ``tup.is_tick()`` (the
    source is duck-typed: ``index``, ``tick`` and ``no_field``, as
    :class:`topology.tuple.TupleSource` has them).

    ``ack_val`` is the XOR of the edges anchored to the tuple (an unsigned 64-bit int,
    0 at creation); ``id`` and ``anchors`` are None for an untracked tuple.
    """

    __slots__ = ("values", "source", "id", "anchors", "ack_val")

    def __init__(
        self,
        values: list[Any],
        source: Any,
        id: int | None = None,
        anchors: int | dict[int, int] | None = None,
    ) -> None:
        self.values = values
        self.source = source
        self.id = id
        self.anchors = anchors
        self.ack_val = 0

    def __getitem__(self, key: Any) -> Any:
        """A value by field name (through ``source.index``; a missing name:
        ``source.no_field(key)`` raises) or by position."""
        if isinstance(key, str):
            position = self.source.index.get(key)
            if position is None:
                self.source.no_field(key)
            return self.values[position]
        return self.values[key]

    def is_tick(self) -> bool:
        """The source's ``tick`` flag."""
        return bool(self.source.tick)


_compiled: Any = load("acker._fastpath")
#: True when the compiled module is in use.
COMPILED = _compiled is not None

if TYPE_CHECKING:

    def edge_meta(parent: Any) -> tuple[int, Any]:
        """A new edge of ``parent``'s single tree: ``(edge, root)`` (the envelope of
        :mod:`acker.envelope`), ``edge`` XORed into ``parent.ack_val``."""
        ...

    def ack_one(acks: dict[int, int], tup: Any) -> bool:
        """Fold the ack of ``tup`` in exactly one tree (``id ^ ack_val``) into
        ``acks[root]`` and clear its anchors; False, nothing changed, otherwise."""
        ...

    def ack(acks: dict[int, int], general: Callable[[Any], None], tup: Any) -> None:
        """:func:`ack_one`; a tracked ``tup`` it did not take goes to ``general(tup)``
        (``BoltAcking.ack``, compiled: bound to ``acks`` and ``general`` once)."""
        ...

    def ignore(obj: Any) -> None:
        """Nothing (a call that costs less than a Python function's: ``NoBoltAcking.ack``)."""
        ...

    def emit_child(
        general: Callable[..., None], push: Any, tasks: list[int], values: list[Any], parent: Any
    ) -> None:
        """A BasicBolt's emit to one task in ``parent``'s single tree: the value and
        :func:`edge_meta` on the task's lane; anything else goes to ``general(push, tasks,
        values, parent)`` (``BoltAcking.emit_child``, compiled: bound to ``general``)."""
        ...


if _compiled is None:
    TupleBase = PyTupleBase
    # (the pure-Python twins are BoltAcking's own methods)
    edge_meta = ack_one = ack = emit_child = None  # type: ignore[assignment]
    SpoutTrees: Any = None

    def ignore(obj: Any) -> None:
        pass

else:
    TupleBase = _compiled.TupleBase  # type: ignore[misc]
    edge_meta = _compiled.edge_meta
    ack_one = _compiled.ack_one
    ack = _compiled.ack
    emit_child = _compiled.emit_child
    ignore = _compiled.ignore
    #: ``SpoutTrees(task, ackers, local, inits, buckets, rotation, add)``: a spout task's
    #: trees for a compiled emit (``SpoutAcking.compiled_trees``; ``acker/_fastpath.c``).
    SpoutTrees = _compiled.SpoutTrees


def seed_edges(seed: int) -> None:
    """Make the compiled edge and root ids of this process repeatable from ``seed``
    (tests; the pure-Python path takes its ids from ``random.getrandbits`` where it is
    called)."""
    if _compiled is not None:
        _compiled.seed(random.Random(seed).randbytes(32))


def _reseed() -> None:
    """Fresh edge ids for this process: a forked child must not repeat its parent's."""
    _compiled.seed(os.urandom(32))


if COMPILED:
    _reseed()
    os.register_at_fork(after_in_child=_reseed)

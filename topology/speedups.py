"""The per-word steps of a tracked tuple, compiled when the install could build them.

Under every acked word sit the storage of a received :class:`topology.Tuple`
(:class:`TupleBase`), a BasicBolt's anchored emit (:func:`edge_meta`) and the ack of a tuple
in one tree (:func:`ack_one`).  ``pip install`` compiles them from ``topology/_speedups.c``
when the machine has a C compiler and Python's headers; there the acking state of a tuple
sits in a C struct and an acked word costs about 8 % fewer instructions
(docs/BENCHMARKS.md, "A compiled tuple and ack").  Without them the install still
succeeds and everything runs in pure Python: :class:`PyTupleBase`, and the collector's
own inline code for the two steps (``COMPILED`` is False, ``edge_meta`` and ``ack_one``
are None).  tests/unit/test_speedups.py and the acking tests run both.

Set ``SPARKSTORM_PURE_PYTHON=1`` to run pure Python although the compiled module is there
(a worker takes its environment from the process that starts it); it turns off the
acker's compiled ledger loops (``acker._ledger``) too.  :func:`describe` says which run.
Workers of one topology may mix the two: the envelopes they exchange are the same.  One
difference, for forged envelopes only: an edge id that is not an int in 0 .. 2**64 - 1
makes the compiled ack raise (the executor drops the rest of that group and counts it,
or the bolt's input fails), where pure Python XORs it in and the tree times out.
"""

from __future__ import annotations

import os
import random
from typing import TYPE_CHECKING, Any

from acker.compiled import load
from acker.ledger import COMPILED as LEDGER_COMPILED
from topology.runtime.wire import COMPILED as WIRE_COMPILED


class PyTupleBase:
    """Storage of a received tuple: values, source, edge id, anchors and ack value.

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


_compiled: Any = load("topology._speedups")
#: True when the compiled module is in use.
COMPILED = _compiled is not None

if TYPE_CHECKING:

    def edge_meta(parent: Any) -> list[Any]:
        """A new edge of ``parent``'s single tree: ``[edge, root]`` (the envelope of
        :mod:`acker.envelope`), ``edge`` XORed into ``parent.ack_val``."""
        ...

    def ack_one(acks: dict[int, int], tup: Any) -> bool:
        """Fold the ack of ``tup`` in exactly one tree (``id ^ ack_val``) into
        ``acks[root]`` and clear its anchors; False, nothing changed, otherwise."""
        ...


if _compiled is None:
    TupleBase = PyTupleBase
    edge_meta = ack_one = None  # type: ignore[assignment]  # (the collector inlines them)
else:
    TupleBase = _compiled.TupleBase  # type: ignore[misc]
    edge_meta = _compiled.edge_meta
    ack_one = _compiled.ack_one


def describe() -> str:
    """Which hot paths run compiled in this process, for benchmark headers."""
    parts = [
        f"tuple path {'compiled' if COMPILED else 'pure Python'} (topology._speedups)",
        f"acker ledger {'compiled' if LEDGER_COMPILED else 'pure Python'} (acker._ledger)",
        f"frame checks {'compiled' if WIRE_COMPILED else 'pure Python'} (topology.runtime._wire)",
    ]
    return ", ".join(parts)


def seed_edges(seed: int) -> None:
    """Make the compiled edge ids of this process repeatable from ``seed`` (tests; the
    pure-Python path takes its ids from ``random.getrandbits`` where it is called)."""
    if _compiled is not None:
        _compiled.seed(random.Random(seed).randbytes(32))


def _reseed() -> None:
    """Fresh edge ids for this process: a forked child must not repeat its parent's."""
    _compiled.seed(os.urandom(32))


if COMPILED:
    _reseed()
    os.register_at_fork(after_in_child=_reseed)

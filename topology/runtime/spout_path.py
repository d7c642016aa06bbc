"""A spout's emit, compiled when the install could build it.

Under every sentence of the README's word count sits the spout's tracked emit: check the
values, pick the task, start a tree (root, edges, the acker's init, the pending entry) and
push value and ``(edge, root)`` on the lane.  ``pip install`` compiles it from
``topology/runtime/_spout.c``, which picks tasks and pushes values itself (the stream's
``FastRoute`` of :mod:`.basic_path`) and leaves the tree to the acker: ``start_tree`` of
:mod:`acker.fastpath`'s C API, given the task's ``SpoutTrees``
(:meth:`acker.spout.SpoutAcking.compiled_trees`).  :func:`compile_spout` then
gives a spout task a :data:`SpoutEmit` whose ``emit`` is the spout's ``emit``.  It takes
what it can do without Python:

* streams nobody subscribes to, and streams with one subscriber whose grouping is built in;
* a list of the declared arity of ASCII str, 64-bit int, float, bool, None or bytes;
* with or without a msg id, with ackers or without.

Everything else — other value types, direct or multi-subscriber streams, a wrong arity or
undeclared stream (which raise) — goes to the collector's Python ``emit``, so errors and
checks are the same on both paths; ``emit_direct`` is always Python.  Without the compiled
module, with ``SPARKSTORM_PURE_PYTHON`` set, when values are checked wherever they go
(``topology.testing.always.try.serialize`` or ``topology.debug``), or in a checkpointed
topology (msg ids wait for a checkpoint there), the task runs pure Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acker.compiled import load

from . import basic_path

if TYPE_CHECKING:
    from .tasks.collector import SpoutCollector

_compiled: Any = load("topology.runtime._spout") if basic_path.COMPILED else None
#: True when the compiled module is in use.
COMPILED = _compiled is not None

#: ``SpoutEmit(routes, general, acked_at_emit, clock, trees)``: see
#: ``topology/runtime/_spout.c`` (None when not compiled); ``trees`` is the acker's
#: ``SpoutTrees`` (None without ackers).
SpoutEmit: Any = None if _compiled is None else _compiled.SpoutEmit


def compile_spout(collector: SpoutCollector) -> Any:
    """A :data:`SpoutEmit` for the spout task of ``collector`` (its routes' emits then
    count on their ``FastRoute``), or None when the task runs pure Python."""
    if not COMPILED or collector.checks_all or collector.epochs is not None:
        return None
    return SpoutEmit(
        basic_path.fast_routes(collector),
        collector.emit,
        collector.acked_at_emit,
        collector.clock,
        collector.acking.compiled_trees(),
    )

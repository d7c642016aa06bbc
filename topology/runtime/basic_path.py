"""A BasicBolt task's loop and emit, compiled when the install could build them.

Under every word of the README's word count sit a BasicBolt's per-tuple loop (build the
tuple, call ``process``, ack it) and its anchored emit (check the values, pick the task,
push value and edge on the lane).  ``pip install`` compiles both from
``topology/runtime/_basic.c``, which builds tuples, calls ``process`` and pushes values, and
leaves every step of acking to :mod:`acker.fastpath`'s C API (a new edge of the input's
tree, the ack of an input, the acks of a run folded into the outbox's combined acks, all
handed over as opaque objects of the task's ``BoltAcking``); :func:`compile_basic` then
gives a BasicBolt task a :class:`Basic` whose ``run`` replaces
:meth:`~topology.runtime.tasks.task.BoltTask._run` and whose ``emit`` is the bolt's ``emit``.
It takes what it can do without Python:

* streams nobody subscribes to, and streams with one subscriber whose grouping is built in
  (a single-field fields grouping's cached key is read in C; any other grouping is called);
* a list of the declared arity of ASCII str, 64-bit int, float, bool, None or bytes;
* an input untracked or in exactly one tree, sent to one task.

Everything else — other value types, direct or multi-subscriber streams, ``anchors`` in
several trees, a wrong arity or undeclared stream (which raise) — goes to the collector's
Python ``emit_anchored``, so errors and checks are the same on both paths.  Without the
compiled module, with ``SPARKSTORM_PURE_PYTHON`` set, or when values are checked wherever
they go (``topology.testing.always.try.serialize`` or ``topology.debug`` set), the task
runs pure Python.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from acker import fastpath
from acker.compiled import load
from topology.constants import DEAD_LETTER_STREAM
from topology.tuple import Tuple

if TYPE_CHECKING:
    from .tasks.collector import BoltCollector, _Collector
    from .tasks.routing import StreamRoute

_compiled: Any = load("topology.runtime._basic") if fastpath.COMPILED else None
#: True when the compiled module is in use.
COMPILED = _compiled is not None

#: ``Basic(routes, general, emit_child, acks, ack_general, on_error, tuple_type)``: see
#: ``topology/runtime/_basic.c`` (None when not compiled).
Basic: Any = None if _compiled is None else _compiled.Basic
#: ``FastRoute(arity, choose=None, push=None, key=-1, cache=None)`` (None when not compiled).
FastRoute: Any = None if _compiled is None else _compiled.FastRoute


def fast_route(route: StreamRoute) -> Any:
    """The :data:`FastRoute` of ``route`` when the compiled emit can take it, else None."""
    if route.direct:
        return None
    if not route.targets:
        return FastRoute(route.arity)
    choose = route.choose_one
    if choose is None:
        return None
    lookup = getattr(getattr(choose, "__self__", None), "cached_key", None)
    key, cache = lookup() if lookup is not None else (-1, None)
    return FastRoute(route.arity, choose, route.push, key, cache)


def fast_routes(collector: _Collector) -> dict[str, Any]:
    """Stream -> :data:`FastRoute` of every route of ``collector`` a compiled emit can take;
    each is set as its route's ``fast`` and counted among the collector's ``fast_routes``
    (the emits it takes count there).  Not the dead-letter stream's: its rare emits take
    the Python path, and the stats' sum over ``fast_routes`` stays as short as before."""
    routes = {}
    for stream, route in collector.routes.items():
        if stream == DEAD_LETTER_STREAM:
            continue
        fast = fast_route(route)
        if fast is not None:
            route.fast = routes[stream] = fast
            collector.fast_routes.append(fast)
    return routes


def compile_basic(collector: BoltCollector, on_error: Callable[[Any, Exception], None]) -> Any:
    """A :data:`Basic` for the BasicBolt task of ``collector`` (its routes' emits then count
    on their :data:`FastRoute`), or None when the task runs pure Python."""
    if not COMPILED or collector.checks_all:
        return None
    acking = collector.acking
    return Basic(
        fast_routes(collector),
        collector.emit_anchored,
        acking.emit_child,
        acking.combined_acks,
        acking.ack,
        on_error,
        Tuple,
    )

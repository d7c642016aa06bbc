"""The Streams API (Storm 2's, in PEP 8 names): streams of Python values built into an
ordinary topology.

Example (the word count)::

    sb = StreamBuilder()
    (sb.new_stream(Sentences(), parallelism=2)
       .flat_map(str.split)
       .key_by(lambda word: word)
       .count_by_key()
       .for_each(print))
    topology = sb.build()

A :class:`Stream` of values, a :class:`PairStream` of ``(key, value)`` pairs; each call
adds an operator and returns the stream after it, so nothing runs until :meth:`build`.
An operator runs with the parallelism of the stream it reads (:meth:`Stream.repartition`
changes it); keyed operators see every value of a key in one task.  See docs/STREAMS.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from topology.builder import TopologyBuilder
from topology.components import Bolt, OutputFieldsDeclarer, Spout
from topology.config import STREAMS_FUSION
from topology.constants import DEFAULT_STREAM
from topology.errors import TopologyValidationError

from .graph import Node, default_name
from .windowing import Windowing

if TYPE_CHECKING:
    from topology.spec import Topology

    from .windowed import WindowedPairStream, WindowedStream

T = TypeVar("T")
R = TypeVar("R")
K = TypeVar("K")
V = TypeVar("V")
W = TypeVar("W")
A = TypeVar("A")
S = TypeVar("S")

#: The config key that turns fusion off (read by :meth:`StreamBuilder.build`).
FUSION_KEY = STREAMS_FUSION


class StreamBuilder:
    """Records streams and builds them into a topology.

    Args:
        builder: a :class:`TopologyBuilder` to add the stream components to, so hand-written
            spouts and bolts can be declared beside them (a new one by default).
        fusion: run consecutive stateless operators of the same parallelism inside one
            component (default); False gives every operator its own component.
    """

    def __init__(self, builder: TopologyBuilder | None = None, *, fusion: bool = True) -> None:
        self.topology_builder = builder if builder is not None else TopologyBuilder()
        self.fusion = fusion
        self.nodes: list[Node] = []
        self._built: bool | None = None  # the fusion setting it was built with

    def new_stream(
        self,
        spout: Spout,
        parallelism: int = 1,
        *,
        name: str | None = None,
        stream: str = DEFAULT_STREAM,
    ) -> Stream[Any]:
        """A stream of what ``spout`` emits on ``stream``: each tuple's value when the
        stream has one field, else a dict of its fields."""
        if not isinstance(spout, Spout):
            raise TypeError(
                f"new_stream() takes a Spout instance, got {type(spout).__name__}"
                + (" (a class: instantiate it)" if isinstance(spout, type) else "")
            )
        fields = _declared_fields(spout, stream, "new_stream")
        node = self.add(
            "spout",
            [],
            parallelism,
            False,
            name or default_name("spout", type(spout)),
            instance=spout,
            stream=stream,
            named=name is not None,
        )
        node.fields = fields
        return Stream(self, node)

    def add(
        self,
        kind: str,
        parents: list[Node],
        parallelism: int,
        pair: bool,
        name: str,
        **options: Any,
    ) -> Node:
        """Record a node reading ``parents`` (for the stream classes)."""
        if self._built is not None:
            raise TopologyValidationError(
                [
                    f"stream operator {name!r}: this StreamBuilder was built already; add every "
                    "operator before build()"
                ]
            )
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise ValueError(
                f"stream operator {name!r}: parallelism must be >= 1, got {parallelism!r}"
            )
        node = Node(len(self.nodes) + 1, kind, name, list(parents), parallelism, pair, options)
        for parent in parents:
            parent.children.append(node)
        self.nodes.append(node)
        return node

    def build(self, conf: Mapping[str, Any] | None = None) -> Topology:
        """The topology: stream components added to :attr:`topology_builder`, then its
        ``create_topology()``.  ``conf`` may turn fusion off (``topology.streams.fusion:
        false``).  Calling it again gives the same components (with the same fusion)."""
        from .plan import plan

        fusion = self.fusion if conf is None else bool(conf.get(FUSION_KEY, self.fusion))
        if self._built is None:
            plan(self.nodes, self.topology_builder, fusion)
            self._built = fusion
        elif self._built != fusion:
            raise TopologyValidationError(
                [
                    f"this StreamBuilder was built with fusion={self._built}; make a new one "
                    f"for fusion={fusion}"
                ]
            )
        return self.topology_builder.create_topology()


class Stream(Generic[T]):
    """A stream of values of type ``T``."""

    def __init__(self, builder: StreamBuilder, node: Node) -> None:
        self.builder = builder
        self.node = node

    def _then(
        self,
        kind: str,
        fn: Any,
        pair: bool,
        parallelism: int | None = None,
        name: str | None = None,
        **options: Any,
    ) -> Node:
        if fn is not None and not callable(fn):
            raise TypeError(f"{name or kind}() takes a function, got {fn!r}")
        return self.builder.add(
            kind,
            [self.node],
            self.node.parallelism if parallelism is None else parallelism,
            pair,
            name or default_name(kind, fn),
            fn=fn,
            **options,
        )

    def named(self, name: str) -> Stream[T]:
        """Call the last operator ``name`` in status, visualize and metrics (checked by
        the component name rule at build)."""
        if self.builder._built is not None:
            raise TopologyValidationError(
                [
                    f"named({name!r}): this StreamBuilder was built already; name operators "
                    "before build()"
                ]
            )
        self.node.name = name
        self.node.options["named"] = True
        return self

    # -- one element at a time (these fuse) --------------------------------------------------

    def map(self, fn: Callable[[T], R]) -> Stream[R]:
        """``fn(element)`` for each element."""
        return Stream(self.builder, self._then("map", fn, False))

    def filter(self, predicate: Callable[[T], Any]) -> Stream[T]:
        """The elements for which ``predicate`` is true."""
        return self._copy(self._then("filter", predicate, self.node.pair))

    def flat_map(self, fn: Callable[[T], Iterable[R]]) -> Stream[R]:
        """Every item of ``fn(element)`` (none, one or many per element)."""
        return Stream(self.builder, self._then("flat_map", fn, False))

    def peek(self, fn: Callable[[T], Any]) -> Stream[T]:
        """Call ``fn(element)`` and pass the element on unchanged (debugging, metrics)."""
        return self._copy(self._then("peek", fn, self.node.pair))

    def for_each(self, fn: Callable[[T], Any]) -> None:
        """Call ``fn(element)`` for each element: the end of this stream."""
        self._then("for_each", fn, False)

    def key_by(self, fn: Callable[[T], K]) -> PairStream[K, T]:
        """Pairs ``(fn(element), element)``."""
        return PairStream(self.builder, self._then("key_by", fn, True))

    def map_to_pair(self, fn: Callable[[T], tuple[K, V]]) -> PairStream[K, V]:
        """Pairs ``fn(element)`` (a 2-tuple ``(key, value)``)."""
        return PairStream(self.builder, self._then("map_to_pair", fn, True))

    def flat_map_to_pair(self, fn: Callable[[T], Iterable[tuple[K, V]]]) -> PairStream[K, V]:
        """Every ``(key, value)`` of ``fn(element)``."""
        return PairStream(self.builder, self._then("flat_map_to_pair", fn, True))

    def map_async(
        self,
        fn: Callable[[T], Awaitable[R]],
        capacity: int = 100,
        ordered: bool = True,
        timeout: float = 5.0,
    ) -> Stream[R]:
        """``await fn(element)`` for each element, up to ``capacity`` calls in flight per
        task (Flink's async I/O): results in input order (``ordered``) or as calls finish;
        a call that raises or takes longer than ``timeout`` seconds fails its input (the
        spout replays it); at capacity the task takes no more input.  See docs/ASYNC.md."""
        from topology.async_calls import check_settings

        check_settings(capacity, timeout)
        node = self._then(
            "async",
            fn,
            False,
            name=default_name("map_async", fn),
            capacity=capacity,
            ordered=ordered,
            timeout=timeout,
        )
        return Stream(self.builder, node)

    # -- shape -------------------------------------------------------------------------------

    def branch(self, *predicates: Callable[[T], Any]) -> list[Stream[T]]:
        """One stream per predicate: an element goes to the first whose predicate is true
        (to none when none is)."""
        if not predicates:
            raise TypeError("branch() takes at least one predicate")
        for predicate in predicates:
            if not callable(predicate):
                raise TypeError(f"branch() takes functions, got {predicate!r}")
        node = self._then("branch", _first_true(predicates), self.node.pair, name="branch")
        return [
            self._copy(
                self.builder.add(
                    "route",
                    [node],
                    node.parallelism,
                    node.pair,
                    f"branch{i}",
                    index=i,
                    branch=node.id,
                )
            )
            for i in range(len(predicates))
        ]

    def union(self, *others: Stream[T]) -> Stream[T]:
        """The elements of this stream and ``others`` (same builder), interleaved."""
        for other in others:
            if other.builder is not self.builder:
                raise ValueError("union() of streams from two StreamBuilders")
            if other.node.pair != self.node.pair:
                raise ValueError("union() of a Stream with a PairStream: key_by() the other first")
        node = self.builder.add(
            "identity",
            [self.node, *(o.node for o in others)],
            self.node.parallelism,
            self.node.pair,
            "union",
        )
        return self._copy(node)

    def repartition(self, parallelism: int) -> Stream[T]:
        """The same elements, spread evenly over ``parallelism`` tasks."""
        return self._copy(
            self._then("identity", None, self.node.pair, parallelism, "repartition", shuffle=True)
        )

    def window(self, windowing: Windowing) -> WindowedStream[T]:
        """Windows of this stream (:func:`~topology.streams.windowing.tumbling`...), to
        aggregate over."""
        if not isinstance(windowing, Windowing):
            raise TypeError(
                f"window() takes tumbling(...), sliding(...) or session(...), got {windowing!r}"
            )
        from .windowed import WindowedStream

        return WindowedStream(self, windowing)

    def to(self, bolt: Bolt, parallelism: int = 1, *, name: str | None = None) -> Stream[Any]:
        """Send the elements to a hand-written ``bolt``: it reads tuples with the field
        ``value`` (a pair stream: ``key`` and ``value``, grouped by ``key``) — or, straight
        after a hand-written spout or bolt, that component's own fields.  Returns the
        stream of what it emits on its default stream (a value per tuple of one field,
        else a dict of the fields)."""
        if not isinstance(bolt, Bolt):
            raise TypeError(f"to() takes a Bolt instance, got {type(bolt).__name__}")
        fields = _declared_fields(bolt, DEFAULT_STREAM, "to", optional=True)
        node = self.builder.add(
            "bolt",
            [self.node],
            parallelism,
            False,
            name or default_name("bolt", type(bolt)),
            instance=bolt,
            keyed=self.node.pair,
            named=name is not None,
        )
        node.fields = fields
        return Stream(self.builder, node)

    def _copy(self, node: Node) -> Any:
        return type(self)(self.builder, node)


class PairStream(Stream[tuple[K, V]], Generic[K, V]):
    """A stream of ``(key, value)`` pairs: keyed operators see every value of a key in one
    task."""

    def map_values(self, fn: Callable[[V], R]) -> PairStream[K, R]:
        """``(key, fn(value))``."""
        return PairStream(self.builder, self._then("map_values", fn, True))

    def flat_map_values(self, fn: Callable[[V], Iterable[R]]) -> PairStream[K, R]:
        """``(key, item)`` for every item of ``fn(value)``."""
        return PairStream(self.builder, self._then("flat_map_values", fn, True))

    def group_by_key(self) -> PairStream[K, V]:
        """The same pairs, every value of a key sent to one task (a repartition by key)."""
        return PairStream(self.builder, self._then("group", None, True))

    def reduce_by_key(self, fn: Callable[[V, V], V]) -> PairStream[K, V]:
        """A running reduction per key: ``(key, fn(previous, value))`` per pair."""
        if not callable(fn):
            raise TypeError(f"reduce_by_key() takes a function, got {fn!r}")
        node = self._then(
            "aggregate", fn, True, name=default_name("reduce_by_key", fn), op="reduce"
        )
        return PairStream(self.builder, node)

    def aggregate_by_key(
        self,
        init: Callable[[], A],
        apply: Callable[[A, V], A],
        merge: Callable[[A, A], A] | None = None,
        result: Callable[[A], R] | None = None,
    ) -> PairStream[K, Any]:
        """A running aggregate per key (Storm's combiner): ``init()`` starts a key,
        ``apply(aggregate, value)`` adds a value, ``(key, result(aggregate))`` is emitted
        per pair (the aggregate itself without ``result``).  ``merge(a, b)`` is accepted so
        Storm combiners port unchanged; each key's values meet in one task, so it is not
        needed.  Kept in the task's memory: use :meth:`update_state_by_key` for state that
        survives failures exactly once."""
        for what, fn in (("init", init), ("apply", apply)):
            if not callable(fn):
                raise TypeError(f"aggregate_by_key({what}=...) must be a function, got {fn!r}")
        node = self._then(
            "aggregate",
            None,
            True,
            name=default_name("aggregate_by_key", apply),
            op="aggregate",
            init=init,
            apply=apply,
            merge=merge,
            result=result,
        )
        return PairStream(self.builder, node)

    def count_by_key(self) -> PairStream[K, int]:
        """A running count per key: ``(key, count so far)`` per pair."""
        return PairStream(
            self.builder, self._then("aggregate", None, True, name="count_by_key", op="count")
        )

    def update_state_by_key(self, fn: Callable[[S | None, V], S]) -> PairStream[K, S]:
        """``state = fn(state, value)`` per pair (None before a key's first value), kept in
        checkpointed key-value state: exactly once through failures (the topology becomes
        checkpointed).  Emits ``(key, state)``; a state of None deletes the key."""
        return PairStream(self.builder, self._then("state", fn, True))

    def window(self, windowing: Windowing) -> WindowedPairStream[K, V]:
        """Windows of this stream, to aggregate or join per key over."""
        if not isinstance(windowing, Windowing):
            raise TypeError(
                f"window() takes tumbling(...), sliding(...) or session(...), got {windowing!r}"
            )
        from .windowed import WindowedPairStream

        return WindowedPairStream(self, windowing)


def _first_true(predicates: tuple[Callable[[Any], Any], ...]) -> Callable[[Any], int]:
    def chooser(element: Any) -> int:
        for i, predicate in enumerate(predicates):
            if predicate(element):
                return i
        return -1

    return chooser


def _declared_fields(
    component: Any, stream: str, where: str, optional: bool = False
) -> list[str] | None:
    declarer = OutputFieldsDeclarer()
    try:
        component.declare_output_fields(declarer)
    except Exception as exc:
        raise TypeError(
            f"{where}(): {type(component).__name__} failed to declare its outputs: {exc}"
        ) from exc
    declared = declarer.streams.get(stream)
    if declared is None:
        if optional:
            return None
        raise ValueError(
            f"{where}(): {type(component).__name__} declares no stream {stream!r} "
            f"(it declares {sorted(declarer.streams) or 'none'})"
        )
    return list(declared.fields)

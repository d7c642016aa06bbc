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

Windowed streams (:meth:`Stream.window`, :meth:`PairStream.window`) aggregate per
window (per key and window for pair streams) and join two pair streams over windows.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from topology.async_calls import check_settings
from topology.builder import TopologyBuilder
from topology.components import Bolt, OutputFieldsDeclarer, Spout
from topology.config import STREAMS_FUSION
from topology.constants import DEFAULT_STREAM
from topology.errors import TopologyValidationError

from .graph import Node, default_name
from .joins import check_interval, check_ttl
from .plan import plan
from .window_aggregates import window_mode
from .windowing import Windowing

if TYPE_CHECKING:
    from topology.spec import Topology


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

    Example: the word count, built, then run on the in-process runner (``print`` runs in
    the worker, here this process):

        >>> from topology.runtime.inprocess import InProcessRunner
        >>> from topology.testing import FeederSpout
        >>> sb = StreamBuilder()
        >>> sentences = FeederSpout(["sentence"], [["to be or"], ["not to be"]])
        >>> (
        ...     sb.new_stream(sentences)
        ...     .flat_map(str.split)
        ...     .key_by(lambda word: word)
        ...     .count_by_key()
        ...     .for_each(print)
        ... )
        >>> topology = sb.build()
        >>> sorted(topology.components)  # split and key_by run in the spout's task
        ['FeederSpout', 'count_by_key-print']
        >>> runner = InProcessRunner(topology)
        >>> runner.activate()
        >>> runner.turn(50)
        ('to', 1)
        ('be', 1)
        ('or', 1)
        ('not', 1)
        ('to', 2)
        ('be', 2)
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
        """Start a stream from a spout.

        Args:
            spout: the spout instance.
            parallelism: how many tasks run the spout.
            name: the spout's component id (default: its class name).
            stream: the spout's stream to read.

        Returns:
            A :class:`Stream` of what ``spout`` emits on ``stream``: each tuple's value
            when the stream has one field, else a dict of its fields.

        Raises:
            TypeError: ``spout`` is not a Spout instance (or fails to declare its outputs).
            ValueError: the spout declares no such stream, or ``parallelism`` < 1.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
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
        """Record an operator reading ``parents`` (for the stream classes, not authors).

        Args:
            kind: the operator's kind.
            parents: the operators it reads.
            parallelism: its task count.
            pair: whether it emits ``(key, value)`` pairs.
            name: its name.
            **options: what the kind needs (the function...).

        Returns:
            The new node.

        Raises:
            ValueError: ``parallelism`` is not an int >= 1.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
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
        """Build the topology: the stream components are added to :attr:`topology_builder`,
        then its ``create_topology()`` runs.  Calling it again gives the same components.

        Args:
            conf: the topology's conf; ``topology.streams.fusion: false`` turns fusion off.

        Returns:
            The validated :class:`~topology.spec.Topology`.

        Raises:
            TopologyValidationError: a problem in the topology (as ``create_topology``), or
                the builder was built already with the other fusion setting.
        """
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
    """A stream of values of type ``T``; made by :meth:`StreamBuilder.new_stream`.

    Every operator returns the stream after it; nothing runs until
    :meth:`StreamBuilder.build`.  Functions given to operators travel with the topology
    (cloudpickle), so lambdas and closures work.

    Args:
        builder: the builder it belongs to.
        node: the operator producing it.

    Example:
        >>> from topology.testing import FeederSpout
        >>> sb = StreamBuilder()
        >>> numbers = sb.new_stream(FeederSpout(["n"]), name="numbers")
        >>> evens, odds = numbers.branch(lambda n: n % 2 == 0, lambda n: n % 2 == 1)
        >>> evens.map(lambda n: n * 10).named("tens").for_each(print)
        >>> odds.repartition(2).filter(lambda n: n > 1).for_each(print)
        >>> sorted(sb.build().components)  # branch, tens and print in the spout's task
        ['numbers', 'repartition-filter-print-2']
        >>> numbers.map("upper")
        Traceback (most recent call last):
        ...
        TypeError: map() takes a function, got 'upper'
    """

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
        """Name the last operator: the name shown in status, visualize and metrics.

        Args:
            name: the name (checked by the component name rule at build).

        Returns:
            This stream.

        Raises:
            TopologyValidationError: the builder was built already.
        """
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
        """Transform each element.

        Args:
            fn: ``fn(element)`` gives the new element.

        Returns:
            The stream of ``fn(element)`` for each element.

        Raises:
            TypeError: the argument is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
        return Stream(self.builder, self._then("map", fn, False))

    def filter(self, predicate: Callable[[T], Any]) -> Stream[T]:
        """Keep some elements.

        Args:
            predicate: ``predicate(element)`` is true for the elements to keep.

        Returns:
            The stream of the elements kept.

        Raises:
            TypeError: the argument is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
        return self._copy(self._then("filter", predicate, self.node.pair))

    def flat_map(self, fn: Callable[[T], Iterable[R]]) -> Stream[R]:
        """Turn each element into none, one or many.

        Args:
            fn: ``fn(element)`` gives an iterable of new elements.

        Returns:
            The stream of every item of every ``fn(element)``.

        Raises:
            TypeError: the argument is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
        return Stream(self.builder, self._then("flat_map", fn, False))

    def peek(self, fn: Callable[[T], Any]) -> Stream[T]:
        """Look at each element and pass it on unchanged (debugging, metrics).

        Args:
            fn: called with each element; what it returns is ignored.

        Returns:
            The same stream of elements.

        Raises:
            TypeError: the argument is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
        return self._copy(self._then("peek", fn, self.node.pair))

    def for_each(self, fn: Callable[[T], Any]) -> None:
        """Call a function for each element: the end of this stream.

        Args:
            fn: called with each element (e.g. to write it somewhere).

        Raises:
            TypeError: the argument is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
        self._then("for_each", fn, False)

    def key_by(self, fn: Callable[[T], K]) -> PairStream[K, T]:
        """Key each element.

        Args:
            fn: ``fn(element)`` gives the element's key.

        Returns:
            A :class:`PairStream` of ``(fn(element), element)``.

        Raises:
            TypeError: the argument is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
        return PairStream(self.builder, self._then("key_by", fn, True))

    def map_to_pair(self, fn: Callable[[T], tuple[K, V]]) -> PairStream[K, V]:
        """Turn each element into a ``(key, value)`` pair.

        Args:
            fn: ``fn(element)`` gives a 2-tuple ``(key, value)``.

        Returns:
            A :class:`PairStream` of those pairs.

        Raises:
            TypeError: the argument is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
        return PairStream(self.builder, self._then("map_to_pair", fn, True))

    def flat_map_to_pair(self, fn: Callable[[T], Iterable[tuple[K, V]]]) -> PairStream[K, V]:
        """Turn each element into none, one or many ``(key, value)`` pairs.

        Args:
            fn: ``fn(element)`` gives an iterable of 2-tuples.

        Returns:
            A :class:`PairStream` of every pair.

        Raises:
            TypeError: the argument is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
        return PairStream(self.builder, self._then("flat_map_to_pair", fn, True))

    def map_async(
        self,
        fn: Callable[[T], Awaitable[R]],
        capacity: int = 100,
        ordered: bool = True,
        timeout: float = 5.0,
    ) -> Stream[R]:
        """Transform each element with a coroutine, many calls in flight (Flink's async I/O).

        A call that raises or takes longer than ``timeout`` seconds fails its input (the
        spout replays it); at capacity the task takes no more input.  See docs/ASYNC.md.

        Args:
            fn: ``await fn(element)`` gives the new element.
            capacity: calls in flight per task.
            ordered: results in input order (True) or as calls finish.
            timeout: seconds a call may take.

        Returns:
            The stream of the results.

        Raises:
            ValueError: ``capacity`` is not an int >= 1 or ``timeout`` not > 0.
            TypeError: ``fn`` is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
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
        """Split the stream: one stream per predicate.

        Args:
            *predicates: an element goes to the stream of the first predicate true for it
                (to none when none is).

        Returns:
            The streams, in the predicates' order.

        Raises:
            TypeError: no predicate, or one is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
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
        """Merge streams.

        Args:
            *others: streams of the same builder (and pair streams only with pair streams).

        Returns:
            The stream of the elements of this stream and ``others``, interleaved.

        Raises:
            ValueError: a stream of another builder, or a Stream merged with a PairStream.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
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
        """Change the parallelism: the following operators run with ``parallelism`` tasks.

        Args:
            parallelism: the new task count.

        Returns:
            The same elements, spread evenly over ``parallelism`` tasks.

        Raises:
            ValueError: ``parallelism`` is not an int >= 1.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
        return self._copy(
            self._then("identity", None, self.node.pair, parallelism, "repartition", shuffle=True)
        )

    def window(self, windowing: Windowing) -> WindowedStream[T]:
        """Cut the stream into windows, to aggregate over.

        Args:
            windowing: :func:`~topology.streams.windowing.tumbling`, ``sliding`` or
                ``session`` (optionally with ``event_time``).

        Returns:
            A :class:`~topology.streams.WindowedStream`; one task sees every element.

        Raises:
            TypeError: ``windowing`` is not a :class:`Windowing`.
        """
        if not isinstance(windowing, Windowing):
            raise TypeError(
                f"window() takes tumbling(...), sliding(...) or session(...), got {windowing!r}"
            )
        return WindowedStream(self, windowing)

    def to(self, bolt: Bolt, parallelism: int = 1, *, name: str | None = None) -> Stream[Any]:
        """Send the elements to a hand-written bolt.

        The bolt reads tuples with the field ``value`` (a pair stream: ``key`` and
        ``value``, grouped by ``key``) — or, straight after a hand-written spout or bolt,
        that component's own fields.

        Args:
            bolt: the bolt instance.
            parallelism: how many tasks run it.
            name: its component id (default: its class name).

        Returns:
            The stream of what the bolt emits on its default stream (a value per tuple of
            one field, else a dict of the fields).

        Raises:
            TypeError: ``bolt`` is not a Bolt instance (or fails to declare its outputs).
            ValueError: ``parallelism`` is not an int >= 1.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
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
    task.  Made by :meth:`Stream.key_by`, :meth:`Stream.map_to_pair` and the like.

    Args:
        builder: the builder it belongs to.
        node: the operator producing it.

    Example:
        >>> from topology.testing import FeederSpout
        >>> sb = StreamBuilder()
        >>> words = sb.new_stream(FeederSpout(["word"])).key_by(len)
        >>> words.map_values(str.upper).reduce_by_key(lambda a, b: a + b).for_each(print)
        >>> words.count_by_key().for_each(print)
        >>> topology = sb.build()
        >>> words.aggregate_by_key(list, None)
        Traceback (most recent call last):
        ...
        TypeError: aggregate_by_key(apply=...) must be a function, got None
    """

    def map_values(self, fn: Callable[[V], R]) -> PairStream[K, R]:
        """Transform each value, keeping its key.

        Args:
            fn: ``fn(value)`` gives the new value.

        Returns:
            A :class:`PairStream` of ``(key, fn(value))``.

        Raises:
            TypeError: the argument is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
        return PairStream(self.builder, self._then("map_values", fn, True))

    def flat_map_values(self, fn: Callable[[V], Iterable[R]]) -> PairStream[K, R]:
        """Turn each value into none, one or many, keeping its key.

        Args:
            fn: ``fn(value)`` gives an iterable of new values.

        Returns:
            A :class:`PairStream` of ``(key, item)`` for every item of ``fn(value)``.

        Raises:
            TypeError: the argument is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
        return PairStream(self.builder, self._then("flat_map_values", fn, True))

    def group_by_key(self) -> PairStream[K, V]:
        """Repartition by key: every value of a key goes to one task.

        Returns:
            The same pairs.

        Raises:
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
        return PairStream(self.builder, self._then("group", None, True))

    def reduce_by_key(self, fn: Callable[[V, V], V]) -> PairStream[K, V]:
        """A running reduction per key, kept in the task's memory.

        Args:
            fn: ``fn(previous, value)`` gives the key's new result; associative, as Spark's
                ``reduceByKey`` asks (in checkpointed state, a reduction whose results no
                component reads combines values before the stored one: ``state.merge``).

        Returns:
            A :class:`PairStream` of ``(key, result so far)``, one per pair.

        Raises:
            TypeError: the argument is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
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
        per pair (the aggregate itself without ``result``).  ``merge(a, b)`` (Storm's
        combiner's combine) is optional: each key's values meet in one task; given, an
        aggregate in checkpointed state whose results no component reads updates by
        ``state.merge`` without reading its state.  Kept in the task's memory unless the
        topology is checkpointed: use :meth:`update_state_by_key` for state that survives
        failures exactly once.

        Args:
            init: ``init()`` gives a new key's empty aggregate.
            apply: ``apply(aggregate, value)`` gives the aggregate with ``value`` added.
            merge: ``merge(a, b)`` combines two aggregates (associative; optional).
            result: ``result(aggregate)`` gives what is emitted (default: the aggregate).

        Returns:
            A :class:`PairStream` of ``(key, result)``, one per pair.

        Raises:
            TypeError: ``init`` or ``apply`` is not a function.
            TopologyValidationError: the builder was built already.
        """
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
        """A running count per key, kept in the task's memory.

        Returns:
            A :class:`PairStream` of ``(key, count so far)``, one per pair.

        Raises:
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
        return PairStream(
            self.builder, self._then("aggregate", None, True, name="count_by_key", op="count")
        )

    def top_n_by_key(
        self, n: int, by: Callable[[V], Any] | None = None, reverse: bool = True
    ) -> PairStream[K, list[V]]:
        """A running top-N per key (Nexmark's q19: the ten highest bids of each auction),
        kept in the task's memory (in a checkpointed topology, in checkpointed state).

        Values rank by ``by(value)``, largest first (``reverse=False``: smallest first);
        among values that rank equal the one that came first ranks first, so a value no
        better than the last of a full top-N changes nothing.  Ranks must compare with
        each other (a list rank is compared as a tuple).

        Args:
            n: how many values each key keeps (an int >= 1).
            by: ``by(value)`` gives the value's rank (default: the value itself).
            reverse: largest rank first (True) or smallest first.

        Returns:
            A :class:`PairStream` of ``(key, [top values, best first])``, emitted whenever
            a pair changes its key's top-N.

        Raises:
            ValueError: ``n`` is not an int >= 1.
            TypeError: ``by`` is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).

        Example: the two highest bids per auction, on the in-process runner:

            >>> from topology.runtime.inprocess import InProcessRunner
            >>> from topology.testing import FeederSpout
            >>> rows = [["a", 5], ["a", 9], ["b", 1], ["a", 7], ["a", 2]]
            >>> bids = FeederSpout(["auction", "price"], rows)
            >>> sb = StreamBuilder()
            >>> pairs = sb.new_stream(bids).map_to_pair(lambda bid: (bid["auction"], bid["price"]))
            >>> pairs.top_n_by_key(2).for_each(print)
            >>> runner = InProcessRunner(sb.build())
            >>> runner.activate()
            >>> runner.turn(50)
            ('a', [5])
            ('a', [9, 5])
            ('b', [1])
            ('a', [9, 7])
            >>> pairs.top_n_by_key(0)
            Traceback (most recent call last):
            ...
            ValueError: top_n_by_key(n=...) must be an int >= 1, got 0
        """
        _check_n("top_n_by_key", n)
        if by is not None and not callable(by):
            raise TypeError(f"top_n_by_key(by=...) must be a function, got {by!r}")
        node = self._then(
            "aggregate",
            None,
            True,
            name=default_name("top_n_by_key", by),
            op="top_n",
            n=n,
            by=by,
            reverse=bool(reverse),
        )
        return PairStream(self.builder, node)

    def dedup_by_key(self, keep: str = "first") -> PairStream[K, V]:
        """One value per key (Nexmark's q18: each bidder's last bid on each auction), kept
        in the task's memory (in a checkpointed topology, in checkpointed state).

        Args:
            keep: ``"first"``: a key's first value, emitted once, later ones dropped;
                ``"last"``: every value, emitted as its key's current one.

        Returns:
            A :class:`PairStream` of ``(key, value)``: the first pair of each key
            (``first``), or every pair (``last``).

        Raises:
            ValueError: ``keep`` is neither ``"first"`` nor ``"last"``.
            TopologyValidationError: the builder was built already (add operators before ``build``).

        Example:

            >>> from topology.runtime.inprocess import InProcessRunner
            >>> from topology.testing import FeederSpout
            >>> sb = StreamBuilder()
            >>> words = sb.new_stream(FeederSpout(["word"], [["to"], ["be"], ["or"], ["bee"]]))
            >>> by_length = words.key_by(len)
            >>> by_length.dedup_by_key().for_each(print)
            >>> runner = InProcessRunner(sb.build())
            >>> runner.activate()
            >>> runner.turn(50)
            (2, 'to')
            (3, 'bee')
            >>> by_length.dedup_by_key("any")
            Traceback (most recent call last):
            ...
            ValueError: dedup_by_key(keep=...) must be 'first' or 'last', got 'any'
        """
        if keep not in ("first", "last"):
            raise ValueError(f"dedup_by_key(keep=...) must be 'first' or 'last', got {keep!r}")
        node = self._then("aggregate", None, True, name="dedup_by_key", op="dedup", keep=keep)
        return PairStream(self.builder, node)

    def count_distinct_by_key(self) -> PairStream[K, int]:
        """A running count of each key's distinct values (Nexmark's q15 and q16: distinct
        bidders per day), kept in the task's memory (in a checkpointed topology, in
        checkpointed state).  Values must be hashable once lists are taken as tuples
        (msgpack gives tuples back as lists): numbers, strings, lists of them...

        Returns:
            A :class:`PairStream` of ``(key, distinct values so far)``, emitted when a
            key's count grows.

        Raises:
            TopologyValidationError: the builder was built already (add operators before ``build``).

        Example:

            >>> from topology.runtime.inprocess import InProcessRunner
            >>> from topology.testing import FeederSpout
            >>> bids = FeederSpout(["day", "bidder"], [[1, "x"], [1, "y"], [1, "x"], [2, "x"]])
            >>> sb = StreamBuilder()
            >>> pairs = sb.new_stream(bids).map_to_pair(lambda bid: (bid["day"], bid["bidder"]))
            >>> pairs.count_distinct_by_key().for_each(print)
            >>> runner = InProcessRunner(sb.build())
            >>> runner.activate()
            >>> runner.turn(50)
            (1, 1)
            (1, 2)
            (2, 1)
        """
        node = self._then(
            "aggregate", None, True, name="count_distinct_by_key", op="count_distinct"
        )
        return PairStream(self.builder, node)

    def last_n_by_key(self, n: int) -> PairStream[K, list[V]]:
        """Each key's last ``n`` values (Nexmark's q6: a seller's last ten closing
        prices), kept in the task's memory (in a checkpointed topology, in checkpointed
        state).

        Args:
            n: how many values each key keeps (an int >= 1).

        Returns:
            A :class:`PairStream` of ``(key, [last n values, oldest first])``, one per
            pair.

        Raises:
            ValueError: ``n`` is not an int >= 1.
            TopologyValidationError: the builder was built already (add operators before ``build``).

        Example:

            >>> from topology.runtime.inprocess import InProcessRunner
            >>> from topology.testing import FeederSpout
            >>> prices = FeederSpout(["seller", "price"], [["s", 3], ["s", 8], ["s", 4]])
            >>> sb = StreamBuilder()
            >>> pairs = sb.new_stream(prices).map_to_pair(lambda p: (p["seller"], p["price"]))
            >>> pairs.last_n_by_key(2).for_each(print)
            >>> runner = InProcessRunner(sb.build())
            >>> runner.activate()
            >>> runner.turn(50)
            ('s', [3])
            ('s', [3, 8])
            ('s', [8, 4])
        """
        _check_n("last_n_by_key", n)
        node = self._then("aggregate", None, True, name="last_n_by_key", op="last_n", n=n)
        return PairStream(self.builder, node)

    def update_state_by_key(self, fn: Callable[[S | None, V], S]) -> PairStream[K, S]:
        """Keep a state per key that survives failures exactly once (the topology becomes
        checkpointed).

        Args:
            fn: ``fn(state, value)`` gives the key's new state (``state`` is None before
                the key's first value; a new state of None deletes the key).

        Returns:
            A :class:`PairStream` of ``(key, state)``, one per pair.

        Raises:
            TypeError: the argument is not a function.
            TopologyValidationError: the builder was built already (add operators before ``build``).
        """
        return PairStream(self.builder, self._then("state", fn, True))

    def join(self, other: PairStream[K, W], ttl: float | None = None) -> PairStream[K, tuple[V, W]]:
        """Inner join with another pair stream on keyed state, unwindowed (Flink's regular
        join): each arriving value is stored under its key and joined with every stored
        value of the key from the other stream.  In a checkpointed topology the stored
        values are checkpointed state.

        Args:
            other: the pair stream to join (of the same builder).
            ttl: seconds (processing time) a value stays stored; None keeps it for ever.
                An expired value is never joined again, and is dropped on a timer.

        Returns:
            A :class:`PairStream` of ``(key, (v, w))`` per match, ``v`` from this stream,
            emitted as the later of the two arrives.

        Raises:
            TypeError: ``other`` is not a PairStream.
            ValueError: ``other`` is of another builder or is this stream, or ``ttl`` is
                not None nor a number > 0.
            TopologyValidationError: the builder was built already.

        Example: persons joined with their auctions as either arrives:

            >>> from topology.runtime.inprocess import InProcessRunner
            >>> from topology.testing import FeederSpout
            >>> sb = StreamBuilder()
            >>> people = sb.new_stream(FeederSpout(["id", "name"], [[1, "ann"], [2, "bob"]]))
            >>> auctions = sb.new_stream(FeederSpout(["seller", "item"], [[1, "vase"]]))
            >>> (
            ...     people.map_to_pair(lambda p: (p["id"], p["name"]))
            ...     .join(auctions.map_to_pair(lambda a: (a["seller"], a["item"])))
            ...     .for_each(print)
            ... )
            >>> runner = InProcessRunner(sb.build())
            >>> runner.activate()
            >>> runner.turn(50)
            (1, ('ann', 'vase'))
        """
        partner = self._join_partner(other, "join")
        node = self.builder.add(
            "keyed_join",
            [self.node, partner],
            self.node.parallelism,
            True,
            "join",
            ttl=check_ttl(ttl),
        )
        return PairStream(self.builder, node)

    def interval_join(
        self,
        other: PairStream[K, W],
        lower: float,
        upper: float,
        *,
        time: Callable[[V], float],
        other_time: Callable[[W], float] | None = None,
        lag: float = 0.0,
    ) -> PairStream[K, tuple[V, W]]:
        """Join with another pair stream on event time (Flink's interval join): values
        ``v`` and ``w`` of a key match when ``time(v) + lower <= other_time(w) <= time(v) +
        upper``; each is emitted as the later of the two arrives.

        Both streams' values are stored per key until the watermark — the lowest over
        both streams' input tasks of their latest time, less ``lag`` — passes what they
        can still match; a value older than the watermark is late: dropped, and counted
        in the task's ``late_elements`` metric.

        Args:
            other: the pair stream to join (of the same builder).
            lower: the earliest ``other_time(w) - time(v)`` that matches (seconds; may be
                negative).
            upper: the latest (>= ``lower``).
            time: ``time(v)``: a value of this stream's time in seconds.
            other_time: ``other_time(w)``: a value of ``other``'s time (default: ``time``).
            lag: how far, in seconds, the watermark trails the latest times.

        Returns:
            A :class:`PairStream` of ``(key, (v, w))`` per match.

        Raises:
            TypeError: ``other`` is not a PairStream, or ``time`` / ``other_time`` is not
                a function.
            ValueError: ``other`` is of another builder or is this stream; a bound or
                ``lag`` is not a number, ``lower > upper`` or ``lag < 0``.
            TopologyValidationError: the builder was built already.

        Example: each bid joined with the auction it came at most 10 s after:

            >>> from topology.runtime.inprocess import InProcessRunner
            >>> from topology.testing import FeederSpout
            >>> sb = StreamBuilder()
            >>> auctions = sb.new_stream(FeederSpout(["id", "ts"], [[7, 100.0]])).map_to_pair(
            ...     lambda a: (a["id"], a["ts"])
            ... )
            >>> bids = sb.new_stream(FeederSpout(["auction", "ts"], [[7, 104.0], [7, 130.0]]))
            >>> by_auction = bids.map_to_pair(lambda b: (b["auction"], b["ts"]))
            >>> joined = auctions.interval_join(by_auction, 0, 10, time=lambda ts: ts, lag=60)
            >>> joined.for_each(print)
            >>> runner = InProcessRunner(sb.build())
            >>> runner.activate()
            >>> runner.turn(50)
            (7, (100.0, 104.0))
            >>> auctions.interval_join(by_auction, 5, 1, time=abs)
            Traceback (most recent call last):
            ...
            ValueError: interval_join(lower=5, upper=1): lower must be <= upper
        """
        check_interval(lower, upper, time, other_time, lag)
        partner = self._join_partner(other, "interval_join")
        node = self.builder.add(
            "interval_join",
            [self.node, partner],
            self.node.parallelism,
            True,
            "interval_join",
            lower=lower,
            upper=upper,
            time=time,
            other_time=other_time,
            lag=lag,
        )
        return PairStream(self.builder, node)

    def _join_partner(self, other: Any, where: str) -> Node:
        if not isinstance(other, PairStream):
            raise TypeError(f"{where}() needs a PairStream to join, got {type(other).__name__}")
        if other.builder is not self.builder:
            raise ValueError(f"{where}() of streams from two StreamBuilders")
        if other.node is self.node:
            raise ValueError(
                f"{where}(): a stream joined with itself: map it to a second stream first"
            )
        return other.node

    def window(self, windowing: Windowing) -> WindowedPairStream[K, V]:
        """Cut the stream into windows, to aggregate or join per key over.

        Args:
            windowing: :func:`~topology.streams.windowing.tumbling`, ``sliding`` or
                ``session`` (optionally with ``event_time``).

        Returns:
            A :class:`~topology.streams.WindowedPairStream`.

        Raises:
            TypeError: ``windowing`` is not a :class:`Windowing`.
        """
        if not isinstance(windowing, Windowing):
            raise TypeError(
                f"window() takes tumbling(...), sliding(...) or session(...), got {windowing!r}"
            )
        return WindowedPairStream(self, windowing)


def _check_n(operator: str, n: Any) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{operator}(n=...) must be an int >= 1, got {n!r}")


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


class WindowedStream(Generic[T]):
    """A stream cut into windows: each aggregation emits one result per window firing.

    Made by :meth:`Stream.window`; apply one aggregation to it (``count``, ``reduce``,
    ``aggregate`` or ``top_n``).  Time windows keep one accumulator per window, not the
    elements; over a stream of several tasks an aggregation that merges (``count``,
    ``reduce``, ``top_n``, ``aggregate`` with ``merge``) runs in two phases: partial
    accumulators in the stream's tasks, combined per window in one task.

    Args:
        stream: the stream cut into windows.
        windowing: the window shape.

    Example:
        >>> from topology.streams import StreamBuilder, tumbling
        >>> from topology.testing import FeederSpout
        >>> sb = StreamBuilder()
        >>> numbers = sb.new_stream(FeederSpout(["n"]))
        >>> windowed = numbers.window(tumbling(count=100))
        >>> windowed.reduce(max).for_each(print)
        >>> windowed.count()
        Traceback (most recent call last):
        ...
        ValueError: count: this windowed stream has an aggregation already (max); ...
    """

    def __init__(self, stream: Stream[Any], windowing: Windowing) -> None:
        self.stream = stream
        self.windowing = windowing
        self.node: Node | None = None  # the windowed operator, once one is applied
        self.partial: Node | None = None  # a two-phase window's first phase
        self.bounds = False

    def with_bounds(self) -> Self:
        """The same windows, whose results carry their window: ``(start, end, result)``
        (a pair stream: ``(key, (start, end, result))``; joins ``(key, (start, end, (v,
        w)))``).  ``start`` and ``end`` (exclusive) are seconds of event (or processing)
        time, or for count windows the positions of the window's first element and one past
        its last among its key's elements.

        Returns:
            This windowed stream (apply the aggregation to it).

        Raises:
            ValueError: this windowed stream has an aggregation already.

        Example:
            >>> from topology.streams import StreamBuilder, tumbling
            >>> from topology.testing import FeederSpout
            >>> sb = StreamBuilder()
            >>> bids = sb.new_stream(FeederSpout(["price", "ts"]))
            >>> per_10s = tumbling(seconds=10).event_time(lambda b: b["ts"])
            >>> highest = bids.window(per_10s).with_bounds().reduce(max)  # (start, end, max)
        """
        if self.node is not None:
            raise ValueError("with_bounds(): call it before the window's aggregation")
        self.bounds = True
        return self

    def _windowed(
        self, op: str, name: str, pair: bool, other: Stream[Any] | None = None, **options: Any
    ) -> Node:
        if self.node is not None:
            raise ValueError(
                f"{name}: this windowed stream has an aggregation already ({self.node.name}); "
                "call window() again for another"
            )
        builder, source, windowing = self.stream.builder, self.stream.node, self.windowing
        options.update(windowing=windowing, op=op, bounds=self.bounds)
        if other is not None:
            self.node = builder.add(
                "join", [source, other.node], source.parallelism, pair, name, **options
            )
            return self.node
        mode = window_mode(windowing, op, options, pair, source.parallelism)
        if mode == "two_phase":
            self.partial = builder.add(
                "window",
                [source],
                source.parallelism,
                False,
                f"{name}-partial",
                incremental=True,
                phase="partial",
                forward=True,
                **options,
            )
            self.node = builder.add("window_combine", [self.partial], 1, False, name, **options)
            return self.node
        self.node = builder.add(
            "window",
            [source],
            source.parallelism if pair else 1,  # a window of every element: one task
            pair,
            name,
            incremental=mode == "incremental",
            **options,
        )
        return self.node

    def count(self) -> Stream[int]:
        """Count each window's elements.

        Returns:
            A :class:`~topology.streams.Stream` of the counts, one per window firing.

        Raises:
            ValueError: this windowed stream has an aggregation already (call ``window()``
                again for another).
        """
        return Stream(self.stream.builder, self._windowed("count", "count", False))

    def reduce(self, fn: Callable[[T, T], T]) -> Stream[T]:
        """Fold each window's elements with a function.

        Args:
            fn: ``fn(a, b)`` combines two elements into one.

        Returns:
            A :class:`~topology.streams.Stream` of the results, one per window firing.

        Raises:
            ValueError: this windowed stream has an aggregation already (call ``window()``
                again for another).
        """
        return Stream(
            self.stream.builder, self._windowed("reduce", default_name("reduce", fn), False, fn=fn)
        )

    def aggregate(
        self,
        init: Callable[[], A],
        apply: Callable[[A, T], A],
        result: Callable[[A], R] | None = None,
        *,
        merge: Callable[[A, A], A] | None = None,
    ) -> Stream[Any]:
        """Aggregate each window's elements: ``result(apply(...apply(init(), e1)..., en))``.

        Args:
            init: ``init()`` gives an empty aggregate.
            apply: ``apply(aggregate, element)`` gives the aggregate with the element added.
            result: ``result(aggregate)`` gives what is emitted (default: the aggregate).
            merge: ``merge(a, b)`` gives the aggregate of two parts of a window: given, the
                parts are aggregated in the stream's own tasks and merged in one.

        Returns:
            A :class:`~topology.streams.Stream` of the results, one per window firing.

        Raises:
            ValueError: this windowed stream has an aggregation already (call ``window()``
                again for another).
        """
        node = self._windowed(
            "aggregate",
            default_name("aggregate", apply),
            False,
            init=init,
            apply=apply,
            result=result,
            merge=merge,
        )
        return Stream(self.stream.builder, node)

    def top_n(self, n: int, by: Callable[[T], Any] | None = None) -> Stream[list[T]]:
        """The ``n`` best elements of each window, best first: the largest ``by(e)`` (the
        element itself without ``by``); of equal ones, the one that came first.

        Args:
            n: how many (at most) per window.
            by: ``by(element)`` gives what elements are ranked by.

        Returns:
            A :class:`~topology.streams.Stream` of lists, one per window firing.

        Raises:
            ValueError: ``n`` is not a whole number >= 1, or this windowed stream has an
                aggregation already.

        Example:
            >>> from topology.streams import StreamBuilder, tumbling
            >>> from topology.testing import FeederSpout
            >>> sb = StreamBuilder()
            >>> bids = sb.new_stream(FeederSpout(["price", "ts"]))
            >>> per_10s = tumbling(seconds=10).event_time(lambda b: b["ts"])
            >>> bids.window(per_10s).top_n(3, by=lambda b: b["price"]).for_each(print)
            >>> bids.window(per_10s).top_n(0)
            Traceback (most recent call last):
            ...
            ValueError: top_n(): n must be a whole number >= 1, got 0
        """
        if type(n) is not int or n < 1:
            raise ValueError(f"top_n(): n must be a whole number >= 1, got {n!r}")
        if by is not None and not callable(by):
            raise TypeError(f"top_n(by=...) takes a function, got {by!r}")
        node = self._windowed("top_n", default_name("top_n", by), False, n=n, by=by)
        return Stream(self.stream.builder, node)

    def late(self) -> Stream[T]:
        """The elements too late for every window (event time; without a ``late()`` stream
        they are dropped).  Call it after the aggregation; calling it again gives the same
        stream.

        Returns:
            The stream of the late elements, unchanged.

        Raises:
            ValueError: no aggregation was applied yet.
        """
        if self.node is None:
            raise ValueError("late(): apply the window's aggregation first, then call late()")
        windowed = self.partial or self.node  # (two phases: the first sees the elements)
        for child in windowed.children:
            if child.kind == "late":
                return self.stream._copy(child)
        late = self.stream.builder.add(
            "late",
            [windowed],
            windowed.parallelism,
            self.stream.node.pair,
            f"{self.node.name}-late",
        )
        return self.stream._copy(late)


class WindowedPairStream(WindowedStream[tuple[K, V]], Generic[K, V]):
    """A pair stream cut into windows: aggregations per key and window, and joins.

    Made by :meth:`PairStream.window`; apply one aggregation or join to it.  Keys are
    spread over the stream's tasks.

    Args:
        stream: the pair stream cut into windows.
        windowing: the window shape.

    Example: clicks joined to views of the same page within each minute:

        >>> from topology.streams import StreamBuilder, tumbling
        >>> from topology.testing import FeederSpout
        >>> sb = StreamBuilder()
        >>> views = sb.new_stream(FeederSpout(["page", "user"])).key_by(lambda e: e["page"])
        >>> clicks = sb.new_stream(FeederSpout(["page", "x"])).key_by(lambda e: e["page"])
        >>> joined = views.window(tumbling(seconds=60)).join(clicks)
        >>> joined.for_each(print)
        >>> views.window(tumbling(seconds=60)).join(views)
        Traceback (most recent call last):
        ...
        ValueError: a stream joined with itself: map it to a second stream first
    """

    def count_by_key(self) -> PairStream[K, int]:
        """Count each key's values in each window.

        Returns:
            A :class:`~topology.streams.PairStream` of ``(key, count)`` per key of each
            window firing.

        Raises:
            ValueError: this windowed stream has an aggregation already (call ``window()``
                again for another).
        """
        return PairStream(self.stream.builder, self._windowed("count", "count_by_key", True))

    def reduce_by_key(self, fn: Callable[[V, V], V]) -> PairStream[K, V]:
        """Fold each key's values in each window with a function.

        Args:
            fn: ``fn(a, b)`` combines two values into one.

        Returns:
            A :class:`~topology.streams.PairStream` of ``(key, result)`` per key of each
            window firing.

        Raises:
            ValueError: this windowed stream has an aggregation already (call ``window()``
                again for another).
        """
        return PairStream(
            self.stream.builder,
            self._windowed("reduce", default_name("reduce_by_key", fn), True, fn=fn),
        )

    def aggregate_by_key(
        self,
        init: Callable[[], A],
        apply: Callable[[A, V], A],
        merge: Callable[[A, A], A] | None = None,
        result: Callable[[A], R] | None = None,
    ) -> PairStream[K, Any]:
        """Aggregate each key's values in each window (as
        :meth:`PairStream.aggregate_by_key`).

        Args:
            init: ``init()`` gives an empty aggregate.
            apply: ``apply(aggregate, value)`` gives the aggregate with the value added.
            merge: ``merge(a, b)`` gives the aggregate of two parts (accepted for Storm's
                combiners; a key's values meet in one task, so it is not needed).
            result: ``result(aggregate)`` gives what is emitted (default: the aggregate).

        Returns:
            A :class:`~topology.streams.PairStream` of ``(key, result)`` per key of each
            window firing.

        Raises:
            ValueError: this windowed stream has an aggregation already (call ``window()``
                again for another).
        """
        node = self._windowed(
            "aggregate",
            default_name("aggregate_by_key", apply),
            True,
            init=init,
            apply=apply,
            result=result,
            merge=merge,
        )
        return PairStream(self.stream.builder, node)

    def count_distinct_by_key(self) -> PairStream[K, int]:
        """Count each key's distinct values in each window (values compared as Python
        compares them; lists as tuples).

        Returns:
            A :class:`~topology.streams.PairStream` of ``(key, distinct values)`` per key of
            each window firing.

        Raises:
            ValueError: this windowed stream has an aggregation already (call ``window()``
                again for another).

        Example:
            >>> from topology.streams import StreamBuilder, tumbling
            >>> from topology.testing import FeederSpout
            >>> sb = StreamBuilder()
            >>> bids = sb.new_stream(FeederSpout(["auction", "bidder", "ts"]))
            >>> bidders = bids.map_to_pair(lambda b: (b["auction"], b["bidder"]))
            >>> bidders.window(tumbling(seconds=10)).count_distinct_by_key().for_each(print)
        """
        node = self._windowed("distinct", "count_distinct_by_key", True)
        return PairStream(self.stream.builder, node)

    def group_by_key(self) -> PairStream[K, list[V]]:
        """Group each key's values in each window.

        Returns:
            A :class:`~topology.streams.PairStream` of ``(key, [values])`` per key of each
            window firing, in arrival order.

        Raises:
            ValueError: this windowed stream has an aggregation already (call ``window()``
                again for another).
        """
        return PairStream(self.stream.builder, self._windowed("group", "group_by_key", True))

    def join(self, other: PairStream[K, W]) -> PairStream[K, tuple[V, W]]:
        """Inner join with another pair stream, per key and window.

        Args:
            other: the pair stream to join (of the same builder).

        Returns:
            A :class:`~topology.streams.PairStream` of ``(key, (v, w))`` for every pair of
            values of a key in a window, one from each stream.

        Raises:
            TypeError: ``other`` is not a PairStream.
            ValueError: ``other`` is of another builder or is this stream itself, or this
                windowed stream has an aggregation already.
        """
        return self._join(other, "inner")

    def left_outer_join(self, other: PairStream[K, W]) -> PairStream[K, tuple[V, W | None]]:
        """As :meth:`join`, plus ``(key, (v, None))`` for a key the other lacks.

        Args:
            other: the pair stream to join (of the same builder).

        Returns:
            A :class:`~topology.streams.PairStream` of the joined pairs.

        Raises:
            TypeError: ``other`` is not a PairStream.
            ValueError: ``other`` is of another builder or is this stream itself, or this
                windowed stream has an aggregation already.
        """
        return self._join(other, "left")

    def right_outer_join(self, other: PairStream[K, W]) -> PairStream[K, tuple[V | None, W]]:
        """As :meth:`join`, plus ``(key, (None, w))`` for a key this stream lacks.

        Args:
            other: the pair stream to join (of the same builder).

        Returns:
            A :class:`~topology.streams.PairStream` of the joined pairs.

        Raises:
            TypeError: ``other`` is not a PairStream.
            ValueError: ``other`` is of another builder or is this stream itself, or this
                windowed stream has an aggregation already.
        """
        return self._join(other, "right")

    def full_outer_join(self, other: PairStream[K, W]) -> PairStream[K, tuple[V | None, W | None]]:
        """As :meth:`join`, plus both sides' unmatched keys with None for the other.

        Args:
            other: the pair stream to join (of the same builder).

        Returns:
            A :class:`~topology.streams.PairStream` of the joined pairs.

        Raises:
            TypeError: ``other`` is not a PairStream.
            ValueError: ``other`` is of another builder or is this stream itself, or this
                windowed stream has an aggregation already.
        """
        return self._join(other, "full")

    def co_group_by_key(self, other: PairStream[K, W]) -> PairStream[K, tuple[list[V], list[W]]]:
        """Group both streams' values of each key in each window.

        Args:
            other: the other pair stream (of the same builder).

        Returns:
            A :class:`~topology.streams.PairStream` of ``(key, ([values here], [values
            there]))`` per key of each window firing.

        Raises:
            TypeError: ``other`` is not a PairStream.
            ValueError: ``other`` is of another builder or is this stream itself, or this
                windowed stream has an aggregation already.
        """
        return self._join(other, "cogroup")

    def _join(self, other: PairStream[K, W], how: str) -> PairStream[K, Any]:
        if not isinstance(other, PairStream):
            raise TypeError(
                f"join of a windowed pair stream needs a PairStream, got {type(other).__name__}"
            )
        if other.builder is not self.stream.builder:
            raise ValueError("join of streams from two StreamBuilders")
        if other.node is self.stream.node:
            raise ValueError("a stream joined with itself: map it to a second stream first")
        name = (
            "co_group_by_key" if how == "cogroup" else f"{how}_join" if how != "inner" else "join"
        )
        return PairStream(self.stream.builder, self._windowed(how, name, True, other=other))

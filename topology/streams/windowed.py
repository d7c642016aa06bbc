"""Windowed streams: aggregations per window (per key and window for pair streams), and
joins of two pair streams over windows.  Made by :meth:`Stream.window` /
:meth:`PairStream.window`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic

from .api import A, K, PairStream, R, Stream, T, V, W
from .graph import Node, default_name
from .windowing import Windowing


class WindowedStream(Generic[T]):
    """A stream cut into windows: each aggregation emits one result per window firing.

    Made by :meth:`Stream.window`; apply one aggregation to it (``count``, ``reduce`` or
    ``aggregate``).  The windows of a stream of single values run in one task.

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

    def _windowed(
        self, op: str, name: str, pair: bool, other: Stream[Any] | None = None, **options: Any
    ) -> Node:
        if self.node is not None:
            raise ValueError(
                f"{name}: this windowed stream has an aggregation already ({self.node.name}); "
                "call window() again for another"
            )
        source = self.stream.node
        parents = [source] if other is None else [source, other.node]
        self.node = self.stream.builder.add(
            "join" if other is not None else "window",
            parents,
            source.parallelism if pair else 1,  # a window of every element: one task
            pair,
            name,
            windowing=self.windowing,
            op=op,
            **options,
        )
        return self.node

    def count(self) -> Stream[int]:
        """Count each window's elements (one task sees them all).

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
    ) -> Stream[Any]:
        """Aggregate each window's elements: ``result(apply(...apply(init(), e1)..., en))``.

        Args:
            init: ``init()`` gives an empty aggregate.
            apply: ``apply(aggregate, element)`` gives the aggregate with the element added.
            result: ``result(aggregate)`` gives what is emitted (default: the aggregate).

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
        )
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
        for child in self.node.children:
            if child.kind == "late":
                return self.stream._copy(child)
        late = self.stream.builder.add(
            "late",
            [self.node],
            self.node.parallelism,
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
            merge: ignored (accepted for Storm's combiners).
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
        )
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

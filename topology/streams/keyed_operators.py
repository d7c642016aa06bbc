"""Running keyed operators that emit when a key's result changes: top-N, dedup, distinct
count and last-N per key (``top_n_by_key``, ``dedup_by_key``, ``count_distinct_by_key``,
``last_n_by_key``).

Each operator (:class:`KeyedOperator`, pure) keeps one small *entry* per key in a dict and
gives the function run per pair, ``run(key, value)``: one dict lookup, the cheapest update
of the entry, and ``out((key, result))`` exactly when the entry changes — emitted before
the entry changes, so an operator after it that raises leaves the entry as it was (a
retry counts once).  Emitted lists are fresh: the operators after this one (fused, or in
the same worker) may keep or change them.

Two components run them: :class:`KeyedOperatorBolt` keeps the entries in the task's memory;
:class:`CheckpointedKeyedOperatorBolt` (a checkpointed topology) also writes each changed
key's entry, in its stored form (msgpack: lists and numbers), into the task's key-value
state at every checkpoint (``pre_checkpoint``), and reads them all back in ``init_state``
after a restore: exactly once, as the running aggregations.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from topology.components import BasicBolt
from topology.state.checkpoint import hashable
from topology.stateful import StatefulBolt

from .components import Operators, StreamComponent
from .steps import Step, StreamOperatorError, compile_after

if TYPE_CHECKING:
    from topology.context import TopologyContext
    from topology.state.kv import KeyValueState
    from topology.tuple import Tuple

#: ``run(key, value)``: one pair through an operator.
Run = Callable[[Any, Any], None]
#: ``out((key, result))``: what follows the operator.
Out = Callable[[tuple[Any, Any]], Any]

#: The ``op`` of an ``aggregate`` node that one of these operators runs.
OPS = frozenset({"top_n", "dedup", "count_distinct", "last_n"})


class KeyedOperator:
    """One keyed operator: how a pair changes its key's entry, what is emitted, and the
    entry's stored form (msgpack-encodable) for checkpoints."""

    def runner(self, entries: dict[Any, Any], out: Out) -> Run:
        """The function run per pair, over ``entries`` (key -> entry)."""
        raise NotImplementedError

    def result(self, entry: Any) -> Any:
        """What a key's entry stands for (``collect_results``): as emitted."""
        return entry

    def stored(self, entry: Any) -> Any:
        """The entry as checkpointed state keeps it (msgpack-encodable)."""
        return self.result(entry)

    def restored(self, stored: Any) -> Any:
        """The entry back from its stored form."""
        return stored


class TopN(KeyedOperator):
    """The ``n`` best values per key, best first: largest ``by(value)`` first (``reverse``)
    or smallest first.  Among values ranking equal the one that came first ranks first, and
    a value no better than the last of a full top-N leaves it as it is.

    An entry is ``(scores, values)``, both ascending by score (``reverse``: worst first,
    so a value that ties goes before the equal ones: after them in the best-first result),
    a new value placed by bisection.  A score that is a list (msgpack's array) is compared
    as a tuple, so scores compare the same whether a value came through a socket or not.
    """

    def __init__(self, n: int, by: Callable[[Any], Any] | None = None, reverse: bool = True):
        self.n, self.by, self.reverse = n, by, reverse

    def runner(self, entries: dict[Any, Any], out: Out) -> Run:
        return (self._largest if self.reverse else self._smallest)(entries, out)

    def _largest(self, entries: dict[Any, Any], out: Out) -> Run:
        n, by, get = self.n, self.by, entries.get

        def run(key: Any, value: Any) -> None:
            score = value if by is None else by(value)
            if type(score) is list:
                score = hashable(score)
            entry = get(key)
            if entry is None:
                out((key, [value]))
                entries[key] = ([score], [value])
                return
            scores, values = entry
            full = len(scores) >= n
            if full and score <= scores[0]:  # no better than the worst: nothing changes
                return
            at = bisect_left(scores, score)  # before its equals: they came first
            shown = values[::-1]  # best first
            shown.insert(len(values) - at, value)
            if full:
                del shown[-1]
            out((key, shown))
            scores.insert(at, score)
            values.insert(at, value)
            if full:
                del scores[0], values[0]

        return run

    def _smallest(self, entries: dict[Any, Any], out: Out) -> Run:
        n, by, get = self.n, self.by, entries.get

        def run(key: Any, value: Any) -> None:
            score = value if by is None else by(value)
            if type(score) is list:
                score = hashable(score)
            entry = get(key)
            if entry is None:
                out((key, [value]))
                entries[key] = ([score], [value])
                return
            scores, values = entry
            full = len(scores) >= n
            if full and score >= scores[-1]:  # no better than the worst: nothing changes
                return
            at = bisect_right(scores, score)  # after its equals: they came first
            shown = values.copy()
            shown.insert(at, value)
            if full:
                del shown[-1]
            out((key, shown))
            scores.insert(at, score)
            values.insert(at, value)
            if full:
                del scores[-1], values[-1]

        return run

    def result(self, entry: Any) -> Any:
        values = entry[1]
        return values[::-1] if self.reverse else values.copy()

    def restored(self, stored: Any) -> Any:
        values = list(stored[::-1] if self.reverse else stored)
        by = self.by
        scores = [hashable(v if by is None else by(v)) for v in values]
        return scores, values


class Dedup(KeyedOperator):
    """One value per key: the first (emitted once), or the last (every value emitted, as
    the key's current one)."""

    def __init__(self, keep: str = "first") -> None:
        self.keep = keep

    def runner(self, entries: dict[Any, Any], out: Out) -> Run:
        if self.keep == "last":

            def last(key: Any, value: Any) -> None:
                out((key, value))
                entries[key] = value

            return last

        def first(key: Any, value: Any) -> None:
            if key not in entries:
                out((key, value))
                entries[key] = value

        return first


class CountDistinct(KeyedOperator):
    """How many distinct values each key has had: the entry is the set of them (a list is
    taken as a tuple, as msgpack gives tuples back as lists); emitted when it grows."""

    def runner(self, entries: dict[Any, Any], out: Out) -> Run:
        get = entries.get

        def run(key: Any, value: Any) -> None:
            if type(value) is list:
                value = hashable(value)
            seen = get(key)
            if seen is None:
                _check_hashable(value)
                out((key, 1))
                entries[key] = {value}
                return
            try:
                new = value not in seen
            except TypeError:
                _check_hashable(value)
                raise
            if new:
                out((key, len(seen) + 1))
                seen.add(value)

        return run

    def result(self, entry: Any) -> Any:
        return len(entry)

    def stored(self, entry: Any) -> Any:
        return list(entry)

    def restored(self, stored: Any) -> Any:
        return {hashable(v) for v in stored}


class LastN(KeyedOperator):
    """The last ``n`` values of each key, oldest first; emitted on every value."""

    def __init__(self, n: int) -> None:
        self.n = n

    def runner(self, entries: dict[Any, Any], out: Out) -> Run:
        n, get = self.n, entries.get

        def run(key: Any, value: Any) -> None:
            entry = get(key)
            if entry is None:
                out((key, [value]))
                entries[key] = deque((value,), n)
                return
            shown = list(entry)
            shown.append(value)
            if len(shown) > n:
                del shown[0]
            out((key, shown))
            entry.append(value)

        return run

    def result(self, entry: Any) -> Any:
        return list(entry)

    def restored(self, stored: Any) -> Any:
        return deque(stored, self.n)


def _check_hashable(value: Any) -> None:
    try:
        hash(value)
    except TypeError:
        raise StreamOperatorError(
            "count_distinct_by_key: values must be hashable (numbers, strings, lists or "
            f"tuples of them...), got {type(value).__name__} {value!r:.80}"
        ) from None


def keyed_operator(step: Step) -> KeyedOperator:
    """The operator an ``aggregate`` step of an :data:`OPS` op runs."""
    options = step.options
    op = options["op"]
    if op == "top_n":
        return TopN(options["n"], options.get("by"), options.get("reverse", True))
    if op == "dedup":
        return Dedup(options["keep"])
    if op == "count_distinct":
        return CountDistinct()
    if op == "last_n":
        return LastN(options["n"])
    raise ValueError(f"not a keyed operator: {op!r}")


class KeyedOperatorBolt(StreamComponent, BasicBolt):
    """A keyed operator whose entries live in the task's memory (a restarted worker starts
    them again from nothing, as the running aggregations)."""

    def __init__(self, operators: Operators) -> None:
        self.operators = operators

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        out = compile_after(
            self.operators.steps, self.operators.head, self.emit, context.component_id
        )
        self.operator = keyed_operator(self.operators.head_step)
        self.entries: dict[Any, Any] = {}
        self._run = self.operator.runner(self.entries, out)

    def process(self, tup: Tuple) -> None:
        values = tup.values
        key = values[0]
        if type(key) is list:  # a tuple key, as msgpack gives it back
            key = hashable(key)
        self._run(key, values[1])

    def collect_results(self) -> dict[Any, Any]:
        """Every key's current result (``sparkstorm local``'s verify)."""
        result = self.operator.result
        return {key: result(entry) for key, entry in self.entries.items()}


class CheckpointedKeyedOperatorBolt(StreamComponent, StatefulBolt):
    """A keyed operator in a checkpointed topology: its entries live in memory, each
    changed one is written to the key-value state at the next checkpoint, and a restore
    reads them back (exactly once through failures)."""

    def __init__(self, operators: Operators) -> None:
        self.operators = operators

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._after = self._anchored_after(context)
        self.operator = keyed_operator(self.operators.head_step)
        self._bind({})

    def _bind(self, entries: dict[Any, Any]) -> None:
        after = self._after
        changed: set[Any] = set()

        def out(pair: tuple[Any, Any]) -> None:
            after(pair)
            changed.add(pair[0])  # (every operator emits exactly when its entry changes)

        self.entries, self._changed = entries, changed
        self._run = self.operator.runner(entries, out)

    def init_state(self, state: KeyValueState) -> None:
        self.state = state
        restored = self.operator.restored
        self._bind({key: restored(stored) for key, stored in state.items()})

    def execute(self, tup: Tuple) -> None:
        values = tup.values
        key = values[0]
        if type(key) is list:
            key = hashable(key)
        self._current = tup
        try:
            self._run(key, values[1])
        finally:
            self._current = None
        self.ack(tup)

    def pre_checkpoint(self, checkpoint: int) -> None:
        entries, stored, put = self.entries, self.operator.stored, self.state.put
        for key in self._changed:
            put(key, stored(entries[key]))
        self._changed.clear()

    def collect_results(self) -> dict[Any, Any]:
        """Every key's current result."""
        result = self.operator.result
        return {key: result(entry) for key, entry in self.entries.items()}

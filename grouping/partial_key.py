"""Partial-key grouping: key grouping with load balancing ("power of two choices").

After Nasir et al., "The Power of Both Choices: Practical Load Balancing for
Distributed Stream Processing Engines" (ICDE 2015), Storm's ``PartialKeyGrouping``.

Guarantee: every key (the values of ``context.grouping_fields``) has two fixed
candidate tasks, the same in every process: ``a = stable_hash(key) % n`` and a second
one derived from :func:`~grouping.hashing.second_hash`, always different from ``a``
when ``n >= 2``.  Each tuple goes to whichever candidate *this source task* has sent
fewer tuples to so far (``a`` on ties).  So a key reaches at most two tasks (one when
``n == 1``), and a hot key's load is split between two tasks instead of swamping one.
Consumers must merge the (at most two) partial results per key downstream.

Candidates are cached per key like :mod:`grouping.fields` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from ._util import key_indexes, require_targets
from .base import GroupingContext
from .hashing import CACHEABLE_TYPES, KEY_CACHE_SIZE, second_hash, stable_hash


class PartialKeyGrouping:
    """Send each tuple to the less loaded of its key's two candidate tasks."""

    def __init__(self) -> None:
        self._cache: dict[Any, tuple[int, int]] = {}
        self._choices: list[list[int]] = []
        self._loads: list[int] = []  # tuples sent so far, by position in target_tasks
        self._n = 0
        self._single = -1  # index of the only key field, or -1 for multi-field keys
        self._key: Callable[[Sequence[Any]], tuple[Any, ...]] = tuple

    def prepare(self, context: GroupingContext) -> None:
        targets = require_targets(context, "partial_key")
        indexes = key_indexes(context, "partial_key")
        self._choices = [[t] for t in targets]
        self._loads = [0] * len(targets)
        self._n = len(targets)
        if len(indexes) == 1:
            self._single = indexes[0]
        else:
            self._key = itemgetter(*indexes)  # returns a tuple for 2+ indexes

    def candidates(self, key_values: Sequence[Any]) -> tuple[int, int]:
        """Positions in ``target_tasks`` of the key's two candidates (distinct if n >= 2)."""
        n = self._n
        h = stable_hash(key_values)
        first = h % n
        if n == 1:
            return first, first
        second = second_hash(h) % (n - 1)
        if second >= first:
            second += 1
        return first, second

    def choose_tasks(self, values: Sequence[Any]) -> list[int]:
        if self._single >= 0:
            value = values[self._single]
            if type(value) in CACHEABLE_TYPES:
                pair = self._cache.get(value) or self._remember(value, (value,))
            else:
                pair = self.candidates((value,))
        else:
            key = self._key(values)
            if all(type(v) in CACHEABLE_TYPES for v in key):
                pair = self._cache.get(key) or self._remember(key, key)
            else:
                pair = self.candidates(key)
        first, second = pair
        loads = self._loads
        if loads[second] < loads[first]:
            first = second
        loads[first] += 1
        return self._choices[first]

    def _remember(self, cache_key: Any, key_values: Sequence[Any]) -> tuple[int, int]:
        if len(self._cache) >= KEY_CACHE_SIZE:
            self._cache.clear()
        pair = self._cache[cache_key] = self.candidates(key_values)
        return pair

"""Fields grouping: partition the stream by the values of some of its fields.

Guarantee: all tuples with the same key (the values of ``context.grouping_fields``)
go to the same single target task, from every source task in every worker process,
because the task depends only on the key's *key group* ``stable_hash(key) % G`` (the
process-independent :func:`~grouping.hashing.stable_hash`): ``G`` key groups
(``context.key_groups``, or the task count when that is larger) are dealt to the target
tasks in contiguous ranges, as keyed state is (:func:`topology.state.kv.group_owner`), so
a stateful bolt's keys arrive where their state is, before and after a rescale.  With
``context.key_groups`` 0 (a target without keyed state) that is ``stable_hash(key) % n``.  Keys are
compared by their msgpack encoding (see :mod:`grouping.hashing`: ``1`` and ``1.0`` are different
keys).  Different keys spread over the target tasks roughly uniformly.

Hot path: each instance caches key -> pre-built ``[task]`` list for keys made of
``str`` / ``bytes`` / ``int`` / ``None`` values (a single-field key caches under the
value itself), cleared whenever it reaches ``KEY_CACHE_SIZE`` entries.  Other keys
(floats, bools, lists, dicts, ...) are hashed on every call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from ._util import key_indexes, require_targets
from .base import GroupingContext
from .hashing import CACHEABLE_TYPES, KEY_CACHE_SIZE, stable_hash


class FieldsGrouping:
    """Same key -> same task, by a stable hash of the key fields' values."""

    def __init__(self) -> None:
        self._cache: dict[Any, list[int]] = {}
        self._choices: list[list[int]] = []
        self._n = 0
        self._single = -1  # index of the only key field, or -1 for multi-field keys
        self._key: Callable[[Sequence[Any]], tuple[Any, ...]] = tuple

    def prepare(self, context: GroupingContext) -> None:
        targets = require_targets(context, "fields")
        indexes = key_indexes(context, "fields")
        groups = max(context.key_groups, len(targets))
        # key group -> [task]: contiguous ranges of groups per task (group * n // groups)
        self._choices = [[targets[g * len(targets) // groups]] for g in range(groups)]
        self._n = groups
        if len(indexes) == 1:
            self._single = indexes[0]
        else:
            self._key = itemgetter(*indexes)  # returns a tuple for 2+ indexes

    def choose_tasks(self, values: Sequence[Any]) -> list[int]:
        if self._single >= 0:
            value = values[self._single]
            if type(value) in CACHEABLE_TYPES:
                hit = self._cache.get(value)
                if hit is not None:
                    return hit
                return self._remember(value, (value,))
            return self._choices[stable_hash((value,)) % self._n]
        key = self._key(values)
        for value in key:
            if type(value) not in CACHEABLE_TYPES:
                return self._choices[stable_hash(key) % self._n]
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        return self._remember(key, key)

    def cached_key(self) -> tuple[int, dict[Any, list[int]] | None]:
        """``(index, cache)`` of a single-field key: its position in the values and this
        instance's cache (key value -> ``[task]``, the same dict for the instance's life;
        only ``str`` / ``bytes`` / ``int`` / ``None`` values are ever in it), which a
        compiled emit reads before it calls :meth:`choose_tasks` on a miss;
        ``(-1, None)`` for a key of several fields."""
        if self._single < 0:
            return -1, None
        return self._single, self._cache

    def _remember(self, cache_key: Any, key_values: Sequence[Any]) -> list[int]:
        if len(self._cache) >= KEY_CACHE_SIZE:
            self._cache.clear()
        chosen = self._choices[stable_hash(key_values) % self._n]
        self._cache[cache_key] = chosen
        return chosen

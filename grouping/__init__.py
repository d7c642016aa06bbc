"""Stream groupings: which task(s) of a subscribing component receive each tuple.

A topology declares each subscription with a :class:`GroupingSpec`; the runtime calls
:func:`create_grouping` once per (source task, stream, subscriber), prepares the
instance with a :class:`GroupingContext`, then calls ``choose_tasks`` per tuple.

Kinds (each module's docstring states its guarantee):

==================== ==========================================================
``shuffle``          even round-robin spread (:mod:`grouping.shuffle`)
``fields``           same key -> same task (:mod:`grouping.fields`)
``all``              every task (:mod:`grouping.all`)
``global``           the lowest task id (:mod:`grouping.global_`)
``none``             don't care; currently shuffle (:mod:`grouping.none`)
``direct``           the emitter names the task (:mod:`grouping.direct`)
``local_or_shuffle`` same-worker tasks if any, else shuffle
``partial_key``      a key on at most two tasks, load-balanced
``custom``           a user :class:`CustomGrouping` subclass (:mod:`grouping.custom`)
==================== ==========================================================
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .all import AllGrouping
from .base import Grouping, GroupingContext
from .custom import CustomGrouping
from .direct import DirectGrouping
from .fields import FieldsGrouping
from .global_ import GlobalGrouping
from .hashing import stable_hash
from .local_or_shuffle import LocalOrShuffleGrouping
from .none import NoneGrouping
from .partial_key import PartialKeyGrouping
from .shuffle import ShuffleGrouping

_FACTORIES: dict[str, Callable[[], Grouping]] = {
    "shuffle": ShuffleGrouping,
    "fields": FieldsGrouping,
    "all": AllGrouping,
    "global": GlobalGrouping,
    "none": NoneGrouping,
    "direct": DirectGrouping,
    "local_or_shuffle": LocalOrShuffleGrouping,
    "partial_key": PartialKeyGrouping,
}

#: Every valid ``GroupingSpec.kind``.
GROUPING_KINDS: tuple[str, ...] = (*_FACTORIES, "custom")

#: Kinds whose ``GroupingSpec.fields`` name the key (must be non-empty).
KEYED_KINDS: frozenset[str] = frozenset({"fields", "partial_key"})


@dataclass(frozen=True)
class GroupingSpec:
    """How one subscriber groups one stream.

    Attributes:
        kind: one of :data:`GROUPING_KINDS`.
        fields: key fields, for ``"fields"`` and ``"partial_key"`` (the runtime passes
            them on as ``GroupingContext.grouping_fields``).
        custom: for ``"custom"``, a :class:`CustomGrouping` (or any object with
            ``prepare`` / ``choose_tasks``), deep-copied for every source task.
    """

    kind: str
    fields: tuple[str, ...] = ()
    custom: Any = None


def create_grouping(spec: GroupingSpec) -> Grouping:
    """A fresh, unprepared grouping for ``spec``; call once per source task.

    Raises:
        ValueError: unknown kind, or a keyed kind without fields (message names the kind).
        TypeError: ``"custom"`` without a grouping object in ``spec.custom``.
    """
    factory = _FACTORIES.get(spec.kind)
    if factory is not None:
        if spec.kind in KEYED_KINDS and not spec.fields:
            raise ValueError(f"{spec.kind!r} grouping needs at least one key field")
        return factory()
    if spec.kind == "custom":
        if isinstance(spec.custom, type) or not isinstance(spec.custom, Grouping):
            raise TypeError(
                "'custom' grouping needs a CustomGrouping instance (an object with "
                f"prepare() and choose_tasks()), got {spec.custom!r}"
            )
        grouping: Grouping = copy.deepcopy(spec.custom)
        return grouping
    raise ValueError(
        f"unknown grouping kind {spec.kind!r}; expected one of {', '.join(GROUPING_KINDS)}"
    )


__all__ = [
    "GROUPING_KINDS",
    "KEYED_KINDS",
    "AllGrouping",
    "CustomGrouping",
    "DirectGrouping",
    "FieldsGrouping",
    "GlobalGrouping",
    "Grouping",
    "GroupingContext",
    "GroupingSpec",
    "LocalOrShuffleGrouping",
    "NoneGrouping",
    "PartialKeyGrouping",
    "ShuffleGrouping",
    "create_grouping",
    "stable_hash",
]

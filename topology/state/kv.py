"""The key-value state a :class:`~topology.StatefulBolt` task keeps, and key groups (pure).

Keys and values are anything msgpack encodes.  The state remembers which keys changed since
the last snapshot, so a checkpoint writes only those (incremental snapshots).

**Key groups.**  Keyed state is split into a fixed number of *key groups*
(``topology.state.max.parallelism``, default 128, Flink's max parallelism): key ``k`` is in
group ``stable_hash(k) % key_groups`` (``k`` a list or tuple is taken as several fields,
anything else as one), and the groups are dealt to a component's tasks in contiguous
ranges (:func:`group_owner`).  The fields grouping routes a tuple by the same rule
(:mod:`grouping.fields`), so a bolt subscribed with ``fields_grouping(..., [f])`` that uses
the value of ``f`` as its state key finds, after a restart, a rebalance or a rescale to
another task count, exactly the keys its tuples bring: a rescale moves whole key groups.
A key is stored as its group (2 bytes, big-endian) followed by its msgpack encoding
(:func:`key_bytes`), so the owner of a stored key is read without decoding it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgpack

from grouping.hashing import stable_hash

from .checkpoint import hashable
from .live.base import StateSize, estimated_size
from .live.codec import stored_value
from .merges import DEFAULT as DEFAULT_MERGE
from .merges import Combine, merge_eagerly

_DELETED = object()
#: Key groups when ``topology.state.max.parallelism`` is not given.
DEFAULT_KEY_GROUPS = 128
#: Bytes of the key-group prefix of a stored key.
GROUP_BYTES = 2


def key_fields(key: Any, single_field: bool = False) -> list[Any]:
    """The grouping fields a state key stands for: itself when the component is grouped
    on one field (``single_field``: whatever the value, a tuple included), else a list or
    tuple as several fields (a grouping on several fields, keyed by their tuple)."""
    if single_field:
        return [key]
    return list(key) if isinstance(key, list | tuple) else [key]


def single_field_grouping(inputs: Iterable[Any]) -> bool:
    """Whether every subscription in ``inputs`` (:class:`~topology.spec.InputSpec`) is a
    grouping on exactly one field: the state key is then that field's value."""
    inputs = list(inputs)
    return bool(inputs) and all(len(i.grouping.fields) == 1 for i in inputs)


def key_group(key: Any, key_groups: int = DEFAULT_KEY_GROUPS, single_field: bool = False) -> int:
    """The key group of state key ``key`` (:func:`key_fields`)."""
    return stable_hash(key_fields(key, single_field)) % key_groups


def group_owner(group: int, key_groups: int, tasks: int) -> int:
    """The task index (of ``tasks``) that owns key group ``group``: contiguous ranges, so a
    rescale moves whole groups.  ``tasks`` above ``key_groups`` leaves the tasks past
    ``key_groups`` without groups (a stateful component is refused that many tasks)."""
    return group * tasks // key_groups


def owned_groups(index: int, key_groups: int, tasks: int) -> range:
    """The key groups task ``index`` of ``tasks`` owns (a contiguous range)."""
    first = -(-index * key_groups // tasks)
    last = -(-(index + 1) * key_groups // tasks)
    return range(first, last)


def key_owner(
    key: Any, tasks: int, key_groups: int = DEFAULT_KEY_GROUPS, single_field: bool = False
) -> int:
    """The task index that owns ``key`` among ``tasks`` tasks (as fields grouping routes)."""
    groups = max(key_groups, tasks)
    return group_owner(key_group(key, groups, single_field), groups, tasks)


def key_bytes(key: Any, key_groups: int = DEFAULT_KEY_GROUPS, single_field: bool = False) -> bytes:
    """The stored form of a state key: its key group (2 bytes) and its msgpack encoding."""
    group = key_group(key, key_groups, single_field)
    return group.to_bytes(GROUP_BYTES, "big") + msgpack.packb(key, use_bin_type=True)


def stored_group(stored: bytes) -> int:
    """The key group of a stored key (:func:`key_bytes`)."""
    return int.from_bytes(stored[:GROUP_BYTES], "big")


def stored_key(stored: bytes) -> Any:
    """The key a stored key holds (lists as tuples, as the state hands keys out)."""
    return hashable(msgpack.unpackb(stored[GROUP_BYTES:], raw=False, strict_map_key=False))


class KeyValueState:
    """One task's state: ``get`` / ``put`` / ``delete``, ``in``, ``len``, iteration.

    A :class:`~topology.StatefulBolt` receives its task's state in ``init_state`` (the
    runtime makes it); keys and values must be msgpack-encodable (a list key is kept as a
    tuple).

    Args:
        data: the initial content (default: empty).
        key_groups: how many key groups keys are spread over
            (``topology.state.max.parallelism``).
        single_field: keys are the values of one grouping field (then a tuple key is one
            value, not several fields).

    Example:
        >>> state = KeyValueState()
        >>> state.put("be", 2)
        >>> state.put(["to", "be"], 1)
        >>> state.get("be"), state.get(("to", "be")), state.get("or", 0)
        (2, 1, 0)
        >>> state.delete("be")
        >>> "be" in state, len(state), state.items()
        (False, 1, [(('to', 'be'), 1)])
        >>> state.merge("or", 3); state.merge("or", 4)
        >>> state.get("or")
        7
    """

    #: What :meth:`merge` combines with (the runtime sets the bolt's ``state_merge``).
    combine: Combine = staticmethod(DEFAULT_MERGE)

    def __init__(
        self,
        data: dict[Any, Any] | None = None,
        key_groups: int = DEFAULT_KEY_GROUPS,
        single_field: bool = False,
    ) -> None:
        self._data: dict[Any, Any] = dict(data or {})
        self._dirty: dict[Any, Any] = {}
        self.key_groups = key_groups
        #: Keys are one grouping field's values (:func:`key_fields`).
        self.single_field = single_field

    def get(self, key: Any, default: Any = None) -> Any:
        """Read a key.

        Args:
            key: the key.
            default: what to return when the key is absent.

        Returns:
            Its value, or ``default``.
        """
        return self._data.get(hashable(key), default)

    def put(self, key: Any, value: Any) -> None:
        """Set a key (written with the next checkpoint).

        Args:
            key: the key (msgpack-encodable; a list is kept as a tuple).
            value: its value (msgpack-encodable).
        """
        key = hashable(key)
        self._data[key] = value
        self._dirty[key] = value

    def merge(self, key: Any, value: Any) -> None:
        """Combine ``value`` into a key: its value becomes ``combine(old, value)``, or
        ``value`` if it was absent (``combine`` is the bolt's ``state_merge``, addition by
        default: :mod:`topology.state.merges`).  Here, in memory, at once; a disk backend
        defers it without reading the store.

        Args:
            key: the key (msgpack-encodable; a list is kept as a tuple).
            value: what to combine into it.

        Raises:
            Exception: what ``combine`` raises (here at once; a disk backend reports a
                deferred one as the component's error and keeps the stored value).
        """
        merge_eagerly(self, key, value)

    def take_merge_errors(self) -> list[str]:
        """Deferred merges that raised: none here (a merge combines at once).

        Returns:
            An empty list.
        """
        return []

    def delete(self, key: Any) -> None:
        """Remove a key (nothing happens if it is absent).

        Args:
            key: the key.
        """
        key = hashable(key)
        if key in self._data:
            del self._data[key]
            self._dirty[key] = _DELETED

    def __contains__(self, key: Any) -> bool:
        return hashable(key) in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._data))

    def items(self) -> list[tuple[Any, Any]]:
        """Every entry.

        Returns:
            A list of (key, value) pairs (a copy: the state may change while you use it).
        """
        return list(self._data.items())

    def backlog(self) -> int:
        """How many changes wait for the next snapshot.

        Returns:
            The number of keys changed or deleted since the last :meth:`take_changes`.
        """
        return len(self._dirty)

    def take_changes(self) -> list[tuple[bytes, bytes | None]]:
        """Take the changes since the last call (the runtime's, for a snapshot).

        Returns:
            The changed entries in stored form: (key bytes, value bytes, or None for a
            deleted key); they are forgotten here.
        """
        groups, single = self.key_groups, self.single_field
        changes = [
            (
                key_bytes(key, groups, single),
                None if value is _DELETED else msgpack.packb(value, use_bin_type=True),
            )
            for key, value in self._dirty.items()
        ]
        self._dirty = {}
        return changes

    def everything(self) -> list[tuple[bytes, bytes | None]]:
        """Every entry, in stored form (a full snapshot); pending changes are forgotten.

        Returns:
            A list of (key bytes, value bytes).
        """
        self._dirty = {}
        groups, single = self.key_groups, self.single_field
        return [
            (key_bytes(key, groups, single), msgpack.packb(value, use_bin_type=True))
            for key, value in self._data.items()
        ]

    def load(self, entries: Iterable[tuple[bytes, bytes]]) -> None:
        """Replace the whole content, with nothing to write yet (the runtime's, on restore).

        Args:
            entries: (key bytes, value bytes) in stored form; a value stored with a TTL is
                read as its value.
        """
        self._data = {stored_key(k): stored_value(v) for k, v in entries}
        self._dirty = {}

    def size(self) -> StateSize:
        """How big the state is.

        Returns:
            Its keys, and an estimate of their bytes in memory (from a sample of entries).
        """
        return estimated_size(self._data)

    def expire(self, now: float, budget: int) -> int:
        """Expire entries past their TTL; nothing expires here (:mod:`topology.state.live`
        keeps a TTL).

        Args:
            now: the current time.
            budget: the most entries to look at.

        Returns:
            How many entries expired: always 0.
        """
        return 0

    def close(self) -> None:
        """Nothing to release."""

    @classmethod
    def restore(
        cls, entries: dict[bytes, bytes], key_groups: int = DEFAULT_KEY_GROUPS
    ) -> KeyValueState:
        """A state holding stored entries, with nothing to write yet.

        Args:
            entries: key bytes -> value bytes, in stored form.
            key_groups: as for the constructor.

        Returns:
            The new state.
        """
        state = cls(None, key_groups)
        state.load(entries.items())
        return state

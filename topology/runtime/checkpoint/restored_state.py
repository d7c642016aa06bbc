"""State read back from a checkpoint is hostile input: the door's decode budget for it.

A checkpoint may have been seeded from a savepoint anyone could have written, or sit in a
directory others can write to, so every key and value a task reads back from one is checked
with the door's estimate before anything decodes it
(:func:`topology.runtime.net.codec.check_cost`: the Python objects its msgpack bytes would
become, against ``max(32 MiB, 16 x its size)``) — a 4 MB value of empty arrays would
otherwise be 275 MiB of lists.  A value stored with a TTL (:mod:`topology.state.live.codec`)
is checked inside its wrapper, whose shape is checked too.

An entry that fails is dropped: :class:`Refusals` counts it and reports it, once per task
and restore, as the component's error naming the checkpoint, the scope and the key; the
task's restore goes on with the rest.  A scope the state backend finds corrupt
(:class:`~topology.state.backends.CorruptCheckpoint`: a file of the ``directory``
provider that is not what it wrote) is reported the same way and restores nothing.
Values the runtime reads for itself (a spout's position and task count, a windowed
bolt's clocks) are decoded through :func:`decoded`, which raises :class:`Refused`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from topology.state.backends import CorruptCheckpoint, StateBackend, decode_value
from topology.state.kv import GROUP_BYTES, stored_key
from topology.state.live.codec import TTL_EXT
from topology.state.savepoint_schema import MAX_TASKS

from ..net import codec

#: Most tasks a restored task count may name (a savepoint's limit, the assignment's too).
MAX_RESTORED_TASKS = MAX_TASKS
#: Stored bytes shorter than this cannot decode past the door's budget (each byte makes
#: at most ``wire.MAX_COST_PER_BYTE`` bytes of objects), so they are not walked first.
SMALL = codec.MIN_DECODE_BUDGET // codec.MAX_COST_PER_BYTE
#: Refusals of one restore written to the worker's log one by one; the rest are counted.
LOGGED_REFUSALS = 10
#: msgpack's first bytes of an extension type (fixext 1-16, ext 8/16/32).
_EXT_HEADERS = {0xD4: (1, 1), 0xD5: (1, 2), 0xD6: (1, 4), 0xD7: (1, 8), 0xD8: (1, 16)}
_EXT_SIZED = {0xC7: 1, 0xC8: 2, 0xC9: 4}
#: How :func:`topology.state.live.codec.encode_ttl` starts its inner ``[written_at, value]``.
_TTL_INNER = b"\x92\xcb"
_FLOAT_BYTES = 8


class Refused(ValueError):
    """Restored bytes that are not decoded: the reason, for the component's error."""


def check_bytes(raw: Any) -> None:
    """:class:`Refused` unless ``raw`` is one msgpack object within the door's budget."""
    if not isinstance(raw, bytes):
        raise Refused(f"a {type(raw).__name__} where stored bytes belong")
    try:
        codec.check_cost(raw)
    except codec.FrameTooCostly:
        raise Refused(
            f"its {len(raw):,} bytes would decode to more than the door's budget of "
            f"{codec.budget(len(raw)):,} bytes of objects"
        ) from None
    except (ValueError, TypeError) as exc:
        raise Refused(f"not one msgpack object ({str(exc)[:80]})") from None


def check_value(raw: Any) -> None:
    """:class:`Refused` unless ``raw`` is a stored value (with or without a TTL) whose
    decoding stays within the door's budget and succeeds."""
    if isinstance(raw, bytes) and raw[:1] and (raw[0] in _EXT_HEADERS or raw[0] in _EXT_SIZED):
        decoded(_ttl_inner(raw))
        return
    decoded(raw)


def check_key(raw: Any) -> None:
    """:class:`Refused` unless ``raw`` is a stored state key (its key group, then one
    msgpack object within the door's budget: :func:`topology.state.kv.key_bytes`) that
    decodes to a key the state can hold."""
    if not isinstance(raw, bytes) or len(raw) <= GROUP_BYTES:
        raise Refused("not a stored key (its key group, then the key)")
    check_bytes(raw[GROUP_BYTES:])
    try:
        hash(stored_key(raw))
    except Exception as exc:  # noqa: BLE001 - whatever hostile bytes make the decoder raise
        raise Refused(f"not a state key ({str(exc)[:80]})") from None


def decoded(raw: Any) -> Any:
    """A value decoded once it passed :func:`check_bytes` (:class:`Refused` for one that
    msgpack cannot give back: a map with list keys, a string that is not UTF-8)."""
    check_bytes(raw)
    try:
        return decode_value(raw)
    except Exception as exc:  # noqa: BLE001 - whatever hostile bytes make the decoder raise
        raise Refused(f"not decodable ({str(exc)[:80]})") from None


def _ttl_inner(raw: bytes) -> bytes:
    """The ``[written_at, value]`` inside a value stored with a TTL (:class:`Refused` for
    any other extension type or shape)."""
    head = raw[0]
    if head in _EXT_HEADERS:
        start, size = _EXT_HEADERS[head]
    else:
        width = _EXT_SIZED[head]
        start, size = 1 + width, int.from_bytes(raw[1 : 1 + width], "big")
    code, inner = raw[start : start + 1], raw[start + 1 : start + 1 + size]
    if code != bytes([TTL_EXT]) or len(inner) != size or start + 1 + size != len(raw):
        raise Refused("an extension type other than a value stored with its time")
    if not inner.startswith(_TTL_INNER) or len(inner) <= len(_TTL_INNER) + _FLOAT_BYTES:
        raise Refused("a value stored with its time that is not [time, value]")
    return inner


@dataclass
class Refusals:
    """What one task's restore from ``checkpoint`` refused: each entry logged (the first
    :data:`LOGGED_REFUSALS`), counted, and reported once, by :meth:`close`, as the
    component's error."""

    checkpoint: int
    component: str
    report: Callable[[str], None]
    log: Callable[[str], None]
    count: int = 0
    first: list[str] = field(default_factory=list)

    def refuse(self, scope: str, key: Any, reason: str) -> None:
        """Drop the entry ``key`` of ``scope`` for ``reason``."""
        self._note(
            f"checkpoint {self.checkpoint} of component {self.component!r}: refused key "
            f"{shown_key(key)} of scope {scope!r}: {reason}; the entry is dropped"
        )

    def unreadable(self, scope: str, error: CorruptCheckpoint) -> None:
        """The state backend could not read ``scope`` as it stored it."""
        self._note(
            f"checkpoint {self.checkpoint} of component {self.component!r}, scope "
            f"{scope!r}: {error}; nothing of the scope is restored"
        )

    def _note(self, text: str) -> None:
        self.count += 1
        if not self.first:
            self.first.append(text)
        if self.count <= LOGGED_REFUSALS:
            self.log(text)

    def close(self) -> int:
        """Report the refusals (once) and return how many there were."""
        if self.count:
            more = self.count - 1
            tail = f" (and {more:,} more refused: see the worker log)" if more else ""
            self.report(f"{self.first[0]}{tail}")
        return self.count


def read_or_report(
    backend: StateBackend,
    checkpoint: int,
    scope: str,
    keep: Callable[[bytes], bool],
    refusals: Refusals,
) -> dict[bytes, bytes]:
    """``backend.read`` of ``scope``; nothing when the backend finds it corrupt (reported
    into ``refusals``)."""
    try:
        return backend.read(checkpoint, scope, keep)
    except CorruptCheckpoint as exc:
        refusals.unreadable(scope, exc)
        return {}


def read_all_or_report(
    backend: StateBackend, checkpoint: int, scope: str, refusals: Refusals
) -> Iterator[tuple[bytes, bytes]]:
    """``backend.read_all`` of ``scope`` (streamed), ending where the backend finds it
    corrupt (reported into ``refusals``); the entries are not checked yet."""
    try:
        yield from backend.read_all(checkpoint, scope)
    except CorruptCheckpoint as exc:
        refusals.unreadable(scope, exc)


def checked_entries(
    entries: Iterable[tuple[Any, Any]], scope: str, refusals: Refusals
) -> Iterator[tuple[bytes, bytes]]:
    """The key-value entries of ``scope`` whose key and value pass :func:`check_key` and
    :func:`check_value`; the others go to ``refusals``.  Bytes too short to pass the
    budget whatever they hold (:data:`SMALL`) are only decoded, not walked: a restore's
    common case costs one decode of each."""
    for key, value in entries:
        if (
            type(key) is bytes
            and type(value) is bytes
            and GROUP_BYTES < len(key) < SMALL
            and 0 < len(value) < SMALL
            and value[0] not in _EXT_HEADERS
            and value[0] not in _EXT_SIZED
        ):
            try:
                hash(stored_key(key))
                decode_value(value)
            except Exception:  # noqa: BLE001, S110 - the full checks below give the reason
                pass
            else:
                yield key, value
                continue
        try:
            check_key(key)
            check_value(value)
        except Refused as exc:
            refusals.refuse(scope, key, str(exc))
            continue
        yield key, value


def checked_slots(
    entries: Iterable[tuple[Any, Any]], scope: str, refusals: Refusals
) -> list[tuple[Any, Any]]:
    """Window slots as ``(key, contents)``, decoded from the entries that pass the
    checks (the others go to ``refusals``)."""
    slots = []
    for key, value in entries:
        try:
            check_key(key)
            contents = decoded(value)  # slot contents never carry a TTL
        except Refused as exc:
            refusals.refuse(scope, key, str(exc))
            continue
        slots.append((stored_key(key), contents))
    return slots


def shown_key(key: Any) -> str:
    """A restored key for a message: decoded when it is a stored key within budget, else
    its first bytes."""
    if isinstance(key, bytes):
        try:
            check_key(key)
            return repr(stored_key(key))[:80]
        except (Refused, ValueError, TypeError):
            return ascii(key[:40]) + (f"... ({len(key):,} bytes)" if len(key) > 40 else "")
    return f"a {type(key).__name__}"

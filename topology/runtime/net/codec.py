"""The wire format and its checks: msgpack frames carrying many tuples each, encoded for
peers and decoded defensively from them.

On the wire every frame travels as one ZeroMQ message: the receiving worker's data token (16
bytes, put before the frame by the sender when it sends, see
:mod:`topology.runtime.net.data_token`), then the msgpack frame below, which the door
decodes only once the token is found right
(:meth:`topology.runtime.net.frames.FrameCheck.admit`).  The frame itself never holds a
token, so a frame kept for a peer that is relaunched is sent on with the new process's
token.

A data frame is ``[DATA, groups]`` (``[DATA, groups, epoch]`` in a checkpointed topology:
the sender's recovery epoch); each group holds consecutive tuples from one source task on
one stream to one destination task::

    [dest_task, source_task, stream, [values, ...], metas]

A checkpoint barrier travels in line as ``[dest_task, source_task, stream, None,
checkpoint_id]``.

``metas`` is ``None`` when no tuple of the group is tracked, else a list parallel to the
values: ``None`` for an untracked tuple, ``[edge_id, root_id]`` or ``[edge_id, {root_id:
ack_value, ...}]`` — or, when every tuple is in one tree, those pairs packed into one byte
string of 16 bytes per tuple (:func:`pack_metas`).  One control frame carries backpressure
(see :mod:`topology.runtime.net.backpressure`): ``[BACKPRESSURE, worker, on]`` tells a peer
to hold back (or resume) its spouts.  Grouping tuples this way keeps per-tuple overhead to
the values themselves.

Decoding checks every frame from the network before it enters a worker, byte by byte and
tuple by tuple (pure functions).  The checks and conversions are too fine-grained for Python
on the hot path, so they run compiled from ``topology/runtime/net/_wire.c`` when the install
could build it, with the pure-Python twins below as the reference
(``tests/unit/test_wire.py`` runs both on generated input):

* :func:`decode_frame` bounds what a frame may make a worker allocate *before* decoding:
  the compiled :func:`decoded_cost` walks the msgpack bytes, estimating the Python objects
  they would become, and refuses a frame whose estimate passes :func:`budget` (a frame
  of 16 MiB of empty arrays would otherwise become 1.2 GB of lists).  Without the
  compiled module the decoder counts lists and dicts as it builds them and stops at the
  same budget (strings and numbers are not counted there).
* :func:`check_tuples` checks every tuple of a data group: its values a list of as many
  values as its stream declares fields, its tracking envelope ``None`` or ``[edge,
  roots]`` with 64-bit unsigned ints (see :mod:`acker.envelope`).

A group whose tuples are all in one tree each (the common acked case) carries its
envelopes packed (:func:`pack_metas`): one byte string of 16 bytes per tuple, edge then
root, little-endian, which msgpack copies as it is instead of encoding two ints and an
array per tuple.  Any 16 bytes are a well-formed envelope, so the door checks only the
length, and the values, before :func:`expand_metas` rebuilds the ``(edge, root)``
tuples.  The compiled decode estimate counts a byte string whose length is a multiple of
16 at what that expansion would allocate (10 bytes a byte, under :data:`DECODE_RATIO`);
the pure-Python count does not count byte strings, and the expansion stays bounded there
by the values' lists it does count (one per 16 bytes, checked before expanding).
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack

from acker.compiled import load
from acker.protocol import U64_MAX

DATA = 0
BACKPRESSURE = 1

#: Types msgpack always encodes (the emit fast path; str and int have their own checks).
SCALAR_TYPES = frozenset({float, bool, type(None), bytes})
#: The range of integers msgpack encodes.
INT_MIN = -(2**63)
UINT_MAX = 2**64 - 1

_packer = msgpack.Packer(use_bin_type=True, autoreset=True)


def encode_data(groups: list[list[Any]], epoch: int | None = None) -> bytes:
    """Pack data groups into one frame (stamped with the sender's recovery epoch in a
    checkpointed topology)."""
    if epoch is None:
        return _packer.pack([DATA, groups])
    return _packer.pack([DATA, groups, epoch])


def encode_backpressure(worker: int, on: bool) -> bytes:
    """``worker`` asks a peer to hold back (``on``) or resume its spouts."""
    return _packer.pack([BACKPRESSURE, worker, on])


#: Longest array or map in a frame: far above a legitimate frame (one group per lane, up to
#: ``topology.transfer.batch.size`` tuples per group), far below what a hostile header can
#: announce.
MAX_CONTAINER_LEN = 1_000_000


def decode(frame: bytes | memoryview) -> list[Any]:
    """Unpack a trusted frame (tests, tools): ``[DATA, groups]`` or ``[BACKPRESSURE,
    worker, on]``.  Frames from the network go through the door
    (:meth:`topology.runtime.net.frames.FrameCheck.admit`) instead."""
    return msgpack.unpackb(frame, raw=False, strict_map_key=False, use_list=True)


def unpack_bounded(data: bytes | memoryview, max_bytes: int, max_items: int, **hooks: Any) -> Any:
    """Unpack bytes from the network, refusing (``ValueError``) any string or byte string
    over ``max_bytes``, any array or map over ``max_items``, and every extension type —
    before allocating for them.  ``hooks``: msgpack's ``list_hook`` / ``object_hook``."""
    return msgpack.unpackb(
        data,
        raw=False,
        strict_map_key=False,
        use_list=True,
        max_str_len=max_bytes,
        max_bin_len=max_bytes,
        max_array_len=max_items,
        max_map_len=max_items,
        max_ext_len=0,
        **hooks,
    )


def encodable(value: Any) -> bool:
    """True when msgpack can encode ``value`` (slow path, for non-scalar values)."""
    try:
        msgpack.packb(value, use_bin_type=True)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def roundtrip(values: list[Any]) -> list[Any]:
    """Encode and decode ``values`` as the wire would (for always.try.serialize)."""
    return msgpack.unpackb(
        msgpack.packb(values, use_bin_type=True), raw=False, strict_map_key=False
    )


#: Every frame may decode to this many bytes of objects, whatever its size ...
MIN_DECODE_BUDGET = 32 * 1024 * 1024
#: ... and a large frame to this many times its size.  A sender splits a frame that
#: would be over (:func:`fits`), so only a single tuple past both is ever refused: one
#: whose values are mostly tiny containers or one- and two-byte numbers and strings.
DECODE_RATIO = 16
#: The most bytes of objects one byte of msgpack becomes in the estimate (an empty map).
MAX_COST_PER_BYTE = 80

_compiled: Any = load("topology.runtime.net._wire")
#: True when the compiled checks are in use.
COMPILED = _compiled is not None

_COST_LIST, _COST_DICT, _COST_SLOT, _COST_ENTRY = 64, 72, 8, 24
#: One packed envelope: edge and root, unsigned 64-bit little-endian.
_PACKED_META = struct.Struct("<QQ")
#: Bytes of one packed envelope.
PACKED_META_BYTES = _PACKED_META.size


class FrameTooCostly(ValueError):
    """A frame that would decode to more objects than its budget allows."""


def budget(frame_bytes: int) -> int:
    """The most bytes of objects a frame of ``frame_bytes`` bytes may decode to."""
    return max(MIN_DECODE_BUDGET, DECODE_RATIO * frame_bytes)


def _counting_hooks(limit: int) -> tuple[Any, Any]:
    """msgpack ``list_hook`` and ``object_hook`` that count the bytes of the lists and
    dicts decoding builds and raise :class:`FrameTooCostly` once they pass ``limit``."""
    spent = 0

    def count(items: Any, cost: int) -> Any:
        nonlocal spent
        spent += cost
        if spent > limit:
            raise FrameTooCostly("decodes to more objects than the frame's budget")
        return items

    return (
        lambda items: count(items, _COST_SLOT + _COST_LIST + _COST_SLOT * len(items)),
        lambda items: count(items, _COST_SLOT + _COST_DICT + _COST_ENTRY * len(items)),
    )


def _unpack(frame: bytes | memoryview, **hooks: Any) -> Any:
    """``frame`` unpacked within the byte and length limits its own size allows."""
    size = len(frame)
    return unpack_bounded(frame, size, min(size, MAX_CONTAINER_LEN), **hooks)


def py_decode_frame(frame: bytes | memoryview) -> Any:
    """Pure-Python twin of :func:`decode_frame`: the budget is checked on the lists and
    dicts as they are built (strings and numbers are not counted)."""
    list_hook, dict_hook = _counting_hooks(budget(len(frame)))
    return _unpack(frame, list_hook=list_hook, object_hook=dict_hook)


def _check_cost(frame: bytes | memoryview) -> None:
    """:class:`FrameTooCostly` when ``frame`` would decode to more than its budget (the
    compiled walk; ``ValueError`` for bytes it cannot walk)."""
    limit = budget(len(frame))
    if _compiled.decoded_cost(frame, limit) > limit:
        raise FrameTooCostly("decodes to more objects than the frame's budget")


def check_cost(data: bytes) -> None:
    """The door's decode budget for bytes decoded elsewhere (a value restored from a
    checkpoint, :mod:`topology.runtime.checkpoint.restored_state`): :class:`FrameTooCostly`
    when ``data``, one msgpack object, would decode to more than :func:`budget` of its size;
    ``ValueError`` when it is not one msgpack object the door would take (truncated,
    trailing bytes, an extension type; without the compiled walk also a string or container
    over the door's length limits).  Decodes nothing when compiled.

    >>> check_cost(b"\\x93\\x01\\x02\\x03")
    """
    if _compiled is None:
        py_decode_frame(data)
    else:
        _check_cost(data)


def decode_frame(frame: bytes | memoryview) -> Any:
    """``frame`` decoded, or ``ValueError`` (:class:`FrameTooCostly` when over budget)
    for bytes that do not decode to one msgpack object within :func:`budget`."""
    if _compiled is None:
        return py_decode_frame(frame)
    _check_cost(frame)
    return _unpack(frame)


def fits(frame: bytes, max_bytes: int) -> bool:
    """Whether a receiving worker would take ``frame`` on its size (``max_bytes``) and its
    decode budget; a sender splits a frame that does not fit.  Costs nothing for frames
    too small to pass the budget, whatever they hold."""
    size = len(frame)
    if size > max_bytes:
        return False
    if size * MAX_COST_PER_BYTE <= MIN_DECODE_BUDGET:
        return True
    try:
        check_cost(frame)
    except FrameTooCostly:
        return False
    return True


def _is_u64(value: Any) -> bool:
    return type(value) is int and 0 <= value <= U64_MAX


def py_check_tuples(vals: Any, metas: Any, arity: int) -> str | None:
    """Pure-Python twin of the compiled ``check_tuples`` (see the module docstring):
    None when every tuple of a group is well formed, else the reason."""
    if type(vals) is not list:
        return "values are not a list"
    for values in vals:
        if type(values) is not list:
            return "a tuple's values are not a list"
        if len(values) != arity:
            return "a tuple with another number of values than its stream's fields"
    if metas is None:
        return None
    if type(metas) is not list or len(metas) != len(vals):
        return "envelopes that do not match the values"
    for meta in metas:
        if meta is None:
            continue
        if type(meta) is not list or len(meta) != 2:
            return "an envelope that is not [edge, roots]"
        edge, roots = meta
        if not _is_u64(edge):
            return "an edge id that is not an int in 0 .. 2**64 - 1"
        if type(roots) is dict:
            for root, value in roots.items():
                if not (_is_u64(root) and _is_u64(value)):
                    return "a root id or ack value that is not an int in 0 .. 2**64 - 1"
        elif not _is_u64(roots):
            return "a root id that is not an int in 0 .. 2**64 - 1"
    return None


def py_pack_metas(metas: list[Any]) -> bytes | None:
    """Pure-Python twin of the compiled ``pack_metas``: a group's envelopes as 16 bytes
    each when every one is a 2-item tuple or list of 64-bit unsigned ints (one tree), else
    None (the group keeps its list)."""
    if type(metas) is not list:
        return None
    pack = _PACKED_META.pack
    parts = []
    for meta in metas:
        if type(meta) not in (tuple, list) or len(meta) != 2:
            return None
        edge, root = meta
        if not (_is_u64(edge) and _is_u64(root)):
            return None
        parts.append(pack(edge, root))
    return b"".join(parts)


def py_expand_metas(packed: bytes) -> list[tuple[int, int]]:
    """Pure-Python twin of the compiled ``expand_metas``: packed envelopes back as
    ``(edge, root)`` tuples (ValueError unless 16 bytes each)."""
    if type(packed) is not bytes:
        raise TypeError("expand_metas: packed envelopes are bytes")
    if len(packed) % PACKED_META_BYTES:
        raise ValueError("expand_metas: not a multiple of 16 bytes")
    return list(_PACKED_META.iter_unpack(packed))


if _compiled is None:
    check_tuples = py_check_tuples
    pack_metas = py_pack_metas
    expand_metas = py_expand_metas
else:
    check_tuples = _compiled.check_tuples
    pack_metas = _compiled.pack_metas
    expand_metas = _compiled.expand_metas


def packed_groups(groups: list[list[Any]]) -> list[list[Any]]:
    """``groups`` for a frame: each data group's envelopes packed where
    :func:`pack_metas` can (the groups themselves are left as they are)."""
    out = []
    for group in groups:
        metas = group[4]
        if type(metas) is list:
            packed = pack_metas(metas)
            if packed is not None:
                group = [group[0], group[1], group[2], group[3], packed]
        out.append(group)
    return out

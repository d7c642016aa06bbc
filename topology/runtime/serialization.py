"""The wire format: msgpack frames carrying many tuples each.

On the wire every frame travels as one ZeroMQ message: the receiving worker's data token
(16 bytes, put before the frame by the sender when it sends, see
:mod:`topology.runtime.data_token`), then the msgpack frame below, which the door decodes
only once the token is found right (:meth:`topology.runtime.frames.FrameCheck.admit`).
The frame itself never holds a token, so a frame kept for a peer that is relaunched is
sent on with the new process's token.

A data frame is ``[DATA, groups]`` (``[DATA, groups, epoch]`` in a checkpointed topology:
the sender's recovery epoch); each group holds consecutive tuples from one source task on
one stream to one destination task::

    [dest_task, source_task, stream, [values, ...], metas]

A checkpoint barrier travels in line as ``[dest_task, source_task, stream, None,
checkpoint_id]``.

``metas`` is ``None`` when no tuple of the group is tracked, else a list parallel to the
values: ``None`` for an untracked tuple, ``[edge_id, root_id]`` or ``[edge_id, {root_id:
ack_value, ...}]`` — or, when every tuple is in one tree, those pairs packed into one byte
string of 16 bytes per tuple (:func:`topology.runtime.wire.pack_metas`).
One control frame carries backpressure (see :mod:`topology.runtime.backpressure`):
``[BACKPRESSURE, worker, on]`` tells a peer to hold back (or resume) its spouts.
Grouping tuples this way keeps per-tuple overhead to the values themselves.
"""

from __future__ import annotations

from typing import Any

import msgpack

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
    """Unpack a trusted frame (tests, tools): ``[DATA, groups]`` or ``[BACKPRESSURE, worker,
    on]``.  Frames from the network go through the door
    (:meth:`topology.runtime.frames.FrameCheck.admit`) instead."""
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

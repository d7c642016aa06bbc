"""Stored values of live state, with and without a TTL (pure).

A value without a TTL is stored as its msgpack encoding.  With ``topology.state.ttl.secs``
set, a value is stored with the time of its last write, so that a restored key expires
when it would have: msgpack extension type :data:`TTL_EXT` around ``[written_at, value]``
(written_at in seconds of the clock the state was given).  :func:`stored_value` reads
either form back to the user's value (savepoint tooling uses it), :func:`stored_entry`
gives the write time too.
"""

from __future__ import annotations

from typing import Any

import msgpack

#: The msgpack extension type code of a value stored with its write time.
TTL_EXT = 17


def encode(value: Any) -> bytes:
    """A value without a TTL, stored."""
    return msgpack.packb(value, use_bin_type=True)


def encode_ttl(written_at: float, value: Any) -> bytes:
    """A value written at ``written_at``, stored with that time."""
    inner = msgpack.packb([float(written_at), value], use_bin_type=True)
    return msgpack.packb(msgpack.ExtType(TTL_EXT, inner), use_bin_type=True)


def decode(raw: bytes) -> Any:
    """A value stored without a TTL (no extension types)."""
    return msgpack.unpackb(raw, raw=False, strict_map_key=False)


def stored_entry(raw: bytes | memoryview) -> tuple[float | None, Any]:
    """``(written_at, value)`` of a stored value; written_at None for one without a TTL."""
    found = msgpack.unpackb(raw, raw=False, strict_map_key=False, ext_hook=_keep_ext)
    if isinstance(found, msgpack.ExtType) and found.code == TTL_EXT:
        written_at, value = msgpack.unpackb(found.data, raw=False, strict_map_key=False)
        return float(written_at), value
    return None, found


def stored_value(raw: bytes | memoryview) -> Any:
    """The user's value of a stored value, with or without a TTL."""
    return stored_entry(raw)[1]


def _keep_ext(code: int, data: bytes) -> msgpack.ExtType:
    return msgpack.ExtType(code, data)

"""How state values are stored: msgpack bytes, the same for every backend; and how a
provider that keeps entries in files of its own packs a batch of them (read back as
hostile input: :func:`unpack_entries`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgpack

from .registry import Entries

#: The fewest bytes one packed entry takes (an array header, an empty key, nil).
_ENTRY_BYTES = 3


def encode_value(value: Any) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def decode_value(raw: bytes) -> Any:
    return msgpack.unpackb(raw, raw=False, strict_map_key=False)


def scope_entries(items: Iterable[tuple[str, Any]]) -> Entries:
    """``(name, value)`` pairs as entries (a spout task's position and pending ids)."""
    return [(name.encode(), encode_value(value)) for name, value in items]


def pack_entries(entries: Iterable[tuple[bytes, bytes | None]]) -> bytes:
    """A batch of entries as one msgpack array of ``[key, value]`` (value nil: deleted)."""
    return msgpack.packb(list(entries), use_bin_type=True)


def unpack_entries(data: bytes) -> Iterator[tuple[bytes, bytes | None]]:
    """The entries :func:`pack_entries` made of ``data``, read as hostile input (a file
    whoever can write to the store could have made): nothing nested is built, so an entry
    costs its two byte strings; ``ValueError`` for anything but an array of ``[key,
    value]`` pairs of byte strings (value nil for a deleted key).

    >>> list(unpack_entries(pack_entries([(b"k", b"\\x01"), (b"gone", None)])))
    [(b'k', b'\\x01'), (b'gone', None)]
    """
    unpacker = msgpack.Unpacker(
        raw=False,
        max_buffer_size=max(len(data), 1),
        max_array_len=0,
        max_map_len=0,
        max_str_len=0,
        max_ext_len=0,
    )
    unpacker.feed(data)
    try:
        count = unpacker.read_array_header()
        if count * _ENTRY_BYTES > len(data):
            raise ValueError(f"announces {count:,} entries in {len(data):,} bytes")
        for index in range(count):
            if unpacker.read_array_header() != 2:
                raise ValueError(f"entry {index} is not a [key, value] pair")
            key, value = unpacker.unpack(), unpacker.unpack()
            if not isinstance(key, bytes) or not (value is None or isinstance(value, bytes)):
                raise ValueError(f"entry {index} is not a [key, value] pair of byte strings")
            yield key, value
    except msgpack.OutOfData:
        raise ValueError("not a batch of entries: truncated") from None
    except (msgpack.UnpackException, msgpack.StackError, ValueError, TypeError) as exc:
        raise ValueError(f"not a batch of entries: {str(exc)[:120]}") from None
    if unpacker.tell() != len(data):
        raise ValueError("not a batch of entries: bytes after its last entry")

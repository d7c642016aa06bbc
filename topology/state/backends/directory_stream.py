"""Streamed reads of the ``directory`` provider's files: a restore's memory is bounded by a
read buffer per file, not by the scope.

Data files written since this module exist hold their entries sorted by key, one entry a
key, and say so by their name (:data:`SORTED`).  A scope as of a checkpoint is then the
merge of its files in key order, the newest file's entry winning a key
(:func:`merged`); each file is read a buffer at a time (:func:`file_entries`), as hostile
input.  A file whose name promises order and whose keys are not in it is corrupt.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from typing import IO

import msgpack

from .registry import CorruptCheckpoint

#: The suffix of a data file whose entries are sorted by key, one a key.
SORTED = "-sorted"
#: Bytes read from a file at a time while streaming it.
READ_BYTES = 64 * 1024
#: The fewest bytes one packed entry takes (an array header, an empty key, nil).
_ENTRY_BYTES = 3
#: msgpack's array header with a 4-byte count, and the largest count it holds.
_ARRAY32 = b"\xdd"
_MAX_ARRAY32 = 2**32 - 1

Entry = tuple[bytes, bytes | None]
#: Opens a data file: the stream and its size in bytes.
Opener = Callable[[], tuple[IO[bytes], int]]


def sorted_entries(entries: Iterable[Entry]) -> list[Entry]:
    """``entries`` as a sorted file holds them: the last entry of a key only, by key."""
    return sorted(dict(entries).items())


def write_entries(stream: IO[bytes], entries: Iterable[Entry]) -> int:
    """Pack ``entries`` into the seekable ``stream`` one at a time, as
    :func:`~.codec.pack_entries` would (an array of ``[key, value]``) but with an array
    header of fixed width written first and its count filled in last; how many."""
    start = stream.tell()
    stream.write(_ARRAY32 + bytes(4))
    pack = msgpack.Packer(use_bin_type=True).pack
    count = 0
    for key, value in entries:
        stream.write(pack([key, value]))
        count += 1
    if count > _MAX_ARRAY32:
        raise ValueError(f"{count:,} entries do not fit one file")
    end = stream.tell()
    stream.seek(start + 1)
    stream.write(count.to_bytes(4, "big"))
    stream.seek(end)
    return count


def file_entries(path: str, stream: IO[bytes], size: int) -> Iterator[Entry]:
    """The entries of the packed batch ``stream`` (``size`` bytes, named ``path`` in
    errors), read :data:`READ_BYTES` at a time; :class:`CorruptCheckpoint` naming the file
    for anything but an array of ``[key, value]`` byte-string pairs (value nil: deleted)."""
    for key, _, value in _ranked(path, stream, size, 0, ordered=False):
        yield key, value


def _ranked(
    path: str, stream: IO[bytes], size: int, rank: int, ordered: bool
) -> Iterator[tuple[bytes, int, bytes | None]]:
    """``(key, rank, value)`` of each entry of ``stream`` (see :func:`file_entries`); with
    ``ordered``, :class:`CorruptCheckpoint` when a key is not above the one before it."""
    unpacker = msgpack.Unpacker(
        stream,
        read_size=max(min(READ_BYTES, size), 1),
        raw=False,
        max_buffer_size=max(size, 1),
        max_array_len=2,  # an entry is one pair: nothing wider is built
        max_map_len=0,
        max_str_len=0,
        max_ext_len=0,
    )
    unpack = unpacker.unpack
    previous = b""
    try:
        count = unpacker.read_array_header()
        if count * _ENTRY_BYTES > size:
            raise ValueError(f"announces {count:,} entries in {size:,} bytes")
        for index in range(count):
            pair = unpack()
            if type(pair) is not list or len(pair) != 2:
                raise ValueError(f"entry {index} is not a [key, value] pair")
            key, value = pair
            if type(key) is not bytes or not (value is None or type(value) is bytes):
                raise ValueError(f"entry {index} is not a [key, value] pair of byte strings")
            if ordered:
                if index and key <= previous:
                    raise CorruptCheckpoint(
                        f"checkpoint file {path}: keys out of order (its name says they are sorted)"
                    )
                previous = key
            yield key, rank, value
        if unpacker.tell() != size:
            raise ValueError("bytes after its last entry")
    except msgpack.OutOfData:
        raise CorruptCheckpoint(
            f"checkpoint file {path}: not a batch of entries: truncated"
        ) from None
    except (msgpack.UnpackException, msgpack.StackError, ValueError, TypeError) as exc:
        raise CorruptCheckpoint(
            f"checkpoint file {path}: not a batch of entries: {str(exc)[:120]}"
        ) from None


def _opened(path: str, opener: Opener, rank: int) -> Iterator[tuple[bytes, int, bytes | None]]:
    """:func:`_ranked` of the sorted file ``path``, opened by ``opener``."""
    stream, size = opener()
    with stream:
        yield from _ranked(path, stream, size, rank, ordered=True)


def merged(files: list[tuple[str, Opener]]) -> Iterator[Entry]:
    """The entries of sorted ``files`` (path, opener), oldest first, merged in key order:
    one entry a key, the newest file's (a deletion is yielded too, value None)."""
    streams = [_opened(path, opener, -index) for index, (path, opener) in enumerate(files)]
    if len(streams) == 1:
        for key, _, value in streams[0]:
            yield key, value
        return
    last: bytes | None = None
    for key, _, value in heapq.merge(*streams):
        if key != last:  # the newest file's entry of a key comes first (lowest rank)
            last = key
            yield key, value

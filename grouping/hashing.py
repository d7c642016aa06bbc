"""Process-independent hashing of grouping keys.

Guarantee: :func:`stable_hash` returns the same value for the same key in every
process, on every machine and across restarts.  That is what lets every source task
of a fields or partial-key grouping, wherever it runs, send a key to the same task.
Python's built-in hashing cannot be used for that: it is salted per process for
``str`` and ``bytes`` (``PYTHONHASHSEED``).

A key is hashed by its MessagePack encoding, so keys are compared by encoded form
rather than by Python equality:

* ``1``, ``1.0`` and ``True`` are *different* keys, as are ``"a"`` and ``b"a"``;
* tuples and lists with the same items are the *same* key (both encode as arrays);
* dicts encode in insertion order, so equal dicts built in different orders differ.

Any value msgpack encodes natively works: ``str``, ``int`` (64-bit range), ``float``,
``bytes``, ``bool``, ``None`` and nested lists / tuples / dicts of those.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import msgpack

_M64 = 0xFFFFFFFFFFFFFFFF

#: Bound on the per-instance key caches of fields and partial-key groupings; a cache
#: that reaches it is cleared (cheap, and a hot key set refills it at once).
KEY_CACHE_SIZE = 65536

#: Types whose Python equality implies an identical msgpack encoding, so a value of
#: one of them may be used directly as a dict key for a cache of stable hashes.  Not
#: ``bool`` or ``float``: ``True == 1 == 1.0`` and ``0.0 == -0.0`` encode differently,
#: so caching them next to ints could make two source tasks route one key differently.
#: Unhashable values (lists, dicts) are excluded too, so they bypass caches naturally.
CACHEABLE_TYPES: frozenset[type] = frozenset({str, bytes, int, type(None)})


def stable_hash(key_values: Sequence[Any]) -> int:
    """CRC-32 of the msgpack encoding of ``list(key_values)``: an int in ``[0, 2**32)``.

    Raises:
        TypeError: a key value msgpack cannot encode (e.g. a set, or an int beyond
            64 bits); the message shows the key.
    """
    try:
        packed = msgpack.packb(list(key_values), use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TypeError(f"grouping key {list(key_values)!r} cannot be hashed: {exc}") from exc
    return zlib.crc32(packed)


def second_hash(h: int) -> int:
    """An independent-looking second hash of a first hash ``h`` (splitmix64 finalizer).

    Deterministic and process-independent like :func:`stable_hash`; returns an int in
    ``[0, 2**64)``.  Used for partial-key grouping's second candidate task.
    """
    z = (h + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)

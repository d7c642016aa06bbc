"""How state values are stored: msgpack bytes, the same for every backend."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgpack

from .registry import Entries


def encode_value(value: Any) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def decode_value(raw: bytes) -> Any:
    return msgpack.unpackb(raw, raw=False, strict_map_key=False)


def scope_entries(items: Iterable[tuple[str, Any]]) -> Entries:
    """``(name, value)`` pairs as entries (a spout task's position and pending ids)."""
    return [(name.encode(), encode_value(value)) for name, value in items]

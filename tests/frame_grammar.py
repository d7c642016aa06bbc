"""Hostile frames generated from the frame grammar (``topology/runtime/serialization.py``):
a well-formed frame with its fields replaced by values of every type and at the edges of
their ranges, elements dropped, added or nested, and the bytes truncated.  Used by the
unit tests of the door (``tests/unit/test_frames.py``) and by the corpus sent to a running
cluster (``tests/integration/test_cluster_hostile.py``)."""

from __future__ import annotations

from typing import Any

import msgpack
from hypothesis import strategies as st


def pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


#: Any value msgpack can carry: every wrong type a field could get.
ANY_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()
    | st.text(max_size=4)
    | st.binary(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.integers(-3, 3) | st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=6,
)
#: Values a field takes at the edges of its range, in its own type.
EDGE_VALUES = st.sampled_from([0, -1, -(2**63), 2**64 - 1, 2**63, 1.0, "", "default", [], {}])


@st.composite
def mutated(draw: st.DrawFn, value: Any, depth: int = 0) -> Any:
    """``value`` with one thing changed somewhere inside it: a field replaced by a value of
    any type or at the edge of a range, an element dropped or added, or wrapped deeper."""
    if type(value) is list and value and depth < 6:
        # descending is first (what hypothesis shrinks to) and most likely: faults deep
        # inside a group are the ones that matter
        how = draw(st.sampled_from(["descend"] * 6 + ["replace", "drop", "add", "wrap"]))
    else:
        how = draw(st.sampled_from(["replace", "edge", "wrap"]))
    if how == "descend":
        i = draw(st.integers(0, len(value) - 1))
        return value[:i] + [draw(mutated(value[i], depth + 1))] + value[i + 1 :]
    if how == "drop":
        i = draw(st.integers(0, len(value) - 1))
        return value[:i] + value[i + 1 :]
    if how == "add":
        return value + [draw(ANY_VALUE)]
    if how == "wrap":
        return [value]
    if how == "edge":
        return draw(EDGE_VALUES)
    return draw(ANY_VALUE)


@st.composite
def hostile_frames(draw: st.DrawFn, good_groups: list[list[Any]]) -> bytes:
    """A frame built from ``good_groups`` (well-formed groups for a worker) or a
    backpressure or link token frame, with one or more faults: mutated, truncated, or both."""
    groups = draw(st.lists(st.sampled_from(good_groups), min_size=1, max_size=3))
    control = st.sampled_from([[1, 0, True, [0]], [2, 0, 1]])  # backpressure, link token
    message: Any = [0, groups] if draw(st.integers(0, 4)) else draw(control)
    for _ in range(draw(st.integers(1, 3))):
        message = draw(mutated(message))
    frame = pack(message)
    if draw(st.integers(0, 4)) == 0:
        frame = frame[: draw(st.integers(0, max(0, len(frame) - 1)))]
    return frame

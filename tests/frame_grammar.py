"""Hostile frames generated from the frame grammar (``topology/runtime/net/codec.py``):
a well-formed frame with its fields replaced by values of every type and at the edges of
their ranges, elements dropped, added or nested, and the bytes truncated.  Used by the
unit tests of the door (``tests/unit/test_frames.py``) and by the corpora sent to running
topologies (``tests/integration/test_cluster_fuzz.py``, ``tests/spark/test_local_fuzz.py``)."""

from __future__ import annotations

from typing import Any

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topology.runtime.net.frames import BadFrame, FrameCheck


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


def _sites(value: Any, path: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    """Every place in ``value`` (index paths into nested lists), the deepest first."""
    out: list[tuple[int, ...]] = []
    if type(value) is list:
        for i, item in enumerate(value):
            out += _sites(item, (*path, i))
    return [*out, path]


def _replace(value: Any, path: tuple[int, ...], new: Any) -> Any:
    if not path:
        return new
    i, rest = path[0], path[1:]
    return value[:i] + [_replace(value[i], rest, new)] + value[i + 1 :]


def _at(value: Any, path: tuple[int, ...]) -> Any:
    for i in path:
        value = value[i]
    return value


@st.composite
def mutated(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with one thing changed at one of its places, picked evenly (so fields deep
    inside groups, tuples and envelopes, which are most of the places, get most faults): a
    field replaced by a value of any type or at the edge of a range, an element dropped or
    added, or the field wrapped in one more list."""
    path = draw(st.sampled_from(_sites(value)))
    target = _at(value, path)
    hows = ["replace", "edge", "wrap"] + (["drop", "add"] if type(target) is list else [])
    how = draw(st.sampled_from(hows))
    if how == "drop" and target:
        i = draw(st.integers(0, len(target) - 1))
        return _replace(value, path, target[:i] + target[i + 1 :])
    if how == "add":
        return _replace(value, path, [*target, draw(ANY_VALUE)])
    if how == "wrap":
        return _replace(value, path, [target])
    if how == "edge":
        return _replace(value, path, draw(EDGE_VALUES))
    return _replace(value, path, draw(ANY_VALUE))


@st.composite
def hostile_frames(draw: st.DrawFn, good_groups: list[list[Any]]) -> bytes:
    """A frame built from ``good_groups`` (well-formed groups for a worker) or a
    backpressure frame, with one or more faults: mutated, truncated, or both."""
    groups = draw(st.lists(st.sampled_from(good_groups), min_size=1, max_size=3))
    message: Any = [0, groups] if draw(st.integers(0, 4)) else [1, 0, True]  # backpressure
    for _ in range(draw(st.integers(1, 3))):
        message = draw(mutated(message))
    frame = pack(message)
    if draw(st.integers(0, 4)) == 0:
        frame = frame[: draw(st.integers(0, max(0, len(frame) - 1)))]
    return frame


def corpus_of(strategy: st.SearchStrategy[bytes], count: int) -> list[bytes]:
    """``count`` frames drawn from ``strategy`` (derandomized: the same every run)."""
    frames: list[bytes] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(frame: bytes) -> None:
        frames.append(frame)

    collect()
    return frames


def refused_only(frames: list[bytes], check: FrameCheck) -> list[bytes]:
    """The frames ``check`` (a worker's door, past the token) refuses.  The rest are well
    formed: sent with the worker's data token, they would be executed like real tuples,
    so a test that wants exact counts and speaks with the token sends only these, and can
    expect every one of them counted as a drop under its own reason."""
    out = []
    for frame in frames:
        try:
            check.decode(frame)
        except BadFrame:
            out.append(frame)
    return out

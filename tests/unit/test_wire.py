"""The per-byte and per-tuple frame checks (``topology.runtime.wire``): the compiled twins
against the pure-Python reference, on generated input."""

from __future__ import annotations

import os
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from topology.runtime import wire

pytestmark = pytest.mark.timeout(60)

compiled_only = pytest.mark.skipif(not wire.COMPILED, reason="topology.runtime._wire not built")

U64 = st.integers(0, 2**64 - 1)
ANY_ID = U64 | st.integers(-(2**63), -1) | st.floats() | st.text(max_size=2) | st.none()
ENVELOPE = (
    st.none()
    | st.tuples(U64, U64 | st.dictionaries(U64, U64, max_size=3)).map(list)
    | st.tuples(ANY_ID, ANY_ID | st.dictionaries(ANY_ID, ANY_ID, max_size=2)).map(list)
    | st.lists(U64, max_size=3)
    | st.text(max_size=3)
)
VALUES = st.lists(st.integers(0, 9), max_size=3) | st.integers() | st.text(max_size=2)


def test_ci_builds_the_compiled_checks() -> None:
    if os.environ.get("SPARKSTORM_REQUIRE_SPEEDUPS"):
        assert wire.COMPILED, "topology.runtime._wire did not build (C compiler? headers?)"


@compiled_only
@given(
    st.lists(VALUES, max_size=4),
    st.none() | st.lists(ENVELOPE, max_size=4) | st.integers(),
    st.integers(0, 3),
)
def test_compiled_and_python_tuple_checks_agree(vals: Any, metas: Any, arity: int) -> None:
    assert wire.check_tuples(vals, metas, arity) == wire.py_check_tuples(vals, metas, arity)


def test_well_formed_groups_pass_both_checks() -> None:
    vals, metas = [[1], ["x"]], [[5, 2**64 - 1], [0, {1: 2, 3: 0}]]
    assert wire.py_check_tuples(vals, metas, 1) is None
    assert wire.check_tuples(vals, metas, 1) is None
    assert wire.check_tuples(vals, None, 1) is None
    assert wire.check_tuples(vals, [None, True], 1) == "an envelope that is not [edge, roots]"


LEGIT = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=20)
    | st.binary(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=3), inner, max_size=5)
    ),
    max_leaves=30,
)


@given(LEGIT)
def test_whatever_msgpack_packs_within_budget_decodes_the_same(value: Any) -> None:
    frame = msgpack.packb(value, use_bin_type=True)
    # compared as msgpack bytes: a NaN anywhere is equal to itself there, never in Python
    for decode in (wire.py_decode_frame, wire.decode_frame):
        assert msgpack.packb(decode(frame), use_bin_type=True) == frame


@given(st.binary(max_size=64))
def test_garbage_is_refused_with_value_error_by_both(frame: bytes) -> None:
    outcomes = []
    for decode in (wire.decode_frame, wire.py_decode_frame):
        try:
            decode(frame)
            outcomes.append("ok")
        except ValueError:
            outcomes.append("refused")
    assert outcomes[0] == outcomes[1]


@compiled_only
def test_the_compiled_walk_estimates_objects_and_stops_at_the_limit() -> None:
    frame = msgpack.packb([[]] * 1000)
    cost = wire._compiled.decoded_cost(frame, 10**9)
    assert 1000 * 64 < cost < 1000 * 100  # a list and a slot for each
    assert wire._compiled.decoded_cost(frame, cost // 2) > cost // 2  # stops: over budget
    for bad, why in [
        (b"", "truncated"),
        (b"\x92\x01", "more elements"),
        (b"\x90\x90", "trailing"),
        (b"\xc7\x01\x00a", "extension"),
        (b"\xc1", "extension"),
        (b"\xda\x00\x05ab", "truncated"),
    ]:
        with pytest.raises(ValueError, match=why):
            wire._compiled.decoded_cost(bad, 10**9)


def test_a_frame_of_empty_lists_is_over_budget_on_both_paths() -> None:
    frame = msgpack.packb([[]] * 600_000)
    assert wire.budget(len(frame)) == wire.MIN_DECODE_BUDGET
    for decode in (wire.decode_frame, wire.py_decode_frame):
        with pytest.raises(wire.FrameTooCostly):
            decode(frame)


def test_fits_says_what_a_receiver_would_refuse() -> None:
    small = msgpack.packb([[]] * 100_000)  # 100 KB of empty lists: 7 MB, under the floor
    assert small and wire.fits(small, 16 * 2**20)
    assert not wire.fits(small, 50_000)  # over the byte limit
    costly = msgpack.packb([[]] * 600_000)
    assert not wire.fits(costly, 16 * 2**20)
    flat = msgpack.packb(["x" * 100] * 100_000)  # 10 MB of strings: about 1.5x its bytes
    assert wire.fits(flat, 16 * 2**20)

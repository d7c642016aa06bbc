"""The per-byte and per-tuple frame checks (``topology.runtime.net.codec``): the compiled twins
against the pure-Python reference, on generated input."""

from __future__ import annotations

import os
import tracemalloc
from copy import deepcopy
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.path_switch import compiled_and_pure
from topology.runtime.net import codec

pytestmark = pytest.mark.timeout(60)

compiled_only = pytest.mark.skipif(
    not codec.COMPILED, reason="topology.runtime.net._wire not built"
)

#: The functions of :mod:`topology.runtime.net.codec` bound to their compiled twins at import.
TWINS = ("check_tuples", "pack_metas", "expand_metas")


def wire_paths() -> Any:
    """A fixture the tests that ask for it by name (the name it is assigned to) run on:
    ``topology.runtime.net.codec`` as installed, and with every pure twin in place (``pure``)."""
    return compiled_and_pure(codec, "_compiled", twins=TWINS, autouse=False)


wire_path = wire_paths()

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
        assert codec.COMPILED, "topology.runtime.net._wire did not build (C compiler? headers?)"


@compiled_only
@given(
    st.lists(VALUES, max_size=4),
    st.none() | st.lists(ENVELOPE, max_size=4) | st.integers(),
    st.integers(0, 3),
)
def test_compiled_and_python_tuple_checks_agree(vals: Any, metas: Any, arity: int) -> None:
    assert codec.check_tuples(vals, metas, arity) == codec.py_check_tuples(vals, metas, arity)


def test_well_formed_groups_pass_both_checks() -> None:
    vals, metas = [[1], ["x"]], [[5, 2**64 - 1], [0, {1: 2, 3: 0}]]
    assert codec.py_check_tuples(vals, metas, 1) is None
    assert codec.check_tuples(vals, metas, 1) is None
    assert codec.check_tuples(vals, None, 1) is None
    assert codec.check_tuples(vals, [None, True], 1) == "an envelope that is not [edge, roots]"


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
    for decode in (codec.py_decode_frame, codec.decode_frame):
        assert msgpack.packb(decode(frame), use_bin_type=True) == frame


@given(st.binary(max_size=64))
def test_garbage_is_refused_with_value_error_by_both(frame: bytes) -> None:
    outcomes = []
    for decode in (codec.decode_frame, codec.py_decode_frame):
        try:
            decode(frame)
            outcomes.append("ok")
        except ValueError:
            outcomes.append("refused")
    assert outcomes[0] == outcomes[1]


@compiled_only
def test_the_compiled_walk_estimates_objects_and_stops_at_the_limit() -> None:
    frame = msgpack.packb([[]] * 1000)
    cost = codec._compiled.decoded_cost(frame, 10**9)
    assert 1000 * 64 < cost < 1000 * 100  # a list and a slot for each
    assert codec._compiled.decoded_cost(frame, cost // 2) > cost // 2  # stops: over budget
    for bad, why in [
        (b"", "truncated"),
        (b"\x92\x01", "more elements"),
        (b"\x90\x90", "trailing"),
        (b"\xc7\x01\x00a", "extension"),
        (b"\xc1", "extension"),
        (b"\xda\x00\x05ab", "truncated"),
    ]:
        with pytest.raises(ValueError, match=why):
            codec._compiled.decoded_cost(bad, 10**9)


def test_a_frame_of_empty_lists_is_over_budget_on_both_paths() -> None:
    frame = msgpack.packb([[]] * 600_000)
    assert codec.budget(len(frame)) == codec.MIN_DECODE_BUDGET
    for decode in (codec.decode_frame, codec.py_decode_frame):
        with pytest.raises(codec.FrameTooCostly):
            decode(frame)


def test_fits_says_what_a_receiver_would_refuse() -> None:
    small = msgpack.packb([[]] * 100_000)  # 100 KB of empty lists: 7 MB, under the floor
    assert small and codec.fits(small, 16 * 2**20)
    assert not codec.fits(small, 50_000)  # over the byte limit
    costly = msgpack.packb([[]] * 600_000)
    assert not codec.fits(costly, 16 * 2**20)
    flat = msgpack.packb(["x" * 100] * 100_000)  # 10 MB of strings: about 1.5x its bytes
    assert codec.fits(flat, 16 * 2**20)


# -- packed envelopes ------------------------------------------------------------------------


class Id(int):
    """An int subclass: not an exact int, so not an id either twin packs."""


#: A one-tree envelope as emits make it (a tuple) or as a frame decodes it (a list).
ONE_TREE = st.tuples(U64, U64) | st.tuples(U64, U64).map(list)
NOT_AN_ID = (
    st.none()
    | st.integers(max_value=-1)
    | st.integers(min_value=2**64)
    | st.booleans()
    | st.floats()
    | U64.map(Id)
)
NOT_ONE_TREE = (
    st.none()
    | st.tuples(U64, NOT_AN_ID)
    | st.tuples(NOT_AN_ID, U64).map(list)
    | st.tuples(U64, st.dictionaries(U64, U64, max_size=2))
    | st.tuples(U64, st.dictionaries(U64, U64, max_size=2)).map(list)
    | st.tuples(U64)
    | st.tuples(U64, U64, U64)
    | st.lists(U64, min_size=3, max_size=3)
    | U64
)
METAS = (
    st.lists(ONE_TREE, max_size=8)
    | st.lists(ONE_TREE | NOT_ONE_TREE, max_size=6)
    # one bad envelope among good ones: the twins must both see it
    | st.tuples(st.lists(ONE_TREE, max_size=3), NOT_ONE_TREE, st.lists(ONE_TREE, max_size=3)).map(
        lambda parts: [*parts[0], parts[1], *parts[2]]
    )
)


def is_one_tree(meta: Any) -> bool:
    return (
        type(meta) in (tuple, list)
        and len(meta) == 2
        and all(type(i) is int and 0 <= i < 2**64 for i in meta)
    )


@compiled_only
@given(METAS)
def test_compiled_and_python_packing_agree(metas: list[Any]) -> None:
    assert codec.pack_metas(metas) == codec.py_pack_metas(metas)


@given(METAS)
def test_only_one_tree_envelopes_are_packed_and_they_expand_back(metas: list[Any]) -> None:
    for pack in (codec.pack_metas, codec.py_pack_metas):
        packed = pack(metas)
        if not all(is_one_tree(m) for m in metas):
            assert packed is None
            continue
        assert type(packed) is bytes and len(packed) == codec.PACKED_META_BYTES * len(metas)
        for expand in (codec.expand_metas, codec.py_expand_metas):
            assert expand(packed) == [tuple(m) for m in metas]


#: Byte strings of any length, and of whole envelopes more often than chance would give.
PACKED = st.binary(max_size=70) | st.integers(0, 5).flatmap(
    lambda n: st.binary(min_size=16 * n, max_size=16 * n)
)


@given(PACKED)
def test_compiled_and_python_expansion_agree_on_any_bytes(packed: bytes) -> None:
    outcomes = []
    for expand in (codec.expand_metas, codec.py_expand_metas):
        try:
            outcomes.append(expand(packed))
        except ValueError:
            outcomes.append("refused")
    assert outcomes[0] == outcomes[1]
    assert (outcomes[0] == "refused") == (len(packed) % 16 != 0)
    if outcomes[0] != "refused":
        assert all(type(m) is tuple and len(m) == 2 for m in outcomes[0])


def test_packed_envelopes_are_edge_then_root_little_endian() -> None:
    layouts = [
        ([(1, 2)], "0100000000000000 0200000000000000"),
        ([(0x0102030405060708, 2**64 - 1)], "0807060504030201 ffffffffffffffff"),
        ([[0, 0], (3, 2**63)], "00" * 16 + " 0300000000000000 0000000000000080"),
    ]
    assert codec.PACKED_META_BYTES == 16
    for metas, layout in layouts:
        packed = bytes.fromhex(layout)  # (edge, then root: each its low byte first)
        for pack in (codec.pack_metas, codec.py_pack_metas):
            assert pack(metas) == packed
        for expand in (codec.expand_metas, codec.py_expand_metas):
            assert expand(packed) == [tuple(m) for m in metas]


#: Ints at the edges of the compiled reader's digit cases (acker/_ids.h: 30-bit digits).
DIGIT_EDGES = [0, 1, 2**30 - 1, 2**30, 2**60 - 1, 2**60, 2**63, 2**64 - 1]


def test_ids_at_every_digit_boundary_pack_and_expand_exactly() -> None:
    for value in DIGIT_EDGES:
        metas = [(value, 2**64 - 1 - value)]
        for pack in (codec.pack_metas, codec.py_pack_metas):
            assert codec.expand_metas(pack(metas)) == metas, value
    for outside in (-1, -(2**30), 2**64, 2**64 + 2**30, 2**90, 2**200):
        for pack in (codec.pack_metas, codec.py_pack_metas):
            assert pack([(outside, 1)]) is None and pack([(1, outside)]) is None, outside


@compiled_only
def test_the_compiled_expansion_shares_a_repeated_root() -> None:
    big = 2**64 - 1  # no cached small int: a shared one is the same object by design
    metas = [(1, big), (2, big), (3, big), (4, 2**63), (5, 2**63), (6, big)]
    expanded = codec.expand_metas(codec.pack_metas(metas))
    assert expanded == metas
    roots = [root for _, root in expanded]
    assert roots[0] is roots[1] is roots[2] and roots[3] is roots[4]
    assert roots[2] is not roots[3] and roots[4] is not roots[5]


def test_packed_groups_packs_data_groups_of_one_tree_envelopes_only(wire_path: str) -> None:
    kept = [
        [2, 1, "s", [[1], [2]], None],  # untracked
        [2, 1, "s", None, 7],  # a checkpoint barrier
        [2, 1, "s", [[1], [2]], [(5, 6), None]],  # one tuple untracked
        [2, 1, "s", [[1]], [(5, {6: 5, 7: 0})]],  # several trees
        [2, 1, "s", [[1]], [[5, -6]]],  # not an id: the door's business, not packed
    ]
    packable = [
        [2, 1, "s", [[1], [2]], [(5, 6), [7, 2**64 - 1]]],
        [3, -1, "t", [[1]], [(0, 0)]],
    ]
    groups = [kept[0], packable[0], kept[1], kept[2], packable[1], kept[3], kept[4]]
    before = deepcopy(groups)
    out = codec.packed_groups(groups)
    assert groups == before  # the input is left as it was ...
    assert all(type(g[4]) is not bytes for g in groups)
    assert len(out) == len(groups)
    for sent, group in zip(out, groups):
        if any(group is g for g in kept):
            assert sent is group
        else:  # ... and a packed group is a new list
            assert sent is not group and sent[:4] == group[:4]
            assert sent[4] == codec.py_pack_metas(group[4])
            assert codec.py_expand_metas(sent[4]) == [tuple(m) for m in group[4]]


@compiled_only
def test_byte_strings_are_costed_at_what_their_expansion_allocates() -> None:
    n = 1 << 20
    cost = codec._compiled.decoded_cost
    as_bytes = cost(msgpack.packb(b"\0" * n, use_bin_type=True), 10**12)
    as_str = cost(msgpack.packb("x" * n, use_bin_type=True), 10**12)
    assert as_bytes >= 10 * n
    assert n <= as_str < 2 * n
    # a length no packed envelopes can have costs what the byte string itself does
    for odd in (n - 1, n + 1, 15, 17):
        alone = cost(msgpack.packb(b"\0" * odd, use_bin_type=True), 10**12)
        assert odd <= alone < odd + 64, odd
    # what the door's expansion allocates for every byte (distinct, large ints: the most)
    packed = codec.py_pack_metas([(2**63 + i, 2**64 - 1 - i) for i in range(4096)])
    tracemalloc.start()
    try:
        expanded = codec.expand_metas(packed)
        allocated = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(expanded) == 4096
    assert allocated <= cost(msgpack.packb(packed, use_bin_type=True), 10**12)


def test_fits_takes_a_single_tuple_of_four_mib_of_bytes(wire_path: str) -> None:
    value = b"\xff" * (4 * 2**20)
    frame = codec.encode_data([[2, 1, "default", [[value]], None]])
    assert codec.fits(frame, 16 * 2**20)
    assert not codec.fits(frame, 4 * 2**20)  # over the byte limit: still refused

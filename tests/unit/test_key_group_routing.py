"""Keyed state and the fields grouping agree on where every key belongs, for keys of any
shape (a tuple value of one grouping field included) and any task count."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grouping import GroupingSpec, create_grouping
from grouping.base import GroupingContext
from topology.state.checkpoint import hashable
from topology.state.kv import group_owner, key_bytes, stored_group
from topology.state.live.lmdb_store import LmdbState

pytestmark = pytest.mark.timeout(120)

scalars = st.one_of(st.integers(-(2**40), 2**40), st.text(max_size=8), st.none())
values = st.one_of(scalars, st.tuples(scalars, scalars), st.lists(scalars, max_size=3))


def route(fields: tuple[str, ...], row: list[Any], tasks: int, groups: int) -> int:
    grouping = create_grouping(GroupingSpec("fields", fields))
    targets = tuple(range(100, 100 + tasks))
    grouping.prepare(
        GroupingContext(
            "src", 1, "default", ("a", "b"), "dst", targets, frozenset(), fields, groups
        )
    )
    [task] = grouping.choose_tasks(row)
    return targets.index(task)


@settings(max_examples=200, deadline=None)
@given(value=values, other=scalars, tasks=st.integers(1, 9), groups=st.sampled_from([9, 128]))
def test_a_key_lives_on_the_task_its_tuples_are_routed_to(
    value: Any, other: Any, tasks: int, groups: int
) -> None:
    # one grouping field: the state key is that field's value, whatever its shape
    owner = group_owner(stored_group(key_bytes(hashable(value), groups, True)), groups, tasks)
    assert owner == route(("a",), [value, other], tasks, groups)
    # two grouping fields: the state key is the tuple of their values
    pair = (hashable(value), other)
    owner = group_owner(stored_group(key_bytes(pair, groups, False)), groups, tasks)
    assert owner == route(("a", "b"), [value, other], tasks, groups)


any_keys = st.recursive(
    st.one_of(
        st.integers(-(2**63), 2**64 - 1),
        st.text(max_size=5),
        st.binary(max_size=5),
        st.booleans(),
        st.none(),
        st.floats(allow_nan=False),
    ),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner),
    max_leaves=5,
)


@settings(max_examples=300, deadline=None)
@given(key=any_keys, groups=st.sampled_from([1, 7, 128, 32_768]), single=st.booleans())
def test_the_disk_state_stores_keys_in_the_same_groups(key: Any, groups: int, single: bool) -> None:
    lmdb = LmdbState.__new__(LmdbState)  # only its key encoding: no files
    lmdb.key_groups, lmdb.single_field = groups, single
    lmdb._pack = msgpack.Packer(use_bin_type=True).pack
    assert lmdb.key_bytes(key) == key_bytes(key, groups, single)

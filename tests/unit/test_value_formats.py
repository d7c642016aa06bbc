"""A stateful bolt's declared ``state_values``: a format the state backends cannot store
as it is refused at submit, naming the bolt, the format and the backend, for every live
backend; a savepoint restored into the bolt has every value checked against it."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.test_savepoints import CONF, Count, _backend_with, record, topology
from topology import LocalCluster
from topology import config as cfg
from topology.deploy.limits import check_components
from topology.deploy.savepoint_restore import restore_savepoint
from topology.deploy.savepoints import Waiting, take_savepoint
from topology.errors import TopologyValidationError
from topology.state.backends import open_backend
from topology.state.kv import key_bytes
from topology.state.savepoint import SavepointError
from topology.state.value_formats import format_problem, value_problem

pytestmark = pytest.mark.timeout(60)


class Custom:
    pass


def counting(fmt: Any) -> Count:
    bolt = Count()
    bolt.state_values = fmt
    return bolt


@pytest.mark.parametrize(
    "fmt",
    [
        int,
        float,
        str,
        bytes,
        bool,
        type(None),
        list,
        dict,
        (int, float),
        int | None,
        list[int],
        dict[str, list[int]],
        dict[int, float | None],
        Any,
        (str, list[bytes]),
    ],
)
def test_storable_formats_are_accepted(fmt: Any) -> None:
    assert format_problem(fmt) is None


@pytest.mark.parametrize(
    ("fmt", "says"),
    [
        (set, "set is not stored by msgpack"),
        (frozenset, "frozenset is not stored by msgpack"),
        (datetime.datetime, "datetime is not stored by msgpack"),
        (Custom, "Custom is not stored by msgpack"),
        (tuple, "tuple is stored as a list: declare list"),
        (list[set], "set is not stored"),
        (dict[str, tuple], "tuple is stored as a list"),
        (int | set, "set is not stored"),
        (5, "5 is not a type"),
        ("int", "'int' is not a type"),
        ((), "an empty tuple of types"),
        (set[int], "only list[...] and dict[..., ...] are followed"),
    ],
)
def test_formats_a_backend_cannot_store_are_refused(fmt: Any, says: str) -> None:
    problem = format_problem(fmt)
    assert problem is not None and says in problem


def test_a_declaration_nested_too_deep_is_refused_not_walked() -> None:
    fmt: Any = int
    for _ in range(40):
        fmt = list[fmt]
    assert "nested deeper" in (format_problem(fmt) or "")


@pytest.mark.parametrize("backend", ["memory", "lmdb"])
def test_check_components_refuses_naming_the_bolt_format_and_backend(backend: str) -> None:
    conf = cfg.resolve({cfg.STATE_BACKEND: backend})
    with pytest.raises(TopologyValidationError) as refused:
        check_components(topology(counting(set)), conf)
    text = str(refused.value)
    assert "bolt 'count': state_values set" in text
    assert f"topology.state.backend {backend!r}" in text and "topology.state.provider" in text
    check_components(topology(counting(int | None)), conf)  # storable: accepted
    check_components(topology(Count()), conf)  # nothing declared: accepted


def test_a_local_cluster_refuses_it_at_submit_before_starting_anything(tmp_path: Path) -> None:
    with LocalCluster() as cluster:
        with pytest.raises(TopologyValidationError, match="bolt 'count': state_values tuple"):
            cluster.submit_topology(
                "bad", {cfg.STATE_DIR: str(tmp_path)}, topology(counting(tuple))
            )
        assert cluster.topologies() == []


STORED = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text()
    | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(value=STORED)
def test_a_value_matches_the_format_of_its_own_type_after_a_round_trip(value: Any) -> None:
    restored = msgpack.unpackb(msgpack.packb(value, use_bin_type=True), raw=False)
    assert value_problem(restored, Any) is None
    assert value_problem(restored, type(restored)) is None
    assert (value_problem(restored, str) is None) == isinstance(restored, str)
    assert (value_problem(restored, int) is None) == (type(restored) is int)


def test_nested_values_are_checked_item_by_item() -> None:
    assert value_problem([1, 2], list[int]) is None
    assert "an item is a str, not int" in (value_problem([1, "x"], list[int]) or "")
    assert value_problem({"a": [1.5, 2]}, dict[str, list[float]]) is None
    assert "an entry is" in (value_problem({"a": None}, dict[str, int]) or "")
    assert value_problem(None, int | None) is None
    assert value_problem(True, int) == "a bool, not int"


def test_a_savepoint_restore_checks_values_against_the_declared_format(tmp_path: Path) -> None:
    backend = _backend_with(2)
    backend.write(3, 1, "count", [(key_bytes("w7"), msgpack.packb("seven"))])
    backend.complete(3, 1, {})
    info = take_savepoint(
        backend, record(), str(tmp_path), topology_id="t", newer_than=2, waiting=Waiting(timeout=1)
    )
    conf = {**CONF, cfg.STATE_PROVIDER: "memory"}
    with pytest.raises(SavepointError) as refused:
        restore_savepoint(info.path, topology(counting(int)), conf, "formats-1")
    text = str(refused.value)
    assert "component 'count' declares state_values int" in text
    assert "key 'w7'" in text and "holds a str, not int" in text
    assert open_backend(conf, "formats-1").latest() == 0  # nothing seeded
    restore_savepoint(info.path, topology(counting(int | str)), conf, "formats-2")
    assert open_backend(conf, "formats-2").latest() >= 1

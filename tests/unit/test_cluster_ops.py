"""``ClusterOps`` (topology/deploy/ops.py): LocalCluster and Cluster offer every operation,
with the protocol's parameters in its order (mypy checks the types; this checks the names,
so that a keyword argument written for one front end works with the other)."""

from __future__ import annotations

import inspect

import pytest

from topology.deploy.cluster.client import Cluster
from topology.deploy.local.cluster import LocalCluster
from topology.deploy.ops import ClusterOps

pytestmark = pytest.mark.timeout(30)

OPERATIONS = sorted(
    name
    for name, member in vars(ClusterOps).items()
    if inspect.isfunction(member) and not name.startswith("_")
)


def parameters(function: object) -> list[str]:
    return list(inspect.signature(function).parameters)  # type: ignore[arg-type]


def test_the_protocol_declares_the_shared_operations() -> None:
    assert {"submit_topology", "kill_topology", "activate", "wait_until_drained"} <= set(OPERATIONS)


@pytest.mark.parametrize("front_end", [LocalCluster, Cluster], ids=lambda c: c.__name__)
@pytest.mark.parametrize("operation", OPERATIONS)
def test_each_front_end_takes_the_protocols_parameters_first(
    front_end: type, operation: str
) -> None:
    declared = parameters(getattr(ClusterOps, operation))
    offered = parameters(getattr(front_end, operation))
    assert offered[: len(declared)] == declared
    extra = inspect.signature(getattr(front_end, operation)).parameters
    assert all(extra[p].default is not inspect.Parameter.empty for p in offered[len(declared) :])

"""What ``sparkstorm local`` prints at start goes through one printer: the stack's
progress (ZooKeeper, Spark, the nimbus's election) — so the election is said once, in the
run's own voice, and ``--quiet`` (a silent printer) leaves it out — never as the nimbus's
own ``[nimbus]`` log line on stderr besides."""

from __future__ import annotations

import pytest

from topology import config as cfg
from topology.deploy.cluster.stack import LocalStack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.mark.parametrize("quiet", [False, True], ids=["default", "quiet"])
def test_the_nimbus_election_is_said_once_through_the_progress_printer(
    quiet: bool, capfd: pytest.CaptureFixture[str]
) -> None:
    lines: list[str] = []
    conf = {cfg.NIMBUS_DRIVER_MODE: "process"}  # no Spark until a topology is submitted
    with LocalStack(conf, progress=(lambda line: None) if quiet else lines.append) as stack:
        assert stack.nimbus is not None and stack.nimbus.terms == 1
        identifier = stack.nimbus.identifier
    out, err = capfd.readouterr()
    assert "[nimbus]" not in err and "is the leader" not in out + err
    elected = [line for line in lines if "is the leader" in line]
    assert elected == ([] if quiet else [f"nimbus {identifier} is the leader"])
    assert quiet or lines[0] == "Starting ZooKeeper ..."

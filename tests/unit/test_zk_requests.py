"""Unit tests for topology.deploy.zk.requests: what a request in the topology record may
ask of the workers (the record is writable by whoever reaches ZooKeeper: hostile input)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from topology.deploy.zk.requests import request_command

pytestmark = pytest.mark.timeout(10)


def test_the_requests_clients_write_become_commands() -> None:
    assert request_command({"id": 7, "cmd": "status"}) == {"cmd": "status", "req": 7}
    log = {
        "worker": 1,
        "offsets": {"1": 120},
        "files": {"1": 99},
        "component": "split",
        "max_bytes": 4096,
    }
    assert request_command({"id": 8, "cmd": "log", "args": log}) == {"cmd": "log", "req": 8, **log}
    level = request_command(
        {"id": 9, "cmd": "log_level", "args": {"level": "debug", "revert_after": 30}}
    )
    assert level == {"cmd": "log_level", "req": 9, "level": "debug", "revert_after": 30}


@pytest.mark.parametrize(
    "request_",
    [
        None,
        [],
        {"id": 1, "cmd": "stop"},  # internal commands never come from the record
        {"id": 1, "cmd": "peers", "args": {"endpoints": {"0": "tcp://evil:1"}}},
        {"id": 1, "cmd": "lost", "args": {"worker": 0}},
        {"id": "1", "cmd": "status"},
        {"id": 1, "cmd": "log", "args": {"max_bytes": math.inf}},
        {"id": 1, "cmd": "log", "args": {"max_bytes": 10**9}},
        {"id": 1, "cmd": "log", "args": {"worker": 1.0}},
        {"id": 1, "cmd": "log", "args": {"offsets": {"x": 1}}},
        {"id": 1, "cmd": "log", "args": {"files": {"1": -1}}},
        {"id": 1, "cmd": "log", "args": {"component": "x" * 1000}},
        {"id": 1, "cmd": "log", "args": {"path": "/etc/shadow"}},  # no such argument
        {"id": 1, "cmd": "log", "args": "all"},
        {"id": 1, "cmd": "log_level", "args": {"level": "LOUD"}},
        {"id": 1, "cmd": "log_level", "args": {"level": "INFO", "revert_after": math.nan}},
        {"id": 1, "cmd": "log_level", "args": {"level": "INFO", "revert_after": -5}},
    ],
)
def test_anything_else_is_dropped_whole(request_: Any) -> None:
    assert request_command(request_) is None

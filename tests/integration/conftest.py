"""Integration-tier fixtures: every test must leave no worker process behind."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.integration.helpers import child_pids


@pytest.fixture(autouse=True)
def no_leftover_workers() -> Iterator[None]:
    """Fail a test that leaves a child process (running or unreaped) behind."""
    if not sys.platform.startswith("linux"):
        yield
        return
    before = child_pids()
    yield
    left = child_pids() - before
    assert not left, f"worker processes left behind: {sorted(left)}"

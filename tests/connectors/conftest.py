"""Connector-tier fixtures: real servers (redis-server, PostgreSQL, a Kafka mock cluster)
started by the tests on free loopback ports in temporary directories, stopped by pid.

Each server's fixture lives in its own module and is imported here, so each connector's
tests own their fixture file; a server whose binary is missing makes its tests skip with
a message naming the Debian or pip package to install.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.connectors.kafka_mock import kafka_mock  # noqa: F401
from tests.connectors.postgres_server import postgres_server  # noqa: F401
from tests.connectors.redis_server import redis_server  # noqa: F401

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of this folder ``connectors`` (a ``pytestmark`` works only in a test
    module, not in a conftest; this hook sees the whole session's items)."""
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.connectors)

"""Components of the PostgreSQL connector tests (shipped to worker processes by module)."""

from __future__ import annotations

import json
from typing import Any

from tests.connectors.pacing import Paced
from topology.connectors.postgres_source import PostgresPollingSource
from topology.connectors.source import Record


class PacedPolling(Paced, PostgresPollingSource):
    """A polling source reading at most ``rate`` rows a second since it connected."""


class JsonPolling(PostgresPollingSource):
    """Emits ``[id, payload["n"]]``; a payload that is not JSON goes to ``errors``."""

    def decode(self, record: Record) -> list[Any]:
        return [record.value["id"], json.loads(record.value["payload"])["n"]]

"""A pace for test sources: so that a kill or an outage lands mid-run, not after the end."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from topology.connectors.source import Record
from topology.context import TopologyContext


class Paced:
    """Mix in before a :class:`~topology.connectors.PartitionedSource` subclass: ``read``
    returns at most ``rate`` records a second since the source connected."""

    def __init__(self, *args: Any, rate: float, **settings: Any) -> None:
        super().__init__(*args, **settings)
        self.rate = rate

    def connect(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        super().connect(conf, context)  # type: ignore[misc]
        self.started = time.monotonic()
        self.used = 0

    def read(self, partition: str, position: Any, max_records: int) -> list[Record]:
        due = int((time.monotonic() - self.started) * self.rate) - self.used
        if min(due, max_records) <= 0:
            return []
        records: list[Record] = super().read(partition, position, min(due, max_records))  # type: ignore[misc]
        self.used += len(records)
        return records

"""Components of the Kafka connector tests (shipped to worker processes by module)."""

from __future__ import annotations

from tests.connectors.pacing import Paced
from topology.connectors.kafka import KafkaSpout


class PacedKafkaSpout(Paced, KafkaSpout):
    """Reads at most ``rate`` records a second since it connected."""

"""Components of the Redis Streams connector tests (shipped to worker processes by module)."""

from __future__ import annotations

from tests.connectors.pacing import Paced
from topology.connectors.redis_streams import RedisStreamSpout


class PacedRedisSpout(Paced, RedisStreamSpout):
    """Reads at most ``rate`` entries a second since it connected."""

"""Scraping a topology's Prometheus endpoint while something happens to it (a worker
killed), each scrape checked: every family a live topology has is there, and no counter
is below the same series in the scrape before (shared by the integration and Spark
tiers)."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

#: Counters summed over the topology's life: never lower than in an earlier scrape.
LIFE_COUNTERS = (
    "sparkstorm_emitted_total",
    "sparkstorm_transferred_total",
    "sparkstorm_acked_total",
    "sparkstorm_executed_total",
    "sparkstorm_worker_restarts_total",
)
#: Families every scrape of a live topology has.
ALWAYS = (
    *LIFE_COUNTERS,
    "sparkstorm_topology_workers",
    "sparkstorm_topology_workers_alive",
    "sparkstorm_topology_active",
)

Series = tuple[str, tuple[tuple[str, str], ...]]


class Scrapes:
    """Successive scrapes of ``url`` for ``topology``, checked as they are taken."""

    def __init__(self, url: str, topology: str) -> None:
        self.url = url
        self.topology = topology
        self.taken = 0
        self.last: dict[Series, float] = {}

    def take(self) -> dict[Series, float]:
        """One scrape: (sample name, labels) -> value, for the topology's samples."""
        text = urllib.request.urlopen(self.url, timeout=10).read().decode()
        samples = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)  # raises on invalid text
            for sample in family.samples
            if sample.labels.get("topology") == self.topology
        }
        missing = sorted(set(ALWAYS) - {name for name, _ in samples})
        assert not missing, f"scrape {self.taken + 1} lacks {missing}"
        for series, value in samples.items():
            before = self.last.get(series)
            if series[0] in LIFE_COUNTERS and before is not None:
                assert value >= before, f"{series} went down: {before} -> {value}"
        self.taken += 1
        self.last = samples
        return samples

    def value(self, name: str, **labels: str) -> float:
        """The last scrape's sample ``name`` with ``labels`` (and the topology's)."""
        wanted = tuple(sorted({**labels, "topology": self.topology}.items()))
        return self.last[(name, wanted)]

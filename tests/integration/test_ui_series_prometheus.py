"""The charts' series read from a real Prometheus (Debian's ``prometheus``, skipped
without it): a LocalCluster runs examples/wordcount.py with its metrics endpoint on a free
port, a Prometheus server scrapes it every second, and the UI's range query
(:func:`topology.ui.series_prometheus.query_series`) reads every field of the series back
per component — the PromQL is checked by the real thing, not only its shape."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from cli.loader import load_topology
from tests.integration.helpers import wait_for
from topology import LocalCluster
from topology.ui.series import FIELDS
from topology.ui.series_prometheus import query_series

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = shutil.which("prometheus")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.mark.skipif(PROMETHEUS is None, reason="needs prometheus: apt-get install prometheus")
def test_every_field_read_back_from_a_prometheus_scraping_the_cluster(tmp_path: Path) -> None:
    assert PROMETHEUS is not None
    topology, _ = load_topology(f"{ROOT / 'examples' / 'wordcount.py'}:topology", None)
    with LocalCluster({"sparkstorm.metrics.port": 0}) as cluster:
        assert cluster.metrics is not None
        target = f"127.0.0.1:{cluster.metrics.port}"
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            f"  - {{job_name: sparkstorm, static_configs: [{{targets: ['{target}']}}]}}\n"
        )
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = (tmp_path / "prometheus.log").open("wb")
        server = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for(lambda: ready(url), bool, 60, 0.2)
            cluster.submit_topology("wc", {"topology.workers": 2}, topology)

            def filled() -> dict[str, Any]:
                return query_series(url, "wc", "10m")

            def complete(body: dict[str, Any]) -> bool:
                c = body["components"]
                return {"sentences", "split", "count"} <= set(c) and all(
                    any(v for v in c[name][field] if v is not None)
                    for name, field in (
                        ("sentences", "emitted_per_sec"),
                        ("sentences", "latency_p99_ms"),
                        ("count", "executed_per_sec"),
                        ("count", "busy"),
                        ("split", "latency_p50_ms"),
                    )
                )

            body = wait_for(filled, complete, 90, 1.0)
        finally:
            server.terminate()
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(10)
            log.close()
    assert body["source"] == "prometheus" and body["fields"] == list(FIELDS)
    assert body["step_secs"] == 2.0 and body["times"] == sorted(body["times"])
    count = body["components"]["count"]
    assert all(len(count[f]) == len(body["times"]) for f in FIELDS)
    shares = [v for v in count["busy"] + count["backpressured"] if v is not None]
    assert shares and all(0 <= v <= 1.05 for v in shares)  # rates of seconds per second
    assert any(v is not None for v in body["components"]["sentences"]["queue"])  # pending
    assert time.time() - body["times"][-1] < 30

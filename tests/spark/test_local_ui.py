"""``sparkstorm local examples/wordcount.py:topology --ui`` prints the UI's URL, and during
the run the REST API there lists the topology with its spouts emitting (issue 28's
acceptance, through the command a user types)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import end_session

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]
URL = re.compile(r"Web UI and REST API at (http://\S+/) ")


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310 - loopback only
        return json.load(answer)


def test_sparkstorm_local_with_ui_prints_a_url_serving_the_running_topology() -> None:
    command = [sys.executable, "-m", "cli.main", "local", "examples/wordcount.py:topology"]
    proc = subprocess.Popen(
        [*command, "--ui", "-c", "ui.port=0", "--duration", "40"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # its own session: end_session ends all it started
    )
    output: list[str] = []
    found = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            output.append(raw.decode(errors="replace"))
            if URL.search(output[-1]):
                found.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert found.wait(150), "no URL printed:\n" + "".join(output[-20:])
        [base] = [m.group(1) for line in output if (m := URL.search(line))]
        assert base.startswith("http://127.0.0.1:")
        deadline = time.monotonic() + 90
        rows: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            rows = get(base + "api/v1/topology/summary")["topologies"]
            if rows and rows[0].get("emitted", 0) > 0:
                break
            time.sleep(0.5)
        assert rows and rows[0]["name"] == "wordcount" and rows[0]["emitted"] > 0, rows
        report = get(base + f"api/v1/topology/{rows[0]['name']}")
        assert {c["id"] for c in report["graph"]["components"]} == {"sentences", "split", "count"}
    finally:
        end_session(proc, signal.SIGTERM)

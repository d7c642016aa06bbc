"""``sparkstorm local`` under a generated corpus of hostile frames: every frame the door
must refuse (``tests/frame_grammar.py``, filtered through the worker's own check) is sent
to every Spark-hosted worker's data port while the word count runs, most with the data
token the worker published in its heartbeat (read as the topology's owner), the rest
without.  No worker is relaunched, the run verifies every count, and ``status --json``
shows the drops per reason."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import zmq

from acker import ACK_ACK, ACK_FAIL, ACK_INIT
from tests.frame_grammar import corpus_of, hostile_frames, refused_only
from tests.integration.helpers import end_session
from topology import config as cfg
from topology.assignment import Assignment, from_json
from topology.deploy.zk.state import ZkState
from topology.runtime.net.data_token import parse_token
from topology.runtime.net.frames import FrameCheck, inbound_routes

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]


def good_groups(assignment: Assignment, worker: int) -> list[list[Any]]:
    """Well-formed groups of every kind the word count's ``worker`` takes."""
    tasks = set(assignment.worker_tasks[worker])
    of = assignment.component_tasks
    groups: list[list[Any]] = []
    for task in tasks:
        component = assignment.task_component[task]
        if component == "split":
            groups.append([task, of["sentences"][0], "default", [["a b"]], [[7, 9]]])
        elif component == "count":
            groups.append([task, of["split"][-1], "default", [["w"]], None])
        elif component == "__acker":
            groups += [
                [task, -1, ACK_INIT, [[[[5, 6, of["sentences"][0]]]]], None],
                [task, -2, ACK_ACK, [[{5: 6}]], None],
                [task, -1, ACK_FAIL, [[5, ["failed", "count", 3, "boom"]]], None],
            ]
    return groups


def test_a_generated_corpus_leaves_sparkstorm_local_running_and_every_count_exact() -> None:
    from examples.wordcount import topology

    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "local", "examples/wordcount.py:topology"]
        # a first Ctrl-C (below, once the corpus is checked) drains and verifies: the run
        # lasts as long as the checks take on a loaded machine, never shorter
        + ["--duration", "600", "--workers", "2"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # its own session: end_session ends all it started
    )
    output: list[str] = []
    address: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            output.append(raw.decode(errors="replace"))
            found = re.search(r"--zookeeper (\S+)", output[-1])
            if found:
                address.append(found.group(1))
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    context = zmq.Context()
    try:
        assert ready.wait(150), "".join(output)
        host, port = address[0].rsplit(":", 1)
        conf = cfg.resolve({"storm.zookeeper.servers": [host], "storm.zookeeper.port": int(port)})
        with ZkState(conf).connect() as zk:
            topology_id = zk.find_by_name("wordcount")
            assert topology_id is not None
            raw = zk.read_assignment(topology_id)
            assignment = from_json(raw)
            deadline = time.monotonic() + 60
            beats = zk.heartbeats(topology_id, attempt=raw["attempt"])
            while len(beats) < assignment.num_workers:
                assert time.monotonic() < deadline, f"workers not up: {beats}"
                time.sleep(0.2)
                beats = zk.heartbeats(topology_id, attempt=raw["attempt"])
        sent = plain = 0
        for worker, beat in sorted(beats.items()):
            token = parse_token(beat.get("token"))
            assert token is not None, f"no data token in worker {worker}'s heartbeat"
            check = FrameCheck(
                worker,
                assignment.num_workers,
                inbound_routes(topology, assignment, worker),
                max_frame_bytes=int(conf[cfg.TOPOLOGY_MAX_FRAME_BYTES]),
                token=token,
            )
            frames = refused_only(
                corpus_of(hostile_frames(good_groups(assignment, worker)), 300), check
            )
            sock = context.socket(zmq.PUSH)
            sock.setsockopt(zmq.LINGER, 5000)
            sock.connect(beat["endpoint"])
            for i, frame in enumerate(frames):
                if i % 4:
                    sock.send(token + frame)
                else:
                    sock.send(frame)
                    plain += 1
            sent += len(frames)
            sock.close()
        assert sent > 100

        def status() -> dict[str, Any]:
            done = subprocess.run(
                [sys.executable, "-m", "cli.main", "status", "wordcount", "--json"]
                + ["--zookeeper", address[0], "-c", "storm.zookeeper.connection.timeout.secs=60"],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stdout + done.stderr
            report: dict[str, Any] = json.loads(done.stdout)
            return report

        deadline = time.monotonic() + 30
        while True:  # every frame sent is counted, under its reason
            workers = status()["workers"]
            by_reason: Counter[str] = Counter()
            for row in workers:
                by_reason.update(row["dropped_by"])
            if sum(by_reason.values()) >= sent or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert sum(by_reason.values()) == sent == sum(w["dropped_frames"] for w in workers)
        assert by_reason["bad-token"] == plain > 0
        assert len(by_reason) >= 6, by_reason
        assert all(w["restarts"] == 0 for w in workers), workers

        proc.send_signal(signal.SIGINT)  # the first Ctrl-C: drain, verify, stop
        assert proc.wait(150) == 0, "".join(output[-30:])
        reader.join(10)
        assert "every count exact" in "".join(output[-5:]), "".join(output[-30:])
    finally:
        context.term()
        end_session(proc, signal.SIGTERM)  # it stops all it started (test_local_interrupt.py)

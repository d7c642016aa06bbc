"""Peer cases of ``bench/run.py --peers``: the word count on another framework, same workload.

* ``bytewax`` — bytewax 0.21.1 (``bench/peer_bytewax_flow.py``) in ``workers`` processes of
  one worker each, started as a cluster the way bytewax deploys one:
  ``python -m bytewax.run FLOW -w 1 -i p -a "localhost:PORT0;...;localhost:PORT<P-1>"``
  for p = 0..P-1 (one process: ``python -m bytewax.run FLOW -w 1``).  Worker *p* generates
  sentence *i* = p, p + P, ... (``sentence`` of bench/workload.py, :data:`BATCH` sentences
  a ``next_batch``), splits it into words (``flat_map``), keys each word by itself and keeps
  its running count in ``stateful_map`` (bytewax routes each key to one worker: the fields
  grouping on ``word`` of sparkstorm's topology), and discards the counts in a sink.

The figure is words/s through the count step: each worker's sink adds the size of each batch
of counts it receives to a local int and publishes the total about every 0.2 s in a file
this process reads; after ``warmup`` seconds from the moment every worker is up, the median
of :data:`cases.WINDOWS` consecutive windows filling ``secs`` (as ``cases._measure``).  Then
the sources stop, the dataflow drains to its end, and ``exact`` is whether the words counted
equal ten times the sentences generated.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bytewax_cluster import launch  # noqa: E402

FLOW = os.path.join(HERE, "peer_bytewax_flow.py")
PEER = "bytewax 0.21.1"
#: Sentences each bytewax source partition generates per ``next_batch``: the default
#: ``batch_size`` of bytewax's own sources (files, Kafka).  Smaller batches cost bytewax
#: throughput (100: about 2/3 of the one-process figure, 10: about half).
BATCH = 1000
#: Seconds allowed for the processes to come up, and to drain and exit after the stop.
START_SECS = 15.0
DRAIN_SECS = 10.0


def _launch(folder: str, workers: int, batch: int) -> list[subprocess.Popen]:
    """Start the bytewax cluster: one process (its own process group) per worker."""
    return launch(f"{FLOW}:build({folder!r}, {int(batch)})", folder, workers, HERE)


def _read(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read())
    except (FileNotFoundError, ValueError):
        return None


def _total(folder: str, kind: str, workers: int) -> int | None:
    """The sum of every worker's ``kind`` file, None while one is missing."""
    values = [_read(os.path.join(folder, f"{kind}-{p}")) for p in range(workers)]
    return None if None in values else sum(v for v in values if v is not None)


def _check(procs: list[subprocess.Popen], folder: str) -> None:
    for p, proc in enumerate(procs):
        if proc.poll() is not None:
            with open(os.path.join(folder, f"log-{p}"), errors="replace") as log:
                tail = log.read()[-2000:]
            raise RuntimeError(f"bytewax process {p} exited ({proc.returncode}):\n{tail}")


def _wait_for(folder: str, kind: str, procs: list[subprocess.Popen], secs: float) -> int | None:
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        total = _total(folder, kind, len(procs))
        if total is not None:
            return total
        if kind == "count":  # still starting: a process that died is an error
            _check(procs, folder)
        time.sleep(0.05)
    return None


def _stop(procs: list[subprocess.Popen]) -> None:
    """Give the processes a moment to exit, SIGKILL the process group of each one still
    running, then reap them."""
    deadline = time.monotonic() + 2.0
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)


def _measure(folder: str, procs: list[subprocess.Popen], secs: float, warmup: float) -> dict:
    """Words/s through the count step, as :func:`cases._measure` takes it (the workers'
    published totals instead of a cluster's status)."""
    from cases import _measure as measure

    def total() -> float:
        _check(procs, folder)
        return float(_total(folder, "count", len(procs)) or 0)

    return measure(None, "bytewax", secs, warmup, count=total)


def case_bytewax(
    secs: float, workers: int, warmup: float = 3.0, batch: int = BATCH, **_: Any
) -> dict[str, Any]:
    try:
        import bytewax.dataflow  # noqa: F401
    except ImportError:
        return {"skipped": "bytewax is not installed (pip install bytewax==0.21.1)"}
    with tempfile.TemporaryDirectory(prefix="peer-bytewax-") as folder:
        procs: list[subprocess.Popen] = []
        try:
            procs = _launch(folder, workers, batch)
            if _wait_for(folder, "count", procs, START_SECS) is None:
                raise RuntimeError(f"bytewax did not start within {START_SECS} s")
            measured = _measure(folder, procs, secs, warmup)
            open(os.path.join(folder, "stop"), "w").close()
            counted = _wait_for(folder, "final", procs, DRAIN_SECS)
            sent = _wait_for(folder, "sent", procs, 1.0)
        finally:
            _stop(procs)
    exact = counted is not None and sent is not None and counted == 10 * sent
    return {**measured, "exact": exact, "peer": PEER, "processes": workers}


PEER_CASES = {"bytewax": case_bytewax}


def peer_plan(workers: list[int], secs: float) -> list[tuple[str, str, dict]]:
    """One bytewax case per worker count, named like ``peer-bytewax-2``."""
    return [(f"peer-bytewax-{w}", "bytewax", {"secs": secs, "workers": w}) for w in workers]

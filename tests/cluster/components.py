"""Components whose records survive kill -9: every spout task keeps a ledger on disk.

The hosts of the cluster tier are network namespaces on one machine, so they share its
filesystem: a :class:`LedgerSpout` task appends, under ``folder``, the msg ids it emitted
(as a high-water mark) and those acked, with the time; :class:`LedgerSink` appends what it
received.  A relaunched spout task reads its own ledger back, resumes after the last id it
recorded and replays every recorded id not acked yet — at-least-once across crashes.  The
test reads the ledgers directly to count emitted, acked, lost and duplicate ids and to
find gaps in the ack stream.  Writes are buffered and flushed every ``FLUSH_SECS``: what a
kill loses from a buffer is emitted again (a duplicate), never skipped.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from topology import Bolt, Spout, TopologyContext, Tuple

FLUSH_SECS = 0.2


class _Ledger:
    """Append-only lines, flushed every ``FLUSH_SECS`` by a thread of its own (so the last
    lines reach the disk even when nothing more is written)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: TextIO = open(path, "a", encoding="utf-8")  # noqa: SIM115 - long-lived
        self._lock = threading.Lock()
        self._closed = threading.Event()
        threading.Thread(target=self._flush_loop, daemon=True).start()

    def _flush_loop(self) -> None:
        while not self._closed.wait(FLUSH_SECS):
            with self._lock:
                if not self._file.closed:
                    self._file.flush()

    def write(self, line: str) -> None:
        with self._lock:
            self._file.write(line)

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            self._file.close()


#: A file whose presence in the ledger folder stops every spout from emitting new ids (it
#: still replays failed ones), so a run can end with every emitted id acked.
STOP_FILE = "STOP"


class LedgerSpout(Spout):
    """Emits ids ``task_index + k * tasks`` at about ``rate`` per second per task, each with
    itself as msg id; failed ids are replayed; a ledger makes it resume after a crash.  Once
    :data:`STOP_FILE` exists in ``folder`` it emits only replays."""

    outputs = ["n"]

    def __init__(self, folder: str, rate: float = 500.0) -> None:
        self.folder = folder
        self.rate = rate

    def open(self, conf: Any, context: TopologyContext) -> None:
        self.step = len(context.component_tasks())
        index = context.task_index
        base = Path(self.folder)
        high, acked = _read_spout_ledger(
            base / f"spout-{index}.emitted", base / f"spout-{index}.acked"
        )
        self.next = index if high is None else high + self.step
        self.replay = [n for n in range(index, self.next, self.step) if n not in acked]
        self.emitted = _Ledger(base / f"spout-{index}.emitted")
        self.acked = _Ledger(base / f"spout-{index}.acked")
        self.stop_file = base / STOP_FILE
        self.stopped = False
        self.started = self.checked = time.monotonic()
        self.sent = 0

    def next_tuple(self) -> None:
        now = time.monotonic()
        if self.sent >= (now - self.started) * self.rate:
            return  # paced: the rest of the time the worker is free for everything else
        if now - self.checked >= 1.0:
            self.checked = now
            self.stopped = self.stop_file.exists()
        if self.replay:
            n = self.replay.pop()
        elif self.stopped:
            return
        else:
            n = self.next
            self.next += self.step
            self.emitted.write(f"{n}\n")
        self.sent += 1
        self.emit([n], msg_id=n)

    def ack(self, msg_id: Any) -> None:
        self.acked.write(f"{msg_id} {time.time():.3f}\n")

    def fail(self, msg_id: Any) -> None:
        self.replay.append(msg_id)

    def close(self) -> None:
        self.emitted.close()
        self.acked.close()


class PassBolt(Bolt):
    outputs = ["n"]

    def execute(self, tup: Tuple) -> None:
        self.emit(tup.values, anchors=tup)
        self.ack(tup)


class LedgerSink(Bolt):
    """Acks everything; appends each id received (duplicates show as repeated lines)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def prepare(self, conf: Any, context: TopologyContext) -> None:
        name = f"sink-{context.task_index}-{os.getpid()}.received"
        self.ledger = _Ledger(Path(self.folder) / name)

    def execute(self, tup: Tuple) -> None:
        self.ledger.write(f"{tup.values[0]}\n")
        self.ack(tup)

    def cleanup(self) -> None:
        self.ledger.close()


def _read_spout_ledger(emitted: Path, acked: Path) -> tuple[int | None, set[int]]:
    """(the highest id recorded as emitted, every id recorded as acked)."""
    high = None
    if emitted.exists():
        for line in emitted.read_text().split():
            high = int(line) if high is None else max(high, int(line))
    done = set()
    if acked.exists():
        for line in acked.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2:  # a torn last line of a killed writer is skipped
                done.add(int(parts[0]))
    return high, done


def ledger_summary(folder: str) -> dict[str, Any]:
    """Counts over every ledger in ``folder``: emitted, acked, lost (emitted, never acked),
    sink deliveries, duplicates (deliveries beyond one per id), and ack times."""
    base = Path(folder)
    emitted: set[int] = set()
    acked: set[int] = set()
    ack_times: list[float] = []
    for path in base.glob("spout-*.emitted"):
        index = path.name.split("-")[1].split(".")[0]
        high, done = _read_spout_ledger(path, base / f"spout-{index}.acked")
        tasks = len(list(base.glob("spout-*.emitted")))
        if high is not None:
            emitted.update(range(int(index), high + 1, tasks))
        acked |= done
    for path in base.glob("spout-*.acked"):
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2:
                ack_times.append(float(parts[1]))
    deliveries = 0
    for path in base.glob("sink-*.received"):
        deliveries += len(path.read_text().split())
    return {
        "emitted": len(emitted),
        "acked": len(acked & emitted),
        "lost": sorted(emitted - acked),
        "deliveries": deliveries,
        "duplicates": max(0, deliveries - len(acked)),
        "ack_times": sorted(ack_times),
    }


def longest_gap(times: list[float], start: float | None = None, end: float | None = None) -> float:
    """The longest time between consecutive ack times within [start, end]."""
    window = [t for t in times if (start is None or t >= start) and (end is None or t <= end)]
    return max((b - a for a, b in zip(window, window[1:])), default=0.0)

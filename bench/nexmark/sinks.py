"""Where a query's output goes: ``for_each`` sinks that keep it for the exactness check.

A query's result is either its rows (a multiset) or, for an updating query, the last value
of each key.  :func:`canon` makes both comparable with the references whatever travelled
between components (msgpack gives tuples back as lists).

* :class:`Collected` keeps everything in a registry of this process, by token: the
  in-process runner's tasks (copies of the sink) all add to one place (tests).
* :class:`DigestSink` keeps a digest — the count of rows and the sum of their hashes
  modulo 2^64, or the final dict — and a thread writes it to a file in ``folder`` whenever
  it changed, so a runner reads the workers' results from files once they are drained.
  Hashes need ``PYTHONHASHSEED`` fixed in every process (``run.py`` sets it).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from typing import Any

MASK = (1 << 64) - 1


def canon(value: Any) -> Any:
    """Lists and tuples, nested, as tuples (what msgpack changed back); a dict's keys and
    values likewise."""
    if type(value) is list or type(value) is tuple:
        return tuple([canon(v) for v in value])
    if type(value) is dict:
        return {canon(k): canon(v) for k, v in value.items()}
    return value


def row_hash(row: Any) -> int:
    """``hash(canon(row))``, cheaply for a flat row (a tuple, or a list of scalars)."""
    try:
        return hash(tuple(row) if type(row) is list else row)
    except TypeError:  # a list inside
        return hash(canon(row))


def rows_digest(rows: Any) -> tuple[int, int]:
    """``(count, sum of hash(canon(row)) mod 2^64)`` of a multiset of rows."""
    count = total = 0
    for row in rows:
        count += 1
        total += row_hash(row)
    return count, total & MASK


def latest_digest(latest: dict[Any, Any]) -> tuple[int, int]:
    """The digest of a final dict: of its ``(key, value)`` rows."""
    return rows_digest((canon(k), canon(v)) for k, v in latest.items())


_REGISTRY: dict[str, Any] = {}


class Collected:
    """Keeps a query's output in this process: ``Collected.rows(token)`` /
    ``.latest(token)``.

    Args:
        updating: the output is ``(key, value)`` pairs of which the last per key counts.
    """

    __name__ = "collect"

    def __init__(self, updating: bool) -> None:
        self.updating = updating
        self.token = uuid.uuid4().hex
        _REGISTRY[self.token] = {} if updating else []

    def __call__(self, element: Any) -> None:
        found = _REGISTRY[self.token]
        if self.updating:
            found[canon(element[0])] = canon(element[1])
        else:
            found.append(canon(element))

    def result(self) -> Any:
        """The rows, sorted, or the final dict."""
        found = _REGISTRY[self.token]
        return dict(found) if self.updating else sorted(found)


class DigestSink:
    """Keeps a digest of a query's output; a thread writes it to ``folder`` when it
    changed (at most every ``every`` seconds) with the wall time of the last element.

    Args:
        folder: where each sink copy writes its file.
        updating: as :class:`Collected`.
        every: seconds between two looks of the writer thread.
    """

    __name__ = "digest"

    def __init__(self, folder: str, updating: bool, every: float = 0.1) -> None:
        self.folder = folder
        self.updating = updating
        self.every = every

    def __getstate__(self) -> dict[str, Any]:
        return {"folder": self.folder, "updating": self.updating, "every": self.every}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.count = self.total = 0
        self.latest: dict[Any, Any] = {}
        self.last_at = 0.0
        self.path = os.path.join(self.folder, f"sink-{os.getpid()}-{uuid.uuid4().hex[:8]}.json")
        self.lock = threading.Lock()
        threading.Thread(target=self._writer, daemon=True, name="nexmark-digest").start()

    def __call__(self, element: Any) -> None:
        if self.updating:
            self.latest[canon(element[0])] = element[1]
        else:
            self.count += 1
            self.total += row_hash(element)
        self.last_at = time.time()

    def _snapshot(self) -> dict[str, Any]:
        if self.updating:
            count, total = latest_digest(dict(self.latest))
        else:
            count, total = self.count, self.total & MASK
        return {"count": count, "sum": total, "last_at": self.last_at}

    def _writer(self) -> None:
        written: Any = None
        while True:
            time.sleep(self.every)
            mark = (self.count, self.total, len(self.latest), self.last_at)
            if mark == written:
                continue
            snapshot = self._snapshot()
            with open(self.path + ".tmp", "w") as out:
                json.dump(snapshot, out)
            os.replace(self.path + ".tmp", self.path)
            written = mark


def read_digests(folder: str) -> dict[str, Any]:
    """The sum of every sink file's digest in ``folder``: count, sum, last_at (max)."""
    count = total = 0
    last = 0.0
    for name in os.listdir(folder):
        if name.startswith("sink-") and name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                d = json.load(f)
            count += d["count"]
            total += d["sum"]
            last = max(last, d["last_at"])
    return {"count": count, "sum": total & MASK, "last_at": last}

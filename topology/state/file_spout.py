"""A replayable spout over files: new lines of the files it reads, and new files.

Example::

    builder.set_spout("lines", FileSpout("/var/log/app", pattern="*.log"), 2)

Each complete line (ended by a newline) is emitted once, in file order, with msg id
``[file name, byte offset]``.  The position — for every file, the offset of its next unread
line — is stored with every checkpoint, so in a checkpointed topology a restart reads on
from exactly the checkpoint (exactly-once effects); with ackers instead, a failed line is
read again from its offset (at-least-once).  With several tasks, each file belongs to one
task (by a stable hash of its name).  Files are expected to grow by appending; one that
shrinks below the offset already read is read again from its start.
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Mapping
from typing import Any

from grouping.hashing import stable_hash
from topology.components import OutputFieldsDeclarer
from topology.context import TopologyContext
from topology.stateful import ReplayableSpout


class FileSpout(ReplayableSpout):
    """Lines of ``path`` (a file, or the files matching ``pattern`` in a directory).

    Args:
        path: a file, or a directory whose matching files are read in name order.
        pattern: a glob for the files of a directory (``"*.log"``).
        lines_per_call: most lines one ``next_tuple`` emits.
        scan_secs: how often the directory is listed again for new files.
        include_source: emit ``[file, offset, line]`` instead of ``[line]``.
        encoding: how lines are decoded (undecodable bytes are replaced).
    """

    def __init__(
        self,
        path: str,
        pattern: str = "*",
        lines_per_call: int = 100,
        scan_secs: float = 1.0,
        include_source: bool = False,
        encoding: str = "utf-8",
    ) -> None:
        if lines_per_call < 1:
            raise ValueError(f"FileSpout lines_per_call must be >= 1, got {lines_per_call}")
        self.path = os.path.abspath(path)
        self.pattern = pattern
        self.lines_per_call = lines_per_call
        self.scan_secs = scan_secs
        self.include_source = include_source
        self.encoding = encoding

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["file", "offset", "line"] if self.include_source else ["line"])

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self._index = context.task_index
        self._tasks = len(context.component_tasks(context.component_id))
        #: file name -> offset of its next unread line
        self.offsets: dict[str, int] = {}
        self._retry: list[tuple[str, int]] = []
        self._next_scan = 0.0
        self._idle: set[str] = set()  # files read to their end since the last scan

    # -- reading ---------------------------------------------------------------------------

    def _owned(self, name: str) -> bool:
        return stable_hash([name]) % self._tasks == self._index

    def _file(self, name: str) -> str:
        return self.path if os.path.isfile(self.path) else os.path.join(self.path, name)

    def _scan(self) -> None:
        if os.path.isfile(self.path):
            names = [os.path.basename(self.path)] if self._index == 0 else []
        else:
            try:
                names = sorted(n for n in os.listdir(self.path) if fnmatch.fnmatch(n, self.pattern))
            except FileNotFoundError:
                names = []
        for name in names:
            if self._owned(name):
                self.offsets.setdefault(name, 0)
        self._idle.clear()

    def next_tuple(self) -> None:
        now = time.monotonic()
        if now >= self._next_scan:
            self._next_scan = now + self.scan_secs
            self._scan()
        budget = self.lines_per_call
        while self._retry and budget:
            name, offset = self._retry.pop(0)
            line = self._read_lines(name, offset, 1)
            if line:
                self._emit(name, offset, line[0][1])
                budget -= 1
        for name in sorted(self.offsets):
            if not budget:
                return
            if name in self._idle:
                continue
            lines = self._read_lines(name, self.offsets[name], budget)
            if not lines:
                self._idle.add(name)
                continue
            for end, text in lines:
                self._emit(name, self.offsets[name], text)
                self.offsets[name] = end
            budget -= len(lines)

    def _read_lines(self, name: str, offset: int, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` complete lines from ``offset``: (offset after it, text)."""
        path = self._file(name)
        try:
            with open(path, "rb") as f:
                if os.fstat(f.fileno()).st_size < offset:  # truncated: read it again
                    offset = self.offsets[name] = 0
                f.seek(offset)
                out = []
                for _ in range(limit):
                    raw = f.readline()
                    if not raw.endswith(b"\n"):
                        break  # the end, or a line still being written
                    offset += len(raw)
                    out.append((offset, raw.rstrip(b"\r\n").decode(self.encoding, "replace")))
                return out
        except FileNotFoundError:
            return []

    def _emit(self, name: str, offset: int, text: str) -> None:
        values = [name, offset, text] if self.include_source else [text]
        self.emit(values, msg_id=[name, offset])

    # -- reliability -------------------------------------------------------------------------

    def fail(self, msg_id: Any) -> None:
        """Read the line again (a topology with ackers; a checkpointed one seeks instead)."""
        name, offset = msg_id
        self._retry.append((str(name), int(offset)))

    def position(self) -> dict[str, int]:
        return dict(self.offsets)

    def seek(self, position: Any) -> None:
        self.offsets = {str(k): int(v) for k, v in dict(position).items()}
        self._retry.clear()
        self._idle.clear()
        self._next_scan = 0.0

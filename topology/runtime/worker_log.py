"""Each worker's own log file: user code's output and logging, read back through the cluster.

A worker writes ``<storm.log.dir>/<topology>/worker-<N>.log`` (rotated at
``topology.worker.log.max.bytes``, ``topology.worker.log.backups`` old files kept).  Every
line says which task was running when it was written (``[split:3]``; ``[-]`` outside user
code), so ``sparkstorm logs --component split`` can pick one component's lines:

    2026-11-24 09:30:01,123 INFO [split:3] user.stdout: hello

What goes in: the root logger's records at the worker's level (``topology.worker.log.level``,
changed at run time by ``sparkstorm set-log-level``) and whatever user code prints —
``sys.stdout`` as INFO lines of ``user.stdout``, ``sys.stderr`` as WARNING lines of
``user.stderr`` — for as long as the worker runs; the streams are given back at the end
(a Spark Python process may run other tasks afterwards).

:func:`read_log` serves ``sparkstorm logs``: a chunk from a byte offset (or the file's
tail), so ``--follow`` asks again from where the last chunk ended.
"""

from __future__ import annotations

import io
import json
import logging
import logging.handlers
import math
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from topology import config as cfg
from topology import user_dirs

#: Most bytes one read returns (a reply travels through ZooKeeper on a cluster).
MAX_CHUNK_BYTES = 256 * 1024
#: Most characters of a chunk as JSON (a heartbeat node must stay well under 1 MB).
MAX_REPLY_CHARS = 300_000
#: What a read returns by default.
DEFAULT_CHUNK_BYTES = 64 * 1024
FORMAT = "%(asctime)s %(levelname)s [%(task)s] %(name)s: %(message)s"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def log_dir(conf: dict[str, Any]) -> Path:
    """``storm.log.dir``, or this user's default, ``<tmp>/sparkstorm-<uid>/logs``
    (:mod:`topology.user_dirs`; nothing is made)."""
    return user_dirs.resolve(conf, cfg.LOG_DIR)


def _folder_name(topology: str) -> str:
    return (
        "".join(c if c.isalnum() or c in "-_." else "_" for c in topology).lstrip(".") or "topology"
    )


def worker_log_path(conf: dict[str, Any], topology: str, worker: int) -> Path:
    """Where worker ``worker`` of ``topology`` (its id, or a LocalCluster run's key) logs."""
    return log_dir(conf) / _folder_name(topology) / f"worker-{worker}.log"


def topology_log_dir(conf: dict[str, Any], topology: str) -> Path:
    """The log directory of ``topology`` (where :func:`worker_log_path` and a driver's
    ``driver.log`` go), made now: 0700, under a log directory made and checked as
    :func:`topology.user_dirs.ensure_dir` says.  Raises
    :class:`~topology.user_dirs.LocalDirError` (one line) when either is not safe to use."""
    return user_dirs.ensure_dir(conf, cfg.LOG_DIR, _folder_name(topology))


def check_level(level: str) -> str:
    """``level`` upper-cased if it is a logging level name; ValueError naming the choices."""
    name = str(level).upper()
    if name not in LEVELS:
        raise ValueError(f"unknown log level {level!r} (one of {', '.join(LEVELS)})")
    return name


class _TaskTag(logging.Filter):
    """Stamps each record with the task whose user code runs now (``current()``)."""

    def __init__(self, current: Callable[[], str | None]) -> None:
        super().__init__()
        self._current = current

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            record.task = self._current() or "-"
        except Exception:  # never lose a line over the tag
            record.task = "?"
        return True


class _LineWriter(io.TextIOBase):
    """A text stream that turns written lines into log records of ``logger``."""

    def __init__(self, logger: logging.Logger, level: int, original: TextIO) -> None:
        self._logger = logger
        self._level = level
        self._original = original
        self._partial: dict[int, str] = {}  # thread -> its unfinished line
        self._local = threading.local()  # .writing: this thread is inside write()
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if getattr(self._local, "writing", False):  # a handler writing to this stream
            return self._original.write(text)
        self._local.writing = True
        try:
            thread = threading.get_ident()
            with self._lock:  # each thread's lines stay whole
                lines = (self._partial.pop(thread, "") + str(text)).split("\n")
                if lines[-1]:
                    self._partial[thread] = lines[-1]
            for line in lines[:-1]:
                self._logger.log(self._level, line.rstrip("\r"))
            return len(text)
        finally:
            self._local.writing = False

    def flush(self) -> None:
        with self._lock:
            rest = self._partial.pop(threading.get_ident(), "")
        if rest:
            self._logger.log(self._level, rest)

    @property
    def buffer(self) -> _BytesInto:
        """For code that writes bytes (``sys.stdout.buffer.write``): decoded into lines."""
        return _BytesInto(self)

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._original, "encoding", "utf-8") or "utf-8"

    def fileno(self) -> int:  # libraries that write to the descriptor go to the original
        return self._original.fileno()


class _BytesInto:
    """A ``buffer`` whose ``write(bytes)`` goes to a :class:`_LineWriter` as text."""

    def __init__(self, text: _LineWriter) -> None:
        self._text = text

    def write(self, data: bytes) -> int:
        self._text.write(bytes(data).decode("utf-8", errors="replace"))
        return len(data)

    def flush(self) -> None:
        self._text.flush()


class _PrivateRotatingHandler(logging.handlers.RotatingFileHandler):
    """Rotating files created 0600, never opened through a symbolic link."""

    def _open(self) -> Any:
        return open(  # noqa: SIM115 - the handler keeps it
            self.baseFilename,
            self.mode,
            encoding=self.encoding,
            errors=self.errors,
            opener=user_dirs.private_opener,
        )


class WorkerLog:
    """The log file of one worker, installed for as long as the worker runs."""

    def __init__(
        self,
        path: Path,
        level: str = "INFO",
        max_bytes: int = 10 * 1024 * 1024,
        backups: int = 3,
        current_task: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.path = path
        user_dirs.make_dirs(path.parent)
        self._handler = _PrivateRotatingHandler(
            path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
        )
        self._handler.setFormatter(logging.Formatter(FORMAT))
        self._handler.addFilter(_TaskTag(current_task))
        self.default_level = check_level(level)
        self.level = self.default_level
        self.revert_at: float | None = None
        #: ``set_level`` runs on a cluster client's thread, ``poll`` on the executor's.
        self._level_lock = threading.Lock()
        self._root_level = logging.NOTSET
        self._streams: tuple[TextIO, TextIO] | None = None
        self._detached: list[logging.Handler] = []

    def install(self) -> WorkerLog:
        """Attach the file to the root logger (in place of handlers writing to stdout or
        stderr, which now lead into the file) and route ``print`` output into it."""
        root = logging.getLogger()
        self._root_level = root.level
        self._detached = [
            h
            for h in root.handlers
            if isinstance(h, logging.StreamHandler) and h.stream in (sys.stdout, sys.stderr)
        ]
        for handler in self._detached:
            root.removeHandler(handler)
        root.addHandler(self._handler)
        root.setLevel(self.level)
        self._streams = (sys.stdout, sys.stderr)
        sys.stdout = _LineWriter(logging.getLogger("user.stdout"), logging.INFO, sys.stdout)
        sys.stderr = _LineWriter(logging.getLogger("user.stderr"), logging.WARNING, sys.stderr)
        return self

    def close(self) -> None:
        """Give the streams and the root logger back; close the file."""
        if self._streams is not None:
            for stream in (sys.stdout, sys.stderr):
                if isinstance(stream, _LineWriter):
                    stream.flush()
            sys.stdout, sys.stderr = self._streams
            self._streams = None
        root = logging.getLogger()
        root.removeHandler(self._handler)
        for handler in self._detached:
            root.addHandler(handler)
        self._detached = []
        root.setLevel(self._root_level)
        self._handler.close()

    def set_level(self, level: str, revert_after: float | None, now: float) -> str:
        """Log at ``level`` from now on; back to the default after ``revert_after`` seconds
        (None: until changed again).  Returns the level set.  Safe on any thread."""
        chosen = check_level(level)
        if revert_after is not None and not (
            isinstance(revert_after, (int, float)) and 0 < revert_after < math.inf
        ):
            raise ValueError(f"the timeout must be a number of seconds > 0, got {revert_after!r}")
        with self._level_lock:
            self._apply(chosen, None if revert_after is None else now + revert_after)
        self._announce(chosen, revert_after)
        return chosen

    def poll(self, now: float) -> None:
        """Revert a timed level change that is due (a change made meanwhile on another
        thread wins)."""
        with self._level_lock:
            if self.revert_at is None or now < self.revert_at:
                return
            self._apply(self.default_level, None)
        self._announce(self.default_level, None)

    def _apply(self, level: str, revert_at: float | None) -> None:
        self.level = level
        self.revert_at = revert_at
        logging.getLogger().setLevel(level)

    @staticmethod
    def _announce(level: str, revert_after: float | None) -> None:
        logging.getLogger("sparkstorm.worker").warning(
            "log level set to %s%s",
            level,
            "" if revert_after is None else f" for {revert_after:g}s",
        )


def read_log(
    path: Path,
    offset: int | None,
    max_bytes: int = DEFAULT_CHUNK_BYTES,
    component: str | None = None,
    file_id: int | None = None,
) -> dict[str, Any]:
    """A chunk of the log at ``path``: from byte ``offset`` (None: the last ``max_bytes``,
    from a line start), at most ``max_bytes`` and whole lines only, optionally only the
    lines of ``component``'s tasks (and the lines that continue them, e.g. a traceback).

    Returns ``{"text", "offset": where the next read starts, "size", "rotated",
    "file_id"}``; given the ``file_id`` of the previous chunk, a different file (rotated,
    whatever its size now) or an offset beyond the file's size starts again at 0.
    """
    max_bytes = max(1, min(int(max_bytes), MAX_CHUNK_BYTES))
    try:
        stat = os.stat(path)
    except OSError:
        return {"text": "", "offset": 0, "size": 0, "rotated": False, "missing": True}
    size = stat.st_size
    rotated = offset is not None and (
        offset > size or (file_id is not None and file_id != stat.st_ino)
    )
    start = max(0, size - max_bytes) if offset is None else (0 if rotated else offset)
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(max_bytes)
    if offset is None and start > 0:  # a tail: drop the partial first line
        cut = data.find(b"\n")
        data = data[cut + 1 :] if cut >= 0 else b""
        start = size - len(data)
    end = data.rfind(b"\n")
    if end >= 0:
        data = data[: end + 1]  # whole lines only: the rest comes next time
    elif len(data) < max_bytes:
        data = b""  # a line still being written
    # (else: a line longer than a chunk, passed on in pieces rather than never)
    data = _fit(data, MAX_REPLY_CHARS)
    text = data.decode("utf-8", errors="replace")
    if component:
        text = _lines_of(text, component)
    return {
        "text": text,
        "offset": start + len(data),
        "size": size,
        "rotated": rotated,
        "file_id": stat.st_ino,
    }


def _fit(data: bytes, limit: int) -> bytes:
    """The longest run of whole lines of ``data`` whose JSON text (as a reply travels)
    stays within ``limit`` characters: control characters take six each there."""
    if len(data) * 6 <= limit:
        return data
    kept, size = 0, 0
    for line in data.splitlines(keepends=True):
        size += len(json.dumps(line.decode("utf-8", errors="replace"))) - 2
        if size > limit:
            break
        kept += len(line)
    return data[:kept] if kept else data[: limit // 6]  # one line over the budget: its head


def _lines_of(text: str, component: str) -> str:
    """The lines tagged ``[component:<task>]`` and the untagged lines that follow them."""
    tag = f" [{component}:"
    keep, out = False, []
    for line in text.splitlines(keepends=True):
        if " [" in line[:40] and "] " in line:
            keep = tag in line
        if keep:
            out.append(line)
    return "".join(out)

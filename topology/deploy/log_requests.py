"""``log`` and ``log_level`` requests to a topology's workers, shared by LocalCluster and
Cluster (each passes its own ``request(name, cmd, timeout, **args)``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from topology.errors import SparkstormError
from topology.runtime.worker_log import MAX_CHUNK_BYTES, check_level

Request = Callable[..., list[dict[str, Any]]]


class LogRequestError(SparkstormError):
    """A log request that cannot be made (bad level, worker or size), or that a worker
    refused; the message says which."""


def logs_request(
    request: Request,
    name: str,
    worker: int | None,
    offsets: dict[int, int] | None,
    component: str | None,
    max_bytes: int | None,
    timeout: float,
    files: dict[int, int] | None = None,
) -> list[dict[str, Any]]:
    """Each asked worker's log chunk (``worker``: only that one), oldest worker first."""
    if worker is not None and (not isinstance(worker, int) or worker < 0):
        raise LogRequestError(f"worker must be a worker index >= 0, got {worker!r}")
    if max_bytes is not None and not 0 < max_bytes <= MAX_CHUNK_BYTES:
        raise LogRequestError(f"max_bytes must be 1..{MAX_CHUNK_BYTES:,}, got {max_bytes!r}")
    replies = request(
        name,
        "log",
        timeout,
        worker=worker,
        offsets={str(w): int(o) for w, o in (offsets or {}).items()},
        files={str(w): int(f) for w, f in (files or {}).items()},
        component=component,
        max_bytes=max_bytes,
    )
    chunks = [r for r in replies if not r.get("skipped")]
    if worker is not None and not chunks:
        raise LogRequestError(
            f"topology {name!r} has no worker {worker} (workers: 0..{len(replies) - 1})"
        )
    return chunks


def level_request(
    request: Request, name: str, level: str, revert_after: float | None, timeout: float
) -> list[dict[str, Any]]:
    """Set every worker's log level; the replies (each says the level it set)."""
    try:
        level = check_level(level)
    except ValueError as exc:
        raise LogRequestError(str(exc)) from None
    if revert_after is not None and not revert_after > 0:
        raise LogRequestError(f"the timeout must be > 0 seconds, got {revert_after!r}")
    replies = request(name, "log_level", timeout, level=level, revert_after=revert_after)
    refused = [f"worker {r.get('worker')}: {r['error']}" for r in replies if r.get("error")]
    if refused:
        raise LogRequestError("; ".join(refused))
    return replies


class WorkerLogAccess:
    """``worker_logs`` and ``set_log_level`` for a cluster front end that provides
    ``_worker_request(name, cmd, timeout, **args)`` (every worker's reply)."""

    def _worker_request(
        self, name: str, cmd: str, timeout: float, **args: Any
    ) -> list[dict[str, Any]]:
        raise NotImplementedError

    def worker_logs(
        self,
        name: str,
        worker: int | None = None,
        offsets: dict[int, int] | None = None,
        component: str | None = None,
        max_bytes: int | None = None,
        timeout: float = 15.0,
        files: dict[int, int] | None = None,
    ) -> list[dict[str, Any]]:
        """A chunk of each worker's log file (or only ``worker``'s), read by the worker on
        its own host (see :func:`topology.runtime.worker_log.read_log`); ``offsets`` and
        ``files`` (worker -> ``offset`` and ``file_id`` of the last chunks) continue where
        they ended, from the start of a file that was rotated meanwhile.

        Args:
            name: the topology's name.
            worker: one worker's index (None: every worker).
            offsets: worker -> the ``offset`` of its last chunk, to continue from.
            component: only the lines of this component.
            max_bytes: the largest chunk per worker.
            timeout: seconds each worker has to answer.
            files: worker -> the ``file_id`` of its last chunk.

        Returns:
            One chunk per worker (its text, offset and file id).

        Raises:
            LogRequestError: a bad ``worker`` or ``max_bytes``, or a worker refused.
        """
        return logs_request(
            self._worker_request, name, worker, offsets, component, max_bytes, timeout, files
        )

    def set_log_level(
        self, name: str, level: str, revert_after: float | None = None, timeout: float = 15.0
    ) -> list[dict[str, Any]]:
        """Set the log level of every worker of a topology.

        Args:
            name: the topology's name.
            level: a logging level name (``"DEBUG"``, ``"INFO"``...).
            revert_after: back to ``topology.worker.log.level`` after this many seconds
                (None: stays).
            timeout: seconds each worker has to answer.

        Returns:
            Every worker's reply.

        Raises:
            LogRequestError: an unknown level, a bad ``revert_after``, or a worker refused.
        """
        return level_request(self._worker_request, name, level, revert_after, timeout)

"""Requests a :class:`~topology.deploy.local.topology.LocalTopology` sends every worker on
its control channel, and the replies that answer them.

:meth:`ControlRequests.ask` (on the caller's thread) posts a command with a fresh request
id and waits for one reply per worker, posting it again every :data:`RESEND_SECS` to the
workers that have not answered (one being relaunched missed it);
:meth:`ControlRequests.reply` (on the control thread) hands each reply to its request.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

#: Seconds before a control request is sent again to workers that have not answered.
RESEND_SECS = 1.0

_REQUEST_IDS = itertools.count(1)

#: Posts a message to one worker (its index) or to every worker (None).
Post = Callable[[tuple[int | None, dict[str, Any]]], None]


class ControlRequests:
    """The requests waiting for replies (shared by the caller and the control thread)."""

    def __init__(self) -> None:
        self._pending: dict[int, _Request] = {}
        self._lock = threading.Lock()

    def ask(
        self, cmd: str, fields: dict[str, Any], expected: int, timeout: float, post: Post
    ) -> tuple[bool, dict[int, dict[str, Any]]]:
        """Post ``cmd`` (with ``fields``) to every worker and wait for each of ``expected``
        workers to reply: (whether all did within ``timeout``, worker -> reply)."""
        req_id = next(_REQUEST_IDS)
        pending = _Request(expected)
        with self._lock:
            self._pending[req_id] = pending
        message = {**fields, "cmd": cmd, "req": req_id}
        post((None, message))
        deadline = time.monotonic() + timeout
        # A worker that was being relaunched missed the message: ask the silent ones again.
        while not pending.done.wait(min(RESEND_SECS, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                break
            for w in range(pending.expected):
                if w not in pending.replies:
                    post((w, message))
        with self._lock:
            self._pending.pop(req_id, None)
        return pending.done.is_set(), pending.replies

    def reply(self, worker: int, message: dict[str, Any]) -> None:
        """Hand ``worker``'s reply (``message["req"]``: the request it answers) to its
        request, if one still waits for it."""
        with self._lock:
            pending = self._pending.get(int(message.get("req", -1)))
        if pending is not None:
            pending.replies[worker] = message
            if len(pending.replies) >= pending.expected:
                pending.done.set()


class _Request:
    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.replies: dict[int, dict[str, Any]] = {}
        self.done = threading.Event()

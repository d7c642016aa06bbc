"""Entry point of a LocalCluster worker process: ``python -m topology.deploy.local_worker_main``.

Reads from stdin one JSON line (sys.path, control endpoint, identity, parent pid) and then
the cloudpickled :class:`~topology.runtime.assembly.WorkerSetup`; runs the worker; exits
when told to stop, or at once when the parent process disappears (so workers never outlive
a test).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from typing import Any

from topology.runtime.curve import CurveKeys
from topology.runtime.transport import ControlClient
from topology.stats.carry import Lumps, newest

from .shipping import adopt_module_paths


class LocalClusterClient:
    """The worker side of LocalCluster's control channel."""

    def __init__(
        self,
        endpoint: str,
        identity: str,
        curve: CurveKeys | None = None,
        carried: dict[str, Any] | None = None,
    ) -> None:
        self._control = ControlClient(endpoint, identity, curve)
        self.socket = self._control.socket
        self._early: list[dict[str, Any]] = []
        self._carried = carried or {}

    def carried_stats(self) -> dict[int, Lumps]:
        """What this worker's tasks did before it was relaunched (saved by the parent)."""
        return newest([self._carried])

    def publish_stats(self, status: dict[str, Any]) -> None:
        """Every stats interval: the parent saves the windows (a relaunch carries them)."""
        self._control.send({"type": "stats", **status})

    def register(self, worker_index: int, endpoint: str, info: dict[str, Any]) -> dict[int, str]:
        self._control.send(
            {"type": "register", "worker": worker_index, "endpoint": endpoint, **info}
        )
        while True:
            message = self._control.recv(timeout_ms=1000)
            if message is None:
                continue
            if message.get("cmd") == "start":
                return {int(w): ep for w, ep in message["endpoints"].items()}
            self._early.append(message)

    def poll_commands(self) -> list[dict[str, Any]]:
        commands, self._early = self._early, []
        while (message := self._control.recv_nowait()) is not None:
            commands.append(message)
        return commands

    def send(self, message: dict[str, Any]) -> None:
        self._control.send(message)

    def close(self) -> None:
        self._control.close()


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os._exit(3)


def main() -> int:
    header = json.loads(sys.stdin.buffer.readline())
    adopt_module_paths(header["module_paths"])
    threading.Thread(target=_watch_parent, args=(header["parent_pid"],), daemon=True).start()

    import cloudpickle

    from topology.runtime.worker import Worker

    secret = bytes.fromhex(header["secret"]) if header.get("secret") else None
    curve = CurveKeys.from_secret(secret) if secret is not None else None
    client = LocalClusterClient(header["control"], header["identity"], curve, header.get("carried"))
    try:
        setup = cloudpickle.loads(sys.stdin.buffer.read())
        Worker(setup, client).run()
    except BaseException as exc:  # report why this worker died, then die
        client.send(
            {
                "type": "fatal",
                "worker": header["worker"],
                "text": "".join(traceback.format_exception(exc)).rstrip(),
            }
        )
        client.close()
        raise
    client.send({"type": "stopped", "worker": header["worker"]})
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

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


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os._exit(3)


def main() -> int:
    header = json.loads(sys.stdin.buffer.readline())
    for entry in reversed(header["sys_path"]):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    threading.Thread(target=_watch_parent, args=(header["parent_pid"],), daemon=True).start()

    import cloudpickle

    from topology.runtime.worker import Worker

    from .local_cluster import LocalClusterClient

    client = LocalClusterClient(header["control"], header["identity"])
    try:
        spec = cloudpickle.loads(sys.stdin.buffer.read())
        Worker(spec, client).run()
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

"""Starting a bytewax cluster the way bytewax deploys one: one process per worker,
``python -m bytewax.run FLOW -w 1 -i p -a "localhost:PORT0;..."`` (one process: no
addresses), each in its own process group with its output in ``folder/log-<p>``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys


def free_ports(n: int) -> list[int]:
    """``n`` ports free on this machine now (bound, read, released)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def launch(flow: str, folder: str, workers: int, cwd: str) -> list[subprocess.Popen]:
    """Start ``workers`` processes running bytewax flow ``flow`` (``module:call``) from
    ``cwd``; the caller waits for them and ends them (by process group)."""
    addresses = ";".join(f"localhost:{port}" for port in free_ports(workers))
    procs = []
    for p in range(workers):
        argv = [sys.executable, "-m", "bytewax.run", flow, "-w", "1"]
        if workers > 1:
            argv += ["-i", str(p), "-a", addresses]
        with open(os.path.join(folder, f"log-{p}"), "wb") as log:
            procs.append(
                subprocess.Popen(
                    argv,
                    cwd=cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
    return procs

"""The per-component error log kept for ``status``: its size and the shape of its entries.

Errors reported by tasks (``report_error``, exceptions in user code) and by supervisors
(a worker died, a relaunch) are kept per component, newest last, at most
:data:`ERRORS_KEPT` of them: in ZooKeeper under ``errors/<topology-id>/<component>`` for
Spark-hosted workers, in memory for LocalCluster.  Entries about a worker itself are filed
under the pseudo-component :data:`WORKER_COMPONENT`.
"""

from __future__ import annotations

import time
from typing import Any

from topology.constants import WORKER_COMPONENT

#: Errors kept per component (older ones are dropped).
ERRORS_KEPT = 10


def error_entry(component: str, text: str, **extra: Any) -> dict[str, Any]:
    """An error-log entry for ``component`` (``extra``: worker, attempt, fatal, host...)."""
    return {
        "component": component,
        "time": extra.pop("time", None) or time.time(),
        "text": text,
        **extra,
    }


def worker_error_entry(worker: int, text: str, **extra: Any) -> dict[str, Any]:
    """An error-log entry about ``worker`` itself (``extra``: attempt, fatal, host, pid...)."""
    return error_entry(WORKER_COMPONENT, text, worker=worker, **extra)

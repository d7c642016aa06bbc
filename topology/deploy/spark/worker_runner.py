"""Run one worker from what ZooKeeper holds: the entry point of a Spark-hosted worker.

Spark-independent on purpose: the Spark backend calls :func:`run_worker_from_zookeeper`
inside a task, but a plain process could too.
"""

from __future__ import annotations

import os
import socket
import traceback
from typing import Any

import cloudpickle

from topology import config as cfg
from topology.assignment import from_json, with_task_counts
from topology.constants import WORKER_COMPONENT
from topology.deploy.zk.state import ZkState
from topology.deploy.zk.worker_client import ZkClusterClient
from topology.logs import configure_logging
from topology.runtime.net.addressing import worker_addresses, zookeeper_endpoint
from topology.runtime.settings import WorkerSetup
from topology.runtime.worker import Worker

from ..error_log import worker_error_entry
from ..security import verify_stored
from ..shipping import adopt_module_paths


def run_worker_from_zookeeper(launch: dict[str, Any]) -> str:
    """Run worker ``launch["worker"]`` of ``launch["topology_id"]`` until it is stopped.

    ``launch`` carries the ZooKeeper settings (``zk_conf``), the assignment ``attempt``
    the worker belongs to and optional ``task_info`` for the heartbeat.  Each component
    runs as many tasks as the assignment gives it (``rebalance --component`` changes them
    after submit: :func:`topology.assignment.with_task_counts`).  The topology's
    ``module_paths`` (so modules it references by name import here too) are taken from its
    record once it is verified, never from anywhere else.  Returns a short description of
    how the worker ended.
    """
    configure_logging()  # a Spark python worker: nothing else configures it
    topology_id, worker, attempt = launch["topology_id"], launch["worker"], launch["attempt"]
    secret = bytes.fromhex(launch["secret"]) if launch.get("secret") else None
    zk = ZkState(launch["zk_conf"]).connect()
    try:
        assignment_json = zk.read_assignment(topology_id)
        record = zk.read_record(topology_id)
        if not assignment_json or not record or assignment_json["attempt"] != attempt:
            return (
                f"worker {worker}: attempt {attempt} is no longer current (or its record or "
                "assignment was refused: see the log)"
            )
        try:
            code = zk.read_code(topology_id)
            verify_stored(zk, secret, topology_id, record, code)  # before any unpickling
            adopt_module_paths(record.get("module_paths") or [])
            topology = cloudpickle.loads(code)
        except BaseException as exc:
            _record_fatal(zk, topology_id, worker, attempt, exc)
            raise
        conf = record["conf"]
        assignment = from_json(assignment_json)
        setup = WorkerSetup(
            record["name"],
            with_task_counts(topology, assignment),  # a rebalance may have rescaled some
            conf,
            assignment,
            worker,
            secret=secret,
            state_id=topology_id,
        )
        client = ZkClusterClient(
            zk,
            topology_id,
            worker,
            attempt,
            float(conf[cfg.WORKER_START_TIMEOUT_SECS]),
            launch.get("task_info"),
            heartbeat_secs=float(conf[cfg.TOPOLOGY_STATS_INTERVAL_SECS]),
        )
        try:
            zookeeper = zookeeper_endpoint(launch["zk_conf"])
            Worker(setup, client, worker_addresses(conf, zookeeper)).run()
        except BaseException as exc:
            _record_fatal(zk, topology_id, worker, attempt, exc)
            raise
        finally:
            client.stop_heartbeat()
        return f"worker {worker}: stopped"
    finally:
        zk.close()


def _record_fatal(
    zk: ZkState, topology_id: str, worker: int, attempt: int, exc: BaseException
) -> None:
    """Leave the reason this worker died where nimbus and ``sparkstorm`` can read it."""
    lines = traceback.format_exception(exc)
    text = f"{type(exc).__name__}: {exc}\n" + "".join(lines[-12:])
    entry = worker_error_entry(
        worker, text, attempt=attempt, fatal=True, host=socket.gethostname(), pid=os.getpid()
    )
    try:
        zk.report_error(topology_id, WORKER_COMPONENT, entry)
    except Exception:  # ZooKeeper gone too: the Spark job failure still carries the error
        pass

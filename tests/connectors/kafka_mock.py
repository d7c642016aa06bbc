"""A Kafka cluster for the connector tests: librdkafka's built-in mock cluster.

No broker can be installed here, so a small helper process creates librdkafka's mock
cluster (``rd_kafka_mock_cluster_new``: mock brokers inside that process speaking the real
Kafka protocol over TCP on 127.0.0.1 — metadata, produce, fetch, consumer-group offsets,
idempotent and transactional producers), prints its bootstrap servers on stdout and then
obeys commands on its stdin: ``topic NAME PARTITIONS`` creates a topic (the mock answers
no CreateTopics request); ``down`` and ``up`` take every broker down (its connections
closed, new ones refused: ``rd_kafka_mock_broker_set_down``; the data stays) and bring it
back, for an outage.  confluent-kafka exposes no mock API, so the helper calls the
librdkafka that confluent-kafka loaded through ctypes.  The session fixture kills it by
pid at the end; it also ends when its stdin closes.  What the mock does not do is listed
in docs/CONNECTORS.md#kafka.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

#: The helper process: owns the mock cluster for as long as it lives.
_HELPER = r"""
import ctypes, ctypes.util, glob, os, sys
import confluent_kafka
libs = os.path.join(os.path.dirname(confluent_kafka.__file__), os.pardir, "confluent_kafka.libs")
found = glob.glob(os.path.join(libs, "librdkafka*.so*")) or [ctypes.util.find_library("rdkafka")]
lib = ctypes.CDLL(found[0])
lib.rd_kafka_conf_new.restype = ctypes.c_void_p
lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                  ctypes.c_char_p, ctypes.c_size_t]
lib.rd_kafka_new.restype = ctypes.c_void_p
lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                           ctypes.c_int]
switches = {"down": lib.rd_kafka_mock_broker_set_down, "up": lib.rd_kafka_mock_broker_set_up}
for switch in switches.values():
    switch.argtypes = [ctypes.c_void_p, ctypes.c_int32]
errstr = ctypes.create_string_buffer(512)
conf = lib.rd_kafka_conf_new()
lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, 512)
rk = lib.rd_kafka_new(0, conf, errstr, 512)
brokers = int(sys.argv[1])
cluster = lib.rd_kafka_mock_cluster_new(rk, brokers)
print(lib.rd_kafka_mock_cluster_bootstraps(cluster).decode(), flush=True)
for line in sys.stdin:
    command, *args = line.split()
    if command == "topic":
        err = lib.rd_kafka_mock_topic_create(cluster, args[0].encode(), int(args[1]), 1)
    else:  # "down" / "up": every broker (ids 1..brokers)
        err = max(switches[command](cluster, b) for b in range(1, brokers + 1))
    print("ok" if err == 0 else f"error {err}", flush=True)
"""


@dataclass
class KafkaMock:
    """The running mock cluster: its ``bootstrap_servers``, and topic creation."""

    bootstrap_servers: str
    proc: subprocess.Popen[str]
    lock: threading.Lock = field(default_factory=threading.Lock)

    def create_topic(self, name: str, partitions: int) -> None:
        """Create ``name`` with ``partitions`` partitions (replication 1)."""
        self._command(f"topic {name} {partitions}")

    def brokers_down(self) -> None:
        """Take every broker down: connections closed, new ones refused (the data stays)."""
        self._command("down")

    def brokers_up(self) -> None:
        """Bring every broker back up."""
        self._command("up")

    def _command(self, line: str) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline().strip()
        assert answer == "ok", f"{line}: {answer or 'the mock cluster died'}"

    def config(self, **more: object) -> dict[str, object]:
        return {"bootstrap.servers": self.bootstrap_servers, **more}


@pytest.fixture(scope="session")
def kafka_mock() -> Iterator[KafkaMock]:
    """The session's Kafka mock cluster (skips without confluent-kafka)."""
    pytest.importorskip(
        "confluent_kafka",
        reason="the Kafka tests need confluent-kafka: pip install confluent-kafka",
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", _HELPER, "3"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        line = proc.stdout.readline().strip() if proc.stdout else ""
        if not line:
            raise RuntimeError(f"the Kafka mock cluster did not start (exit {proc.poll()})")
        yield KafkaMock(line, proc)
    finally:
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
        for pipe in (proc.stdin, proc.stdout):
            if pipe:
                pipe.close()

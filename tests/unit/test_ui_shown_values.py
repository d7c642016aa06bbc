"""What the UI shows is true (issue 43, item 4): the conf the workers run with, the
window in seconds, a worker's port beside its pid, what runs a worker, and the admin-token
hint said the way docs/UI.md and ui/auth.py say it."""

from __future__ import annotations

import re
from pathlib import Path

from topology.deploy.cluster.effective_conf import (
    ZOOKEEPER_KEYS,
    effective_conf,
    shown_spark,
    shown_zookeeper,
)
from topology.stats.rolling import window_seconds
from topology.stats.status_report import build_report, endpoint_port, executor_label
from topology.ui.auth import DISABLED, HOW_TO_ENABLE, TOKEN_ENV

ROOT = Path(__file__).resolve().parents[2]
RECORD = {"storm.zookeeper.port": 2181, "storm.zookeeper.servers": ["localhost"], "a": 1}


def test_the_conf_shown_has_the_zookeeper_keys_the_driver_hands_its_workers() -> None:
    driver_conf = {
        "storm.zookeeper.servers": ["127.0.0.1"],
        "storm.zookeeper.port": 40123,
        "storm.zookeeper.root": "/sparkstorm-x",
        "storm.zookeeper.auth.payload": "user:password",
    }
    node = {"host": "h", "pid": 1, "generation": 1, "zookeeper": shown_zookeeper(driver_conf)}
    assert "storm.zookeeper.auth.payload" not in node["zookeeper"]
    shown = effective_conf(RECORD, node, {"storm.zookeeper.port": 1})
    assert shown["storm.zookeeper.port"] == 40123
    assert shown["storm.zookeeper.servers"] == ["127.0.0.1"]
    assert shown["storm.zookeeper.root"] == "/sparkstorm-x" and shown["a"] == 1
    assert "storm.zookeeper.auth.payload" not in shown


def test_before_a_driver_runs_the_readers_zookeeper_keys_stand_in() -> None:
    client = {"storm.zookeeper.port": 2999, "storm.zookeeper.servers": ["zk1"], "b": 2}
    for driver in (None, {"generation": 1}, {"zookeeper": "not an object"}):
        shown = effective_conf(RECORD, driver, client)
        assert shown["storm.zookeeper.port"] == 2999 and shown["storm.zookeeper.servers"] == ["zk1"]
        assert "b" not in shown  # only ZooKeeper keys come from the reader


def test_a_bad_value_in_a_driver_node_is_not_shown() -> None:
    node = {"zookeeper": {"storm.zookeeper.port": "x; rm -rf", "storm.zookeeper.root": "/r"}}
    shown = effective_conf(RECORD, node, {})
    assert shown["storm.zookeeper.port"] == 2181 and shown["storm.zookeeper.root"] == "/r"
    assert set(ZOOKEEPER_KEYS).isdisjoint({"storm.zookeeper.auth.payload"})


def test_the_conf_shown_has_the_spark_keys_of_the_drivers_application() -> None:
    app = {"spark.master": "local[2]", "spark.ssl.keyStorePassword": "pw", "x.y": 1}
    node = {"spark": shown_spark({}, app)}
    assert node["spark"] == {"spark.master": "local[2]", "spark.ssl.keyStorePassword": "****"}
    assert shown_spark({"sparkstorm.redact.patterns": ["master"]}, app)["spark.master"] == ("****")
    record = {"spark.master": "local[*]", "topology.workers": 2}
    node["spark"].update({"topology.workers": 9, "spark.bad": {"nested": 1}})
    shown = effective_conf(record, node, {})
    assert shown["spark.master"] == "local[2]" and shown["topology.workers"] == 2
    assert "spark.bad" not in shown and shown["spark.ssl.keyStorePassword"] == "****"
    assert shown_spark({}, None) == {}


def test_a_window_is_a_number_of_seconds() -> None:
    assert [window_seconds(w) for w in ("600", "10800", "86400")] == [600, 10800, 86400]
    assert window_seconds(":all-time") is None and window_seconds(600) is None
    assert isinstance(window_seconds("600"), int)


def test_a_worker_row_has_its_port_and_what_runs_it() -> None:
    assert endpoint_port("tcp://127.0.0.1:41234") == 41234
    assert endpoint_port("tcp://[::1]:5555") == 5555
    for other in ("ipc:///tmp/w", "inproc://x", None, 7, "tcp://h:", "tcp://h:99999999"):
        assert endpoint_port(other) is None
    assert executor_label({"executor": "driver", "spark_task_attempt": 7}) == (
        "driver (local mode), task 7"
    )
    assert executor_label({"executor": "driver"}) == "driver"
    assert executor_label({"executor": "2", "spark_task_attempt": 9}) == "2"
    assert executor_label({}) is None
    beats = {
        0: {"pid": 11, "endpoint": "tcp://h:40001", "executor": "driver", "spark_task_attempt": 3},
        1: {"pid": 12, "endpoint": "tcp://h:40002", "executor": "driver", "spark_task_attempt": 4},
    }
    summary = {"name": "t", "id": "t", "status": "ACTIVE", "workers": 2, "tasks": 0}
    report = build_report(summary, {}, [], beats, {}, "600")
    rows = [(w["pid"], w["port"], w["executor"]) for w in report["workers"]]
    assert rows == [
        (11, 40001, "driver (local mode), task 3"),
        (12, 40002, "driver (local mode), task 4"),
    ]


def test_the_admin_token_hint_is_said_one_way() -> None:
    """The page shows the server's words (``/api/v1/ui``'s ``actions_how``), which name
    what docs/UI.md names, and nowhere says a cluster secret would do."""
    assert "ui.admin.token.file" in HOW_TO_ENABLE and f"${TOKEN_ENV}" in HOW_TO_ENABLE
    assert HOW_TO_ENABLE in DISABLED
    assert "secret" not in HOW_TO_ENABLE.lower()
    docs = (ROOT / "docs" / "UI.md").read_text()
    assert "ui.admin.token.file" in docs and TOKEN_ENV in docs
    assert "the cluster secret is never used in its place" in docs
    pages = ROOT / "topology" / "ui" / "static"
    script = (pages / "common.js").read_text()
    assert "ui.actions_how" in script
    for page in pages.iterdir():
        text = page.read_text()
        assert not re.search(r"cluster secret|ui\.admin\.token=", text), page.name

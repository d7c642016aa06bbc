"""Unit tests for signatures, credentials and the refusal to run unprotected off loopback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import cli
from topology import config as cfg
from topology import redaction
from topology.deploy.security import (
    UNSIGNED_FIELDS,
    InsecureRefused,
    SignatureMismatch,
    covered,
    refuse_insecure,
    resign,
    sign_record,
    signature,
    verify_record,
    zookeeper_is_local,
)
from topology.errors import ConfigError
from topology.runtime.net.curve import CurveKeys

pytestmark = pytest.mark.timeout(30)

SECRET = b"0123456789abcdef-cluster"
RECORD = {"name": "wc", "conf": {"topology.workers": 2}, "status": "SUBMITTED"}
CODE = b"pickled topology"


def test_a_signed_record_verifies_and_any_change_is_refused() -> None:
    signed = sign_record(SECRET, dict(RECORD), CODE)
    verify_record(SECRET, "wc-1", signed, CODE)
    verify_record(SECRET, "wc-1", dict(signed, status="ACTIVE"), CODE)  # status is not signed
    with pytest.raises(SignatureMismatch, match="its code in ZooKeeper does not carry"):
        verify_record(SECRET, "wc-1", signed, CODE + b"!")
    forged_conf = dict(signed, conf={"topology.workers": 2, "spark.driver.extraJavaOptions": "x"})
    with pytest.raises(SignatureMismatch, match="its record .name, conf, module_paths"):
        verify_record(SECRET, "wc-1", forged_conf, CODE)
    with pytest.raises(SignatureMismatch, match="its record"):
        verify_record(SECRET, "wc-1", dict(signed, name="other"), CODE)
    with pytest.raises(SignatureMismatch):
        verify_record(b"another secret of 16+", "wc-1", signed, CODE)
    with pytest.raises(SignatureMismatch):
        verify_record(SECRET, "wc-1", dict(RECORD), CODE)  # never signed


FULL_RECORD: dict[str, Any] = {
    "name": "wc",
    "status": "SUBMITTED",
    "initial_status": "ACTIVE",
    "conf": {"topology.workers": 2, "topology.acker.executors": 1},
    "components": {"words": {"kind": "spout", "tasks": 1, "streams": {}, "inputs": []}},
    "module_paths": ["/home/u/app"],
    "submitted_at": 1700000000.25,
}
#: A covered field changed the way an attacker with ZooKeeper access could change it.
TAMPERED = {
    "name": "other",
    "initial_status": "INACTIVE",
    "conf": {"topology.workers": 2, "topology.acker.executors": 1, "spark.jars": "/tmp/x"},
    "components": {},
    "module_paths": ["/home/u/app", "/tmp/evil"],
    "submitted_at": 1.0,
    "added_by_someone": True,
}


@pytest.mark.parametrize("field", sorted(TAMPERED))
def test_the_signature_covers_every_field_that_decides_what_runs(field: str) -> None:
    signed = sign_record(SECRET, dict(FULL_RECORD), CODE)
    verify_record(SECRET, "wc-1", signed, CODE)
    with pytest.raises(SignatureMismatch, match="its record"):
        verify_record(SECRET, "wc-1", dict(signed, **{field: TAMPERED[field]}), CODE)
    # also when the reader does not check the code (the driver)
    with pytest.raises(SignatureMismatch, match="its record"):
        verify_record(SECRET, "wc-1", dict(signed, **{field: TAMPERED[field]}))
    removed = {k: v for k, v in signed.items() if k != field}
    if field in FULL_RECORD:
        with pytest.raises(SignatureMismatch, match="its record"):
            verify_record(SECRET, "wc-1", removed, CODE)


def test_what_changes_while_a_topology_runs_is_not_covered() -> None:
    signed = sign_record(SECRET, dict(FULL_RECORD), CODE)
    running = dict(
        signed,
        status="REBALANCING",
        launched_at=2.0,
        rebalance={"workers": 3, "wait": 0},
        error="x",
        kill_at=3.0,
        request={"id": 1, "cmd": "status"},
        driver={"generation": 4},
    )
    assert set(running) - set(covered(running)) == UNSIGNED_FIELDS
    verify_record(SECRET, "wc-1", running, CODE)


def test_records_signed_by_older_versions_are_refused() -> None:
    old = dict(FULL_RECORD, signatures={"code": signature(SECRET, "code", CODE), "conf": "0" * 64})
    with pytest.raises(SignatureMismatch, match="older sparkstorm"):
        verify_record(SECRET, "wc-1", old, CODE)


def test_the_nimbus_re_signs_the_verified_record_not_a_re_read_one() -> None:
    signed = sign_record(SECRET, dict(FULL_RECORD), CODE)
    conf = dict(signed["conf"], **{"topology.workers": 5})
    changes = resign(SECRET, signed, conf=conf)
    rebalanced = dict(signed, **changes)
    verify_record(SECRET, "wc-1", rebalanced, CODE)
    # a module path slipped in between the nimbus's read and its write is not signed
    raced = dict(signed, module_paths=["/tmp/evil"], **changes)
    with pytest.raises(SignatureMismatch):
        verify_record(SECRET, "wc-1", raced, CODE)
    # the signature is over what ZooKeeper stores (JSON): a tuple reads back as a list
    tupled = sign_record(SECRET, dict(FULL_RECORD, module_paths=("/home/u/app",)), CODE)
    verify_record(SECRET, "wc-1", json.loads(json.dumps(tupled)), CODE)


def test_without_a_secret_nothing_is_signed_or_checked() -> None:
    assert sign_record(None, dict(RECORD), CODE) == RECORD
    verify_record(None, "wc-1", RECORD, b"anything")


def test_the_secret_comes_from_the_conf_or_a_key_file(tmp_path: Path) -> None:
    assert cfg.cluster_secret({}) is None
    assert cfg.cluster_secret({cfg.CLUSTER_SECRET: "x" * 16}) == b"x" * 16
    key = tmp_path / "secret"
    key.write_text("k" * 20 + "\nignored\n")
    key.chmod(0o600)  # an open secret file is refused (tests/unit/test_secrets.py)
    assert cfg.cluster_secret({cfg.CLUSTER_SECRET_FILE: str(key)}) == b"k" * 20
    key.write_text("short\n")
    with pytest.raises(ConfigError, match="shorter than 16"):
        cfg.cluster_secret({cfg.CLUSTER_SECRET_FILE: str(key)})
    with pytest.raises(ConfigError, match="cannot read"):
        cfg.cluster_secret({cfg.CLUSTER_SECRET_FILE: str(tmp_path / "missing")})
    with pytest.raises(ConfigError, match="at least 16"):
        cfg.resolve({cfg.CLUSTER_SECRET: "short"})


def test_credentials_are_never_recorded_and_secrets_are_redacted() -> None:
    conf = {
        cfg.CLUSTER_SECRET: "x" * 16,
        cfg.ZK_AUTH_PAYLOAD: "user:pw",
        cfg.ZK_AUTH_SCHEME: "digest",
        "db.password": "hunter2",
        "api.token": "t",
        "topology.workers": 2,
    }
    kept = cfg.without_credentials(conf)
    assert cfg.CLUSTER_SECRET not in kept and cfg.ZK_AUTH_PAYLOAD not in kept
    assert kept[cfg.ZK_AUTH_SCHEME] == "digest"
    shown = redaction.redact(kept)
    assert shown["db.password"] == "****" and shown["api.token"] == "****"
    assert shown["topology.workers"] == 2
    assert redaction.redact(conf)[cfg.ZK_AUTH_PAYLOAD] == "****"


def test_a_remote_zookeeper_without_a_secret_is_refused_unless_insecure() -> None:
    local = {cfg.ZK_SERVERS: ["127.0.0.1:2181", "localhost"]}
    remote = {cfg.ZK_SERVERS: ["10.0.0.7:2181"]}
    assert zookeeper_is_local(local) and not zookeeper_is_local(remote)
    refuse_insecure(local, "start a nimbus", insecure=False)
    refuse_insecure({**remote, cfg.CLUSTER_SECRET: "x" * 16}, "start a nimbus", False)
    refuse_insecure(remote, "start a nimbus", insecure=True)
    with pytest.raises(InsecureRefused, match="refusing to start a nimbus: ZooKeeper .10.0.0.7"):
        refuse_insecure(remote, "start a nimbus", insecure=False)


@pytest.mark.parametrize(
    "command", [["nimbus"], ["submit", "examples/wordcount.py:topology", "--name", "x"]]
)
def test_the_cli_refuses_before_touching_a_remote_zookeeper(command: list[str]) -> None:
    result = CliRunner().invoke(cli, [*command, "--zookeeper", "10.255.255.1:2181"])
    assert result.exit_code != 0
    assert "refusing to" in result.output and "--insecure" in result.output
    assert "Traceback" not in result.output


def test_every_node_of_a_cluster_derives_the_same_curve_keys() -> None:
    a, b = CurveKeys.from_secret(SECRET), CurveKeys.from_secret(SECRET)
    assert a == b and len(a.server_public) == 40
    assert a.server_public != a.client_public
    assert CurveKeys.from_secret(b"another secret of 16+") != a

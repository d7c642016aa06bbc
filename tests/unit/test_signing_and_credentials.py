"""Unit tests for signatures, credentials and the refusal to run unprotected off loopback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from topology import config as cfg
from topology.deploy.security import (
    InsecureRefused,
    SignatureMismatch,
    refuse_insecure,
    sign_record,
    verify_record,
    zookeeper_is_local,
)
from topology.errors import ConfigError
from topology.runtime.curve import CurveKeys

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
    with pytest.raises(SignatureMismatch, match="its conf"):
        verify_record(SECRET, "wc-1", forged_conf, CODE)
    with pytest.raises(SignatureMismatch, match="its conf"):
        verify_record(SECRET, "wc-1", dict(signed, name="other"), CODE)
    with pytest.raises(SignatureMismatch):
        verify_record(b"another secret of 16+", "wc-1", signed, CODE)
    with pytest.raises(SignatureMismatch):
        verify_record(SECRET, "wc-1", dict(RECORD), CODE)  # never signed


def test_without_a_secret_nothing_is_signed_or_checked() -> None:
    assert sign_record(None, dict(RECORD), CODE) == RECORD
    verify_record(None, "wc-1", RECORD, b"anything")


def test_the_secret_comes_from_the_conf_or_a_key_file(tmp_path: Path) -> None:
    assert cfg.cluster_secret({}) is None
    assert cfg.cluster_secret({cfg.CLUSTER_SECRET: "x" * 16}) == b"x" * 16
    key = tmp_path / "secret"
    key.write_text("k" * 20 + "\nignored\n")
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
    shown = cfg.redact(kept)
    assert shown["db.password"] == "****" and shown["api.token"] == "****"
    assert shown["topology.workers"] == 2
    assert cfg.redact(conf)[cfg.ZK_AUTH_PAYLOAD] == "****"


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

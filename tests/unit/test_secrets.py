"""Unit tests for secrets: redaction of conf wherever it is shown, and the secret file's
permissions (docs/SECURITY.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.main import cli
from topology import config as cfg
from topology import redaction
from topology.deploy.cluster.client import Cluster
from topology.errors import ConfigError

pytestmark = pytest.mark.timeout(60)

posix_only = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")

# -- which keys are secret ------------------------------------------------------------------

SECRET_KEYS = [
    # password, passwd, secret, credential: anywhere in the key
    "db.password",
    "DB_PASSWORD",
    "dbPassword",
    "spark.ssl.keyStorePassword",
    "db.passwd",
    "oauth.client_secret",
    "spark.authenticate.secret",
    "aws.credentials",
    "gcp.credential.file",
    # token: the end of any word
    "api.token",
    "auth_token",
    "accessToken",
    "github.tokens",
    "api.token.value",
    # key, payload: the end of the last word
    "api.key",
    "api_key",
    "apiKey",
    "APIKey",
    "ssh.privatekey",
    "aws.access.keys",
    "storm.zookeeper.auth.payload",
    "webhook.payload",
]

ORDINARY_KEYS = [
    "topology.workers",
    "topology.message.timeout.secs",
    "topology.tokenizer.language",
    "key.field",
    "cassandra.keyspace",
    "topology.payload.max.bytes",
    "db.url",
    "db.user",
    "words.file",
    "spark.master",
]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_every_built_in_pattern_is_redacted(key: str) -> None:
    assert redaction.is_secret_key(key)
    assert redaction.redact({key: "s3cr3t", "topology.workers": 2}) == {
        key: "****",
        "topology.workers": 2,
    }


@pytest.mark.parametrize("key", ORDINARY_KEYS)
def test_ordinary_keys_are_shown(key: str) -> None:
    assert not redaction.is_secret_key(key)
    assert redaction.redact({key: "visible"}) == {key: "visible"}


def test_of_sparkstorms_own_keys_only_the_credentials_are_redacted() -> None:
    shown = redaction.redact(cfg.defaults() | {k: "x" * 16 for k in cfg.CLUSTER_CREDENTIALS})
    hidden = {k for k, v in shown.items() if v == redaction.REDACTED}
    assert hidden == set(cfg.CLUSTER_CREDENTIALS)


def test_the_clusters_credentials_are_redacted_whatever_the_patterns_say(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for patterns in ("SECRET_ANYWHERE", "SECRET_WORD_ENDINGS", "SECRET_LAST_WORD_ENDINGS"):
        monkeypatch.setattr(cfg, patterns, ())
    conf = {k: "x" * 16 for k in cfg.CLUSTER_CREDENTIALS}
    assert redaction.redact(conf) == {k: "****" for k in cfg.CLUSTER_CREDENTIALS}


def test_nested_dicts_and_lists_of_dicts_are_walked() -> None:
    conf = {
        "db": {"host": "h", "password": "pw", "replica": {"passwd": "pw2", "port": 5432}},
        "sinks": [
            {"name": "s3", "credentials": {"id": "AKIA", "secret": "s"}},
            {"name": "http", "api_key": "k", "headers": [{"token": "t"}, "plain"]},
        ],
        "tokens": ["a", "b"],
        "no.password": None,
        "topology.workers": 2,
    }
    assert redaction.redact(conf) == {
        "db": {"host": "h", "password": "****", "replica": {"passwd": "****", "port": 5432}},
        "sinks": [
            {"name": "s3", "credentials": "****"},
            {"name": "http", "api_key": "****", "headers": [{"token": "****"}, "plain"]},
        ],
        "tokens": "****",
        "no.password": None,  # nothing to hide
        "topology.workers": 2,
    }
    assert conf["db"]["password"] == "pw"  # the input is left alone


def test_absurd_nesting_is_hidden_not_a_recursion_error() -> None:
    deep: Any = "bottom"
    for _ in range(3000):
        deep = {"level": [deep]}
    node = redaction.redact({"deep": deep})["deep"]
    for _ in range(redaction.REDACT_MAX_DEPTH):
        if node == redaction.REDACTED:
            break
        node = node["level"][0]
    assert node == redaction.REDACTED


def test_user_added_patterns_from_the_conf_or_the_viewer() -> None:
    conf = {"db.dsn": "postgres://u:p@h/db", "my.Auth.header": "Bearer x", "db.host": "h"}
    assert redaction.redact(conf) == conf  # not built-in
    own = redaction.redact({**conf, cfg.REDACT_PATTERNS: ["DSN", "auth"]})
    assert own["db.dsn"] == "****" and own["my.Auth.header"] == "****"
    assert own["db.host"] == "h" and own[cfg.REDACT_PATTERNS] == ["DSN", "auth"]
    viewer = redaction.redact({"db": {"dsn": "x"}, "db.host": "h"}, ["dsn"])
    assert viewer == {"db": {"dsn": "****"}, "db.host": "h"}


def test_the_patterns_key_has_a_default_and_is_checked() -> None:
    assert cfg.defaults()[cfg.REDACT_PATTERNS] == []
    assert cfg.resolve({cfg.REDACT_PATTERNS: ["dsn"]})[cfg.REDACT_PATTERNS] == ["dsn"]
    for bad in ("dsn", [1], [""]):
        with pytest.raises(ConfigError, match=cfg.REDACT_PATTERNS):
            cfg.resolve({cfg.REDACT_PATTERNS: bad})


def test_a_config_error_never_echoes_a_secret_value() -> None:
    with pytest.raises(ConfigError) as info:
        cfg.resolve({cfg.CLUSTER_SECRET: "short-leak"})
    assert "short-leak" not in str(info.value) and "at least 16" in str(info.value)
    with pytest.raises(ConfigError) as info:
        cfg.resolve({cfg.ZK_AUTH_PAYLOAD: "no-colon-leak"})
    assert "no-colon-leak" not in str(info.value)
    with pytest.raises(ConfigError, match="got 'two'"):  # ordinary values still shown
        cfg.resolve({cfg.TOPOLOGY_WORKERS: "two"})


ORDINARY_LEAF = st.text(alphabet="abcxyz0123456789 ", max_size=8)
ORDINARY_KEY = st.sampled_from(ORDINARY_KEYS)
SECRET_KEY = st.sampled_from(SECRET_KEYS)


def _trees() -> st.SearchStrategy[Any]:
    """Nested dicts and lists; every dict also holds one secret key whose value leaks if
    shown (``LEAK`` somewhere in it, itself possibly nested)."""
    leak: st.SearchStrategy[Any] = st.one_of(
        st.just("LEAK"), st.lists(st.just("LEAK"), min_size=1), st.just({"x": "LEAK"})
    )

    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        with_secret = st.tuples(
            st.dictionaries(ORDINARY_KEY, children, max_size=3), SECRET_KEY, leak
        ).map(lambda t: {**t[0], t[1]: t[2]})
        return st.one_of(st.lists(children, max_size=3), with_secret)

    return st.recursive(ORDINARY_LEAF, extend, max_leaves=12)


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(tree=_trees(), key=ORDINARY_KEY)
def test_no_secret_value_survives_at_any_depth_and_nothing_else_is_lost(
    tree: Any, key: str
) -> None:
    shown = redaction.redact({key: tree})
    assert "LEAK" not in json.dumps(shown)
    kept = [leaf for leaf in _leaves(shown) if leaf != redaction.REDACTED]
    assert kept == [leaf for leaf in _leaves(tree) if "LEAK" not in json.dumps(leaf)]


def test_list_json_redacts_with_the_topologys_and_the_clients_patterns() -> None:
    class Zk:
        def topology_ids(self) -> list[str]:
            return ["wc-1"]

        def read_record(self, topology_id: str) -> dict[str, Any]:
            conf = {
                "topology.workers": 1,
                "db": {"password": "pw", "dsn": "d"},
                "mine.auth": "a",
                cfg.REDACT_PATTERNS: ["dsn"],
            }
            return {"name": "wc", "status": "ACTIVE", "conf": conf, "components": {}}

        def heartbeats(self, topology_id: str) -> dict[str, Any]:
            return {}

    cluster = Cluster.__new__(Cluster)
    cluster.conf = cfg.resolve({cfg.REDACT_PATTERNS: ["auth"]})
    cluster.zk = Zk()  # type: ignore[assignment]
    [shown] = cluster.topologies()
    assert shown["conf"]["db"] == {"password": "****", "dsn": "****"}
    assert shown["conf"]["mine.auth"] == "****" and shown["conf"]["topology.workers"] == 1


# -- the secret file ------------------------------------------------------------------------


def _secret_file(tmp_path: Path, mode: int) -> Path:
    path = tmp_path / "cluster secret"  # a space: the chmod shown must quote it
    path.write_text("s" * 24 + "\n")
    path.chmod(mode)
    return path


@posix_only
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o620, 0o700 | 0o004])
def test_a_secret_file_open_to_group_or_others_is_refused(tmp_path: Path, mode: int) -> None:
    path = _secret_file(tmp_path, mode)
    with pytest.raises(ConfigError) as info:
        cfg.cluster_secret({cfg.CLUSTER_SECRET_FILE: str(path)})
    text = str(info.value)
    assert "\n" not in text
    assert f"mode {mode:04o}" in text and str(path) in text
    assert f"chmod 600 '{path}'" in text


@posix_only
@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_secret_file_only_its_owner_can_read_is_accepted(tmp_path: Path, mode: int) -> None:
    path = _secret_file(tmp_path, mode)
    assert cfg.cluster_secret({cfg.CLUSTER_SECRET_FILE: str(path)}) == b"s" * 24


@posix_only
def test_the_cli_refuses_an_open_secret_file_in_one_line(tmp_path: Path) -> None:
    path = _secret_file(tmp_path, 0o644)
    result = CliRunner().invoke(
        cli,
        [
            "submit",
            "examples/wordcount.py:topology",
            "--name",
            "x",
            "-c",
            f"{cfg.CLUSTER_SECRET_FILE}={path}",
        ],
    )
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    [line] = result.output.splitlines()
    assert line.startswith("Error: ") and f"chmod 600 '{path}'" in line

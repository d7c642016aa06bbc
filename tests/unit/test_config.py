"""Unit tests for topology.config: defaults.yaml, typed keys, warnings, per-component conf."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

from topology import config as cfg
from topology.config import Config, ConfigError

pytestmark = pytest.mark.timeout(30)

REPO = Path(__file__).resolve().parents[2]
DEFAULTS_FILE = REPO / "conf" / "defaults.yaml"
KEY_LINE = re.compile(r"^([A-Za-z][\w.\-]*)\s*:")


def yaml_defaults() -> dict[str, Any]:
    return yaml.safe_load(DEFAULTS_FILE.read_text(encoding="utf-8"))


def key_lines() -> list[tuple[int, str]]:
    """(line index, key) of every top-level key in defaults.yaml, read as text."""
    lines = DEFAULTS_FILE.read_text(encoding="utf-8").splitlines()
    return [(i, m.group(1)) for i, line in enumerate(lines) if (m := KEY_LINE.match(line))]


# -- defaults -------------------------------------------------------------------------------


def test_defaults_path_is_the_source_tree_file() -> None:
    assert cfg.defaults_path() == DEFAULTS_FILE.resolve()


def test_resolve_without_conf_is_exactly_the_defaults_file() -> None:
    assert cfg.resolve() == yaml_defaults()
    assert cfg.resolve({}) == yaml_defaults()


def test_known_defaults() -> None:
    d = cfg.resolve()
    assert d["topology.workers"] == 1
    assert d["topology.acker.executors"] is None
    assert d["topology.transfer.batch.size"] == 1000
    assert d["topology.executor.receive.buffer.size"] == 2000
    assert d["storm.zookeeper.servers"] == ["127.0.0.1"]
    assert d["spark.master"] == "local[*]"


def test_resolve_overlays_conf_on_defaults() -> None:
    merged = cfg.resolve({"topology.workers": 3, "topology.debug": True})
    expected = yaml_defaults()
    expected.update({"topology.workers": 3, "topology.debug": True})
    assert merged == expected


def test_resolve_returns_a_fresh_copy() -> None:
    first = cfg.resolve()
    first["topology.workers"] = 99
    cfg.defaults()["topology.workers"] = 98
    assert cfg.resolve()["topology.workers"] == 1


def test_resolve_does_not_mutate_its_argument() -> None:
    conf = {"topology.workers": 2}
    cfg.resolve(conf)
    assert conf == {"topology.workers": 2}


def test_every_schema_key_has_a_default() -> None:
    data = yaml_defaults()
    missing = sorted(set(cfg.SCHEMA) - set(data))
    assert not missing, f"conf/defaults.yaml lacks {missing}"


def test_every_default_key_is_in_the_schema() -> None:
    unknown = sorted(set(yaml_defaults()) - set(cfg.SCHEMA))
    assert not unknown


def test_every_default_value_passes_its_own_rule() -> None:
    for key, value in yaml_defaults().items():
        cfg.check_value(key, value, "defaults.yaml")


def test_key_lines_parser_sees_every_yaml_key() -> None:
    keys = [k for _, k in key_lines()]
    assert sorted(keys) == sorted(yaml_defaults())
    assert len(keys) == len(set(keys))  # no key twice in the file


def _comment_cases() -> list[Any]:
    cases = []
    for _, key in key_lines():
        cases.append(pytest.param(key, id=key))
    return cases


@pytest.mark.parametrize("key", _comment_cases())
def test_every_default_has_a_comment_directly_above(key: str) -> None:
    lines = DEFAULTS_FILE.read_text(encoding="utf-8").splitlines()
    (index,) = [i for i, k in key_lines() if k == key]
    above = lines[index - 1].strip() if index > 0 else ""
    assert above.startswith("#"), f"{key}: line above is {above!r}, not a comment"
    text = above.lstrip("#").strip()
    assert text and not text.startswith("----"), f"{key}: only a section ruler above: {above!r}"


# -- type checks ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("topology.workers", "two"),
        ("topology.workers", 0),
        ("topology.workers", True),
        ("topology.workers", 1.5),
        ("topology.acker.executors", -1),
        ("topology.debug", "yes"),
        ("topology.debug", 1),
        ("topology.message.timeout.secs", 0),
        ("topology.message.timeout.secs", "30"),
        ("topology.max.spout.pending", 0),
        ("topology.tick.tuple.freq.secs", -5),
        ("topology.sleep.spout.wait.strategy.time.ms", -1),
        ("topology.transfer.batch.size", 0),
        ("topology.executor.receive.buffer.size", 99),
        ("topology.name", ""),
        ("storm.zookeeper.servers", "127.0.0.1"),
        ("storm.zookeeper.servers", ["a", 1]),
        ("storm.zookeeper.port", "2181"),
        ("storm.zookeeper.root", "sparkstorm"),
        ("storm.local.hostname", 7),
    ],
)
def test_wrong_value_raises_naming_the_key(key: str, value: Any) -> None:
    with pytest.raises(ConfigError) as info:
        cfg.resolve({key: value})
    message = str(info.value)
    assert key in message
    assert repr(value) in message
    assert cfg.SCHEMA[key][1] in message  # says what is expected


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("topology.workers", 4),
        ("topology.acker.executors", 0),
        ("topology.acker.executors", None),
        ("topology.message.timeout.secs", 0.5),
        ("topology.max.spout.pending", None),
        ("topology.tick.tuple.freq.secs", 0.25),
        ("topology.sleep.spout.wait.strategy.time.ms", 0),
        ("topology.executor.receive.buffer.size", 100),
        ("storm.zookeeper.servers", ["zk1", "zk2"]),
        ("storm.zookeeper.root", "/other"),
    ],
)
def test_valid_values_are_kept(key: str, value: Any) -> None:
    assert cfg.resolve({key: value})[key] == value


def test_error_names_where_the_conf_came_from() -> None:
    with pytest.raises(ConfigError, match=r"^topology 'wc': topology\.workers"):
        cfg.resolve({"topology.workers": "two"}, where="topology 'wc'")


def test_non_string_key_raises() -> None:
    with pytest.raises(ConfigError, match="must be strings"):
        cfg.resolve({1: 2})  # type: ignore[dict-item]


def test_unknown_key_warns_naming_it_and_is_kept() -> None:
    with pytest.warns(UserWarning, match=r"topology\.wrokers") as record:
        merged = cfg.resolve({"topology.wrokers": 2})
    assert len(record) == 1
    assert merged["topology.wrokers"] == 2
    assert merged["topology.workers"] == 1


def test_known_keys_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        merged = cfg.resolve({"topology.workers": 2, "topology.debug": True})
    assert merged["topology.workers"] == 2


def test_spark_keys_pass_unchecked_and_without_warning() -> None:
    odd = object()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        merged = cfg.resolve({"spark.executor.memory": 4, "spark.anything": odd})
    assert merged["spark.executor.memory"] == 4
    assert merged["spark.anything"] is odd


# -- per-component conf ---------------------------------------------------------------------


def test_component_conf_applies_overrides_on_a_copy() -> None:
    topo = cfg.resolve({"topology.workers": 2})
    conf = cfg.component_conf(topo, "count", {"topology.tick.tuple.freq.secs": 5})
    assert conf["topology.tick.tuple.freq.secs"] == 5
    assert conf["topology.workers"] == 2
    assert topo["topology.tick.tuple.freq.secs"] is None


def test_component_conf_without_overrides_is_the_topology_conf() -> None:
    topo = cfg.resolve()
    assert cfg.component_conf(topo, "count", {}) == topo


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("topology.tick.tuple.freq.secs", "5"),
        ("topology.max.spout.pending", 0),
        ("topology.debug", "on"),
    ],
)
def test_component_conf_checks_overrides_naming_the_component(key: str, value: Any) -> None:
    with pytest.raises(ConfigError) as info:
        cfg.component_conf(cfg.resolve(), "count", {key: value})
    message = str(info.value)
    assert "component 'count'" in message
    assert key in message


def _complaint(overrides: dict[str, Any]) -> str:
    """The error or warnings component_conf produces for ``overrides`` ("" when silent)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            cfg.component_conf(cfg.resolve(), "count", overrides)
        except ConfigError as exc:
            return str(exc)
    return " ".join(str(w.message) for w in caught)


def test_component_conf_complains_about_unknown_keys() -> None:
    message = _complaint({"topology.tick.tuple.freq.sec": 5})
    assert "topology.tick.tuple.freq.sec" in message and "count" in message


def test_component_conf_complains_about_topology_wide_keys() -> None:
    message = _complaint({"topology.workers": 4})
    assert "topology.workers" in message and "count" in message


# -- Config ---------------------------------------------------------------------------------


def test_config_setters_set_keys_and_chain() -> None:
    conf = Config()
    result = (
        conf.set_num_workers(3)
        .set_num_ackers(0)
        .set_max_spout_pending(100)
        .set_message_timeout_secs(2.5)
        .set_debug(True)
    )
    assert result is conf
    assert dict(conf) == {
        "topology.workers": 3,
        "topology.acker.executors": 0,
        "topology.max.spout.pending": 100,
        "topology.message.timeout.secs": 2.5,
        "topology.debug": True,
    }
    assert cfg.resolve(conf)["topology.workers"] == 3


def test_config_is_a_plain_dict_of_keys() -> None:
    conf = Config({"topology.workers": 2})
    assert isinstance(conf, dict)
    assert conf["topology.workers"] == 2
    conf.set_max_spout_pending(None)
    assert conf["topology.max.spout.pending"] is None


@pytest.mark.parametrize(
    ("setter", "value", "key"),
    [
        ("set_num_workers", 0, "topology.workers"),
        ("set_num_workers", "two", "topology.workers"),
        ("set_num_ackers", -1, "topology.acker.executors"),
        ("set_max_spout_pending", 0, "topology.max.spout.pending"),
        ("set_message_timeout_secs", 0, "topology.message.timeout.secs"),
        ("set_debug", "yes", "topology.debug"),
    ],
)
def test_config_setters_validate(setter: str, value: Any, key: str) -> None:
    conf = Config()
    with pytest.raises(ConfigError, match=re.escape(key)):
        getattr(conf, setter)(value)
    assert key not in conf  # a rejected value is not stored

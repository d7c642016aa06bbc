"""The user's own config keys pass silently (components read them); only a key that looks
like a misspelt sparkstorm key warns, naming the nearest known key (issue 13)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from topology import config as cfg

pytestmark = pytest.mark.timeout(30)


def _warnings_of(conf: dict[str, Any]) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg.resolve(conf)
        cfg.component_conf(cfg.resolve(), "count", conf)
    return [str(w.message) for w in caught]


@pytest.mark.parametrize(
    "key",
    ["db.url", "topology.words.file", "my.topology.thing", "sparkstorm.my.feature", "words"],
)
def test_the_users_own_keys_pass_silently(key: str) -> None:
    assert _warnings_of({key: "x"}) == []
    assert cfg.resolve({key: "x"})[key] == "x"


@pytest.mark.parametrize(
    ("key", "nearest"),
    [
        ("topology.wrokers", "topology.workers"),
        ("storm.zookeeper.server", "storm.zookeeper.servers"),
        ("topology.acker.executor", "topology.acker.executors"),
        ("supervisor.worker.start.timeout.sec", "supervisor.worker.start.timeout.secs"),
    ],
)
def test_a_misspelt_known_key_warns_with_the_nearest_key(key: str, nearest: str) -> None:
    assert cfg.misspelt_key(key) == nearest
    messages = _warnings_of({key: 1})
    assert len(messages) == 2  # topology conf, then component conf
    assert all(f"{key!r}: did you mean {nearest!r}?" in m for m in messages)
    assert "component 'count'" in messages[1]


def test_known_keys_are_never_misspellings() -> None:
    assert all(cfg.misspelt_key(key) is None for key in cfg.SCHEMA)

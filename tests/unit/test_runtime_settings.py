"""The runtime's settings: read once from a conf, with the defaults of conf/defaults.yaml;
and the null checkpoint hooks of a topology without checkpoints."""

from __future__ import annotations

import dataclasses

import pytest

from topology import config as cfg
from topology.runtime.checkpoint.hooks import NO_CHECKPOINTS, UNSTAMPED, RecoveryEpoch
from topology.runtime.settings import TaskSettings, WorkerSettings
from topology.runtime.tasks.spout_wait import spout_wait

pytestmark = pytest.mark.timeout(30)


def test_worker_settings_carry_the_defaults_and_a_missing_key_reads_as_its_default() -> None:
    resolved = WorkerSettings.from_conf(cfg.resolve({}))
    assert WorkerSettings.from_conf({}) == resolved
    defaults = cfg.defaults()
    assert resolved.transfer_batch_size == defaults[cfg.TOPOLOGY_TRANSFER_BATCH_SIZE]
    assert resolved.flush_interval_secs == defaults[cfg.TOPOLOGY_FLUSH_INTERVAL_MILLIS] / 1000
    assert resolved.receive_buffer_size == defaults[cfg.TOPOLOGY_RECEIVE_BUFFER_SIZE]
    assert resolved.max_spout_pending == defaults[cfg.TOPOLOGY_MAX_SPOUT_PENDING]
    assert resolved.state_provider == defaults[cfg.STATE_PROVIDER]
    assert resolved.checkpoint_interval_secs == defaults[cfg.CHECKPOINT_INTERVAL_MS] / 1000
    with pytest.raises(dataclasses.FrozenInstanceError):
        resolved.transfer_batch_size = 1  # type: ignore[misc]


def test_worker_settings_read_what_the_conf_sets() -> None:
    conf = cfg.resolve(
        {
            cfg.TOPOLOGY_TRANSFER_BATCH_SIZE: 7,
            cfg.TOPOLOGY_STATS_INTERVAL_SECS: 2,
            cfg.TOPOLOGY_WORKER_LOSS_FAILS_PENDING: False,
            cfg.CHECKPOINT_TIMEOUT_SECS: 9,
        }
    )
    settings = WorkerSettings.from_conf(conf)
    assert settings.transfer_batch_size == 7
    assert settings.stats_interval_secs == 2.0
    assert settings.worker_loss_fails_pending is False
    assert settings.checkpoint_timeout_secs == 9.0


@pytest.mark.parametrize("strategy", ["sleep", "progressive"])
def test_the_spout_wait_of_the_settings_is_the_conf_s(strategy: str) -> None:
    conf = cfg.resolve({cfg.TOPOLOGY_SPOUT_WAIT_STRATEGY: strategy, cfg.TOPOLOGY_SPOUT_WAIT_MS: 2})
    wait = WorkerSettings.from_conf(conf).spout_wait()
    assert [wait(n) for n in range(1, 9)] == [spout_wait(conf)(n) for n in range(1, 9)]


def test_task_settings_take_a_component_s_overrides() -> None:
    conf = cfg.component_conf(
        cfg.resolve({}), "split", {cfg.TOPOLOGY_MAX_SPOUT_PENDING: 5, cfg.TOPOLOGY_DEBUG: True}
    )
    settings = TaskSettings.from_conf(conf)
    assert settings.max_spout_pending == 5 and settings.debug
    assert settings.tick_freq_secs is None and not settings.serialize_local


def test_without_checkpoints_the_hooks_take_everything_and_hold_nothing() -> None:
    assert not NO_CHECKPOINTS.paused
    assert NO_CHECKPOINTS.accepts(None) and NO_CHECKPOINTS.accepts(3)
    dropped = []

    class Queued:
        def drop_in_flight(self) -> None:
            dropped.append(True)

    assert NO_CHECKPOINTS.deliver(-1, "__ckpt_status", [[0, 0]], 0.0, Queued()) is False
    assert not dropped
    assert UNSTAMPED.epoch is None and RecoveryEpoch().epoch == 0

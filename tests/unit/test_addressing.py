"""Unit tests for where a worker binds and what it advertises, found per host."""

from __future__ import annotations

from pathlib import Path

import pytest

from topology.errors import ConfigError
from topology.runtime.net.addressing import (
    BIND_ENV,
    HOST_CONF_ENV,
    HOSTNAME_ENV,
    Addresses,
    route_to,
    worker_addresses,
    zookeeper_endpoint,
)

pytestmark = pytest.mark.timeout(10)

NO_HOST_FILE = {HOST_CONF_ENV: "/nonexistent/host.yaml"}


def test_without_zookeeper_or_overrides_a_worker_stays_on_loopback() -> None:
    assert worker_addresses({}, None, NO_HOST_FILE) == Addresses("127.0.0.1", "127.0.0.1")


def test_the_default_is_the_interface_that_routes_to_zookeeper() -> None:
    assert route_to("127.0.0.1", 2181) == "127.0.0.1"
    found = worker_addresses({}, ("127.0.0.1", 2181), NO_HOST_FILE)
    assert found == Addresses("127.0.0.1", "127.0.0.1")


def test_the_zookeeper_endpoint_comes_from_the_first_server() -> None:
    conf = {"storm.zookeeper.servers": ["zk1:2281", "zk2"], "storm.zookeeper.port": 2181}
    assert zookeeper_endpoint(conf) == ("zk1", 2281)
    assert zookeeper_endpoint({"storm.zookeeper.servers": ["zk2"]}) == ("zk2", 2181)
    assert zookeeper_endpoint({"storm.zookeeper.servers": []}) is None


def test_the_environment_overrides_the_topology_conf() -> None:
    conf = {"storm.local.hostname": "10.0.0.5"}
    env = {**NO_HOST_FILE, HOSTNAME_ENV: "10.0.0.9"}
    assert worker_addresses(conf, None, env) == Addresses("10.0.0.9", "10.0.0.9")
    assert worker_addresses(conf, None, NO_HOST_FILE) == Addresses("10.0.0.5", "10.0.0.5")


def test_the_host_file_sets_both_addresses_and_the_environment_wins(tmp_path: Path) -> None:
    host_file = tmp_path / "host.yaml"
    host_file.write_text("storm.local.hostname: 10.1.1.1\nstorm.local.bind.address: 0.0.0.0\n")
    env = {HOST_CONF_ENV: str(host_file)}
    assert worker_addresses({}, None, env) == Addresses("0.0.0.0", "10.1.1.1")
    env[BIND_ENV] = "10.1.1.1"
    assert worker_addresses({}, None, env) == Addresses("10.1.1.1", "10.1.1.1")


def test_binding_every_interface_still_advertises_a_usable_address() -> None:
    env = {**NO_HOST_FILE, BIND_ENV: "0.0.0.0"}
    assert worker_addresses({}, ("127.0.0.1", 2181), env) == Addresses("0.0.0.0", "127.0.0.1")


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "::"])
def test_a_wildcard_is_never_advertised(wildcard: str) -> None:
    with pytest.raises(ConfigError, match="storm.local.hostname .* peers cannot connect"):
        worker_addresses({"storm.local.hostname": wildcard}, None, NO_HOST_FILE)


def test_a_host_file_that_is_not_a_mapping_is_an_error(tmp_path: Path) -> None:
    host_file = tmp_path / "host.yaml"
    host_file.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        worker_addresses({}, None, {HOST_CONF_ENV: str(host_file)})

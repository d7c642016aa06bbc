"""Which address a worker binds its data socket to and advertises to its peers.

Found on the worker's own host, so nothing but the ZooKeeper connect string needs to be
shared configuration.  In order of precedence:

1. the host's own setting: ``SPARKSTORM_LOCAL_HOSTNAME`` / ``SPARKSTORM_BIND_ADDRESS`` in
   the environment, else ``storm.local.hostname`` / ``storm.local.bind.address`` in the
   host file (``SPARKSTORM_HOST_CONF``, default ``/etc/sparkstorm/host.yaml``);
2. the topology's conf (the same two keys), when not null;
3. the address of this host's interface that routes to the first ZooKeeper server
   (127.0.0.1 when ZooKeeper is on loopback, and for LocalCluster).

The advertised address is never a wildcard (``0.0.0.0`` / ``::``): peers could not use it.
The bind address defaults to the advertised one.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from topology import config as cfg
from topology.errors import ConfigError

HOST_CONF_ENV = "SPARKSTORM_HOST_CONF"
DEFAULT_HOST_CONF = "/etc/sparkstorm/host.yaml"
HOSTNAME_ENV = "SPARKSTORM_LOCAL_HOSTNAME"
BIND_ENV = "SPARKSTORM_BIND_ADDRESS"
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Addresses:
    """Where to bind the data socket, and the address peers connect to."""

    bind: str
    advertise: str


def _is_wildcard(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_unspecified
    except ValueError:
        return False


def host_settings(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """This host's overrides: the host file's keys, then the environment's on top."""
    env = os.environ if env is None else env
    path = env.get(HOST_CONF_ENV, DEFAULT_HOST_CONF)
    settings: dict[str, Any] = {}
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            loaded = yaml.safe_load(f) or {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"host file {path} must hold a mapping of keys to values")
        settings.update(
            {k: v for k, v in loaded.items() if k in (cfg.LOCAL_HOSTNAME, cfg.LOCAL_BIND_ADDRESS)}
        )
    if env.get(HOSTNAME_ENV):
        settings[cfg.LOCAL_HOSTNAME] = env[HOSTNAME_ENV]
    if env.get(BIND_ENV):
        settings[cfg.LOCAL_BIND_ADDRESS] = env[BIND_ENV]
    return settings


def route_to(host: str, port: int) -> str:
    """The local address of the interface that routes to ``host:port`` (no packet sent)."""
    infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_UDP)
    family, _, _, _, sockaddr = infos[0]
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        probe.connect(sockaddr)
        return str(probe.getsockname()[0])


def zookeeper_endpoint(conf: Mapping[str, Any]) -> tuple[str, int] | None:
    """(host, port) of the first ZooKeeper server in ``conf``, if any."""
    servers: Sequence[str] = conf.get(cfg.ZK_SERVERS) or []
    if not servers:
        return None
    host, _, port = servers[0].partition(":")
    return host, int(port) if port else int(conf.get(cfg.ZK_PORT) or 2181)


def worker_addresses(
    conf: Mapping[str, Any],
    zookeeper: tuple[str, int] | None,
    env: Mapping[str, str] | None = None,
) -> Addresses:
    """The addresses of a worker on this host (see the module docstring for the order).

    ``zookeeper`` is the server the host's route is found to (None: loopback).
    Raises :class:`ConfigError` naming the key when an advertised address is a wildcard.
    """
    host = host_settings(env)
    advertise = host.get(cfg.LOCAL_HOSTNAME) or conf.get(cfg.LOCAL_HOSTNAME)
    bind = host.get(cfg.LOCAL_BIND_ADDRESS) or conf.get(cfg.LOCAL_BIND_ADDRESS)
    if advertise and _is_wildcard(str(advertise)):
        raise ConfigError(
            f"{cfg.LOCAL_HOSTNAME} is {advertise!r}, an address peers cannot connect to; "
            f"leave it unset (found per host) or set {cfg.LOCAL_BIND_ADDRESS} to bind "
            "every interface instead"
        )
    if not advertise:
        if bind and not _is_wildcard(str(bind)):
            advertise = bind
        elif zookeeper is None:
            advertise = LOOPBACK
        else:
            advertise = route_to(*zookeeper)
    return Addresses(bind=str(bind or advertise), advertise=str(advertise))

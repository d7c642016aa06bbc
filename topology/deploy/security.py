"""Signatures on what ZooKeeper holds, and the refusal to run unprotected off loopback.

With a cluster secret (``sparkstorm.cluster.secret`` or ``.file``), ``submit`` stores an
HMAC-SHA256 of the topology's pickled code and of its conf next to them in the topology's
record; the nimbus, the driver and every worker check them before they unpickle the code
or act on the conf, and refuse — with an error saying so — when they do not match.  So
whoever can write to ZooKeeper but does not hold the secret cannot make the cluster run
code of theirs.  See docs/SECURITY.md for the whole threat model.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import socket
from collections.abc import Mapping
from typing import Any

from topology import config as cfg
from topology.errors import SparkstormError


class SignatureMismatch(SparkstormError):
    """What ZooKeeper holds was not signed with the cluster secret: it is not run."""


class InsecureRefused(SparkstormError):
    """A cluster reachable from the network, but no secret to protect it."""


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()


def signature(secret: bytes, purpose: str, data: bytes) -> str:
    """HMAC-SHA256 of ``data`` for ``purpose`` (``code`` or ``conf``), hex."""
    return hmac.new(secret, purpose.encode() + b"\0" + data, hashlib.sha256).hexdigest()


def sign_record(secret: bytes | None, record: dict[str, Any], code: bytes) -> dict[str, Any]:
    """``record`` with the signatures of ``code`` and of its name and conf (unchanged
    without a secret)."""
    if secret is None:
        return record
    return dict(
        record,
        signatures={
            "code": signature(secret, "code", code),
            "conf": conf_signature(secret, record["name"], record["conf"]),
        },
    )


def conf_signature(secret: bytes, name: str, conf: Mapping[str, Any]) -> str:
    """The signature of a topology's name and conf (re-made when the nimbus changes it)."""
    return signature(secret, "conf", _canonical([name, conf]))


def verify_record(
    secret: bytes | None, topology_id: str, record: Mapping[str, Any], code: bytes | None = None
) -> None:
    """Raise :class:`SignatureMismatch` unless the record's conf (and ``code``, when given)
    carry the signatures the cluster secret gives them; nothing to check without a secret."""
    if secret is None:
        return
    signed = record.get("signatures") or {}
    checks = [("conf", conf_signature(secret, record.get("name", ""), record.get("conf") or {}))]
    if code is not None:
        checks.append(("code", signature(secret, "code", code)))
    for purpose, expected in checks:
        if not hmac.compare_digest(str(signed.get(purpose, "")), expected):
            raise SignatureMismatch(
                f"topology {topology_id}: its {purpose} in ZooKeeper does not carry the cluster "
                "secret's signature (changed by someone without the secret, or submitted with "
                "another secret): refusing to run it"
            )


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def zookeeper_is_local(conf: Mapping[str, Any]) -> bool:
    """Whether every configured ZooKeeper server is on loopback."""
    hosts = [server.rpartition(":")[0] or server for server in conf.get(cfg.ZK_SERVERS) or []]
    return all(_loopback(host) for host in hosts)


def refuse_insecure(conf: Mapping[str, Any], what: str, insecure: bool) -> None:
    """Raise :class:`InsecureRefused` when ZooKeeper is reachable from the network and no
    cluster secret protects what runs (unless the user said ``--insecure``)."""
    if insecure or cfg.cluster_secret(conf) is not None or zookeeper_is_local(conf):
        return
    servers = ", ".join(conf.get(cfg.ZK_SERVERS) or [])
    raise InsecureRefused(
        f"refusing to {what}: ZooKeeper ({servers}) is not on loopback and no cluster secret is "
        f"set, so anyone who can write to it could run code here; set {cfg.CLUSTER_SECRET} "
        f"(or {cfg.CLUSTER_SECRET_FILE}) on every node, or pass --insecure"
    )

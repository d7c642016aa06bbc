"""Signatures on what ZooKeeper holds, and the refusal to run unprotected off loopback.

With a cluster secret (``sparkstorm.cluster.secret`` or ``.file``), ``submit`` stores an
HMAC-SHA256 of the topology's pickled code, and one of every field of its record that
decides what runs (all but :data:`UNSIGNED_FIELDS`: name, conf, ``module_paths``,
components, ...), in the record; the nimbus, the driver and every worker check them before
they unpickle the code, extend ``sys.path`` or act on the conf, and refuse — with an error
saying so — when they do not match.  So whoever can write to ZooKeeper but does not hold
the secret cannot make the cluster run code of theirs.  See docs/SECURITY.md for the whole
threat model.
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


#: Record fields that change while a topology runs (its status, a pending rebalance or
#: request, supervision): the signature covers every other field of the record.
UNSIGNED_FIELDS = frozenset(
    {"status", "launched_at", "rebalance", "error", "kill_at", "request", "driver", "signatures"}
)


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()


def signature(secret: bytes, purpose: str, data: bytes) -> str:
    """HMAC-SHA256 of ``data`` for ``purpose`` (``code`` or ``record``), hex."""
    return hmac.new(secret, purpose.encode() + b"\0" + data, hashlib.sha256).hexdigest()


def covered(record: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``record`` its signature covers: all but :data:`UNSIGNED_FIELDS` —
    name, conf, ``module_paths``, components, ``initial_status``, ``submitted_at``, and
    any field a later version adds."""
    return {key: value for key, value in record.items() if key not in UNSIGNED_FIELDS}


def record_signature(secret: bytes, record: Mapping[str, Any]) -> str:
    """The signature of the :func:`covered` fields of ``record``, as ZooKeeper stores them
    (JSON), so a writer and a reader compute it over the same values."""
    stored = json.loads(_canonical(covered(record)))
    return signature(secret, "record", _canonical(stored))


def sign_record(secret: bytes | None, record: dict[str, Any], code: bytes) -> dict[str, Any]:
    """``record`` with the signatures of ``code`` and of its covered fields (unchanged
    without a secret)."""
    if secret is None:
        return record
    return dict(
        record,
        signatures={
            "code": signature(secret, "code", code),
            "record": record_signature(secret, record),
        },
    )


def resign(secret: bytes, verified: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """The ``changes`` to a covered field of a *verified* record (the nimbus changing
    ``topology.workers`` and components' ``tasks`` in a rebalance), with the signatures
    that go with them.  The request itself (``rebalance``) is unsigned, like a status
    change: whoever can write to ZooKeeper can ask for one, and the nimbus checks it
    (counts, state) before it signs the outcome; what runs stays the signed code."""
    signed = dict(verified.get("signatures") or {})
    signed["record"] = record_signature(secret, {**verified, **changes})
    return {**changes, "signatures": signed}


def verify_record(
    secret: bytes | None, topology_id: str, record: Mapping[str, Any], code: bytes | None = None
) -> None:
    """Raise :class:`SignatureMismatch` unless the record's covered fields (and ``code``,
    when given) carry the signatures the cluster secret gives them; nothing to check
    without a secret."""
    if secret is None:
        return
    signed = record.get("signatures")
    signed = signed if isinstance(signed, Mapping) else {}
    checks = [("record", "record (name, conf, module_paths, components)")]
    if code is not None:
        checks.append(("code", "code"))
    for purpose, what in checks:
        if purpose == "code":
            expected = signature(secret, "code", code or b"")
        else:
            expected = record_signature(secret, record)
        if not hmac.compare_digest(str(signed.get(purpose, "")), expected):
            raise SignatureMismatch(
                f"topology {topology_id}: its {what} in ZooKeeper does not carry the cluster "
                "secret's signature (changed by someone without the secret, or submitted with "
                "another secret or by an older sparkstorm that signed less): refusing to run it"
            )


def verify_stored(
    zk: Any,
    secret: bytes | None,
    topology_id: str,
    record: Mapping[str, Any],
    code: bytes | None = None,
) -> None:
    """What every reader checks before it runs a topology: with a secret, the signatures
    (:func:`verify_record`); without one, that only this user's local ZooKeeper identity
    can write the topology's record and code (``ZkState.unowned``: nothing to check when
    there is no such identity).  Raises :class:`SignatureMismatch`."""
    if secret is None:
        problem = zk.unowned(topology_id)
        if problem is not None:
            raise SignatureMismatch(problem)
    verify_record(secret, topology_id, record, code)


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

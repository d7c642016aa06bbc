"""A hostile ZooKeeper client run by the tests as another OS user (``python -m
tests.spark.zk_intruder``, a job as JSON on stdin, what happened as JSON on stdout).

Started as root with everything it uses loaded (the interpreter and its library live under
``/root``, which that user cannot read), it drops to the job's uid and gid, so it runs as
that user: it cannot read the owner's ZooKeeper identity file, and sparkstorm gives it an
identity of its own.  Then it tries, on every node of the job and as two clients (one
anonymous, one with that user's own identity), to read, list, rewrite, change the ACL of,
delete, and create below each node; floods the topologies' parent; and connects as a
sparkstorm client to the owner's root.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.security import make_acl

from topology import config as cfg
from topology.deploy.zk import local_identity
from topology.deploy.zk.state import ZkState
from topology.errors import SparkstormError

OPEN = [make_acl("world", "anyone", all=True)]
#: Nodes the intruder tries to add below the topologies' parent.
FLOOD = 50


def attempts(client: KazooClient, path: str) -> dict[str, Callable[[], Any]]:
    """Every change (and read) tried on ``path``."""
    return {
        "get": lambda: client.get(path),
        "children": lambda: client.get_children(path),
        "acls": lambda: client.get_acls(path),
        "set": lambda: client.set(path, b"evil"),
        "set_acls": lambda: client.set_acls(path, OPEN),
        "delete": lambda: client.delete(path),
        "create": lambda: client.create(f"{path}/evil", b"evil", acl=OPEN),
    }


def outcome(call: Callable[[], Any]) -> str:
    """``done``, or the name of the ZooKeeper error ``call`` raised."""
    try:
        call()
    except KazooException as exc:
        return type(exc).__name__
    return "done"


def attack(client: KazooClient, nodes: list[str], storms: str) -> dict[str, Any]:
    """Every attempt on every node (the deepest first, so a deletion that worked would not
    hide a node behind it), and the flood."""
    tried = {
        path: {name: outcome(call) for name, call in attempts(client, path).items()}
        for path in sorted(nodes, key=lambda p: -p.count("/"))
    }
    flood = [outcome(lambda i=i: client.create(f"{storms}/junk-{i}", b"{}")) for i in range(FLOOD)]
    return {"nodes": tried, "flooded": flood.count("done")}


def _client(hosts: str, auth: list[tuple[str, str]] | None = None) -> KazooClient:
    client = KazooClient(hosts=hosts, auth_data=auth)
    client.start(timeout=15)
    return client


def _warm(hosts: str) -> None:
    """Load what a session and its failures load lazily, while the library is readable."""
    client = _client(hosts, [("digest", "warm:up")])
    outcome(lambda: client.get_acls("/"))
    outcome(lambda: client.get("/no-such-node"))
    outcome(lambda: client.create("/zookeeper/no", b""))
    client.stop()
    client.close()
    json.dumps({"warm": [1.0]})


def main() -> None:
    job = json.load(sys.stdin)
    hosts = job["hosts"]
    _warm(hosts)
    os.setgroups([])
    os.setgid(job["gid"])
    os.setuid(job["uid"])
    os.environ["HOME"] = job["home"]
    os.environ[local_identity.STATE_DIR_ENV] = os.path.join(job["home"], "state")
    out: dict[str, Any] = {"uid": os.getuid()}
    try:
        with open(job["victim_identity"]) as victim:
            out["victim_identity"] = "read: " + victim.read()[:20]
    except OSError as exc:
        out["victim_identity"] = type(exc).__name__
    try:
        ZkState(cfg.resolve(job["conf"])).connect().close()
        out["connect"] = "connected"
    except SparkstormError as exc:
        out["connect"] = str(exc)
    identity = local_identity.load_or_create()
    out["identity"] = None if identity is None else identity.partition(":")[0]
    clients = {"anonymous": _client(hosts)}
    if identity is not None:
        clients["other_user"] = _client(hosts, [("digest", identity)])
    for who, client in clients.items():
        out[who] = attack(client, job["nodes"], job["storms"])
        client.stop()
        client.close()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()

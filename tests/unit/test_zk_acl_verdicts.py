"""What a ZooKeeper node's ACL means for this user's identity (pure:
topology/deploy/zk/ownership.py), and which nodes only hold children (zk/paths.py).
The same decisions on a real ZooKeeper: tests/spark/test_zk_ownership.py."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kazoo.security import ACL, Id, Permissions, make_acl, make_digest_acl

from topology.deploy.zk.ownership import Verdict, describe, verdict, why
from topology.deploy.zk.paths import ZkPaths

ME = make_digest_acl("sparkstorm-1000", "secret", all=True)
OWNER = [ME]
OTHER = make_digest_acl("sparkstorm-1001", "theirs", all=True)
ANYONE_READS = make_acl("world", "anyone", read=True)
ANYONE_ALL = make_acl("world", "anyone", all=True)


def _mine(perms: int) -> ACL:
    return ACL(perms, ME.id)


@pytest.mark.parametrize(
    ("acl", "expected"),
    [
        (OWNER, Verdict.OWNED),
        ([_mine(Permissions.ALL)], Verdict.OWNED),
        # what earlier versions gave a record and its code: only this identity changes it
        ([ME, ANYONE_READS], Verdict.READABLE),
        ([ME, ACL(Permissions.READ, OTHER.id)], Verdict.READABLE),
        ([_mine(Permissions.ADMIN)], Verdict.READABLE),  # nobody else at all; not ours in full
        # others may change it, and so may this identity's ACL
        ([ANYONE_ALL], Verdict.OPEN),
        ([ME, OTHER], Verdict.OPEN),
        ([ME, ACL(Permissions.DELETE, OTHER.id)], Verdict.OPEN),
        ([ME, make_acl("ip", "127.0.0.1", write=True)], Verdict.OPEN),
        ([make_acl("world", "anyone", admin=True, read=True)], Verdict.OPEN),
        # this identity may not change its ACL: someone else's
        ([OTHER], Verdict.FOREIGN),
        ([ANYONE_READS], Verdict.FOREIGN),
        ([_mine(Permissions.ALL & ~Permissions.ADMIN)], Verdict.FOREIGN),
        ([make_acl("world", "anyone", write=True, create=True, delete=True)], Verdict.FOREIGN),
        ([make_acl("ip", "127.0.0.1", all=True)], Verdict.FOREIGN),  # not counted as ours
        ([], Verdict.FOREIGN),
    ],
)
def test_verdicts(acl: list[ACL], expected: Verdict) -> None:
    assert verdict(acl, OWNER) is expected


ids = st.sampled_from(
    [ME.id, OTHER.id, Id("world", "anyone"), Id("ip", "127.0.0.1"), Id("digest", "x:y")]
)
entries = st.builds(ACL, st.integers(0, Permissions.ALL), ids)


@given(acl=st.lists(entries, max_size=5))
def test_a_verdict_trusts_a_node_only_when_nobody_else_could_have_changed_it(
    acl: list[ACL],
) -> None:
    kind = verdict(acl, OWNER)
    others = [a for a in acl if a.id != ME.id]
    i_admin = any(
        a.perms & Permissions.ADMIN for a in acl if a.id in (ME.id, Id("world", "anyone"))
    )
    if kind in (Verdict.OWNED, Verdict.READABLE):  # trusted: nobody else writes, creates, ...
        assert all(a.perms & ~Permissions.READ == 0 for a in others)
    assert (kind is Verdict.FOREIGN) == (not i_admin)  # else this identity can tighten it
    if kind is Verdict.OWNED:
        assert sorted(acl) == sorted(OWNER)
    assert "\n" not in describe(acl)


def test_describe_and_why_show_no_digest_hash() -> None:
    acl = [ME, ANYONE_READS, make_acl("ip", "10.0.0.1", write=True, delete=True)]
    assert describe(acl) == "digest:sparkstorm-1000:cdrwa, world:anyone:r, ip:10.0.0.1:dw"
    assert describe([]) == "no entries"
    assert ME.id.id.partition(":")[2] not in why(Verdict.OPEN, acl)
    assert "writable by others" in why(Verdict.OPEN, [ANYONE_ALL])
    assert "not this user's ZooKeeper identity's to change" in why(Verdict.FOREIGN, [OTHER])


@pytest.mark.parametrize(
    ("path", "container"),
    [
        ("/s", True),
        ("/s/nimbus/leader", True),
        ("/s/storms", True),
        ("/s/workerbeats/t-1-1", True),
        ("/s/started/t-1-1", True),
        ("/s/errors/t-1-1", True),
        ("/s/carried/t-1-1", True),
        ("/s/storms/t-1-1", False),  # a record
        ("/s/code/t-1-1", False),  # checked with the code (ZkState.unowned)
        ("/s/assignments/t-1-1", False),
        ("/s/drivers/t-1-1", False),
        ("/s/workerbeats/t-1-1/0", False),
        ("/s/errors/t-1-1/sink", False),
        ("/s/nimbus/leader/x__lock__0000000001", False),
        ("/other/storms", False),
    ],
)
def test_containers_are_the_skeleton_and_a_topologys_holders(path: str, container: bool) -> None:
    assert ZkPaths("/s").is_container(path) is container


def test_the_skeleton_lists_parents_first() -> None:
    skeleton = ZkPaths("/a/b/").skeleton
    assert skeleton[0] == "/a/b" and "/a/b/nimbus/leader" in skeleton
    for index, path in enumerate(skeleton[1:], start=1):
        assert path.rpartition("/")[0] in skeleton[:index]

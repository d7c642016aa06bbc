"""Whose a node under the ZooKeeper root is: this user's ZooKeeper identity's alone.

With a local identity (:mod:`.local_identity`: a loopback ZooKeeper, no credentials) every
node sparkstorm creates carries the ACL ``digest:sparkstorm-UID:<hash>:cdrwa`` and nothing
else: it is kazoo's default ACL, so the parents that ``makepath``, ``ensure_path`` and the
Election recipe create get it too.  Nobody else may read a node, change it, change its
ACL, create a node below it or delete one (ZooKeeper checks DELETE on the parent).

:func:`verdict` says what a node's ACL means for this identity (pure); :class:`Ownership`
acts on it:

* connecting creates the root and its fixed nodes, or makes sure they are this identity's
  (:meth:`Ownership.claim_skeleton`); one that belongs to someone else fails the connection
  with one line naming it and the fix;
* a record is used only when only this identity could have written it
  (:meth:`Ownership.problem`, remembered per node until its ACL or the node changes);
* a writer that finds someone else's node where it writes replaces it
  (:meth:`Ownership.replace`);
* the leading nimbus tightens what older versions left open (:meth:`Ownership.tighten_tree`).

Nodes whose ACL lets others read them, but nobody but this identity change them (what
earlier versions gave a topology's record and code), are tightened wherever they are met.
A node others could change is tightened only when it just holds children
(:meth:`~.paths.ZkPaths.is_container`): a record's content could be theirs, so the record
is ignored instead, until sparkstorm writes it afresh.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Sequence
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
)
from kazoo.security import ACL, Permissions

from topology import config as cfg
from topology.errors import SparkstormError

from .paths import ZkPaths

#: The reason :meth:`Ownership.problem` gives when the node changed between reading it and
#: its ACL: the next read decides (not logged, not counted).
RACED = "changed while it was read"
#: Most nodes :meth:`Ownership.tighten_tree` looks at in one walk.
MAX_WALK = 200_000
#: Nodes whose verdict is remembered at most; the memory then starts afresh.
MAX_REMEMBERED = 10_000

_LETTERS = (
    (Permissions.CREATE, "c"),
    (Permissions.DELETE, "d"),
    (Permissions.READ, "r"),
    (Permissions.WRITE, "w"),
    (Permissions.ADMIN, "a"),
)


class NodeNotOwned(SparkstormError):
    """A node sparkstorm must own belongs to someone else; the message names it and the fix."""


class Verdict(enum.Enum):
    """What a node's ACL means for this identity."""

    #: exactly the owner ACL
    OWNED = "owned"
    #: this identity alone may change it (and its ACL); others may only read it
    READABLE = "readable"
    #: others may change it too; this identity may change its ACL
    OPEN = "open"
    #: this identity may not change its ACL: someone else's
    FOREIGN = "foreign"


def _key(entry: ACL) -> tuple[str, str]:
    return (entry.id.scheme, entry.id.id)


def verdict(acl: Sequence[ACL], owner: Sequence[ACL]) -> Verdict:
    """What ``acl`` (a node's) means for the identity whose own ACL is ``owner``.

    >>> from kazoo.security import make_acl, make_digest_acl
    >>> me = [make_digest_acl("sparkstorm-1", "pw", all=True)]
    >>> verdict(me, me).name, verdict(me + [make_acl("world", "anyone", read=True)], me).name
    ('OWNED', 'READABLE')
    >>> open_acl = [make_acl("world", "anyone", all=True)]
    >>> verdict(open_acl, me).name, verdict([make_digest_acl("other", "pw", all=True)], me).name
    ('OPEN', 'FOREIGN')
    """
    mine = {_key(entry) for entry in owner}
    if sorted((a.perms, *_key(a)) for a in acl) == sorted((a.perms, *_key(a)) for a in owner):
        return Verdict.OWNED
    admin = any(
        a.perms & Permissions.ADMIN and (_key(a) in mine or _key(a) == ("world", "anyone"))
        for a in acl
    )
    if not admin:
        return Verdict.FOREIGN
    others_change = any(a.perms & ~Permissions.READ for a in acl if _key(a) not in mine)
    return Verdict.OPEN if others_change else Verdict.READABLE


def describe(acl: Sequence[ACL]) -> str:
    """An ACL as zkCli shows it, digests without their hash.

    >>> from kazoo.security import make_acl, make_digest_acl
    >>> me = make_digest_acl("sparkstorm-1", "pw", all=True)
    >>> describe([me, make_acl("world", "anyone", read=True)])
    'digest:sparkstorm-1:cdrwa, world:anyone:r'
    """
    shown = []
    for entry in acl:
        name = entry.id.id.partition(":")[0] if entry.id.scheme == "digest" else entry.id.id
        perms = "".join(letter for bit, letter in _LETTERS if entry.perms & bit)
        shown.append(f"{entry.id.scheme}:{name}:{perms}")
    return ", ".join(shown) or "no entries"


def why(kind: Verdict, acl: Sequence[ACL]) -> str:
    """Why a node of verdict ``kind`` (not OWNED) is not this identity's alone."""
    if kind is Verdict.FOREIGN:
        return f"is not this user's ZooKeeper identity's to change (ACL {describe(acl)})"
    return f"is writable by others than this user's ZooKeeper identity (ACL {describe(acl)})"


#: Why a node whose ACL this identity may not even read is not used.
UNREADABLE = "belongs to another ZooKeeper identity (its ACL is not readable by this one)"


class Ownership:
    """Checks and claims nodes under the root of ``paths`` for the identity whose ACL is
    ``owner`` (the client's default ACL), on ``client``."""

    def __init__(
        self, client: KazooClient, owner: list[ACL], paths: ZkPaths, identity_file: str
    ) -> None:
        self.client = client
        self.owner = owner
        self.paths = paths
        self.identity_file = identity_file
        #: path -> ((czxid, aversion) when checked, the problem found or None)
        self._known: dict[str, tuple[tuple[int, int], str | None]] = {}

    # -- connecting ------------------------------------------------------------------------

    def claim_skeleton(self) -> None:
        """Create the root and its fixed nodes for this identity, or make sure the ones
        that exist are its own; one it may change but others could too is tightened (it
        only holds children, each checked on its own).  Raises :class:`NodeNotOwned`
        naming the first one that belongs to someone else, with the fix."""
        if self.paths.root == "/":
            raise NodeNotOwned(
                f"{cfg.ZK_ROOT} is /: every ZooKeeper user could delete sparkstorm's nodes "
                "right below it; set it to a node of its own, e.g. /sparkstorm"
            )
        for _ in range(3):  # created or changed by someone else meanwhile: look again
            if self._claim_once():
                return
        raise NodeNotOwned(f"ZooKeeper nodes under {self.paths.root} keep changing; {self._fix()}")

    def _claim_once(self) -> bool:
        """One pass of :meth:`claim_skeleton` (the reads pipelined); False when a node
        changed under it."""
        skeleton = self.paths.skeleton
        reads = [self.client.get_acls_async(path) for path in skeleton]
        opened = []
        for path, read in zip(skeleton, reads, strict=True):
            try:
                acl, stat = read.get()
            except NoNodeError:
                if not self._create(path):
                    return False
                continue
            except NoAuthError:
                raise NodeNotOwned(f"ZooKeeper node {path} {UNREADABLE}; {self._fix()}") from None
            kind = verdict(acl, self.owner)
            if kind is Verdict.FOREIGN:
                raise NodeNotOwned(f"ZooKeeper node {path} {why(kind, acl)}; {self._fix()}")
            if kind is not Verdict.OWNED and not self._tighten(path, stat.aversion):
                return False
            if kind is Verdict.OPEN:
                opened.append(path)
        for path in set(opened) & set(self.paths.held_by_presence):
            self._sweep(path)
        return True

    def _sweep(self, path: str) -> None:
        """Delete the children of ``path`` (one of :attr:`~.paths.ZkPaths.held_by_presence`,
        just taken back from an open ACL) that are not this identity's alone: anyone could
        have planted them there, and an election or a driver's claim counts nodes, not
        what they hold (a persistent ``..._lock__0000000000`` would keep every nimbus from
        leading).  Raises :class:`NodeNotOwned` for one it cannot delete."""
        for child in self.client.get_children(path):
            node = f"{path}/{child}"
            try:
                acl, _ = self.client.get_acls(node)
                if verdict(acl, self.owner) is not Verdict.OWNED:
                    self.client.delete(node, recursive=True)
            except NoNodeError:
                continue
            except (NoAuthError, NotEmptyError):
                raise NodeNotOwned(
                    f"ZooKeeper node {node} was planted while {path} was open to everyone and "
                    f"cannot be deleted by this user's identity; {self._fix()}"
                ) from None

    def _create(self, path: str) -> bool:
        """Create ``path`` (its ancestors too: the root's may be missing); False when
        someone else created it first."""
        try:
            self.client.create(path, makepath=True)
        except NodeExistsError:
            return False
        except NoAuthError:
            parent = path.rpartition("/")[0] or "/"
            raise NodeNotOwned(
                f"cannot create ZooKeeper node {path}: {parent} does not let this user's "
                f"identity create nodes below it; {self._fix()}"
            ) from None
        return True

    def _fix(self) -> str:
        mine = self.owner[0].id.id.partition(":")[0]
        return (
            f"this user's identity is {mine} ({self.identity_file}): set {cfg.ZK_ROOT} to a "
            f"path of your own (e.g. {self.paths.root.rstrip('/')}-{os.geteuid()}), or have "
            "the node's owner delete it"
        )

    def _tighten(self, path: str, aversion: int, timeout: float | None = None) -> bool:
        """Give ``path`` the owner ACL, if its ACL is still at ``aversion``."""
        try:
            self.client.set_acls_async(path, self.owner, version=aversion).get(timeout=timeout)
        except (BadVersionError, NoNodeError):
            return False
        return True

    # -- reading ---------------------------------------------------------------------------

    def problem(self, path: str, stat: Any, timeout: float | None = None) -> str | None:
        """Why the node read at ``path`` (``stat``: the stat read with it) may hold what
        someone else wrote, or None.  :data:`RACED` when it changed in between.  Asks
        ZooKeeper once per node, ACL change and re-creation; a node only this identity can
        change but others can read is tightened."""
        key = (stat.czxid, stat.aversion)
        known = self._known.get(path)
        if known is not None and known[0] == key:
            return known[1]
        try:
            acl, now = self.client.get_acls_async(path).get(timeout=timeout)
        except NoNodeError:
            return RACED
        except NoAuthError:
            return self._remember(path, key, UNREADABLE)
        if (now.czxid, now.aversion) != key:
            return RACED
        kind = verdict(acl, self.owner)
        if kind is Verdict.READABLE:
            self._tighten(path, now.aversion, timeout)  # its aversion moves: not remembered
            return None
        return self._remember(path, key, None if kind is Verdict.OWNED else why(kind, acl))

    def _remember(self, path: str, key: tuple[int, int], problem: str | None) -> str | None:
        if len(self._known) >= MAX_REMEMBERED:
            self._known.clear()
        self._known[path] = (key, problem)
        return problem

    def unowned(self, topology_id: str) -> str | None:
        """Why the topology's record or code may have been written by someone other than
        this identity, or None (what used to be readable by others is tightened)."""
        base = self.paths.code(topology_id)
        try:
            chunks = [f"{base}/{c}" for c in self.client.get_children(base)]
        except NoNodeError:
            chunks = []
        except NoAuthError:
            chunks = [base]
        for what, path in [("record", self.paths.storm(topology_id)), ("code", base)] + [
            ("code", chunk) for chunk in chunks
        ]:
            try:
                acl, stat = self.client.get_acls(path)
            except NoNodeError:
                continue  # removed meanwhile: the reader finds it gone
            except NoAuthError:
                reason = UNREADABLE
            else:
                kind = verdict(acl, self.owner)
                if kind is Verdict.OWNED or (
                    kind is Verdict.READABLE and self._tighten(path, stat.aversion)
                ):
                    continue
                reason = why(kind, acl)
            return (
                f"topology {topology_id}: its {what} in ZooKeeper {reason}, not only this "
                f"user's ZooKeeper identity ({self.identity_file}): submitted by another user "
                "or an older sparkstorm, or replaced; refusing to run it"
            )
        return None

    # -- writing ---------------------------------------------------------------------------

    def replace(self, path: str, raw: bytes, timeout: float | None = None) -> None:
        """Put ``raw`` at ``path`` in a node of this identity's, in place of the node there
        (not its alone: its parent is, so it may delete it), in one transaction: no reader
        ever takes the old content for this identity's.  Raises :class:`NodeNotOwned` when
        the node cannot be deleted (it has children of someone else's)."""
        transaction = self.client.transaction()
        transaction.delete(path)
        transaction.create(path, raw)
        results = transaction.commit_async().get(timeout=timeout)
        failed = [r for r in results if isinstance(r, Exception)]
        failed = [r for r in failed if not isinstance(r, RolledBackError)]
        if not failed:
            return
        if isinstance(failed[0], NoNodeError):  # gone meanwhile
            try:
                self.client.create_async(path, raw).get(timeout=timeout)
            except NodeExistsError:
                pass  # another writer of this identity was first
            return
        raise NodeNotOwned(
            f"ZooKeeper node {path} is not only this user's and cannot be replaced "
            f"({type(failed[0]).__name__}): delete it"
        )

    # -- the leading nimbus ----------------------------------------------------------------

    def tighten_tree(self) -> tuple[int, list[str]]:
        """Walk every node under the root (at most :data:`MAX_WALK`) and give the owner ACL
        to each this identity may change and nobody else could have written: any node
        others could only read, and containers whatever their ACL.  Returns how many were
        tightened and the nodes left as they are (others could have written them, or they
        belong to someone else): readers ignore those."""
        tightened, left, seen = 0, [], 0
        level = [self.paths.root]
        while level and seen < MAX_WALK:
            level = level[: MAX_WALK - seen]
            seen += len(level)
            acls = [self.client.get_acls_async(path) for path in level]
            children = [self.client.get_children_async(path) for path in level]
            below: list[str] = []
            for path, acl_read, children_read in zip(level, acls, children, strict=True):
                try:
                    acl, stat = acl_read.get()
                    kind = verdict(acl, self.owner)
                except NoNodeError:
                    continue
                except NoAuthError:
                    kind, stat = Verdict.FOREIGN, None
                if kind is Verdict.READABLE or (
                    kind is Verdict.OPEN and self.paths.is_container(path)
                ):
                    tightened += self._tighten(path, stat.aversion)
                elif kind is not Verdict.OWNED:
                    left.append(path)
                try:
                    below += [f"{path.rstrip('/')}/{child}" for child in children_read.get()]
                except (NoNodeError, NoAuthError):
                    pass
            level = below
        return tightened, left

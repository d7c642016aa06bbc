"""Local files: logs, checkpoints and live state in per-user 0700 directories, files 0600,
and directories someone else made, opened or linked refused in one line
(``topology/user_dirs.py``, docs/SECURITY.md)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from topology import config as cfg
from topology import user_dirs
from topology.deploy.cluster.drivers import ProcessDrivers
from topology.deploy.shipping import child_env
from topology.runtime.worker_log import WorkerLog, topology_log_dir, worker_log_path
from topology.state.backends.directory import DirectoryBackend
from topology.state.backends.sqlite import SqliteBackend
from topology.state.live.factory import open_live_state
from topology.user_dirs import LocalDirError

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes"),
]

KEYS = (cfg.LOG_DIR, cfg.STATE_DIR, cfg.STATE_LOCAL_DIR)
#: A uid that is not this process's.
OTHER_UID = 54_321 if os.geteuid() != 54_321 else 54_322


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The temporary directory for this test: the per-user base goes under it (in this
    process and in children, through $TMPDIR)."""
    root = tmp_path / "tmp"
    root.mkdir(mode=0o1777)
    os.chmod(root, 0o1777)  # like /tmp
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    monkeypatch.setenv("TMPDIR", str(root))
    yield root


def one_line(exc: pytest.ExceptionInfo[LocalDirError]) -> str:
    text = str(exc.value)
    assert "\n" not in text and "Traceback" not in text, text
    return text


# -- the defaults: one base per user, 0700, files 0600 --------------------------------------


def test_defaults_are_under_one_base_per_user_made_0700(tmp: Path) -> None:
    base = tmp / f"sparkstorm-{os.geteuid()}"
    assert user_dirs.base_dir() == base
    for key, name in zip(KEYS, ("logs", "state", "live"), strict=True):
        assert user_dirs.resolve({}, key) == base / name
        assert user_dirs.ensure_dir({}, key) == base / name
        assert mode(base / name) == 0o700
    assert mode(base) == 0o700
    assert user_dirs.resolve({key: str(tmp / "mine") for key in KEYS}, cfg.LOG_DIR) == tmp / "mine"


def test_children_resolve_the_same_base(tmp: Path) -> None:
    """Drivers and LocalCluster workers (child_env) and Spark's Python workers inherit the
    environment: the same base in every process of the user."""
    shown = subprocess.run(
        [sys.executable, "-c", "from topology.user_dirs import base_dir; print(base_dir())"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=50,
        check=True,
    ).stdout.strip()
    assert shown == str(user_dirs.base_dir())


def test_log_files_are_0600_in_0700_directories_rotation_included(tmp: Path) -> None:
    folder = topology_log_dir({}, "wordcount-1-17")
    path = worker_log_path({}, "wordcount-1-17", 0)
    assert path.parent == folder and mode(folder) == 0o700
    log = WorkerLog(path, "INFO", max_bytes=200, backups=2).install()
    try:
        for i in range(20):
            print(f"line {i} " + "x" * 40)
    finally:
        log.close()
    files = sorted(folder.iterdir())
    assert [f.name for f in files] == ["worker-0.log", "worker-0.log.1", "worker-0.log.2"]
    assert {mode(f) for f in files} == {0o600}


def test_a_drivers_log_is_0600(tmp: Path) -> None:
    with ProcessDrivers({})._log_file("app-1-2") as log:
        log.write(b"x\n")
    assert mode(user_dirs.base_dir() / "logs" / "app-1-2" / "driver.log") == 0o600
    assert mode(user_dirs.base_dir() / "logs" / "app-1-2") == 0o700


def test_checkpoint_files_are_0600(tmp: Path) -> None:
    backend = SqliteBackend.open({}, "app-1-2")
    backend.write(backend.reserve(), 1, "scope", [(b"k", b"v")])
    files = sorted((user_dirs.base_dir() / "state").iterdir())
    assert {f.name for f in files} >= {"app-1-2.sqlite", "app-1-2.sqlite-wal"}
    assert {mode(f) for f in files} == {0o600}
    backend.close()
    directory = DirectoryBackend.open({cfg.STATE_PROVIDER: "directory"}, "app-2-3")
    checkpoint = directory.reserve()
    directory.write(checkpoint, 1, "scope", [(b"k", b"v")])
    directory.complete(checkpoint, 1, {})
    made = list((user_dirs.base_dir() / "state" / "app-2-3").rglob("*"))
    assert made and {mode(p) for p in made if p.is_file()} == {0o600}
    assert {mode(p) for p in made if p.is_dir()} == {0o700}


def test_live_state_files_are_0600_in_a_0700_task_directory(tmp: Path) -> None:
    pytest.importorskip("lmdb")
    conf = {cfg.STATE_BACKEND: "lmdb"}
    state = open_live_state(conf, location="count/3", key_groups=4, clock=lambda: 0.0)
    try:
        [task] = (user_dirs.base_dir() / "live").iterdir()
        assert mode(task) == 0o700
        assert {mode(f) for f in task.iterdir()} == {0o600}
    finally:
        state.close()


# -- an existing base is checked ---------------------------------------------------------


def test_a_base_owned_by_someone_else_is_refused_in_one_line(tmp: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a directory to another uid needs root")
    base = user_dirs.base_dir()
    base.mkdir(mode=0o700)
    os.chown(base, OTHER_UID, OTHER_UID)
    for key in KEYS:
        with pytest.raises(LocalDirError) as exc:
            user_dirs.ensure_dir({}, key)
        assert one_line(exc) == (
            f"{key}: {base} is owned by uid {OTHER_UID}, not by this user (uid 0): remove it "
            f"(as its owner or root), or set {key} to a directory of your own"
        )
    assert list(base.iterdir()) == []  # nothing written into it


def test_a_base_open_to_others_is_refused_naming_the_chmod(tmp: Path) -> None:
    base = user_dirs.base_dir()
    base.mkdir()
    os.chmod(base, 0o777)
    with pytest.raises(LocalDirError) as exc:
        topology_log_dir({}, "app")
    assert one_line(exc) == (
        f"storm.log.dir: {base} is open to group or others (mode 0777): chmod 700 {base}"
    )
    os.chmod(base, 0o750)
    with pytest.raises(LocalDirError, match="mode 0750"):
        SqliteBackend.open({}, "app")
    os.chmod(base, 0o700)
    assert topology_log_dir({}, "app") == base / "logs" / "app"


def test_a_symlink_in_the_bases_place_is_refused_and_never_followed(tmp: Path) -> None:
    victim = tmp / "victim"
    victim.mkdir(mode=0o700)  # even a directory of this user's, as a link: refused
    user_dirs.base_dir().symlink_to(victim)
    for key in KEYS:
        with pytest.raises(LocalDirError) as exc:
            user_dirs.ensure_dir({}, key)
        assert one_line(exc).startswith(f"{key}: {user_dirs.base_dir()} is a symbolic link")
    with pytest.raises(LocalDirError):
        open_live_state({cfg.STATE_BACKEND: "lmdb"}, location="t", key_groups=1, clock=float)
    assert list(victim.iterdir()) == []


def test_subdirectories_and_files_planted_in_the_base_are_refused(tmp: Path) -> None:
    base = user_dirs.ensure_dir({}, cfg.LOG_DIR).parent
    (base / "state").symlink_to(tmp)
    with pytest.raises(LocalDirError, match=r"^topology.state.dir: .*/state is a symbolic link"):
        SqliteBackend.open({}, "app")
    (base / "live").write_text("")
    with pytest.raises(LocalDirError, match="live is not a directory"):
        user_dirs.ensure_dir({}, cfg.STATE_LOCAL_DIR)
    folder = topology_log_dir({}, "app")
    (folder / "worker-0.log").symlink_to(tmp / "elsewhere")
    with pytest.raises(OSError):  # the worker runs on without a log file, and says so
        WorkerLog(folder / "worker-0.log")
    assert not (tmp / "elsewhere").exists()


# -- a configured directory is the user's, unless everyone may write to it --------------


def test_a_configured_directory_writable_by_everyone_without_sticky_bit_is_refused(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    conf: dict[str, Any] = {cfg.STATE_DIR: str(shared), cfg.LOG_DIR: f"file://{shared}"}
    with pytest.raises(LocalDirError) as exc:
        SqliteBackend.open(conf, "app")
    assert one_line(exc) == (
        f"topology.state.dir: {shared} is writable by everyone without the sticky bit "
        "(mode 0777), so anyone could replace what sparkstorm writes there: "
        f"chmod o-w {shared}, or set topology.state.dir to a directory of your own"
    )
    with pytest.raises(LocalDirError, match="^storm.log.dir: "):
        topology_log_dir(conf, "app")
    os.chmod(shared, 0o1777)  # sticky, like /tmp: what sparkstorm makes inside is checked
    assert mode(topology_log_dir(conf, "app")) == 0o700
    os.chmod(shared, 0o2775)  # a group's directory: the user's choice
    SqliteBackend.open(conf, "app").close()


def test_a_missing_configured_directory_is_made_0700(tmp_path: Path) -> None:
    conf = {cfg.STATE_LOCAL_DIR: str(tmp_path / "a" / "live")}
    assert user_dirs.ensure_dir(conf, cfg.STATE_LOCAL_DIR, "task.1") == tmp_path / "a/live/task.1"
    assert mode(tmp_path / "a" / "live") == 0o700
    assert mode(tmp_path / "a" / "live" / "task.1") == 0o700
    (tmp_path / "file").write_text("")
    with pytest.raises(LocalDirError, match="is not a directory: set storm.log.dir to one"):
        user_dirs.ensure_dir({cfg.LOG_DIR: str(tmp_path / "file")}, cfg.LOG_DIR)


def test_a_file_planted_in_a_shared_configured_directory_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o1777)
    os.chmod(shared, 0o1777)
    (shared / "app.sqlite").symlink_to(tmp_path / "target")
    with pytest.raises(LocalDirError) as exc:
        SqliteBackend.open({cfg.STATE_DIR: str(shared)}, "app")
    assert one_line(exc) == (
        f"topology.state.dir: {shared}/app.sqlite is a symbolic link (never followed here): "
        "remove it"
    )
    assert not (tmp_path / "target").exists()
    if os.geteuid() == 0:
        (shared / "other.sqlite").write_text("")
        os.chown(shared / "other.sqlite", OTHER_UID, OTHER_UID)
        with pytest.raises(LocalDirError, match="is not a file of this user's"):
            SqliteBackend.open({cfg.STATE_DIR: str(shared)}, "other")


@pytest.mark.parametrize("suffix", ["-wal", "-shm"])
def test_sqlites_own_files_planted_in_a_shared_configured_directory_are_refused(
    tmp_path: Path, suffix: str
) -> None:
    """SQLite opens its ``-wal`` and ``-shm`` by name, and uses one someone else made
    there (they would read every checkpoint written through it): refused like the file."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o1777)
    os.chmod(shared, 0o1777)
    conf = {cfg.STATE_DIR: str(shared)}
    (shared / f"app.sqlite{suffix}").symlink_to(tmp_path / "target")
    with pytest.raises(LocalDirError) as exc:
        SqliteBackend.open(conf, "app")
    assert one_line(exc) == (
        f"topology.state.dir: {shared}/app.sqlite{suffix} is a symbolic link (never followed "
        "here): remove it"
    )
    if os.geteuid() == 0:
        planted = shared / f"other.sqlite{suffix}"
        planted.write_text("")
        os.chmod(planted, 0o666)
        os.chown(planted, OTHER_UID, OTHER_UID)
        with pytest.raises(LocalDirError, match=f"other.sqlite{suffix} is not a file of this"):
            SqliteBackend.open(conf, "other")


def test_a_directory_providers_folder_planted_in_a_shared_directory_is_refused(
    tmp_path: Path,
) -> None:
    """The ``directory`` provider's folder of a topology in a shared configured directory
    is checked as the folders sparkstorm makes for itself: never a link, nor one others
    may write to (they could replace its checkpoint files)."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o1777)
    os.chmod(shared, 0o1777)
    conf = {cfg.STATE_DIR: str(shared), cfg.STATE_PROVIDER: "directory"}
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (shared / "linked").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(LocalDirError) as exc:
        DirectoryBackend.open(conf, "linked")
    assert one_line(exc).startswith(f"topology.state.dir: {shared}/linked is a symbolic link")
    assert list((tmp_path / "elsewhere").iterdir()) == []
    (shared / "open").mkdir()
    os.chmod(shared / "open", 0o777)
    with pytest.raises(LocalDirError, match="open is open to group or others .mode 0777."):
        DirectoryBackend.open(conf, "open")
    backend = DirectoryBackend.open(conf, "app")  # made 0700, and used again
    backend.complete(backend.reserve(), 1, {})
    assert mode(shared / "app") == 0o700
    assert DirectoryBackend.open(conf, "app").latest() == 1


@pytest.mark.timeout(90)
def test_a_worker_refusing_its_checkpoint_directory_fails_the_start_in_one_line(
    tmp: Path,
) -> None:
    """The workers (processes of their own) resolve the same base and refuse it: the
    topology does not start, and says why in one line."""
    from cli.loader import load_topology
    from topology import LocalCluster
    from topology.deploy.local.topology import ClusterError

    base = user_dirs.base_dir()
    base.mkdir()
    os.chmod(base, 0o777)
    _, module = load_topology("examples/stateful_wordcount.py:topology")
    with LocalCluster() as cluster, pytest.raises(ClusterError) as exc:
        cluster.submit_topology("swc", {}, module.topology)
    assert str(exc.value).endswith(
        f"failed to start: worker 0: topology.state.dir: {base} is open to group or others "
        f"(mode 0777): chmod 700 {base}"
    )
    assert list(base.iterdir()) == []

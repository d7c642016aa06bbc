"""Secret-looking ``-c`` values off the process list (``cli/argv_secrets.py``,
docs/SECURITY.md): which arguments are masked, and a running CLI's own
``/proc/PID/cmdline``.  The processes a CLI starts are checked on a whole
``sparkstorm local`` run in ``tests/spark/test_local_interrupt.py``."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.argv_secrets import hidden, masked

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[2]
linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux /proc")


def test_every_form_of_a_secret_option_is_masked_and_nothing_else() -> None:
    argv = [
        "sparkstorm",
        "ui",
        "-c",
        "ui.admin.token=abcdefgh",
        "--conf",
        "db.password=pw",
        "-capi.key=0123456789",
        "--conf=storm.zookeeper.auth.payload=u:p4ssword",
        "-c",
        "topology.workers=2",
        "--name",
        "ui.admin.token=abcdefgh",  # the same text, not after -c: an argument of its own
        "-c",
        "dsn.url=postgres://u:pw@h/db",
    ]
    overrides = [
        "ui.admin.token=abcdefgh",
        "db.password=pw",
        "api.key=0123456789",
        "storm.zookeeper.auth.payload=u:p4ssword",
        "topology.workers=2",
        "dsn.url=postgres://u:pw@h/db",
    ]
    assert hidden(argv, overrides, ["dsn"]) == [
        "sparkstorm",
        "ui",
        "-c",
        "ui.admin.token=****",
        "--conf",
        "db.password=**",
        "-capi.key=****",
        "--conf=storm.zookeeper.auth.payload=****",
        "-c",
        "topology.workers=2",
        "--name",
        "ui.admin.token=abcdefgh",
        "-c",
        "dsn.url=****",
    ]
    assert hidden(argv, overrides)[-1] == "dsn.url=postgres://u:pw@h/db"  # no pattern: shown
    assert hidden(["x", "-c", "db.password="], ["db.password="]) == ["x", "-c", "db.password="]


@given(st.text(min_size=0, max_size=40))
def test_a_masked_item_never_grows_and_never_shows_its_value(value: str) -> None:
    item = f"api.token={value}"
    out = masked(item)
    assert len(out.encode()) <= len(item.encode("utf-8", "surrogatepass"))
    assert set(out.removeprefix("api.token=")) <= {"*"}


@linux_only
def test_conceal_rewrites_this_process_command_line() -> None:
    code = (
        "import sys\n"
        "from cli.argv_secrets import conceal\n"
        "conceal(sys.argv[2::2])  # the -c items\n"
        "conceal(sys.argv[2::2])  # again: nothing left to do\n"
        "print(open('/proc/self/cmdline', 'rb').read())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "-c", "db.password=SECRETVALUE", "-c", "a=b"],
        cwd=REPO,
        capture_output=True,
        timeout=50,
        check=True,
    )
    shown = eval(done.stdout.decode().strip())  # noqa: S307 - the bytes repr printed above
    assert b"SECRETVALUE" not in shown
    assert shown.rstrip(b"\0").split(b"\0")[-4:] == [b"-c", b"db.password=****", b"-c", b"a=b"]
    assert done.stderr == b""


@linux_only
def test_a_running_cli_shows_no_secret_in_its_command_line() -> None:
    """``sparkstorm ui`` waiting for a ZooKeeper that is not there stays up long enough."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "ui", "--zookeeper", f"127.0.0.1:{port}"]
        + ["-c", "storm.zookeeper.connection.timeout.secs=30"]
        + ["-c", "ui.admin.token=SECRETVALUE-0123456789", "--conf=db.password=SECRETVALUE"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 40
        shown = b""
        while time.monotonic() < deadline and proc.poll() is None:
            shown = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
            if b"ui.admin.token=****" in shown:
                break
            time.sleep(0.05)
        assert b"ui.admin.token=****\0--conf=db.password=****\0" in shown, shown
        assert b"SECRETVALUE" not in shown
    finally:
        proc.kill()
        proc.wait(10)
        assert proc.stderr is not None
        proc.stderr.close()

"""Import paths for workers and the runtime's child processes (topology.deploy.shipping)."""

from __future__ import annotations

import os
import subprocess
import sys

import topology
from topology.deploy import shipping


def test_child_env_puts_a_checkout_first_on_pythonpath(monkeypatch):
    monkeypatch.setattr(shipping, "package_root", lambda: "/src/sparkstorm")
    monkeypatch.setattr(shipping, "_system_dirs", lambda: {"/usr/lib/python3/site-packages"})
    monkeypatch.setenv("PYTHONPATH", "/opt/mine")

    env = shipping.child_env(PYSPARK_PYTHON="/bin/py")

    assert env["PYTHONPATH"] == os.pathsep.join(["/src/sparkstorm", "/opt/mine"])
    assert env["PYSPARK_PYTHON"] == "/bin/py"


def test_child_env_leaves_an_installed_package_alone(monkeypatch):
    site = "/usr/lib/python3/site-packages"
    monkeypatch.setattr(shipping, "package_root", lambda: site)
    monkeypatch.setattr(shipping, "_system_dirs", lambda: {site})
    monkeypatch.delenv("PYTHONPATH", raising=False)

    assert "PYTHONPATH" not in shipping.child_env()


def test_child_env_does_not_repeat_an_entry(monkeypatch):
    monkeypatch.setattr(shipping, "package_root", lambda: "/src/sparkstorm")
    monkeypatch.setattr(shipping, "_system_dirs", set)
    monkeypatch.setenv("PYTHONPATH", "/src/sparkstorm")

    assert shipping.child_env()["PYTHONPATH"] == "/src/sparkstorm"


def test_a_child_started_elsewhere_imports_this_sparkstorm(tmp_path):
    """What LocalCluster workers and topology drivers rely on: ``python -P -m topology...``
    from another directory finds the same package as this process, installed or not."""
    env = shipping.child_env()
    done = subprocess.run(
        [sys.executable, "-P", "-c", "import topology; print(topology.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert os.path.realpath(done.stdout.strip()) == os.path.realpath(topology.__file__)

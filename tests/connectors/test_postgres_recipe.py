"""docs/CONNECTORS.md's step by step starts PostgreSQL as its lines say, as root too (the
server then runs as the OS user ``postgres``) — the one home of that recipe, which
examples/redis_to_postgres.py points to. Its PostgreSQL lines run here as written, on a
free port instead of 5432, then the server is stopped by the recipe's own last line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.connectors.postgres_server import SKIP, find_binaries, free_port

pytestmark = [pytest.mark.connectors, pytest.mark.timeout(120)]

DOC = Path(__file__).resolve().parents[2] / "docs" / "CONNECTORS.md"


def recipe() -> tuple[list[str], str]:
    """The step by step's PostgreSQL lines (from ``export PATH`` to ``pg_ctl ... start``)
    and its ``pg_ctl ... stop`` line."""
    block = DOC.read_text().split("Step by step on this machine.", 1)[1]
    lines = block.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("export PATH="))
    last = next(i for i, line in enumerate(lines) if "pg_ctl" in line and "start" in line)
    stop = next(line for line in lines if "pg_ctl" in line and " stop" in line)
    return lines[first : last + 1], stop.split(";")[0]


def test_the_step_by_step_starts_postgresql_as_this_user(tmp_path: Path) -> None:
    if find_binaries() is None or shutil.which("psql") is None:
        pytest.skip(SKIP)
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("as root the recipe needs runuser (util-linux)")
    start, stop = recipe()
    port = str(free_port())
    script = "\n".join(["set -e", *start]).replace("-p 5432", f"-p {port}")
    assert f"-p {port}" in script
    script += f'\necho "PGDIR=$PGDIR"\npsql "host=127.0.0.1 port={port} user=postgres '
    script += 'dbname=postgres" -tAc "SELECT 6 * 7"\n'
    done = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=90, check=False
    )
    pgdir = re.search(r"^PGDIR=(.+)$", done.stdout, re.M)
    try:
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.splitlines()[-1] == "42"
    finally:
        if pgdir is not None:  # the recipe's own stop line, in the recipe's setting
            setting = "\n".join(line for line in start if not line.startswith("$AS"))
            setting = setting.replace("PGDIR=$(mktemp -d)", f"PGDIR={pgdir.group(1)}")
            halt = subprocess.run(
                ["bash", "-c", f"{setting}\n{stop} -w -t 30"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            shutil.rmtree(pgdir.group(1), ignore_errors=True)
            assert halt.returncode == 0, halt.stdout + halt.stderr

"""A user's mistake in FILE:ATTR reads the same from every command that loads one: a short
``Error: ...`` naming the file (and the component or the user's own line), no traceback;
exit status 2 for a target that names no topology (a usage error), 1 for the user's code
failing.  Loading fails before anything starts, so no ZooKeeper or Spark is needed."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from cli.main import _Commands, cli
from topology import ConfigError
from topology.deploy.cluster.zookeeper_server import free_port

pytestmark = pytest.mark.timeout(30)

COMPONENTS = """
from topology import BasicBolt, Spout

class Numbers(Spout):
    outputs = ["n"]
    def next_tuple(self):
        pass

class StormStyle(BasicBolt):
    def execute(self, tup):
        pass
"""

TOPOLOGIES = """
from topology import TopologyBuilder
from habit_components import Numbers, StormStyle

def invalid():
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers())
    builder.set_bolt("split", StormStyle()).shuffle_grouping("numbers")
    return builder

def raises():
    limit = int("ten")
    return limit

not_a_topology = 3
"""

#: Every command that loads FILE:ATTR, with what it needs besides the target.
VERBS = [["local"], ["submit", "--name", "x"], ["visualize"]]


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "habit_components.py").write_text(COMPONENTS)
    (tmp_path / "habit_topologies.py").write_text(TOPOLOGIES)
    (tmp_path / "habit_broken.py").write_text("import os\nvalue = undefined_name + 1\n")
    monkeypatch.setattr(sys, "path", list(sys.path))  # the loader prepends tmp_path
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def run(verb: list[str], target: str) -> Any:
    result = CliRunner().invoke(cli, [verb[0], target, *verb[1:]])
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    return result


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v[0])
def test_a_topology_that_fails_validation(verb: list[str], files: Path) -> None:
    target = f"{files / 'habit_topologies.py'}:invalid"
    result = run(verb, target)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == f"Error: {target}: invalid topology (1 problem):"
    assert "bolt 'split' (StormStyle)" in lines[1] and "rename execute to process" in lines[1]
    assert len(lines) == 2


#: (file, attribute, the error it gives with {file} and {line} to fill in)
USER_CODE_RAISES = [
    (
        "habit_topologies.py",
        "raises",
        "Error: {file}:raises: ValueError: invalid literal for int() with base 10: 'ten' "
        "(at {file}:{line} in raises)\n",
    ),
    (
        "habit_broken.py",
        "topology",
        "Error: importing {file} failed: NameError: name 'undefined_name' is not defined "
        "(at {file}:2 in <module>)\n",
    ),
]


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v[0])
@pytest.mark.parametrize(("name", "attr", "expected"), USER_CODE_RAISES, ids=["factory", "import"])
def test_user_code_that_raises_shows_its_message_and_line(
    verb: list[str], name: str, attr: str, expected: str, files: Path
) -> None:
    file = files / name
    line = TOPOLOGIES.splitlines().index('    limit = int("ten")') + 1
    result = run(verb, f"{file}:{attr}")
    assert result.exit_code == 1
    assert result.output == expected.format(file=file, line=line)


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v[0])
@pytest.mark.parametrize(
    ("attr", "expected"),
    [
        ("nope", "has no attribute 'nope'"),
        ("not_a_topology", "is a int, not a topology"),
    ],
)
def test_a_wrong_attribute_is_one_line(
    verb: list[str], attr: str, expected: str, files: Path
) -> None:
    result = run(verb, f"{files / 'habit_topologies.py'}:{attr}")
    assert result.exit_code == 2
    assert len(result.output.splitlines()) == 1 and expected in result.output


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v[0])
@pytest.mark.parametrize("suffix", ["", ":"], ids=["bare", "colon"])
def test_a_file_without_attr_lists_its_candidates(
    verb: list[str], suffix: str, files: Path
) -> None:
    """``FILE`` (or ``FILE:``) alone: the same list of candidates a wrong attribute gives,
    not "invalid topology name" or "expected FILE:ATTR"."""
    file = files / "habit_topologies.py"
    (files / "habit_topologies.py").write_text(
        TOPOLOGIES + "\nfrom topology import TopologyBuilder as _B\ntopology = _B()\n"
    )
    result = run(verb, f"{file}{suffix}")
    assert result.exit_code == 2
    assert result.output == (
        f"Error: {file} is a file: name the topology in it, e.g. {file}:topology "
        "(topologies in it: topology; functions that may build one: invalid, raises)\n"
    )


@pytest.mark.parametrize("verb", [["local"], ["submit", "--name", "x"]], ids=lambda v: v[0])
def test_a_missing_file_or_target_is_one_line(verb: list[str], tmp_path: Path) -> None:
    missing = run(verb, f"{tmp_path / 'nope.py'}:topology")
    assert missing.exit_code == 2
    assert missing.output == f"Error: no such file: {tmp_path / 'nope.py'}\n"
    shapeless = run(verb, "wordcount")
    assert shapeless.exit_code == 2
    assert shapeless.output.startswith("Error: expected FILE:ATTR")


def test_a_sparkstorm_error_a_command_lets_through_is_one_line() -> None:
    @click.group(cls=_Commands)
    def group() -> None:
        pass

    @group.command()
    def broken() -> None:
        raise ConfigError("topology.workers must be an integer >= 1, got 'two'")

    result = CliRunner().invoke(group, ["broken"])
    assert result.exit_code == 1
    assert result.output == "Error: topology.workers must be an integer >= 1, got 'two'\n"


def test_dev_zookeeper_names_a_data_dir_it_cannot_make(
    tmp_path: Path,
) -> None:
    """A ``--dir`` that cannot be made (a file is in its way) is one line naming it, before
    Java starts."""
    blocked = tmp_path / "file"
    blocked.write_text("")
    port = free_port()  # (a busy port would be refused first)
    args = ["dev-zookeeper", "--port", str(port), "--dir", str(blocked / "zk")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert result.output == (
        f"Error: cannot use {str(blocked / 'zk')!r} as the ZooKeeper data directory: "
        "Not a directory (choose a writable directory)\n"
    )

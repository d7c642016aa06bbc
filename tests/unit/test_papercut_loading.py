"""Issue 28 (papercuts 8, 9, 11): what goes wrong before a topology runs says exactly what.

* a bolt whose ``prepare`` (a spout whose ``open``) raises fails the start naming the
  component and the task, not only "worker 0 failed to start: RuntimeError";
* ``FILE:ATTR`` naming a function that is no topology factory (it needs arguments, or is
  annotated to return something else) is refused before it is called, naming what the
  file offers;
* ``parallelism=0`` is one problem, not two (``num_tasks`` defaults to it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import cli
from topology import BasicBolt, ComponentStartError, Spout, TopologyBuilder
from topology import TopologyValidationError as Invalid
from topology.runtime.inprocess import InProcessRunner

pytestmark = pytest.mark.timeout(30)


class Quiet(Spout):
    outputs = ["n"]

    def next_tuple(self) -> None:
        pass


class Pass(BasicBolt):
    outputs = ["n"]

    def process(self, tup: Any) -> None:
        pass


class BadPrepare(Pass):
    def prepare(self, conf: Any, context: Any) -> None:
        raise RuntimeError("no database at db:5432")


class BadOpen(Quiet):
    def open(self, conf: Any, context: Any) -> None:
        raise KeyError("offsets")


def _topology(spout: Spout, bolt: BasicBolt) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("numbers", spout)
    builder.set_bolt("store", bolt, parallelism=2).shuffle_grouping("numbers")
    return builder.create_topology()


def test_a_prepare_that_raises_names_the_bolt_and_its_task() -> None:
    with pytest.raises(ComponentStartError) as caught:
        InProcessRunner(_topology(Quiet(), BadPrepare()))
    message = str(caught.value)
    assert message.startswith("bolt 'store' task ")
    assert "prepare raised RuntimeError: no database at db:5432" in message
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_an_open_that_raises_names_the_spout() -> None:
    with pytest.raises(
        ComponentStartError, match=r"spout 'numbers' task \d+: open raised KeyError"
    ):
        InProcessRunner(_topology(BadOpen(), Pass()))


def test_parallelism_zero_is_one_problem() -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", Quiet(), parallelism=0)
    with pytest.raises(Invalid) as caught:
        builder.create_topology()
    assert caught.value.problems == ["spout 'numbers': parallelism must be an integer >= 1, got 0"]


def test_a_bad_num_tasks_given_is_still_reported() -> None:
    builder = TopologyBuilder()
    builder.set_spout("numbers", Quiet(), parallelism=0, num_tasks=0)
    builder.set_bolt("store", Pass()).shuffle_grouping("numbers").set_num_tasks(-1)
    with pytest.raises(Invalid) as caught:
        builder.create_topology()
    assert caught.value.problems == [
        "spout 'numbers': parallelism must be an integer >= 1, got 0",
        "spout 'numbers': num_tasks must be an integer >= 1, got 0",
        "bolt 'store': num_tasks must be an integer >= 1, got -1",
    ]


FILE = """
from topology import Spout, TopologyBuilder

class Quiet(Spout):
    outputs = ["n"]
    def next_tuple(self):
        pass

def make():
    builder = TopologyBuilder()
    builder.set_spout("numbers", Quiet())
    return builder

topology = make().create_topology()

def verify(results):
    raise AssertionError("must not be called as a factory")

def describe() -> str:
    raise AssertionError("must not be called as a factory")

def nothing():
    return None
"""


@pytest.fixture
def user_file(tmp_path: Path) -> Path:
    path = tmp_path / "papercut_targets.py"
    path.write_text(FILE)
    return path


@pytest.mark.parametrize("verb", [["local"], ["visualize"]])
def test_a_function_with_parameters_is_refused_before_it_runs(
    user_file: Path, verb: list[str]
) -> None:
    result = CliRunner().invoke(cli, [*verb, f"{user_file}:verify"])
    assert result.exit_code == 2, result.output
    assert "must not be called" not in result.output
    assert "TypeError" not in result.output
    assert f"{user_file}:verify takes arguments (results): not a topology factory" in result.output
    assert (
        "topologies in it: topology; functions that may build one: make, nothing" in result.output
    )


def test_a_function_annotated_to_return_no_topology_is_refused(user_file: Path) -> None:
    result = CliRunner().invoke(cli, ["visualize", f"{user_file}:describe"])
    assert result.exit_code == 2, result.output
    assert "is annotated to return str, not a topology" in result.output


def test_a_factory_returning_no_topology_says_so_and_what_the_file_offers(user_file: Path) -> None:
    result = CliRunner().invoke(cli, ["visualize", f"{user_file}:nothing"])
    assert result.exit_code == 2, result.output
    assert f"{user_file}:nothing returned a NoneType, not a topology" in result.output
    assert "topologies in it: topology" in result.output

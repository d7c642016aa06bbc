"""Unit tests for topology.visualize and ``sparkstorm visualize FILE:ATTR`` (no ZooKeeper)."""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from cli.drawing import edges, order, to_dot, to_mermaid, to_rich, to_text
from cli.main import cli
from topology import Bolt, Spout, Stream, TopologyBuilder
from topology.spec import describe_components

pytestmark = pytest.mark.timeout(30)


# -- a topology with every kind of subscription --------------------------------------------


class Sentences(Spout):
    outputs = ["sentence"]

    def next_tuple(self) -> None:
        pass


class Split(Bolt):
    outputs = {
        "default": ["word"],
        "targeted": Stream(["word"], direct=True),
        "errors": ["reason"],
    }

    def execute(self, tup: Any) -> None:
        pass


class Count(Bolt):
    outputs = ["word", "count"]

    def execute(self, tup: Any) -> None:
        pass


class Sink(Bolt):
    def execute(self, tup: Any) -> None:
        pass


def build() -> dict[str, Any]:
    builder = TopologyBuilder()
    # Declared out of dependency order on purpose: the drawing must reorder.
    builder.set_bolt("audit", Sink(), 1).all_grouping("count").direct_grouping("split", "targeted")
    builder.set_bolt("count", Count(), 4).fields_grouping("split", ["word"])
    builder.set_bolt("log", Sink(), 1).shuffle_grouping("split", "errors")
    builder.set_bolt("split", Split(), 3).shuffle_grouping("sentences")
    builder.set_spout("sentences", Sentences(), 2)
    return describe_components(builder.create_topology())


EDGE_LINES = [
    "sentences --shuffle--> split x3",
    "split --fields[word]--> count x4",
    "split:targeted --direct--> audit x1",
    "split:errors --shuffle--> log x1",
    "count --all--> audit x1",
]


def test_summary_records_grouping_fields() -> None:
    inputs = build()["count"]["inputs"]
    assert inputs == [
        {"component": "split", "stream": "default", "grouping": "fields", "fields": ["word"]}
    ]


def test_order_is_spouts_then_dependencies() -> None:
    assert order(build()) == ["sentences", "split", "count", "audit", "log"]


def test_order_survives_a_cycle_and_unknown_sources() -> None:
    components = {
        "a": {"kind": "bolt", "tasks": 1, "streams": {}, "inputs": [{"component": "b"}]},
        "b": {"kind": "bolt", "tasks": 1, "streams": {}, "inputs": [{"component": "a"}]},
        "c": {"kind": "bolt", "tasks": 1, "streams": {}, "inputs": [{"component": "ghost"}]},
        "s": {"kind": "spout", "tasks": 1, "streams": {}, "inputs": []},
    }
    assert order(components) == ["s", "c", "a", "b"]
    assert len(edges(components)) == 3
    assert "ghost --?--> c x1" in to_text(components)


def test_to_text_lists_components_in_order_then_edges() -> None:
    text = to_text(build(), "demo")
    assert (
        text
        == textwrap.dedent(
            """\
        demo (1 spout, 4 bolts, 11 tasks)

        [spout] sentences x2  -> default(sentence)
        [bolt]  split x3      -> default(word), targeted(word), errors(reason)
        [bolt]  count x4      -> default(word, count)
        [bolt]  audit x1
        [bolt]  log x1

        """
        )
        + "\n".join(EDGE_LINES)
        + "\n"
    )


def test_to_text_without_fields_key_shows_only_the_kind() -> None:
    components = build()
    for info in components.values():
        for i in info["inputs"]:
            del i["fields"]  # a summary recorded before "fields" existed
    assert "split --fields--> count x4" in to_text(components).splitlines()


def test_to_rich_draws_a_tree_per_spout() -> None:
    console = Console(width=120, record=True, color_system=None)
    console.print(to_rich(build(), "demo"))
    out = console.export_text()
    assert out.splitlines()[1].startswith("sentences x2 spout")
    assert "--fields[word]--> count x4" in out
    assert "targeted --direct--> audit x1 bolt (see above)" in out
    assert "errors --shuffle--> log x1" in out


def test_to_dot_is_a_labelled_digraph() -> None:
    dot = to_dot(build(), "demo")
    assert dot.startswith('digraph "demo" {') and dot.rstrip().endswith("}")
    assert dot.count("{") == dot.count("}")
    assert re.search(r'"sentences" \[shape=box[^\]]*label="sentences\\nspout x2', dot)
    assert re.search(r'"count" \[shape=ellipse[^\]]*label="count\\nbolt x4', dot)
    for line in (
        '"sentences" -> "split" [label="shuffle"];',
        '"split" -> "count" [label="fields[word]"];',
        '"split" -> "audit" [label="targeted: direct"];',
        '"split" -> "log" [label="errors: shuffle"];',
        '"count" -> "audit" [label="all"];',
    ):
        assert f"  {line}" in dot.splitlines()
    assert len(re.findall(r" -> ", dot)) == 5


def test_to_dot_escapes_quotes() -> None:
    components = {'say "hi"': {"kind": "spout", "tasks": 1, "streams": {}, "inputs": []}}
    assert '"say \\"hi\\""' in to_dot(components)


def test_to_mermaid_has_every_node_and_edge() -> None:
    mermaid = to_mermaid(build())
    lines = [line.strip() for line in mermaid.splitlines()]
    assert lines[0] == "flowchart LR"
    assert 'c_sentences(["sentences<br/>spout x2<br/>default(sentence)"])' in lines
    assert 'c_count["count<br/>bolt x4<br/>default(word, count)"]' in lines
    for line in (
        'c_sentences -->|"shuffle"| c_split',
        'c_split -->|"fields[word]"| c_count',
        'c_split -->|"targeted: direct"| c_audit',
        'c_split -->|"errors: shuffle"| c_log',
        'c_count -->|"all"| c_audit',
    ):
        assert line in lines
    assert sum("-->" in line for line in lines) == 5


def test_to_mermaid_ids_are_safe_and_unique() -> None:
    components = {
        "my-spout": {"kind": "spout", "tasks": 1, "streams": {}, "inputs": []},
        "my_spout": {"kind": "bolt", "tasks": 1, "streams": {}, "inputs": []},
        "end": {"kind": "bolt", "tasks": 1, "streams": {}, "inputs": []},
    }
    mermaid = to_mermaid(components)
    assert 'c_my_spout(["my-spout' in mermaid
    assert 'c_my_spout_2["my_spout' in mermaid
    assert 'c_end["end' in mermaid


# -- the command ------------------------------------------------------------------------------

COMPONENTS_MODULE = """
from topology import Bolt, Spout, Stream


class Sentences(Spout):
    outputs = ["sentence"]

    def next_tuple(self):
        pass


class Split(Bolt):
    outputs = {"default": ["word"], "targeted": Stream(["word"], direct=True)}

    def execute(self, tup):
        pass


class Count(Bolt):
    outputs = ["word", "count"]

    def execute(self, tup):
        pass
"""

TOPOLOGY_FILE = """
from topology import TopologyBuilder

from viz_components import Count, Sentences, Split

builder = TopologyBuilder()
builder.set_spout("sentences", Sentences(), 2)
builder.set_bolt("split", Split(), 3).shuffle_grouping("sentences")
builder.set_bolt("count", Count(), 4).fields_grouping("split", ["word"])
builder.set_bolt("direct", Count()).direct_grouping("split", "targeted")
topology = builder.create_topology()
"""


@pytest.fixture
def topology_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "viz_components.py").write_text(COMPONENTS_MODULE)
    path = tmp_path / "viz_topology.py"
    path.write_text(TOPOLOGY_FILE)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the loader prepends tmp_path
    before = set(sys.modules)
    yield path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, ["visualize", *args])


def test_cli_text(topology_file: Path) -> None:
    result = run(f"{topology_file}:topology")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"{topology_file}:topology (1 spout, 3 bolts, 10 tasks)"
    assert lines[2].startswith("[spout] sentences x2")
    assert lines[-3:] == [
        "sentences --shuffle--> split x3",
        "split --fields[word]--> count x4",
        "split:targeted --direct--> direct x1",
    ]


def test_cli_dot(topology_file: Path) -> None:
    result = run(f"{topology_file}:topology", "--format", "dot")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("digraph ")
    assert '"split" -> "count" [label="fields[word]"];' in result.output
    assert '"split" -> "direct" [label="targeted: direct"];' in result.output


def test_cli_mermaid(topology_file: Path) -> None:
    result = run(f"{topology_file}:topology", "--format", "mermaid")
    assert result.exit_code == 0, result.output
    assert "flowchart LR" in result.output.splitlines()
    assert 'c_split -->|"fields[word]"| c_count' in result.output
    assert 'c_sentences -->|"shuffle"| c_split' in result.output


def test_cli_accepts_a_builder_attribute(topology_file: Path) -> None:
    result = run(f"{topology_file}:builder")
    assert result.exit_code == 0, result.output
    assert "split --fields[word]--> count x4" in result.output


def test_cli_missing_file(tmp_path: Path) -> None:
    result = run(f"{tmp_path / 'nope.py'}:topology")
    assert result.exit_code == 2  # a usage error, as for every command
    assert result.output == f"Error: no such file: {tmp_path / 'nope.py'}\n"


def test_cli_unknown_attribute(topology_file: Path) -> None:
    result = run(f"{topology_file}:nope")
    assert result.exit_code == 2
    assert len(result.output.splitlines()) == 1
    assert "has no attribute 'nope'" in result.output
    assert "topologies in it: builder, topology" in result.output


def test_cli_invalid_topology(tmp_path: Path, topology_file: Path) -> None:
    bad = tmp_path / "viz_bad.py"
    bad.write_text(
        "from topology import TopologyBuilder\n"
        "from viz_components import Count\n"
        "builder = TopologyBuilder()\n"
        "builder.set_bolt('count', Count()).shuffle_grouping('missing')\n"
    )
    result = run(f"{bad}:builder")
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {bad}:builder: ")
    assert "Traceback" not in result.output


def test_cli_rejects_unknown_format(topology_file: Path) -> None:
    result = run(f"{topology_file}:topology", "--format", "jpeg")
    assert result.exit_code == 2
    assert "'jpeg' is not one of" in result.output

"""A topology file that imports a helper module next to it: both are shipped by value, so
the nimbus and the workers load the code without finding either file."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import cloudpickle
import pytest

from cli.loader import load_topology

pytestmark = pytest.mark.timeout(60)


def test_a_helper_module_next_to_the_topology_file_travels_with_it(tmp_path: Path) -> None:
    (tmp_path / "loader_sibling_helper.py").write_text(
        textwrap.dedent(
            """
            from topology import BasicBolt

            class Upper(BasicBolt):
                outputs = ["word"]
                def process(self, tup):
                    self.emit([tup.values[0].upper()])
            """
        )
    )
    (tmp_path / "loader_sibling_main.py").write_text(
        textwrap.dedent(
            """
            from loader_sibling_helper import Upper
            from topology import TopologyBuilder
            from topology.testing import FeederSpout

            builder = TopologyBuilder()
            builder.set_spout("words", FeederSpout(["word"]))
            builder.set_bolt("upper", Upper()).shuffle_grouping("words")
            topology = builder.create_topology()
            """
        )
    )
    topology, _ = load_topology(f"{tmp_path / 'loader_sibling_main.py'}:topology", {})
    pickled = tmp_path / "code.pkl"
    pickled.write_bytes(cloudpickle.dumps(topology))
    # another process, elsewhere, where neither file can be imported
    loaded = subprocess.run(
        [sys.executable, "-c", "import cloudpickle, sys; "
         f"t = cloudpickle.loads(open({str(pickled)!r}, 'rb').read()); "
         "print(type(t.components['upper'].instance).__name__)"],
        cwd="/", capture_output=True, text=True, timeout=50,
    )  # fmt: skip
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "Upper"

"""Issue 28 (papercut 3): a traceback from user code names the user's file and line.

The file given to ``sparkstorm submit`` / ``local`` is shipped to the workers by value
(cloudpickle), and cloudpickle replaces the file name of every code object it pickles by
value with ``<dynamic-code>``.  :func:`topology.deploy.shipping.dumps` keeps it."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import cloudpickle
import pytest

from cli.loader import load_module
from topology.deploy.shipping import dumps

pytestmark = pytest.mark.timeout(30)

USER_FILE = """
from topology import BasicBolt


def helper(word):
    return int(word)  # line 6


class Parse(BasicBolt):
    outputs = ["n"]

    def process(self, tup):
        self.emit([helper(tup[0])])  # line 13
"""


def _frames(exc: BaseException) -> list[tuple[str, int]]:
    return [(f.filename, f.lineno or 0) for f in traceback.extract_tb(exc.__traceback__)]


def test_code_shipped_by_value_keeps_its_file_and_lines(tmp_path: Path) -> None:
    path = tmp_path / "papercut_user_code.py"
    path.write_text(USER_FILE)
    module = load_module(str(path))  # registered to be pickled by value, as the CLI does
    try:
        bolt = cloudpickle.loads(dumps(module.Parse()))
        with pytest.raises(ValueError) as caught:
            type(bolt).process(bolt, ["zebra"])
    finally:
        sys.modules.pop(module.__name__, None)
        cloudpickle.unregister_pickle_by_value(module)
    frames = _frames(caught.value)
    assert (str(path), 13) in frames
    assert (str(path), 6) in frames
    assert not any(name == "<dynamic-code>" for name, _ in frames)
    assert f'File "{path}", line 6, in helper' in "".join(traceback.format_exception(caught.value))


def test_the_worker_payloads_are_pickled_with_it() -> None:
    """LocalCluster's worker setup and the cluster's stored code both go through it."""
    root = Path(__file__).resolve().parents[2] / "topology" / "deploy"
    for module in ("local/topology.py", "cluster/client.py"):
        source = (root / module).read_text()
        assert "cloudpickle.dumps" not in source, module
        assert "dumps(" in source, module

"""Issue 28 (papercut 5): piped ``status`` output (a file, ``| less``) shows every column.

rich assumes 80 columns when stdout is no terminal: the Bolts table was cropped before
``capacity`` — the bottleneck signal — and headers wrapped inside words (``execute`` /
``d``).  Piped output is now :data:`cli.status_view.PIPED_WIDTH` wide, and a header never
breaks inside a word on a narrow terminal either."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from cli import status as status_cli
from cli.main import cli
from cli.status_view import bolts_table
from tests.unit.status_helpers import make_report

pytestmark = pytest.mark.timeout(30)


class _Cluster:
    conf = {"topology.stats.interval.secs": 1.0}

    def stats(self, name: str, window: str = "10m", fresh: bool = True) -> dict[str, Any]:
        report = make_report()
        report["bolts"][0]["id"] = "a-rather-long-bolt-name"
        return report


@pytest.fixture
def piped(monkeypatch: pytest.MonkeyPatch) -> None:
    @contextmanager
    def session(config: Any) -> Iterator[_Cluster]:
        yield _Cluster()

    monkeypatch.setattr(status_cli, "cluster_session", session)
    monkeypatch.delenv("COLUMNS", raising=False)


def test_piped_status_keeps_every_bolt_column_on_one_line(piped: None) -> None:
    result = CliRunner().invoke(cli, ["status", "wc"])  # CliRunner's stdout is no terminal
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = next(line for line in lines if "┃ bolt" in line)
    for column in ("executed", "failed", "execute ms", "process ms", "capacity"):
        assert column in header, column
    for bolt, capacity in (("a-rather-long-bolt-name", "0.953"), ("count", "0.800")):
        row = next(line for line in lines if f"│ {bolt} " in line)
        assert row.rstrip().endswith(f"{capacity} │"), row
        assert "(error 6, failed 40)" in result.output  # failure reasons not folded either


def test_a_narrow_terminal_folds_headers_between_words_only() -> None:
    console = Console(width=70, file=io.StringIO(), record=True, force_terminal=True)
    console.print(bolts_table(make_report()))
    text = console.export_text()
    assert "executed" in text  # never "execute" / "d"
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("┃│ ").split("┃")]
        assert "d" not in cells and "ed" not in cells, line

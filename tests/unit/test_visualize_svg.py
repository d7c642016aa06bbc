"""``sparkstorm visualize --format svg|png``: the web UI's drawing, and PNG without Graphviz.

PNG is made by CairoSVG (the ``png`` extra) or, without it, by a headless Chromium; each
path is tested where its tool is installed and skipped, naming the package, elsewhere.
"""

from __future__ import annotations

import shutil
import struct
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cli import visualize as vis
from cli.main import cli

pytestmark = pytest.mark.timeout(90)

ROOT = Path(__file__).resolve().parents[2]
WORDCOUNT = f"{ROOT / 'examples' / 'wordcount.py'}:topology"
SVG = "{http://www.w3.org/2000/svg}"


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:16]
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def has_cairosvg() -> bool:
    try:
        import cairosvg  # noqa: F401
    except (ImportError, OSError):
        return False
    return True


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_svg_format_prints_the_ui_drawing(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["visualize", WORDCOUNT, "--format", "svg"])
    assert result.exit_code == 0, result.output
    root = ET.fromstring(result.output)
    comps = [g.attrib["data-component"] for g in root.iter(f"{SVG}g") if "data-kind" in g.attrib]
    assert comps == ["sentences", "split", "count"]
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "fields[word]" in texts and not any("capacity" in (t or "") for t in texts)
    out = tmp_path / "wc.svg"
    result = CliRunner().invoke(cli, ["visualize", WORDCOUNT, "--format", "svg", "-o", str(out)])
    assert result.exit_code == 0 and result.output == ""
    assert ET.parse(out).getroot().attrib == root.attrib


@pytest.mark.skipif(not has_cairosvg(), reason="needs CairoSVG: pip install 'sparkstorm[png]'")
def test_png_by_cairosvg(tmp_path: Path) -> None:
    out = tmp_path / "wc.png"
    args = ["visualize", WORDCOUNT, "--format", "png", "-o", str(out), "--scale", "1.5"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    svg = ET.fromstring(CliRunner().invoke(cli, ["visualize", WORDCOUNT, "--format", "svg"]).output)
    width, height = png_size(out.read_bytes())
    assert (width, height) == (
        round(float(svg.attrib["width"]) * 1.5),
        round(float(svg.attrib["height"]) * 1.5),
    )


def test_png_to_stdout_when_redirected() -> None:
    if not has_cairosvg() and chromium() is None:
        pytest.skip("needs CairoSVG (pip install 'sparkstorm[png]') or chromium (apt)")
    runner = CliRunner()
    result = runner.invoke(cli, ["visualize", WORDCOUNT, "--format", "png"])
    assert result.exit_code == 0, result.output
    assert png_size(result.stdout_bytes)[0] > 100


@pytest.mark.skipif(chromium() is None, reason="needs Chromium: apt-get install chromium")
def test_png_by_chromium_when_cairosvg_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cairosvg", None)  # import raises ImportError
    svg = vis.to_svg({"s": {"kind": "spout", "tasks": 1, "inputs": []}}, "one")
    width, height = png_size(vis.svg_to_png(svg, scale=2.0))
    root = ET.fromstring(svg)
    assert (width, height) == (2 * int(root.attrib["width"]), 2 * int(root.attrib["height"]))


def test_png_without_cairosvg_or_chromium_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "cairosvg", None)
    monkeypatch.setattr(vis.shutil, "which", lambda name: None)
    with pytest.raises(click.ClickException) as err:
        vis.svg_to_png("<svg/>")
    assert "pip install 'sparkstorm[png]'" in err.value.message
    assert "libcairo2" in err.value.message and "apt-get install chromium" in err.value.message
    result = CliRunner().invoke(cli, ["visualize", WORDCOUNT, "--format", "png"])
    assert result.exit_code == 1 and "sparkstorm[png]" in result.output

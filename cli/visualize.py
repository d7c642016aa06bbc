"""``sparkstorm visualize FILE:ATTR|NAME``: draw a topology as text, DOT, Mermaid, SVG or PNG.

A running topology NAME is drawn live: the web UI's graph (:mod:`cli.live_graph`), with
its edges' rates and its bolts' capacities.

PNG is the SVG rasterised without Graphviz: by CairoSVG when it imports (the ``png`` extra;
it needs the cairo library, Debian's ``libcairo2``), else by a headless Chromium found on
the PATH (Debian's ``chromium``); with neither, a one-line error names both.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from cli.drawing import to_dot, to_mermaid, to_rich, to_svg, to_text
from topology.spec import describe_components

from .common import cluster_session
from .live_graph import live_graph, say_without_rates
from .loader import load_topology, names_a_file
from .options import ConfigSource, check_topology_name, config_options
from .status import window_option


def is_file_target(target: str) -> bool:
    """``FILE:ATTR`` (or a bare ``FILE``) rather than a running topology's name?

    Yes when the part before the last ``:`` (or, with no ``:``, the whole target) is an
    existing file, and also when it plainly names a file (ends in ``.py`` or holds a
    ``/``, which topology names cannot) so that a mistyped path gets "no such file"
    instead of a ZooKeeper lookup, and a bare file gets the list of its topologies."""
    path, sep, attr = target.rpartition(":")
    if not sep:  # FILE alone: load_topology lists what ATTR may be
        return names_a_file(target)
    if not path:
        return False
    return names_a_file(path)


def load_file_components(target: str, conf: dict[str, Any] | None = None) -> dict[str, Any]:
    topology, _ = load_topology(target, conf)  # user errors: one-line ClickExceptions
    return describe_components(topology)


def load_running_graph(
    name: str, window: str, config: ConfigSource
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``name``'s recorded components and its live graph (:func:`cli.live_graph.live_graph`:
    the web UI's, rates and capacities); a note on stderr when it has no rates."""
    with cluster_session(config) as cluster:
        record = cluster.zk.read_record(cluster.topology_id(name))
        if not record or "components" not in record:
            raise click.ClickException(f"topology {name!r} has no recorded components")
        components: dict[str, Any] = record["components"]
        graph, has_rates = live_graph(cluster, name, components, window)
    if not has_rates:
        say_without_rates(name)
    return components, graph


PNG_MISSING = (
    "--format png needs CairoSVG or Chromium: pip install 'sparkstorm[png]' (CairoSVG; it "
    "needs the cairo library: apt-get install libcairo2), or apt-get install chromium"
)
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def _svg_size(svg: str) -> tuple[int, int]:
    """The ``width`` and ``height`` attributes of :func:`topology.ui.svg.render_svg`'s root."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(svg)
    return int(float(root.attrib["width"])), int(float(root.attrib["height"]))


def chromium_png(svg: str, scale: float, browser: str, timeout: float = 60.0) -> bytes:
    """``svg`` as PNG by a headless Chromium's screenshot of it (a fresh profile each time)."""
    width, height = _svg_size(svg)
    with tempfile.TemporaryDirectory(prefix="sparkstorm-png-") as tmp:
        page, out = Path(tmp) / "graph.svg", Path(tmp) / "graph.png"
        page.write_text(svg, encoding="utf-8")
        command = [
            browser,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp}/profile",
            f"--force-device-scale-factor={scale}",
            f"--window-size={width},{height}",
            f"--screenshot={out}",
            page.as_uri(),
        ]
        done = subprocess.run(command, capture_output=True, timeout=timeout, check=False)
        if not out.is_file():
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
            raise click.ClickException(f"{browser} drew no PNG: {' '.join(tail) or done}")
        return out.read_bytes()


def svg_to_png(svg: str, scale: float = 2.0, browser: str | None = None) -> bytes:
    """``svg`` rasterised at ``scale``: by CairoSVG if it imports (and finds libcairo), else
    by ``browser`` or the ``chromium`` on the PATH; a ClickException naming what to
    install when neither is there."""
    try:
        import cairosvg  # the png extra
    except (ImportError, OSError):  # OSError: cairocffi found no libcairo
        browser = browser or shutil.which("chromium") or shutil.which("chromium-browser")
        if browser is None:
            raise click.ClickException(PNG_MISSING) from None
        return chromium_png(svg, scale, browser)
    png: bytes = cairosvg.svg2png(bytestring=svg.encode("utf-8"), scale=scale)
    return png


def _write(data: str | bytes, output: Path | None) -> None:
    """To ``output``, else stdout; binary data is refused on a terminal."""
    if output is not None:
        if isinstance(data, bytes):
            output.write_bytes(data)
        else:
            output.write_text(data, encoding="utf-8")
    elif isinstance(data, bytes):
        if sys.stdout.isatty():
            raise click.ClickException("a PNG is binary: give -o FILE.png or redirect stdout")
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        click.echo(data, nl=False)


@click.command()
@click.argument("target", metavar="FILE:ATTR|NAME")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "dot", "mermaid", "svg", "png"]),
    default="text",
    show_default=True,
    help="text (coloured trees on a terminal, plain lines otherwise), Graphviz dot, "
    "a Mermaid flowchart, or the web UI's drawing as SVG or PNG (PNG needs CairoSVG — "
    "pip install 'sparkstorm[png]' — or Chromium).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Write to this file instead of stdout (a PNG needs it on a terminal).",
)
@click.option(
    "--scale",
    type=click.FloatRange(0.25, 8),
    default=2.0,
    show_default=True,
    help="PNG only: pixels per SVG unit.",
)
@window_option
@config_options
def visualize(
    target: str, fmt: str, output: Path | None, scale: float, window: str, config: ConfigSource
) -> None:
    """Draw the topology in FILE:ATTR, or the running topology NAME (read from ZooKeeper).

    NAME is drawn live, as the web UI draws it (/api/v1/topology/NAME/graph.svg): each
    edge's tuples per second (its workers are asked twice, a second or so apart) and each
    bolt's capacity over --window; the text formats add them as labels.

    \b
    sparkstorm visualize examples/wordcount.py:topology
    sparkstorm visualize examples/wordcount.py:topology --format dot | dot -Tsvg > wc.svg
    sparkstorm visualize wordcount --format mermaid
    sparkstorm visualize examples/wordcount.py:topology --format png -o wc.png
    """
    graph: dict[str, Any] | None = None
    if is_file_target(target):
        components = load_file_components(target, config.build())
    else:
        components, graph = load_running_graph(check_topology_name(target), window, config)
    if fmt == "png":
        _write(svg_to_png(to_svg(components, target, graph), scale), output)
    elif fmt in ("dot", "mermaid", "svg"):
        draw = {"dot": to_dot, "mermaid": to_mermaid, "svg": to_svg}[fmt]
        _write(draw(components, target, graph), output)
    elif sys.stdout.isatty() and output is None:
        Console().print(to_rich(components, target, graph))
    else:
        _write(to_text(components, target, graph), output)

"""The RSS of the state cases' workers over their runs, drawn as an SVG by hand (no
plotting library needed): per worker, the 10M-key lmdb case's total RSS (solid) and its
anonymous part (dashed), the 10M-key memory case's total RSS (orange) and the 10k-key
memory case's (grey)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

WIDTH, HEIGHT = 760, 380
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 40, 50
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def _nice(top: float) -> float:
    """A round axis maximum at or above ``top``."""
    for step in (10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000):
        if top <= step * 5:
            return step * (int(top / step) + 1)
    return top


def _line(
    points: list[tuple[float, float]], colour: str, dash: str = "", width: float = 1.8
) -> str:
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    extra = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<polyline fill="none" stroke="{colour}" stroke-width="{width}"{extra} points="{path}"/>'
    )


def _grey(case: dict[str, Any]) -> str:
    return "#999" if case["keys"] <= 10_000 else "#ff7f0e"


def frame(
    title: str, secs: float, top: float, right: int = RIGHT
) -> tuple[list[str], Callable[[float, float], tuple[float, float]], float]:
    """An RSS plot's SVG so far (header, ``title``, MB grid up to ``top``, seconds ticks
    up to ``secs``, axis labels), its ``xy(seconds, MB)`` -> point, and the plot's width
    (a ``right`` margin for a legend there)."""
    plot_w, plot_h = WIDTH - LEFT - right, HEIGHT - TOP - BOTTOM

    def xy(t: float, mb: float) -> tuple[float, float]:
        return LEFT + t / secs * plot_w, TOP + plot_h - mb / top * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="14">{title}</text>',
    ]
    for i in range(6):
        mb = top * i / 5
        _, y = xy(0, mb)
        out.append(
            f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{mb:.0f}</text>')
    for i in range(7):
        t = secs * i / 6
        x, _ = xy(t, 0)
        out.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{t:.0f}</text>')
    out.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 8}" text-anchor="middle">'
        "seconds since the workers started</text>"
    )
    out.append(
        f'<text x="14" y="{TOP + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + plot_h / 2})">MB</text>'
    )
    return out, xy, plot_w


def save(path: str, out: list[str]) -> None:
    """Close the SVG ``out`` and write it to ``path``."""
    out.append("</svg>")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def write_svg(
    path: str, big: dict[str, Any], small: dict[str, Any], same: dict[str, Any] | None = None
) -> None:
    """Draw the cases' ``rss_series`` into ``path`` (``same``: the 10M keys in memory, in
    orange, when it ran)."""
    series = [(big, True), (small, False)]
    if same and same.get("rss_series"):
        series.append((same, False))
    secs = max(s["rss_series"][-1][0] for s, _ in series if s.get("rss_series"))
    top = _nice(max(max(w[0] for w in sample[1]) for s, _ in series for sample in s["rss_series"]))
    title = (
        f"Worker RSS over the run: "
        f"{big['keys']:,} keys on lmdb"
        + (f" and in memory, {small['keys']:,} keys in memory" if len(series) > 2 else "")
        + (f" vs {small['keys']:,} keys in memory" if len(series) == 2 else "")
    )
    out, xy, _ = frame(title, secs, top)
    legend = []
    for case, is_big in series:
        workers = len(case["rss_series"][0][1])
        for w in range(workers):
            total = [xy(t, sample[w][0]) for t, sample in case["rss_series"]]
            if is_big:
                colour = COLOURS[w % len(COLOURS)]
                anon = [xy(t, sample[w][1]) for t, sample in case["rss_series"]]
                out.append(_line(total, colour))
                out.append(_line(anon, colour, "6,4"))
                legend.append((colour, "", f"worker {w}, lmdb: total RSS"))
                legend.append((colour, "6,4", f"worker {w}, lmdb: anonymous"))
            else:
                out.append(_line(total, _grey(case), width=1.2))
        if not is_big:
            what = f"memory backend, {case['keys']:,} keys: total RSS"
            legend.append((_grey(case), "", what))
    for i, (colour, dash, label) in enumerate(legend):
        y = TOP + 10 + i * 16
        x = LEFT + 12
        out.append(_line([(x, y), (x + 24, y)], colour, dash))
        out.append(f'<text x="{x + 30}" y="{y + 4}">{label}</text>')
    save(path, out)

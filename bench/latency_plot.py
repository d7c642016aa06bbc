"""The latency-vs-load chart of the ``latency-load-*`` cases (:mod:`latency_cases`), drawn
as a PNG with Pillow (no plotting library needed).

x: the load, % of the acked capacity measured in the same run; y: complete latency in ms on
a log scale.  One line per percentile (p50 blue, p99 orange, p99.9 red) per worker count (1
worker solid with dots, 2 dashed with squares, more dotted with diamonds); a hollow marker
is a load whose pace the spouts did not hold.  The targets (p99 ≤ 10 ms at 50 %, p99.9 ≤
50 ms at 75 %) are dashed grey marks at their load.  Drawn at twice the size and scaled down,
for smooth lines.
"""

from __future__ import annotations

import math
import os
from typing import Any

from PIL import Image, ImageDraw, ImageFont

#: The PNG's size in pixels.
WIDTH, HEIGHT = 900, 540
#: Drawn at this multiple of the size, then scaled down (anti-aliasing).
SCALE = 2
LEFT, RIGHT, TOP, BOTTOM = 72, 250, 56, 58
#: The percentiles drawn: (result key, label, colour).
PERCENTILES = (("p50", "p50", "#1f77b4"), ("p99", "p99", "#ff7f0e"), ("p999", "p99.9", "#d62728"))
#: Per worker count (1, 2, more): (dash pattern in px, or None for solid; marker shape).
STYLES = ((None, "circle"), ((9, 6), "square"), ((2, 4), "diamond"))
#: The targets: (load, percentile label, bound in ms).
TARGETS = ((0.5, "p99", 10.0), (0.75, "p99.9", 50.0))
#: A pace counts as held when the spouts emitted at least this share of it.
HELD = 0.95
GRID, AXIS, TEXT, TARGET = "#e4e4e4", "#444444", "#222222", "#777777"


def _font(size: int, bold: bool = False) -> Any:
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    for path in (name, os.path.join("/usr/share/fonts/truetype/dejavu", name)):
        try:
            return ImageFont.truetype(path, size * SCALE)
        except OSError:
            continue
    return ImageFont.load_default(size * SCALE)


def _s(*values: float) -> list[float]:
    return [v * SCALE for v in values]


def _dashed(
    draw: Any, points: list[tuple[float, float]], colour: str, width: int, dash: Any
) -> None:
    """A polyline, solid (``dash`` None) or dashed with ``(on, off)`` pixels (unscaled)."""
    if dash is None:
        draw.line(points, fill=colour, width=width * SCALE, joint="curve")
        return
    on, off = dash[0] * SCALE, dash[1] * SCALE
    phase = 0.0  # distance into the current on+off period
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        length = math.hypot(x1 - x0, y1 - y0)
        at = 0.0
        while at < length:
            in_on = phase < on
            step = min(length - at, (on - phase) if in_on else (on + off - phase))
            if in_on:
                a, b = at / length, (at + step) / length
                start = (x0 + (x1 - x0) * a, y0 + (y1 - y0) * a)
                end = (x0 + (x1 - x0) * b, y0 + (y1 - y0) * b)
                draw.line([start, end], fill=colour, width=width * SCALE)
            at += step
            phase = (phase + step) % (on + off)


def _marker(draw: Any, x: float, y: float, shape: str, colour: str, filled: bool) -> None:
    r = 4.5 * SCALE
    fill = colour if filled else "white"
    width = 2 * SCALE
    if shape == "circle":
        draw.ellipse([x - r, y - r, x + r, y + r], fill=fill, outline=colour, width=width)
    elif shape == "square":
        r *= 0.9
        draw.rectangle([x - r, y - r, x + r, y + r], fill=fill, outline=colour, width=width)
    else:
        r *= 1.2
        draw.polygon([(x, y - r), (x + r, y), (x, y + r), (x - r, y)], fill=fill, outline=colour)


def _workers(name: Any, result: dict[str, Any]) -> int:
    return int(result.get("workers") or str(name).rsplit("-", 1)[-1])


def _y_range(found: dict[int, dict[str, Any]]) -> tuple[int, int]:
    """Decades (log10 of ms) spanning every value and the target bounds."""
    values = [b for _, _, b in TARGETS]
    for r in found.values():
        values += [row[k] for row in r["loads"] for k, _, _ in PERCENTILES if row.get(k)]
    low = math.floor(math.log10(max(min(values), 0.01)))
    high = math.ceil(math.log10(max(values) * 1.05))
    return min(low, 0), max(high, low + 1)


def _axes(draw: Any, xy: Any, decades: tuple[int, int], font: Any) -> None:
    """Grid, ticks and tick labels."""
    x0, x1 = LEFT * SCALE, (WIDTH - RIGHT) * SCALE
    y0, y1 = TOP * SCALE, (HEIGHT - BOTTOM) * SCALE
    for decade in range(decades[0], decades[1] + 1):
        for m in (1, 2, 5) if decade < decades[1] else (1,):
            _, y = xy(0, m * 10.0**decade)
            draw.line([(x0, y), (x1, y)], fill=GRID, width=SCALE if m == 1 else SCALE // 2 or 1)
            if m == 1 or decades[1] - decades[0] <= 2:
                label = f"{m * 10.0**decade:g}"
                draw.text((x0 - 8 * SCALE, y), label, fill=TEXT, font=font, anchor="rm")
    for pct in range(0, 101, 25):
        x, _ = xy(pct / 100, 10.0 ** decades[0])
        draw.line([(x, y0), (x, y1)], fill=GRID, width=SCALE)
        draw.line([(x, y1), (x, y1 + 5 * SCALE)], fill=AXIS, width=SCALE)
        draw.text((x, y1 + 8 * SCALE), f"{pct} %", fill=TEXT, font=font, anchor="mt")
    draw.rectangle([x0, y0, x1, y1], outline=AXIS, width=SCALE)


def _held(row: dict[str, Any]) -> bool:
    return bool(row.get("rate")) and row.get("achieved", 0) >= HELD * row["rate"]


def _series(draw: Any, xy: Any, found: dict[int, dict[str, Any]]) -> None:
    """One line per percentile per worker count, markers on the measured loads."""
    for i, (_, r) in enumerate(sorted(found.items())):
        dash, shape = STYLES[min(i, len(STYLES) - 1)]
        for key, _, colour in PERCENTILES:
            rows = [row for row in sorted(r["loads"], key=lambda x: x["load"]) if row.get(key)]
            points = [xy(row["load"], row[key]) for row in rows]
            if len(points) > 1:
                _dashed(draw, points, colour, 2, dash)
            for row, (x, y) in zip(rows, points):
                _marker(draw, x, y, shape, colour, _held(row))


def _targets(draw: Any, xy: Any, font: Any) -> None:
    for load, label, bound in TARGETS:
        xa, y = xy(load - 0.08, bound)
        xb, _ = xy(load + 0.08, bound)
        _dashed(draw, [(xa, y), (xb, y)], TARGET, 2, (6, 4))
        text = f"{label} ≤ {bound:g} ms"
        draw.text((xa, y - 3 * SCALE), text, fill=TARGET, font=font, anchor="ld")


def _legend(draw: Any, found: dict[int, dict[str, Any]], font: Any, bold: Any) -> None:
    x = (WIDTH - RIGHT + 18) * SCALE
    y = (TOP + 6) * SCALE
    line = 20 * SCALE
    draw.text((x, y), "percentile", fill=TEXT, font=bold)
    y += line
    for _, label, colour in PERCENTILES:
        mid = y + 8 * SCALE
        draw.line([(x, mid), (x + 32 * SCALE, mid)], fill=colour, width=3 * SCALE)
        draw.text((x + 40 * SCALE, y + 8 * SCALE), label, fill=TEXT, font=font, anchor="lm")
        y += line
    y += line // 2
    draw.text((x, y), "workers (acked capacity)", fill=TEXT, font=bold)
    y += line
    for i, (w, r) in enumerate(sorted(found.items())):
        dash, shape = STYLES[min(i, len(STYLES) - 1)]
        mid = y + 8 * SCALE
        _dashed(draw, [(x, mid), (x + 32 * SCALE, mid)], AXIS, 2, dash)
        _marker(draw, x + 16 * SCALE, mid, shape, AXIS, True)
        capacity = r["capacity_sentences_per_sec"]
        text = f"{w}: {capacity:,.0f} sentences/s"
        draw.text((x + 40 * SCALE, mid), text, fill=TEXT, font=font, anchor="lm")
        y += line
    y += line // 2
    _dashed(draw, [(x, y + 8 * SCALE), (x + 32 * SCALE, y + 8 * SCALE)], TARGET, 2, (6, 4))
    draw.text((x + 40 * SCALE, y + 8 * SCALE), "target bound", fill=TEXT, font=font, anchor="lm")
    y += line
    _marker(draw, x + 16 * SCALE, y + 8 * SCALE, "circle", AXIS, False)
    draw.text((x + 40 * SCALE, y + 8 * SCALE), "pace not held", fill=TEXT, font=font, anchor="lm")


def write_png(path: str, results: dict[Any, dict[str, Any]]) -> None:
    """Draw ``results`` (the ``latency-load-*`` cases' results by name, or by worker count)
    into ``path``."""
    found = {_workers(k, v): v for k, v in results.items() if "error" not in v and v.get("loads")}
    if not found:
        return
    decades = _y_range(found)
    image = Image.new("RGB", (WIDTH * SCALE, HEIGHT * SCALE), "white")
    draw = ImageDraw.Draw(image)
    font, small, bold = _font(12), _font(11), _font(12, bold=True)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    span = decades[1] - decades[0]

    def xy(load: float, ms: float) -> tuple[float, float]:
        up = (math.log10(max(ms, 10.0 ** decades[0])) - decades[0]) / span
        return (LEFT + load * plot_w) * SCALE, (TOP + plot_h - up * plot_h) * SCALE

    _axes(draw, xy, decades, font)
    _targets(draw, xy, small)
    _series(draw, xy, found)
    _legend(draw, found, font, bold)
    title = "Complete latency (emit → spout ack) against load, README word count, acked"
    draw.text(_s(LEFT, 22), title, fill=TEXT, font=_font(14, bold=True), anchor="lm")
    x_label = "load: % of the acked capacity measured in the same run"
    draw.text(_s(LEFT + plot_w / 2, HEIGHT - 16), x_label, fill=TEXT, font=font, anchor="mm")
    label = Image.new("RGB", (plot_h * SCALE, 20 * SCALE), "white")
    ImageDraw.Draw(label).text(
        _s(plot_h / 2, 10), "complete latency, ms (log scale)", fill=TEXT, font=font, anchor="mm"
    )
    image.paste(label.rotate(90, expand=True), (int(14 * SCALE), TOP * SCALE))
    image = image.resize((WIDTH, HEIGHT), Image.Resampling.LANCZOS)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    image.save(path, optimize=True)

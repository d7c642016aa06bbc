"""Rich renderings of a status report (see topology.stats.status_report for its schema)."""

from __future__ import annotations

import os
import time
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from topology.stats.status_report import CAPACITY_WARNING
from topology.status import TopologyStatus

SPARK_CHARS = "▁▂▃▄▅▆▇█"


def count(value: float) -> str:
    """A count for a table cell: exact up to 999,999, then 1.23M / 4.56G (JSON stays exact)."""
    if abs(value) < 1_000_000:
        return f"{value:,.0f}"
    if abs(value) < 1_000_000_000:
        return f"{value / 1e6:.2f}M"
    return f"{value / 1e9:.2f}G"


def data_size(n: float) -> str:
    """Bytes for a table cell, in decimal units: ``512 B``, ``1.50 kB``, ``34.0 MB``,
    ``340 MB``, ``2.10 GB``."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            v = n / scale
            return (
                f"{v:.2f} {unit}" if v < 10 else f"{v:.1f} {unit}" if v < 100 else f"{v:.0f} {unit}"
            )
    return f"{n:.0f} B"


def state_size(keys: int, size: int) -> str:
    """A live state's size: ``1.20M keys, 340 MB``."""
    return f"{count(keys)} keys, {data_size(size)}"


def cache_hits(row: dict[str, Any]) -> str:
    """A disk-backed state's cache hit rate, ``", 93.5% cached"`` (empty without one)."""
    rate = row.get("state_cache_hit_rate")
    return "" if rate is None else f", {rate:.1%} cached"


def _ms(value: float) -> str:
    return f"{value:,.3f}" if value < 10 else f"{value:,.1f}"


def _age(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f}s"


def _uptime(seconds: float | None) -> str:
    if not seconds:
        return "-"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


#: Columns of piped output (a file, ``| less``, ``| grep``), where rich would assume 80:
#: wide enough that no table is cropped or folded.
PIPED_WIDTH = 250


def view_console() -> Console:
    """The Console commands print their views on: a terminal's own width; piped output
    :data:`PIPED_WIDTH` columns (``$COLUMNS`` when set), so that every column of every
    table — the Bolts table's capacity last — reaches a script or a log whole."""
    console = Console()
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console.width = PIPED_WIDTH
    return console


def sparkline(values: list[float]) -> str:
    """One character per value, scaled to the largest."""
    top = max(values, default=0.0)
    if top <= 0:
        return SPARK_CHARS[0] * len(values)
    return "".join(SPARK_CHARS[min(7, int(v / top * 7.999))] for v in values)


def table_with_key(
    title: str, columns: tuple[str, ...], numeric_from: int = 99, key_width: int = 0
) -> Table:
    """A titled table whose first column identifies the row: it is never cut short (at
    least ``key_width`` wide, no wrapping); on a narrow terminal the other columns fold.
    Columns from index ``numeric_from`` on are right-aligned numbers.  A header may wrap
    between its words (``execute`` / ``ms``), never inside one (``execute`` / ``d``)."""
    table = Table(title=title, title_justify="left")
    for i, column in enumerate(columns):
        if i == 0:
            table.add_column(column, no_wrap=True, min_width=max(key_width, len(column)))
        else:  # headers stay whole where they can; long values fold
            table.add_column(
                column,
                justify="right" if i >= numeric_from else "left",
                overflow="fold",
                min_width=max(len(word) for word in column.split()),  # no word is split
            )
    return table


def key_width(rows: list[dict[str, Any]], key: str = "id") -> int:
    return max((len(str(row[key])) for row in rows), default=0)


def summary_table(report: dict[str, Any]) -> Table:
    t = report["topology"]
    table = table_with_key(
        f"Topology {t['name']}  (window {report['window_name']})",
        ("status", "uptime", "workers", "tasks", "id"),
    )
    status = t["status"] or "?"
    styles: dict[str, str] = {TopologyStatus.ACTIVE: "green", TopologyStatus.INACTIVE: "yellow"}
    style = styles.get(status, "red")
    table.add_row(
        Text(status, style=style),
        _uptime(t["uptime_secs"]),
        f"{t['workers_alive']}/{t['workers']}",
        str(t["tasks"]),
        str(t["id"]),
    )
    return table


def spouts_table(report: dict[str, Any]) -> Table:
    table = table_with_key(
        "Spouts",
        ("spout", "tasks", "emitted", "acked", "failed", "pending", "complete latency ms"),
        numeric_from=1,
        key_width=key_width(report["spouts"]),
    )
    letters = _dead_letters_column(table, report["spouts"])
    for s in report["spouts"]:
        table.add_row(
            s["id"],
            str(s["tasks"]),
            count(s["emitted"]),
            count(s["acked"]),
            _failed(s),
            count(s["pending"]),
            _ms(s["complete_latency_ms"]),
            *([_dead_lettered(s)] if letters else []),
        )
    return table


def _dead_letters_column(table: Table, rows: list[dict[str, Any]]) -> bool:
    """Add a "dead letters" column when a row has any (docs/ERRORS.md); whether it did."""
    if not any(row.get("dead_lettered") for row in rows):
        return False
    table.add_column("dead letters", justify="right", overflow="fold", min_width=5)
    return True


def _dead_lettered(row: dict[str, Any]) -> Text:
    """The inputs a component gave up on, and its further attempts: ``12 (retried 36)``."""
    text = count(row.get("dead_lettered", 0))
    if row.get("retried"):
        text += f" (retried {row['retried']:,})"
    return Text(text, style="yellow" if row.get("dead_lettered") else "")


def _failed(row: dict[str, Any]) -> Text:
    """A spout's or bolt's failed count with its reasons, e.g. ``12 (error 2, failed 10)``."""
    failed = count(row["failed"])
    if row["failed_by"]:
        failed += " (" + ", ".join(f"{k} {v:,}" for k, v in sorted(row["failed_by"].items())) + ")"
    return Text(failed, style="red" if row["failed"] else "")


def bolts_table(report: dict[str, Any]) -> Table:
    table = table_with_key(
        "Bolts",
        (
            "bolt",
            "tasks",
            "executed",
            "emitted",
            "acked",
            "failed",
            "execute ms",
            "process ms",
            "capacity",
        ),
        numeric_from=1,
        key_width=key_width(report["bolts"]),
    )
    stateful = any("state_keys" in b for b in report["bolts"])
    if stateful:  # the live state of each stateful bolt's tasks, summed
        table.add_column("state", justify="right", overflow="fold", min_width=5)
    letters = _dead_letters_column(table, report["bolts"])
    for b in report["bolts"]:
        capacity = Text(
            f"{b['capacity']:.3f}", style="bold red" if b["capacity"] > CAPACITY_WARNING else ""
        )
        sized = "state_keys" in b
        state = [state_size(b["state_keys"], b["state_bytes"]) + cache_hits(b) if sized else "-"]
        table.add_row(
            b["id"],
            str(b["tasks"]),
            count(b["executed"]),
            count(b["emitted"]),
            count(b["acked"]),
            _failed(b),
            _ms(b["execute_latency_ms"]),
            _ms(b["process_latency_ms"]),
            capacity,
            *(state if stateful else []),
            *([_dead_lettered(b)] if letters else []),
        )
    return table


#: Seconds a worker's executor may spend in one turn before the view says where it is.
BUSY_SHOWN_SECS = 5.0


def _worker_state(w: dict[str, Any], stale_after: float) -> Text:
    """The heartbeat age, or what is wrong (down with its relaunch due, stale, busy in
    user code), then frames it refused, if any."""
    suffix = f", {w['dropped_frames']} bad frames" if w.get("dropped_frames") else ""
    if suffix and w.get("dropped_by"):  # the two most frequent reasons
        top = sorted(w["dropped_by"].items(), key=lambda kv: -kv[1])[:2]
        suffix += " (" + ", ".join(f"{reason} {n}" for reason, n in top) + ")"
    if w.get("next_start_in_secs") is not None:
        return Text(f"DOWN, restart in {w['next_start_in_secs']:.0f}s{suffix}", style="bold red")
    age = w["heartbeat_age_secs"]
    if age is None or age > stale_after:
        return Text(_age(age) + " STALE" + suffix, style="bold red")
    stalled = w.get("stalled_secs") or 0.0
    if stalled >= BUSY_SHOWN_SECS:
        where = f" in {w['busy_in']}" if w.get("busy_in") else ""
        return Text(f"BUSY {stalled:.0f}s{where}{suffix}", style="bold yellow")
    return Text(_age(age) + suffix, style="yellow" if suffix else "")


def _backpressure(w: dict[str, Any]) -> Text:
    """``congested`` (it holds frames for a full peer: every spout waits), ``throttled by
    1,2`` (those peers' signals hold its spouts), or ``-``."""
    if w.get("congested"):
        return Text("congested", style="bold red")
    if w.get("throttled_by"):
        return Text(f"throttled by {','.join(map(str, w['throttled_by']))}", style="yellow")
    return Text("-")


def _last_reason(w: dict[str, Any]) -> Text:
    """The last line of why the worker was last relaunched (its own words), if it was."""
    lines = str(w.get("restart_reason") or "").strip().splitlines()
    return Text(lines[-1] if lines and w.get("restarts") else "-", style="yellow" if lines else "")


def workers_table(report: dict[str, Any], stale_after: float) -> Table:
    table = Table(title="Workers", title_justify="left")
    for column in ("worker", "host", "pid", "executor", "uptime", "last heartbeat", "tasks"):
        table.add_column(column)
    for w in report["workers"]:
        table.add_row(
            str(w["worker"]),
            str(w["host"] or "-"),
            str(w["pid"] or "-"),
            str(w["executor"] or "-"),
            _uptime(w["uptime_secs"]),
            _worker_state(w, stale_after),
            ",".join(map(str, w["tasks"])),
        )
    return table


def worker_flow_table(report: dict[str, Any]) -> Table:
    """Per worker: backpressure, the receive queue, and restarts with the last reason."""
    table = Table(title="Backpressure and restarts", title_justify="left")
    for column in ("worker", "backpressure", "receive queue", "restarts", "last restart reason"):
        table.add_column(
            column, justify="right" if column in ("receive queue", "restarts") else "left"
        )
    for w in report["workers"]:
        table.add_row(
            str(w["worker"]),
            _backpressure(w),
            f"{w.get('receive_queue') or 0:,}",
            str(w.get("restarts") or 0),
            _last_reason(w),
        )
    return table


#: Errors the ``Last errors`` table shows per component (the JSON report has more).
ERRORS_SHOWN_PER_COMPONENT = 3


def error_counts(report: dict[str, Any]) -> dict[str, int]:
    """Component -> errors its tasks reported in the report's window (all of them, also
    those whose text was not kept)."""
    rows = report["spouts"] + report["bolts"]
    return {row["id"]: int(row["errors"] or 0) for row in rows if "errors" in row}


def error_lines(errors: dict[str, list[dict[str, Any]]], counts: dict[str, int]) -> list[str]:
    """One line (rich markup) per component with errors: its true count (``counts``, else
    the number kept), how many texts were kept, and the last one."""
    lines = []
    for component in sorted(set(errors) | {c for c, n in counts.items() if n}):
        items = errors.get(component, [])
        total = counts.get(component, len(items))
        line = f"[red]{total:,} error(s) in {escape(component)}[/red]"
        if items:
            line += f" ({len(items)} kept); last: {escape(str(items[-1]['text']))}"
        lines.append(line)
    return lines


def errors_table(report: dict[str, Any]) -> Table | Text:
    """Each component's last :data:`ERRORS_SHOWN_PER_COMPONENT` errors (newest first)
    beside its true count in the window (``-`` for a report without counts); components
    with the most errors first, then the one with the newest error."""
    counts = error_counts(report)
    by_component: dict[str, list[dict[str, Any]]] = {}
    for e in report["errors"]:  # newest first
        by_component.setdefault(e["component"], []).append(e)
    if not by_component and not any(counts.values()):
        return Text("No errors reported.", style="green")
    table = Table(title="Last errors", title_justify="left")
    for column in ("when", "component", "errors", "task", "host", "error"):
        table.add_column(column, justify="right" if column == "errors" else "left")

    def newest(component: str) -> float:
        return max((e["time"] or 0.0 for e in by_component.get(component, [])), default=0.0)

    order = sorted(
        set(by_component) | {c for c, n in counts.items() if n},
        key=lambda c: (-counts.get(c, 0), -newest(c), c),
    )
    for component in order:
        shown = by_component.get(component, [])[:ERRORS_SHOWN_PER_COMPONENT]
        total = count(counts[component]) if component in counts else "-"
        if not shown:  # counted, but no text kept (yet)
            table.add_row("-", component, total, "-", "-", Text("(no text kept)", style="dim"))
        for i, e in enumerate(shown):
            when = time.strftime("%H:%M:%S", time.localtime(e["time"])) if e["time"] else "-"
            lines = [line for line in str(e["text"]).splitlines() if line.strip()]
            table.add_row(
                when,
                component if i == 0 else "",
                total if i == 0 else "",
                str(e["task"] if e["task"] is not None else "-"),
                str(e["host"] or "-"),
                Text(lines[-1] if lines else "", style="red"),
            )
    return table


#: A last complete checkpoint older than this many intervals is shown as a warning.
CHECKPOINT_LATE_INTERVALS = 3


def checkpoints_line(report: dict[str, Any]) -> Text | None:
    """One line on checkpoints for a checkpointed topology: the last complete one and its
    age, the totals, and a warning while recovering or when none completed lately."""
    c = report.get("checkpoints")
    if not c:
        return None
    age, interval = c.get("last_complete_age_secs"), c.get("interval_secs") or 1.0
    if c.get("last_complete") is None or age is None:
        head, style = "Checkpoints: none complete yet", "yellow"
    else:
        head = (
            f"Checkpoints: #{c['last_complete']} complete {age:.1f}s ago "
            f"(took {1000 * (c.get('last_duration_secs') or 0):.0f} ms)"
        )
        style = "bold yellow" if age > CHECKPOINT_LATE_INTERVALS * interval else "green"
    parts = [
        f"{c.get('completed') or 0} completed",
        f"{c.get('abandoned') or 0} abandoned",
        f"{c.get('recoveries') or 0} recoveries",
        f"{c.get('waiting_acks') or 0} spout acks waiting for a commit",
    ]
    if c.get("declined"):
        parts.append(f"{c['declined']} declined (alignment gave up)")
    if c.get("restore_refused"):
        parts.append(f"{c['restore_refused']} restored entries refused (see errors)")
    sized = [b for b in report.get("bolts", []) if "state_keys" in b]
    if sized:
        keys = sum(b["state_keys"] for b in sized)
        parts.append("state " + state_size(keys, sum(b["state_bytes"] for b in sized)))
    text = Text(head, style=style)
    text.append("; " + ", ".join(parts))
    if c.get("recovering"):
        text.append(
            f"; RECOVERING ({c.get('paused_workers') or 0} worker(s) restored, paused)",
            style="bold red",
        )
    return text


#: Checkpoints of the history ``status`` shows (``--json`` has every one the report holds).
HISTORY_SHOWN = 5


def checkpoint_history_table(report: dict[str, Any], shown: int = HISTORY_SHOWN) -> Table | None:
    """The newest ``shown`` checkpoints of the report's history: when each was triggered,
    how it ended, its duration, its longest alignment and what it stored (bytes), with the
    component that stored most (None: no history)."""
    rows = (report.get("checkpoints") or {}).get("history") or []
    if not rows:
        return None
    table = Table(title="Recent checkpoints", title_justify="left")
    for column in ("id", "triggered", "status", "duration", "alignment", "size", "largest"):
        table.add_column(column, justify="left" if column in ("status", "largest") else "right")
    styles = {"completed": "green", "abandoned": "red", "in_progress": "yellow"}
    for row in rows[:shown]:
        parts = row.get("components") or {}
        largest = max(parts, key=lambda c: parts[c]["bytes"], default=None)
        duration = row.get("duration_secs")
        table.add_row(
            f"#{row['id']}",
            time.strftime("%H:%M:%S", time.localtime(row["triggered_at"])),
            Text(
                row["status"].replace("_", " ") + (f": {row['reason']}" if row["reason"] else ""),
                style=styles.get(row["status"], ""),
            ),
            "-" if duration is None else f"{1000 * duration:,.0f} ms",
            f"{_ms(row.get('alignment_ms') or 0.0)} ms",
            data_size(row.get("bytes") or 0),
            "-" if largest is None else f"{largest} {data_size(parts[largest]['bytes'])}",
        )
    return table


#: Why a cluster without a leading nimbus matters, for the warning line.
NO_NIMBUS = (
    "No nimbus leads: running topologies go on, but submissions, kills, rebalances and "
    "relaunches of a dead topology driver wait until one runs (sparkstorm nimbus)"
)


def nimbus_line(nimbus: dict[str, Any] | None) -> Text | None:
    """The leader nimbus and the standbys, or a warning when none leads (None: a cluster
    without nimbuses, e.g. LocalCluster)."""
    if nimbus is None:
        return None
    if nimbus.get("leader") is None:
        return Text(NO_NIMBUS, style="bold red")
    standbys = ", ".join(nimbus.get("standbys") or []) or "none"
    return Text(f"Nimbus: {nimbus['leader']} leads; standbys: {standbys}", style="dim")


def ignored_line(report: dict[str, Any]) -> Text | None:
    """How many ZooKeeper nodes were ignored while the report was read (None: none)."""
    ignored = report.get("zookeeper_ignored") or 0
    if not ignored:
        return None
    return Text(
        f"ZooKeeper: {ignored} node(s) ignored: not this user's identity's alone, or not a "
        "record of ours (each named once in the log; docs/SECURITY.md)",
        style="bold yellow",
    )


def status_view(report: dict[str, Any], stale_after: float) -> Group:
    parts: list[Any] = [summary_table(report), spouts_table(report), bolts_table(report)]
    for line in (ignored_line(report), nimbus_line(report.get("nimbus"))):
        if line is not None:
            parts.insert(0, line)
    checkpoints = checkpoints_line(report)
    if checkpoints is not None:
        parts.append(checkpoints)
    history = checkpoint_history_table(report)
    if history is not None:
        parts.append(history)
    parts += [workers_table(report, stale_after), worker_flow_table(report), errors_table(report)]
    return Group(*parts)

"""FileSpout: new lines and new files, positions through checkpoints (exactly once across a
restart), re-reading a failed line when the topology runs with ackers, the guarantee chosen
by the topology, gzip, a directory created late, relative paths."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from topology import BasicBolt, FileSpout, StatefulBolt, TopologyBuilder, Tuple
from topology.runtime.inprocess import InProcessRunner

#: The failure policy before dead letters: an input whose code raised is failed at once.
FAIL_AT_ONCE = {"topology.errors.retries": 0, "topology.errors.action": "fail"}

pytestmark = pytest.mark.timeout(60)

CONF = {
    "topology.workers": 2,
    "topology.state.provider": "memory",
    "topology.state.checkpoint.interval.ms": 50,
}


class CountLines(StatefulBolt):
    def execute(self, tup: Tuple) -> None:
        self.state.put(tup["line"], self.state.get(tup["line"], 0) + 1)


def append(path: Path, lines: list[str], partial: str = "") -> None:
    with open(path, "a") as f:
        f.write("".join(f"{line}\n" for line in lines) + partial)


def run(runner: InProcessRunner, turns: int) -> None:
    for _ in range(turns):
        runner.clock.advance(0.01)  # type: ignore[attr-defined]
        runner.turn()


def counted(runner: InProcessRunner, tasks: int = 2) -> Counter[str]:
    total: Counter[str] = Counter()
    for i in range(tasks):
        total.update(dict(runner.instance("count", i).state.items()))
    return total


def spout_runner(tmp_path: Path, spouts: int = 1, pattern: str = "*.txt") -> InProcessRunner:
    builder = TopologyBuilder()
    builder.set_spout("lines", FileSpout(str(tmp_path), pattern=pattern, scan_secs=0), spouts)
    builder.set_bolt("count", CountLines(), 2).fields_grouping("lines", ["line"])
    runner = InProcessRunner(builder.create_topology(), CONF)
    runner.activate()
    return runner


def test_new_lines_and_new_files_are_read_once_and_partial_lines_wait(tmp_path: Path) -> None:
    append(tmp_path / "a.txt", ["a1", "a2"], partial="a3-half")
    (tmp_path / "ignored.log").write_text("nope\n")
    runner = spout_runner(tmp_path, spouts=2)
    run(runner, 50)
    assert counted(runner) == Counter(["a1", "a2"])
    append(tmp_path / "a.txt", ["-rest"])
    append(tmp_path / "b.txt", ["b1"])
    run(runner, 50)
    assert counted(runner) == Counter(["a1", "a2", "a3-half-rest", "b1"])


def test_after_a_restart_reading_goes_on_from_the_checkpointed_offsets(tmp_path: Path) -> None:
    lines = [f"line-{i}" for i in range(3000)]
    append(tmp_path / "big.txt", lines)
    runner = spout_runner(tmp_path)
    run(runner, 8)
    spout_worker = runner.assignment.worker_of()[runner.task("lines").task_id]
    runner.restart_worker(spout_worker)
    run(runner, 30)
    runner.restart_worker(1 - spout_worker)
    append(tmp_path / "more.txt", ["tail"])
    for _ in range(500):
        if counted(runner).total() >= 3001:
            break
        run(runner, 1)
    run(runner, 30)
    assert counted(runner) == Counter([*lines, "tail"])


class FailFirstTime(BasicBolt):
    seen: set[str] = set()
    outputs = ["line"]

    def process(self, tup: Tuple) -> None:
        if tup["line"] not in FailFirstTime.seen:
            FailFirstTime.seen.add(tup["line"])
            raise RuntimeError("try again")
        self.emit([tup["line"]])


def test_with_ackers_a_failed_line_is_read_again_from_its_offset(tmp_path: Path) -> None:
    append(tmp_path / "a.txt", ["x", "y"])
    builder = TopologyBuilder()
    builder.set_spout("lines", FileSpout(str(tmp_path / "a.txt"), scan_secs=0))
    builder.set_bolt("check", FailFirstTime()).shuffle_grouping("lines")
    runner = InProcessRunner(builder.create_topology(), {"topology.workers": 1, **FAIL_AT_ONCE})
    runner.activate()
    acked: list[Any] = []
    runner.task("lines").instance.ack = acked.append
    run(runner, 50)
    assert sorted((name, list(at)) for name, at in acked) == [("a.txt", [2, 1]), ("a.txt", [4, 2])]
    assert runner.task("check").collector.errors_reported == 2


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="lines_per_call"):
        FileSpout("/tmp", lines_per_call=0)


def test_the_guarantee_follows_the_topology_and_gzip_and_late_directories_are_read(
    tmp_path: Path,
) -> None:
    later = tmp_path / "later"  # the directory does not exist yet when the topology starts
    runner = spout_runner(later, pattern="*.txt*")
    assert runner.task("lines").instance.guarantee == "exactly_once"  # checkpointed
    run(runner, 5)
    later.mkdir()
    with gzip.open(later / "old.txt.gz", "wt") as f:
        f.write("z1\nz2")  # compressed files are whole: the last line needs no newline
    run(runner, 50)
    assert counted(runner) == Counter(["z1", "z2"])

    builder = TopologyBuilder()
    builder.set_spout("lines", FileSpout(str(tmp_path), scan_secs=0))
    builder.set_bolt("check", FailFirstTime()).shuffle_grouping("lines")
    plain = InProcessRunner(builder.create_topology(), {"topology.workers": 1})
    plain.activate()
    assert plain.task("lines").instance.guarantee == "at_least_once"  # ackers, no checkpoints


def test_a_relative_path_is_made_absolute_where_the_topology_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert FileSpout("logs").url == str(tmp_path / "logs")
    assert FileSpout("memory://bucket/logs").url == "memory://bucket/logs"

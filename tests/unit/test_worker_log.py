"""Unit tests for topology.runtime.worker_log: a worker's log file, what goes in, and
reading it back in chunks (real files in tmp_path)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from topology.runtime.worker_log import WorkerLog, check_level, read_log, worker_log_path

pytestmark = pytest.mark.timeout(10)


def test_print_and_logging_land_in_the_file_tagged_with_the_running_task(tmp_path: Path) -> None:
    task = ["split:3"]
    log = WorkerLog(tmp_path / "w" / "worker-0.log", "INFO", current_task=lambda: task[0])
    stdout = sys.stdout
    log.install()
    try:
        print("hello from user code")
        task[0] = None  # type: ignore[call-overload]
        logging.getLogger("mine").info("outside user code")
        logging.getLogger("mine").debug("not at INFO")
        sys.stderr.write("a warning\n")
    finally:
        log.close()
    assert sys.stdout is stdout  # the streams are given back
    text = (tmp_path / "w" / "worker-0.log").read_text()
    assert " INFO [split:3] user.stdout: hello from user code\n" in text
    assert " INFO [-] mine: outside user code\n" in text
    assert "not at INFO" not in text
    assert " WARNING [-] user.stderr: a warning\n" in text


def test_the_level_changes_and_goes_back_after_its_timeout(tmp_path: Path) -> None:
    log = WorkerLog(tmp_path / "worker-1.log", "INFO").install()
    try:
        assert log.set_level("debug", revert_after=30.0, now=100.0) == "DEBUG"
        logging.getLogger("mine").debug("now visible")
        log.poll(129.0)
        assert log.level == "DEBUG"
        log.poll(130.0)
        assert log.level == "INFO"
        logging.getLogger("mine").debug("hidden again")
        with pytest.raises(ValueError, match=r"unknown log level 'LOUD' \(one of DEBUG"):
            log.set_level("LOUD", None, 131.0)
    finally:
        log.close()
    text = (tmp_path / "worker-1.log").read_text()
    assert "now visible" in text and "hidden again" not in text
    assert "log level set to DEBUG for 30s" in text and "log level set to INFO" in text


def write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines))


def test_read_returns_whole_lines_from_an_offset_and_where_to_go_on(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    write(path, ["first", "second"])
    chunk = read_log(path, 0)
    assert chunk["text"] == "first\nsecond\n" and chunk["offset"] == 13
    with path.open("a") as f:
        f.write("third\nhalf a li")  # a line still being written waits for the next read
    more = read_log(path, chunk["offset"])
    assert more["text"] == "third\n" and more["offset"] == 19
    assert read_log(path, 19)["text"] == ""


def test_a_tail_starts_at_a_line_and_a_shrunk_file_starts_again(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    write(path, [f"line {i}" for i in range(100)])
    tail = read_log(path, None, max_bytes=20)
    assert tail["text"] == "line 98\nline 99\n"
    write(path, ["after rotation"])
    again = read_log(path, tail["offset"])
    assert again["rotated"] and again["text"] == "after rotation\n"
    assert read_log(tmp_path / "none.log", None)["missing"]


def test_component_lines_keep_their_continuation_lines(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    write(
        path,
        [
            "2026-11-24 09:00:00,001 INFO [split:3] user.stdout: a",
            "2026-11-24 09:00:00,002 ERROR [count:4] user.stderr: Traceback",
            '  File "x.py", line 1',
            "2026-11-24 09:00:00,003 INFO [split:5] user.stdout: b",
        ],
    )
    assert read_log(path, 0, component="split")["text"].count("user.stdout") == 2
    count = read_log(path, 0, component="count")["text"]
    assert "Traceback" in count and 'File "x.py"' in count and "split" not in count


def test_paths_and_levels() -> None:
    path = worker_log_path({"storm.log.dir": "/var/log/ss"}, "wc-1/../x", 2)
    assert path == Path("/var/log/ss/wc-1_.._x/worker-2.log")
    assert check_level("warning") == "WARNING"


def test_a_line_longer_than_a_chunk_comes_in_pieces_and_follow_moves_on(tmp_path: Path) -> None:
    path = tmp_path / "w.log"
    write(path, ["x" * 100])
    first = read_log(path, 0, max_bytes=40)
    assert first["text"] == "x" * 40 and first["offset"] == 40
    assert read_log(path, 40, max_bytes=80)["text"] == "x" * 60 + "\n"


def test_a_chunk_of_control_characters_stays_within_the_reply_budget(tmp_path: Path) -> None:
    import json

    from topology.runtime.worker_log import MAX_CHUNK_BYTES, MAX_REPLY_CHARS

    path = tmp_path / "w.log"
    write(path, ["\x01" * 999] * 300)  # 300 KB: six JSON characters per byte
    chunk = read_log(path, 0, max_bytes=MAX_CHUNK_BYTES)
    assert 0 < len(json.dumps(chunk["text"])) <= MAX_REPLY_CHARS + 2
    assert chunk["offset"] % 1000 == 0  # whole lines; the next read starts after them


def test_a_bad_timeout_leaves_the_level_alone(tmp_path: Path) -> None:
    log = WorkerLog(tmp_path / "w.log", "INFO").install()
    try:
        for bad in (float("nan"), float("inf"), -1, "soon"):
            with pytest.raises(ValueError, match="the timeout must be"):
                log.set_level("DEBUG", bad, 0.0)  # type: ignore[arg-type]
            assert log.level == "INFO" and log.revert_at is None
    finally:
        log.close()


def test_lines_of_two_threads_stay_whole_and_bytes_can_be_written(tmp_path: Path) -> None:
    import threading

    log = WorkerLog(tmp_path / "w.log", "INFO").install()
    try:
        sys.stdout.write("main ")
        thread = threading.Thread(target=lambda: print("from a thread"))
        thread.start()
        thread.join(5)
        sys.stdout.write("line\n")
        sys.stdout.buffer.write(b"raw bytes\n")  # type: ignore[attr-defined]
    finally:
        log.close()
    text = (tmp_path / "w.log").read_text()
    assert "user.stdout: main line\n" in text and "user.stdout: from a thread\n" in text
    assert "user.stdout: raw bytes\n" in text


def test_a_file_rotated_and_grown_past_the_old_offset_is_read_from_its_start(
    tmp_path: Path,
) -> None:
    path = tmp_path / "w.log"
    write(path, ["old"])
    first = read_log(path, None)
    path.rename(tmp_path / "w.log.1")  # what RotatingFileHandler does
    write(path, ["new line, longer than the old file"])
    again = read_log(path, first["offset"], file_id=first["file_id"])
    assert again["rotated"] and again["text"] == "new line, longer than the old file\n"
    assert not read_log(path, again["offset"], file_id=again["file_id"])["rotated"]

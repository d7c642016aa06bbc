"""bench/state_checkpoint_write.py's parts: the key streams it writes, and both stores (the
schema-0 copy and the provider) taking a plan of checkpoints to the same restorable state."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from topology.state.backends import SqliteBackend

pytestmark = pytest.mark.timeout(60)

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_checkpoint_write", BENCH / "state_checkpoint_write.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_streams_are_new_keys_or_half_repeated(bench: ModuleType) -> None:
    new = bench.checkpoints("new", 100, 3, seed=1)
    half = bench.checkpoints("half", 100, 3, seed=1)
    assert [len(c) for c in new] == [len(c) for c in half] == [100, 100, 100]
    assert len({k for c in new for k, _ in c}) == 300
    seen = {k for k, _ in half[0]}
    assert len(seen) == 100 and len({k for k, _ in half[1]} & seen) == 50
    assert all(len(k) == 10 for c in new for k, _ in c)


def test_both_stores_take_a_plan_to_the_same_state(bench: ModuleType, tmp_path: Path) -> None:
    plan = bench.checkpoints("half", 50, 6, seed=2)
    paths = [str(tmp_path / f"{i}.sqlite") for i in range(len(bench.STORES))]
    for name, path in zip(bench.STORES, paths, strict=True):
        seconds, peak = bench.run_one(name, path, plan)
        assert seconds > 0 and peak > 0
    expected: dict[bytes, bytes] = {}
    for entries in plan:
        expected.update(entries)
    migrated, now = (SqliteBackend(path) for path in paths)  # schema 0's file, then ours
    assert dict(now.read_all(6, "count")) == expected
    assert dict(migrated.read_all(6, "count")) == expected  # migrated on open
    now.close()
    migrated.close()

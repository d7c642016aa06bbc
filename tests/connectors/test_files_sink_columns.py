"""FileSink's placing of rows without a topology: rows kept as value lists per partition
directory, the partition columns left out of the files, equal-but-different partition
values (``1`` and ``True``) apart, unhashable ones still placed."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import pytest

from topology.connectors import FileSink

pq = pytest.importorskip("pyarrow.parquet")


def _written(tmp_path: Path, rows: list[list[Any]], **options: Any) -> dict[str, list[Any]]:
    """Write ``rows`` through one transaction and commit it; relative path -> its rows."""
    sink = FileSink(str(tmp_path), fields=["id", "day", "v"], **options)
    sink.connect({}, types.SimpleNamespace(component_id="store", task_index=0))
    txn = sink.begin(1)
    sink.write(txn, rows[:2])
    sink.write(txn, rows[2:])
    sink.commit(sink.pre_commit(txn, 1), 1)
    found: dict[str, list[Any]] = {}
    for path in sorted(tmp_path.rglob("part-*")):
        name = str(path.parent.relative_to(tmp_path))
        if path.suffix == ".parquet":
            found[name] = pq.read_table(path).to_pylist()
        else:
            found[name] = [json.loads(line) for line in path.read_text().splitlines()]
    return found


def test_parquet_partitioned_by_a_field_leaves_it_out_and_keeps_the_order(tmp_path):
    rows = [[1, "a", 0.5], [2, "b", 1.0], [3, "a", 1.5], [4, "a", None]]
    found = _written(tmp_path, rows, format="parquet", partition_by="day")
    assert found == {
        "day=a": [{"id": 1, "v": 0.5}, {"id": 3, "v": 1.5}, {"id": 4, "v": None}],
        "day=b": [{"id": 2, "v": 1.0}],
    }


def test_equal_values_of_other_types_go_to_their_own_directories(tmp_path):
    rows = [[1, 1, "x"], [2, True, "y"], [3, 1, "z"]]
    found = _written(tmp_path, rows, format="json", partition_by="day")
    assert found == {
        "day=1": [{"id": 1, "v": "x"}, {"id": 3, "v": "z"}],
        "day=True": [{"id": 2, "v": "y"}],
    }


def test_an_unhashable_partition_value_is_placed_row_by_row(tmp_path):
    rows = [[1, ["a"], "x"], [2, ["a"], "y"]]
    found = _written(tmp_path, rows, format="json", partition_by="day")
    assert found == {"day=%5B%27a%27%5D": [{"id": 1, "v": "x"}, {"id": 2, "v": "y"}]}


def test_a_function_partition_leaves_its_columns_out_or_keeps_all_for_a_path(tmp_path):
    by_columns = _written(
        tmp_path / "c",
        [[1, "a", 1], [2, "b", 2]],
        format="parquet",
        partition_by=lambda row: {"day": row["day"]},
    )
    assert by_columns == {"day=a": [{"id": 1, "v": 1}], "day=b": [{"id": 2, "v": 2}]}
    by_path = _written(
        tmp_path / "p", [[1, "a", 1]], format="json", partition_by=lambda row: f"/d/{row['day']}/"
    )
    assert by_path == {"d/a": [{"id": 1, "day": "a", "v": 1}]}


def test_a_schema_orders_the_columns_and_fills_a_missing_one_with_nulls(tmp_path):
    pa = pytest.importorskip("pyarrow")
    schema = pa.schema([("v", pa.float64()), ("id", pa.int64()), ("extra", pa.string())])
    found = _written(
        tmp_path,
        [[1, "a", 0.5], [2, "a", 1.0]],
        format="parquet",
        schema=schema,
        partition_by="day",
    )
    assert found == {
        "day=a": [{"v": 0.5, "id": 1, "extra": None}, {"v": 1.0, "id": 2, "extra": None}]
    }


def test_a_row_of_the_wrong_width_is_refused(tmp_path):
    with pytest.raises(ValueError, match="2 values for the 3 fields"):
        _written(tmp_path, [[1, "a", 0.5], [2, "b"]], format="json")

"""One write path, one commit path, one result type (issue 13)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import cellstore
from cellstore.commit import Commit, FileChange, commit
from cellstore.core.cells import parse_type_names, scale_to_millis
from cellstore.errors import BadCellError, JobConflictError
from cellstore.loader import LoadReport


def test_load_cells_and_load_return_one_report_type(tmp_path: Path):
    t = cellstore.connect(str(tmp_path)).create_table("t", families=["f"], splits=[b"m"])
    report = t.load_cells(
        pa.table(
            {
                "row": [b"a", b"z", b"a"],
                "family": ["f"] * 3,
                "qualifier": [b"q"] * 3,
                "ts": [1, 1, 1],
                "value": [b"1", b"2", b"3"],
            }
        ),
        load_id="cells-1",
    )
    assert isinstance(report, LoadReport) and report.mode == "cells"
    assert (report.records, report.cells, report.files, report.duplicates_dropped) == (3, 2, 2, 1)
    assert report.to_dict()["table"] == "t" and report.version == t.version
    again = t.load_cells(
        pa.table({"row": [b"a"], "family": ["f"], "qualifier": [b"q"], "value": [b"x"]}),
        load_id="cells-1",
    )
    assert again.already_applied and again.version is None


def test_load_cells_timestamps_in_any_unit_and_overflow(tmp_path: Path):
    t = cellstore.connect(str(tmp_path)).create_table("t", families=["f"])
    ts = pa.array([1_500_000_123_456], pa.timestamp("us"))  # sub-millisecond: floor
    t.load_cells(
        pa.table({"row": [b"r"], "family": ["f"], "qualifier": [b"q"], "ts": ts, "value": [b"v"]})
    )
    assert t.scan().to_arrow().column("ts").to_pylist() == [1_500_000_123]
    huge = pa.array([2**62], pa.timestamp("s"))  # seconds that overflow milliseconds
    with pytest.raises(BadCellError, match="64-bit") as info:
        t.load_cells(
            pa.table(
                {"row": [b"r"], "family": ["f"], "qualifier": [b"q"], "ts": huge, "value": [b"v"]}
            )
        )
    assert info.value.field == "ts" and info.value.record == 0


def test_scale_to_millis_and_type_names():
    millis, over = scale_to_millis([1, -1, 2**62], "s")
    assert millis.tolist()[:2] == [1000, -1000] and over.tolist() == [False, False, True]
    assert scale_to_millis([1999, -1], "us")[0].tolist() == [1, -1]  # floor
    with pytest.raises(ValueError):
        scale_to_millis([1], "minutes")
    codes = parse_type_names(
        pa.array(["Put", "DELETE_COLUMN", "delete-family", "10", "", None, "nope"])
    )
    assert codes.to_pylist() == [4, 12, 14, 10, None, None, None]


def test_commit_refuses_stale_removals_and_skips_on_request(tmp_path: Path):
    t = cellstore.connect(str(tmp_path)).create_table("t", families=["f"])
    t.load_cells(
        pa.table({"row": [b"a"], "family": ["f"], "qualifier": [b"q"], "ts": [1], "value": [b"v"]})
    )
    (entry,) = t.files
    gone = entry.__class__(**{**entry.__dict__, "path": "data/r000001/f/other.parquet"})
    with pytest.raises(JobConflictError, match="no longer live"):
        commit(t.log, Commit(operation="test", changes=[FileChange(remove=[gone])]))
    result = commit(
        t.log, Commit(operation="test", changes=[FileChange(remove=[gone])], stale="skip")
    )
    assert not result.committed and result.skipped == (0,)
    assert t.refresh().version == result.metadata.version  # nothing was written


def test_one_row_range_type():
    from cellstore.core.keys import RowRange, prefix_stop
    from cellstore.core.rowkey.ranges import bucket_ranges
    from cellstore.reader.plan import row_range

    r = RowRange.of_prefix(b"ab\xff")
    assert r == (b"ab\xff", b"ac") and r.contains(b"ab\xff\x00") and not r.contains(b"ac")
    assert RowRange.of_prefix(b"\xff").stop == b"" and prefix_stop(b"\xff") is None
    assert RowRange(b"b", b"a").is_empty and not RowRange(b"b", b"").is_empty
    assert RowRange(b"b", b"d").overlaps(b"a", b"b") and not RowRange(b"b", b"d").overlaps(
        b"d", b"e"
    )
    assert isinstance(row_range(start_row=None, stop_row=None, row_prefix="x"), RowRange)
    assert all(isinstance(x, RowRange) for x in bucket_ranges(4, b"a", b""))
    start, stop = row_range(start_row="c", stop_row="a", row_prefix=None, reversed=True)
    assert (start, stop) == (b"a\x00", b"c\x00")  # R12.5: reversed bounds

"""``export(memory_budget=...)`` plans its scan tasks so the export's memory stays within
the budget (issue 18: a 47 MiB table exported as one task peaked at 1.33 GB RSS)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cellstore
from cellstore.errors import InvalidArgumentError
from cellstore.jobs import export
from cellstore.jobs.export import _EXPORT_EXPANSION
from cellstore.warehouse import Table


def _table(root: str) -> Table:
    t = cellstore.connect(root).create_table("ns:t", families=["f", "g"])
    n = 6000
    rows = [b"r%06d" % i for i in range(n) for _ in range(2)]
    t.load_cells(
        pa.table(
            {
                "row": pa.array(rows, pa.binary()),
                "family": pa.array(["f", "g"] * n),
                "qualifier": pa.array([b"q"] * (2 * n), pa.binary()),
                "ts": pa.array([1] * (2 * n), pa.int64()),
                "type": pa.array([4] * (2 * n), pa.int8()),
                "value": pa.array([b"v" * 40] * (2 * n), pa.binary()),
            }
        ),
        row_group_cells=500,
    )
    return t


def test_a_small_budget_cuts_the_export_into_more_part_files(tmp_path: Path) -> None:
    t = _table(str(tmp_path / "wh"))
    whole = export(t, str(tmp_path / "whole"))
    small = 64 * 1024
    cut = export(t, str(tmp_path / "cut"), memory_budget=small)
    assert len(whole.files) == 1
    # tasks are planned with budget / _EXPORT_EXPANSION, so many pieces, never a row split
    assert len(cut.files) == len(t.scan(memory_budget=small // _EXPORT_EXPANSION).plan()) > 4
    back = pa.concat_tables(pq.read_table(f) for f in cut.files)
    assert back.equals(t.scan().to_arrow())
    firsts = [pq.read_table(f, columns=["row"]).column("row")[0] for f in cut.files]
    lasts = [pq.read_table(f, columns=["row"]).column("row")[-1] for f in cut.files]
    assert all(a.as_py() < b.as_py() for a, b in zip(lasts, firsts[1:], strict=False))
    assert (cut.rows, cut.cells) == (whole.rows, whole.cells) == (6000, 12000)


def test_a_budget_that_is_not_positive_is_refused(tmp_path: Path) -> None:
    t = _table(str(tmp_path / "wh"))
    with pytest.raises(InvalidArgumentError, match="memory_budget"):
        export(t, str(tmp_path / "out"), memory_budget=0)

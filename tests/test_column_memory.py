"""Column-file writing in bounded memory (issue 28, part K): pieces give the same files."""

from __future__ import annotations

import struct
from pathlib import Path

import fsspec
import pyarrow.parquet as pq
import pytest

from cellstore.core.family import Family
from cellstore.storefiles import columns as column_files
from cellstore.storefiles.columns import ColumnPlan, LayoutSink
from strategies import cells_table

PUT, DELETE_COLUMN = 4, 12


def _cells():
    """3,000 rows x 6 qualifiers, newer versions, a long row and delete markers (one family,
    cell order: row, qualifier, newest first)."""
    out = []
    for i in range(3000):
        row = b"r%06d" % i
        quals = 400 if i == 1234 else 6  # one row longer than a piece: never cut
        for q in range(quals):
            qual = b"q%03d" % q
            if i % 97 == 0 and q == 1:
                out.append((row, "f", qual, 30, DELETE_COLUMN, b""))
            if i % 5 == 0:
                out.append((row, "f", qual, 20, PUT, struct.pack(">q", -i)))
            out.append((row, "f", qual, 10, PUT, struct.pack(">q", i * q)))
    return cells_table(out).drop_columns(["family"])


def _write(tmp: Path, cells, split: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.setattr(column_files, "_SPLIT_CELLS", split)
    fs = fsspec.filesystem("file")
    plan = ColumnPlan.for_layout("columns", {b"q%03d" % q: "long" for q in range(6)})
    assert plan is not None
    sink = LayoutSink(
        fs, str(tmp), region="r1", family=Family(name="f"), stem="s", plan=plan, seq=1, load_id="x"
    )
    sink.write(cells)
    written = sink.close()
    out: dict[str, object] = {}
    for w in written:
        table = pq.read_table(str(tmp / w.relpath))
        out[w.info.layout] = (table, w.info.cells, w.info.rows, w.info.complete)
    return out


def test_pieces_write_the_same_files_as_one_cut(tmp_path: Path, monkeypatch) -> None:
    """A chunk cut into pieces (256 cells: the long row spans two; 4,096) gives the files
    of one cut: same records, companion cells, counts and ``complete`` flag."""
    cells = _cells()
    assert cells.num_rows > 4 * 4096
    whole = _write(tmp_path / "whole", cells, 10**9, monkeypatch)
    assert set(whole) == {"columns", "cells"}
    for split in (256, 4096):
        assert _write(tmp_path / f"p{split}", cells, split, monkeypatch) == whole

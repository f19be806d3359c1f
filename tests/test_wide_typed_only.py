"""The wide shape with only ``column_types``: just the typed columns, plus the row key (issue 17).

``cellstore.reader.shapes``: a read that names only ``column_types`` (no ``columns``, no
``families``) returns the typed columns it names, in that order, after ``row``; naming
columns or families selects them, and ``column_types`` then only decodes. Every way of
running a scan (Arrow, batches, pandas, Dask, the planned schema) must agree.
"""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from cellstore import connect

PUT = 4


@pytest.fixture
def table(tmp_path):
    """Two regions, three columns in two families; ``g:x`` only in some rows."""
    t = connect(str(tmp_path / "wh")).create_table("t", families=["f", "g"], splits=[b"r005"])
    cells = []
    for i in range(10):
        row = f"r{i:03d}".encode()
        cells.append((row, "f", b"a", 1, PUT, f"a{i}".encode()))
        cells.append((row, "f", b"n", 1, PUT, struct.pack(">q", i * 7)))
        if i % 2 == 0:
            cells.append((row, "g", b"x", 1, PUT, b"x%d" % i))
    names = ["row", "family", "qualifier", "ts", "type", "value"]
    t.load_cells(pa.table(dict(zip(names, map(list, zip(*cells, strict=True)), strict=True))))
    return t


def test_only_the_typed_columns_in_the_order_named(table):
    got = table.scan(shape="wide", column_types={"g:x": "string", "f:n": "long"}).to_arrow()
    assert [(f.name, f.type) for f in got.schema] == [
        ("row", pa.binary()),
        ("g:x", pa.string()),
        ("f:n", pa.int64()),
    ]
    assert got.column("row").to_pylist() == [f"r{i:03d}".encode() for i in range(10)]
    assert got.column("f:n").to_pylist() == [i * 7 for i in range(10)]
    assert got.column("g:x").to_pylist() == [f"x{i}" if i % 2 == 0 else None for i in range(10)]


def test_every_output_agrees(table):
    scan = table.scan(shape="wide", column_types={"f:n": "long"})
    want = ["row", "f:n"]
    assert scan.to_arrow().column_names == want
    assert scan.partition_reader().schema().names == want
    assert all(b.schema.names == want for b in scan.to_batches())
    assert list(scan.to_pandas().columns) == want
    ddf = scan.to_dask()
    assert list(ddf.columns) == want
    assert ddf.compute()["f:n"].tolist() == [i * 7 for i in range(10)]


def test_columns_or_families_select_and_types_only_decode(table):
    named = table.scan(shape="wide", columns=["f:a", "f:n"], column_types={"f:n": "long"})
    assert named.to_arrow().column_names == ["row", "f:a", "f:n"]
    assert named.to_arrow().column("f:a").type == pa.binary()
    family = table.scan(shape="wide", families=["f"], column_types={"f:n": "long"}).to_arrow()
    assert family.column_names == ["row", "f:a", "f:n"]
    untyped = table.scan(shape="wide").to_arrow()
    assert untyped.column_names == ["row", "f:a", "f:n", "g:x"]


def test_rows_without_any_typed_cell_are_still_rows(table):
    """Rows are the scan's rows: a row holding none of the typed columns has nulls."""
    got = table.scan(shape="wide", column_types={"g:x": "string"}).to_arrow()
    assert got.num_rows == 10
    assert got.column("g:x").null_count == 5

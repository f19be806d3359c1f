"""Cutting a column file's records out of cells (core/columnar ``split_rows``).

The column writer decides from the cut itself whether a column file is complete
(docs/format.md 14.3: it took the newest Put of every row and qualifier holding one),
instead of counting the Put pairs again; and it takes the records' key fields from the
rows it decoded once. Both must agree with their definitions on any cells.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from cellstore.core.cells import CELL_SCHEMA, CellType, sort_indices
from cellstore.core.codecs import Codec
from cellstore.core.columnar import (
    ColumnSpec,
    put_columns,
    split_cells,
    split_rows,
)
from strategies import cells_table

SPECS = (ColumnSpec(b"a", Codec.LONG), ColumnSpec(b"b", Codec.BYTES))
KINDS = [int(CellType.PUT)] * 4 + [int(CellType.DELETE), int(CellType.DELETE_COLUMN)]

cell = st.tuples(
    st.sampled_from([b"r1", b"r2", b"r3", b"r4"]),
    st.sampled_from([b"a", b"b", b"c"]),  # c: not a column
    st.integers(1, 4),  # timestamp
    st.sampled_from(KINDS),
    st.sampled_from([struct.pack(">q", 7), struct.pack(">q", -1), b"xyz", b""]),
)


def _cells(drawn: list[tuple[bytes, bytes, int, int, bytes]]) -> pa.Table:
    seen: dict[tuple[bytes, bytes, int, int], bytes] = {}
    for row, q, ts, kind, value in drawn:
        seen.setdefault((row, q, ts, kind), value if kind == int(CellType.PUT) else b"")
    table = cells_table([(r, "f", q, ts, k, v) for (r, q, ts, k), v in seen.items()])
    table = table.drop_columns(["family"]).cast(CELL_SCHEMA)
    return table.take(sort_indices(table))


@settings(max_examples=300, deadline=None)
@given(
    drawn=st.lists(cell, max_size=30),
    allowed=st.lists(st.booleans(), min_size=4, max_size=4),
    some_rows=st.booleans(),
)
def test_the_cut_says_whether_it_is_complete_and_where_each_record_is(
    drawn: list[tuple[bytes, bytes, int, int, bytes]], allowed: list[bool], some_rows: bool
) -> None:
    cells = _cells(drawn)
    distinct = sorted(set(cells.column("row").to_pylist()))
    rows = np.array(allowed[: len(distinct)], dtype=bool) if some_rows else None
    split = split_rows(cells, SPECS, rows=rows)
    records, rest = split_cells(cells, SPECS, rows=rows)
    assert split.records.equals(records) and split.rest.equals(rest)
    taken = cells.num_rows - split.rest.num_rows
    assert split.complete == (put_columns(cells) == taken)
    assert [distinct[i] for i in split.at] == split.records.column("__row").to_pylist()

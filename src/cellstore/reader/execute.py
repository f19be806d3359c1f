"""Executing scan tasks: read a region's store files, merge, apply HBase's semantics."""

from __future__ import annotations

from typing import Final

import fsspec
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.semantics import merge_runs, resolve
from cellstore.fs import join
from cellstore.reader.plan import ScanTask
from cellstore.storefiles import StoreFileReader

__all__ = ["RESULT_SCHEMA", "read_task"]

#: Schema of scan results in the "cells" shape (HBase result order).
RESULT_SCHEMA: Final = pa.schema(
    [
        pa.field("row", pa.binary(), nullable=False),
        pa.field("family", pa.string(), nullable=False),
        pa.field("qualifier", pa.binary(), nullable=False),
        pa.field("ts", pa.int64(), nullable=False),
        pa.field("type", pa.int8(), nullable=False),
        pa.field("value", pa.binary(), nullable=False),
    ]
)


def read_task(
    fs: fsspec.AbstractFileSystem,
    task: ScanTask,
    *,
    point_row: bytes | None = None,
    reverse: bool = False,
) -> pa.Table:
    """The cells a task contributes, in HBase result order (R2.3; R2.4 when ``reverse``).

    Within a row, families come in name order, then qualifier ascending, ts descending.

    Args:
        fs: The filesystem.
        task: The task.
        point_row: When the task is a single-row read, the row; files whose Bloom filter
            rules the row out are not read.
        reverse: Rows in descending order (cells inside a row keep their order).
    """
    parts = []
    for fam in task.families:
        runs, seqs = [], []
        for relpath, seq in fam.files:
            with StoreFileReader(fs, join(task.table_path, relpath)) as reader:
                if point_row is not None and not reader.might_contain_row(point_row):
                    continue
                cells = reader.read(start=task.start, stop=task.stop)
            if cells.num_rows:
                runs.append(cells)
                seqs.append(seq)
        if not runs:
            continue
        visible = resolve(merge_runs(runs, seqs), family=fam.family, spec=fam.spec)
        if visible.num_rows:
            fam_col = pc.fill_null(pa.nulls(visible.num_rows, pa.string()), fam.family.name)
            parts.append(visible.add_column(1, pa.field("family", pa.string(), False), fam_col))
    if not parts:
        return RESULT_SCHEMA.empty_table()
    table = pa.concat_tables(parts).cast(RESULT_SCHEMA)
    if len(parts) > 1 or reverse:
        # Stable sort on the row only keeps the family and in-family order (R2.3, R2.4).
        direction = "descending" if reverse else "ascending"
        order = pc.sort_indices(table, sort_keys=[("row", direction)])
        table = table.take(order)
    return table

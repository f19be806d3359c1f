"""Store-file layouts for the semantics suites: cells as a layout's files give them back.

``stored(cells, "columns")`` writes one store's cells the way a ``layout="columns"`` family
writes them (a column file with the newest Put per row and qualifier, typed where the
declared codec gives the bytes back, and a cell file with the rest), reads both files
back through :class:`~cellstore.storefiles.StoreFileReader` and returns their cells in
cell order: the cells every read then resolves. ``"cells"`` returns the cells unchanged.
"""

from __future__ import annotations

import tempfile
from typing import Final

import fsspec
import pyarrow as pa

from cellstore.core.cells import equal_key_runs, sort_indices
from cellstore.core.codecs import Codec
from cellstore.core.columnar import MAX_COLUMNS, ColumnSpec
from cellstore.core.family import Family
from cellstore.fs import join
from cellstore.storefiles import NO_ROLL, StoreFileReader, write_rolled
from cellstore.storefiles.columns import ColumnPlan, Layouts
from cellstore.storefiles.rolling import ParquetFormat

#: The layouts every semantics suite runs against.
LAYOUTS: Final = ("cells", "columns")

#: Declared codecs of the forced plan: a typed column whose values mostly do not fit
#: (they stay cells) and one that takes any UTF-8 value.
_DECLARED: Final = (ColumnSpec(b"q1", Codec.LONG), ColumnSpec(b"q2", Codec.STRING))


def stored(cells: pa.Table, layout: str) -> pa.Table:
    """``cells`` (one store, cell order) as the files of ``layout`` give them back.

    Cells with duplicate keys (which no store file holds) are returned unchanged.
    """
    if layout == "cells" or cells.num_rows == 0 or equal_key_runs(cells).any():
        return cells
    plan = ColumnPlan(_DECLARED, discover=MAX_COLUMNS, forced=True)
    fmt = ParquetFormat(
        seq=1, load_id="t", row_group_cells=64, layouts=Layouts(plans=(("f", plan),))
    )
    fs = fsspec.filesystem("file")
    with tempfile.TemporaryDirectory() as root:
        files = write_rolled(
            fs,
            root,
            cells,
            region="r000001",
            family=Family(name="f"),
            stem="s",
            max_file_bytes=NO_ROLL,
            format=fmt,
        )
        assert sum(w.info.cells for w in files) == cells.num_rows
        parts = []
        for w in files:
            with StoreFileReader(fs, join(root, w.relpath)) as reader:
                parts.append(reader.read())
    out = pa.concat_tables(parts).cast(cells.schema)
    return out.take(sort_indices(out))

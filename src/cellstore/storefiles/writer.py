"""Writing store files: one family's sorted cells as one Parquet file with a footer."""

from __future__ import annotations

import json
from typing import Any, Final

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cellstore.core.cells import CELL_SCHEMA, CellType, run_starts
from cellstore.core.family import Family
from cellstore.fs import makedirs_for
from cellstore.storefiles.footer import FOOTER_KEY, StoreFileInfo

__all__ = ["DEFAULT_ROW_GROUP_CELLS", "cell_stats", "write_store_file"]

#: Cells per Parquet row group: small enough that a point read decodes little, large
#: enough that per-group overhead stays negligible.
DEFAULT_ROW_GROUP_CELLS: Final = 65536
#: False-positive rate of the row Bloom filter.
BLOOM_FPP: Final = 0.01

_SORTING = [
    pq.SortingColumn(0),  # row ascending
    pq.SortingColumn(1),  # qualifier ascending
    pq.SortingColumn(2, descending=True),  # ts descending
    pq.SortingColumn(3, descending=True),  # type descending
]


def _writer_version() -> str:
    from cellstore import __version__

    return __version__


def cell_stats(cells: pa.Table) -> dict[str, Any]:
    """Footer statistics of sorted cells (vectorized).

    Returns:
        A dict with ``cells``, ``delete_markers``, ``rows``, ``first_row``, ``last_row``,
        ``min_ts``, ``max_ts`` and ``earliest_put_ts`` (None when there is no Put).
    """
    n = cells.num_rows
    row = cells.column("row").combine_chunks()
    types = cells.column("type")
    ts = cells.column("ts")
    is_put = pc.equal(types, int(CellType.PUT))
    puts = int(pc.sum(is_put).as_py() or 0)
    earliest = pc.min(pc.filter(ts, is_put)).as_py() if puts else None
    rows = len(run_starts(row))
    mm = pc.min_max(ts)
    return {
        "cells": n,
        "delete_markers": n - puts,
        "rows": rows,
        "first_row": row[0].as_py() if n else b"",
        "last_row": row[n - 1].as_py() if n else b"",
        "min_ts": mm["min"].as_py() if n else 0,
        "max_ts": mm["max"].as_py() if n else 0,
        "earliest_put_ts": earliest,
    }


def write_store_file(
    fs: fsspec.AbstractFileSystem,
    path: str,
    cells: pa.Table,
    *,
    family: Family,
    seq: int,
    load_id: str,
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
) -> StoreFileInfo:
    """Write one store file.

    Contract: ``cells`` are the cells of one family, in cell order (R2.1) with unique keys,
    with the columns of :data:`~cellstore.core.cells.CELL_SCHEMA` and at least one cell.
    The writer does not re-check the order (``storefiles.check`` does); it writes page
    checksums, row-group statistics, the Parquet sorting-columns declaration, a row Bloom
    filter when the family asks for one, and the cellstore footer.

    Args:
        fs: Filesystem to write to.
        path: Destination path; must not exist (names are unique per load).
        cells: The cells.
        family: The family (its compression, block size and Bloom setting are used).
        seq: Sequence number to record in the footer.
        load_id: Id of the load or job writing the file.
        row_group_cells: Cells per Parquet row group.

    Returns:
        The file's :class:`StoreFileInfo`.
    """
    if cells.num_rows == 0:
        raise ValueError("a store file needs at least one cell")
    table = cells.select(CELL_SCHEMA.names).cast(CELL_SCHEMA)
    stats = cell_stats(table)
    row_groups = -(-table.num_rows // row_group_cells)
    info = StoreFileInfo(
        path=path,
        family=family.name,
        seq=seq,
        load_id=load_id,
        row_groups=row_groups,
        size=0,
        bloom_filter=family.bloom_filter,
        writer_version=_writer_version(),
        **stats,
    )
    footer = json.dumps(info.footer_dict()).encode("utf-8")
    table = table.replace_schema_metadata({FOOTER_KEY: footer})
    options: dict[str, Any] = {}
    if family.bloom_filter:
        ndv = max(1, min(int(stats["rows"]), row_group_cells))
        options["bloom_filter_options"] = {"row": {"ndv": ndv, "fpp": BLOOM_FPP}}
    makedirs_for(fs, path)
    with fs.open(path, "wb") as f:
        pq.write_table(
            table,
            f,
            row_group_size=row_group_cells,
            compression=family.compression,
            data_page_size=family.block_size,
            write_page_checksum=True,
            write_statistics=True,
            sorting_columns=_SORTING,
            use_dictionary=["row", "qualifier"],
            store_schema=True,
            **options,
        )
    size = int(fs.size(path))
    return StoreFileInfo(**{**info.__dict__, "size": size})


"""Writing one store file from a stream of sorted chunks, in bounded memory.

:func:`~cellstore.storefiles.writer.write_store_file` needs every cell of the file at
once (its footer is computed before writing). :class:`StoreFileStreamWriter` writes the
same file format — same Parquet options, row groups, checksums, sorting declaration, row
Bloom filter and footer — from successive chunks: it holds at most one row group of cells,
folds each chunk into the footer statistics and adds the footer to the Parquet key-value
metadata when it closes. The bulk loader uses it to merge sorted runs (spill mode) into
few large files without holding them.
"""

from __future__ import annotations

import contextlib
import json
from types import TracebackType
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from cellstore.core.cells import CELL_SCHEMA
from cellstore.core.family import Family
from cellstore.fs import makedirs_for
from cellstore.storefiles.footer import FOOTER_KEY, StoreFileInfo
from cellstore.storefiles.writer import (
    _SORTING,
    BLOOM_FPP,
    DEFAULT_ROW_GROUP_CELLS,
    _writer_version,
    cell_stats,
)

__all__ = ["StoreFileStreamWriter"]


class StoreFileStreamWriter:
    """Write one store file chunk by chunk.

    Use it as a context manager and call :meth:`close` inside: leaving the block without
    closing (or with an exception) deletes the partial file.

    Contract: the chunks, concatenated, are one family's cells in cell order (R2.1) with
    unique keys (a row may continue from one chunk into the next), and at least one cell
    is written. As with ``write_store_file`` the order is not re-checked here.

    Args:
        fs: Filesystem to write to.
        path: Destination path (must not exist).
        family: The family (compression, block size, Bloom filter).
        seq: Sequence number for the footer.
        load_id: Id of the load or job writing the file.
        row_group_cells: Cells per Parquet row group.
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        path: str,
        *,
        family: Family,
        seq: int,
        load_id: str,
        row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
    ) -> None:
        self.fs = fs
        self.path = path
        self.family = family
        self.seq = seq
        self.load_id = load_id
        self.row_group_cells = row_group_cells
        #: Uncompressed bytes of the cells written so far (Arrow buffer sizes).
        self.bytes = 0
        self._pending: list[pa.Table] = []
        self._pending_cells = 0
        self._stats: dict[str, Any] | None = None
        self._row_groups = 0
        self._closed = False
        options: dict[str, Any] = {}
        if family.bloom_filter:
            options["bloom_filter_options"] = {"row": {"ndv": row_group_cells, "fpp": BLOOM_FPP}}
        makedirs_for(fs, path)
        self._file: Any = fs.open(path, "wb")
        try:
            self._writer = pq.ParquetWriter(
                self._file,
                CELL_SCHEMA,
                compression=family.compression,
                data_page_size=family.block_size,
                write_page_checksum=True,
                write_statistics=True,
                sorting_columns=_SORTING,
                use_dictionary=["row", "qualifier"],
                store_schema=True,
                **options,
            )
        except BaseException:
            self._file.close()
            raise

    @property
    def cells(self) -> int:
        """Cells written so far."""
        return 0 if self._stats is None else int(self._stats["cells"])

    def write(self, cells: pa.Table) -> None:
        """Append sorted cells (the next part of the file's cell order)."""
        if cells.num_rows == 0:
            return
        table = cells.select(CELL_SCHEMA.names).cast(CELL_SCHEMA)
        self._fold(cell_stats(table))
        self.bytes += table.nbytes
        self._pending.append(table)
        self._pending_cells += table.num_rows
        if self._pending_cells >= self.row_group_cells:
            self._flush(final=False)

    def _fold(self, s: dict[str, Any]) -> None:
        acc = self._stats
        if acc is None:
            self._stats = dict(s)
            return
        joined = s["first_row"] == acc["last_row"]  # a row continued from the last chunk
        puts = [t for t in (acc["earliest_put_ts"], s["earliest_put_ts"]) if t is not None]
        acc.update(
            cells=acc["cells"] + s["cells"],
            delete_markers=acc["delete_markers"] + s["delete_markers"],
            rows=acc["rows"] + s["rows"] - int(joined),
            last_row=s["last_row"],
            min_ts=min(acc["min_ts"], s["min_ts"]),
            max_ts=max(acc["max_ts"], s["max_ts"]),
            earliest_put_ts=min(puts) if puts else None,
        )

    def _flush(self, *, final: bool) -> None:
        if not self._pending:
            return
        table = pa.concat_tables(self._pending).combine_chunks()
        full = table.num_rows if final else table.num_rows - table.num_rows % self.row_group_cells
        if full:
            self._writer.write_table(table.slice(0, full), row_group_size=self.row_group_cells)
            self._row_groups += -(-full // self.row_group_cells)
        rest = table.slice(full)
        self._pending = [rest] if rest.num_rows else []
        self._pending_cells = rest.num_rows

    def close(self) -> StoreFileInfo:
        """Write the last row group and the footer; returns the file's info.

        Raises:
            ValueError: if no cell was written (the partial file is removed).
        """
        if self._stats is None:
            self.abort()
            raise ValueError("a store file needs at least one cell")
        self._flush(final=True)
        info = StoreFileInfo(
            path=self.path,
            family=self.family.name,
            seq=self.seq,
            load_id=self.load_id,
            row_groups=self._row_groups,
            size=0,
            bloom_filter=self.family.bloom_filter,
            writer_version=_writer_version(),
            **self._stats,
        )
        self._writer.add_key_value_metadata(
            {FOOTER_KEY: json.dumps(info.footer_dict()).encode("utf-8")}
        )
        self._writer.close()
        self._file.close()
        self._closed = True
        size = int(self.fs.size(self.path))
        return StoreFileInfo(**{**info.__dict__, "size": size})

    def abort(self) -> None:
        """Close without a footer and delete the partial file (best effort)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._writer.close()
        finally:
            self._file.close()
            with contextlib.suppress(OSError):
                self.fs.rm(self.path)

    def __enter__(self) -> StoreFileStreamWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None or not self._closed:
            self.abort()

"""Writing store files: the one write path for every load and job (docs/format.md).

:class:`StoreFileWriter` writes one family's sorted cells as one Parquet file, chunk by
chunk, in bounded memory: it holds at most one row group of cells, folds each chunk into
the footer statistics and adds the footer to the Parquet key-value metadata when it closes.
Everything else is a thin wrapper over it:

- :func:`write_store_file` writes a whole table of cells as one file;
- :func:`~cellstore.storefiles.rolling.write_rolled` writes a region's cells of one family
  as one or more files, rolled at a size limit on row boundaries and named through
  :mod:`cellstore.storefiles.layout`.

The roll loop that cuts a region's cells into files, in Parquet or as HBase HFiles, is in
:mod:`cellstore.storefiles.rolling`.

Every file, however it was written, has the same Parquet options (compression and page
size from the family, page checksums, statistics, the sorting-columns declaration,
dictionary-encoded row and qualifier), the same row-group size and the same row Bloom
filter sizing: the number of distinct rows among the file's first row group of cells (the
most any row group's filter holds for uniformly shaped data, and exactly the file's row
count for files of one row group).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any, Final

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cellstore.core.cells import CELL_SCHEMA, CellType, run_starts
from cellstore.core.codecs import binary_parts
from cellstore.core.family import Family
from cellstore.defaults import CELLSTORE_VERSION
from cellstore.fs import makedirs_for
from cellstore.storefiles.context import FileContext
from cellstore.storefiles.footer import (
    FOOTER_KEY,
    StoreFileInfo,
    footer_digest,
    read_footer_bytes,
)

__all__ = [
    "BLOOM_FPP",
    "CELL_ENCODING",
    "CellEncoding",
    "DEFAULT_ROW_GROUP_CELLS",
    "NO_ROLL",
    "ParquetFileSink",
    "StoreFileWriter",
    "WrittenFile",
    "cell_stats",
    "RollCuts",
    "roll_points",
    "write_store_file",
]

#: Cells per Parquet row group: small enough that a point read decodes little, large
#: enough that per-group overhead stays negligible.
DEFAULT_ROW_GROUP_CELLS: Final = 65536
#: False-positive rate of the row Bloom filter.
BLOOM_FPP: Final = 0.01
#: ``max_file_bytes`` that never rolls: one file per store (and per task).
NO_ROLL: Final = 1 << 62

_SORTING: Final = [
    pq.SortingColumn(0),  # row ascending
    pq.SortingColumn(1),  # qualifier ascending
    pq.SortingColumn(2, descending=True),  # ts descending
    pq.SortingColumn(3, descending=True),  # type descending
]


@dataclass(frozen=True)
class CellEncoding:
    """How a cell file's columns are encoded (any encoding reads the same: section 9).

    Attributes:
        dictionary: The columns written with a Parquet dictionary.
        encodings: ``(column, encoding)`` pairs of other columns (pyarrow's
            ``column_encoding`` names); every other column is plain.
        zstd_level: The compression level when the family compresses with zstd (None:
            pyarrow's default).
    """

    dictionary: tuple[str, ...] = ("row", "qualifier")
    encodings: tuple[tuple[str, str], ...] = ()
    zstd_level: int | None = None


#: A cell file's encoding: rows and qualifiers repeat (a dictionary each), so a read that
#: asks for them as Arrow dictionaries (``encoded=True``) takes the pages as they are.
CELL_ENCODING: Final = CellEncoding()


@dataclass(frozen=True)
class WrittenFile:
    """A store file written for a region, not yet committed.

    Attributes:
        region: Id of the region the file belongs to.
        relpath: Path relative to the table directory (from :mod:`~.layout`).
        info: What the file's footer says.
    """

    region: str
    relpath: str
    info: StoreFileInfo


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


def _fold_stats(acc: dict[str, Any], s: dict[str, Any]) -> dict[str, Any]:
    """Statistics of ``acc``'s cells followed by ``s``'s (a row may continue across)."""
    joined = s["first_row"] == acc["last_row"]
    puts = [t for t in (acc["earliest_put_ts"], s["earliest_put_ts"]) if t is not None]
    return {
        "cells": acc["cells"] + s["cells"],
        "delete_markers": acc["delete_markers"] + s["delete_markers"],
        "rows": acc["rows"] + s["rows"] - int(joined),
        "first_row": acc["first_row"],
        "last_row": s["last_row"],
        "min_ts": min(acc["min_ts"], s["min_ts"]),
        "max_ts": max(acc["max_ts"], s["max_ts"]),
        "earliest_put_ts": min(puts) if puts else None,
    }


def bloom_ndv(cells: pa.Table, *, row_group_cells: int) -> int:
    """Distinct-value count the row Bloom filter is sized for.

    The number of distinct rows among the first ``row_group_cells`` cells: each row group
    carries its own filter, and no row group holds more rows than that for data of one
    shape. A file written whole and the same file written in chunks get the same number.
    """
    head = cells.column("row").slice(0, row_group_cells).combine_chunks()
    return max(1, len(run_starts(head)))


class ParquetFileSink(FileContext):
    """What every store-file writer shares: its Parquet writer, footer, and cleanup.

    The open Parquet writer and its file, the footer and footer digest written at close,
    and the deletion of a partial file. Subclasses set ``fs``, ``path``, ``_file``,
    ``_writer`` and ``_closed``.
    """

    fs: fsspec.AbstractFileSystem
    path: str
    family: Family
    seq: int
    load_id: str
    _file: Any
    _writer: pq.ParquetWriter | None
    _closed: bool

    def _finish(self, info: StoreFileInfo) -> StoreFileInfo:
        """Write ``info`` as the footer, close the file; its info with size and digest.

        The footer digest is the one the manifest entry records (one read of the tail).
        """
        assert self._writer is not None  # something was written
        self._writer.add_key_value_metadata(
            {FOOTER_KEY: json.dumps(info.footer_dict()).encode("utf-8")}
        )
        self._writer.close()
        self._file.close()
        self._closed = True
        size = int(self.fs.size(self.path))
        footer = read_footer_bytes(
            lambda start, end: self.fs.cat_file(self.path, start=start, end=end),
            size,
            name=self.path,
            check_head=False,
        )
        return StoreFileInfo(
            **{**info.__dict__, "size": size, "footer_digest": footer_digest(footer)}
        )

    def _start(self, group_rows: int) -> None:
        """Set the writer's state before the first write: nothing pending, not open."""
        #: Uncompressed bytes written so far (Arrow buffer sizes).
        self.bytes = 0
        self._group_rows = group_rows
        self._row_groups = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._stats: dict[str, Any] | None = None
        self._closed = False
        self._file = None
        self._writer = None

    def _open_parquet(self, schema: pa.Schema, **options: Any) -> pq.ParquetWriter:
        """Create the file and its Parquet writer (page checksums, schema stored).

        ``options`` are the writer's other Parquet options; the file is closed if the
        writer cannot be made.
        """
        makedirs_for(self.fs, self.path)
        self._file = self.fs.open(self.path, "wb")
        try:
            self._writer = pq.ParquetWriter(
                self._file, schema, write_page_checksum=True, store_schema=True, **options
            )
        except BaseException:
            self._file.close()
            raise
        return self._writer

    def _queue(self, table: pa.Table) -> None:
        """Hold ``table``'s rows; write the whole row groups once one is full."""
        self._pending.append(table)
        self._pending_rows += table.num_rows
        if self._pending_rows >= self._group_rows:
            self._flush(final=False)

    def _flush(self, *, final: bool) -> None:
        """Write the pending rows' whole row groups (all rows when ``final``).

        The rows past the last whole row group stay pending for the next write.
        """
        if not self._pending:
            return
        if len(self._pending) == 1:
            table = self._pending[0]
        else:
            table = pa.concat_tables(self._pending).combine_chunks()
        size = self._group_rows
        full = table.num_rows if final else table.num_rows - table.num_rows % size
        if full:
            self._write_groups(table, full)
        rest = table.slice(full)
        self._pending = [rest] if rest.num_rows else []
        self._pending_rows = rest.num_rows

    def _write_groups(self, table: pa.Table, full: int) -> None:
        """Write ``table``'s first ``full`` rows as row groups (opening the file first)."""
        raise NotImplementedError

    def _footer_fields(self) -> dict[str, Any]:
        """The footer's fields particular to the writer's format (after the last write)."""
        raise NotImplementedError

    def _close(self, empty: str) -> StoreFileInfo:
        """Write the last row group and the footer; ``empty`` is the error when none.

        Raises:
            ValueError: ``empty``, if nothing was written (nothing is left behind).
        """
        if self._stats is None:
            self.abort()
            raise ValueError(empty)
        self._flush(final=True)
        info = StoreFileInfo(
            path=self.path,
            family=self.family.name,
            seq=self.seq,
            load_id=self.load_id,
            row_groups=self._row_groups,
            size=0,
            writer_version=CELLSTORE_VERSION,
            **self._footer_fields(),
            **self._stats,
        )
        return self._finish(info)

    def abort(self) -> None:
        """Close without a footer and delete the partial file (best effort)."""
        if self._closed:
            return
        self._closed = True
        if self._file is None:
            return
        try:
            if self._writer is not None:
                self._writer.close()
        finally:
            self._file.close()
            with contextlib.suppress(OSError):
                self.fs.rm(self.path)

    def _leave(self, *, failed: bool) -> None:
        if failed or not self._closed:
            self.abort()


class StoreFileWriter(ParquetFileSink):
    """Write one store file chunk by chunk (the only Parquet store-file writer).

    Use it as a context manager and call :meth:`close` inside: leaving the block without
    closing (or with an exception) deletes the partial file.

    Contract: the chunks, concatenated, are one family's cells in cell order (R2.1) with
    unique keys (a row may continue from one chunk into the next), and at least one cell
    is written. The order is not re-checked here (``storefiles.check`` does).

    Args:
        fs: Filesystem to write to.
        path: Destination path (must not exist; names are unique per load or job).
        family: The family (compression, block size, Bloom filter).
        seq: Sequence number for the footer.
        load_id: Id of the load or job writing the file.
        row_group_cells: Cells per Parquet row group.
        encoding: How the columns are encoded (:data:`CELL_ENCODING`; the companion cell
            file of a column file has its own, in :mod:`~cellstore.storefiles.columns`).
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
        encoding: CellEncoding = CELL_ENCODING,
    ) -> None:
        if row_group_cells < 1:
            raise ValueError("row_group_cells must be positive")
        self.fs = fs
        self.path = path
        self.family = family
        self.seq = seq
        self.load_id = load_id
        self.row_group_cells = row_group_cells
        self.encoding = encoding
        self._start(row_group_cells)

    @property
    def cells(self) -> int:
        """Cells written so far."""
        return 0 if self._stats is None else int(self._stats["cells"])

    def write(self, cells: pa.Table) -> None:
        """Append sorted cells (the next part of the file's cell order)."""
        if self._closed:
            raise ValueError(f"{self.path}: writer is closed")
        if cells.num_rows == 0:
            return
        table = cells.select(CELL_SCHEMA.names).cast(CELL_SCHEMA)
        stats = cell_stats(table)
        self._stats = stats if self._stats is None else _fold_stats(self._stats, stats)
        self.bytes += table.nbytes
        self._queue(table)

    def _open(self, first: pa.Table) -> pq.ParquetWriter:
        options: dict[str, Any] = {}
        if self.family.bloom_filter:
            ndv = bloom_ndv(first, row_group_cells=self.row_group_cells)
            options["bloom_filter_options"] = {"row": {"ndv": ndv, "fpp": BLOOM_FPP}}
        encoding = self.encoding
        if encoding.encodings:
            options["column_encoding"] = dict(encoding.encodings)
        if encoding.zstd_level is not None and self.family.compression == "zstd":
            options["compression_level"] = encoding.zstd_level
        return self._open_parquet(
            CELL_SCHEMA,
            compression=self.family.compression,
            data_page_size=self.family.block_size,
            write_statistics=True,
            sorting_columns=_SORTING,
            use_dictionary=list(encoding.dictionary),
            **options,
        )

    def _write_groups(self, table: pa.Table, full: int) -> None:
        rgc = self.row_group_cells
        writer = self._writer if self._writer is not None else self._open(table)
        writer.write_table(table.slice(0, full), row_group_size=rgc)
        self._row_groups += -(-full // rgc)

    def close(self) -> StoreFileInfo:
        """Write the last row group and the footer; returns the file's info.

        The info carries the file's size and footer digest (read back from the written
        file's tail), for its manifest entry (:func:`cellstore.commit.file_entry`).

        Raises:
            ValueError: if no cell was written (nothing is left on the filesystem).
        """
        return self._close("a store file needs at least one cell")

    def _footer_fields(self) -> dict[str, Any]:
        return {"bloom_filter": self.family.bloom_filter}


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
    """Write ``cells`` as one store file (a :class:`StoreFileWriter` fed one chunk).

    Args:
        fs: Filesystem to write to.
        path: Destination path; must not exist.
        cells: One family's cells in cell order (R2.1) with unique keys, at least one.
        family: The family (its compression, block size and Bloom setting are used).
        seq: Sequence number to record in the footer.
        load_id: Id of the load or job writing the file.
        row_group_cells: Cells per Parquet row group.

    Returns:
        The file's :class:`StoreFileInfo`.
    """
    if cells.num_rows == 0:
        raise ValueError("a store file needs at least one cell")
    with StoreFileWriter(
        fs, path, family=family, seq=seq, load_id=load_id, row_group_cells=row_group_cells
    ) as writer:
        writer.write(cells)
        return writer.close()


def _cell_sizes(cells: pa.Table) -> np.ndarray:
    """Approximate uncompressed bytes of every cell (key, qualifier, value, ts, type)."""
    total = np.full(cells.num_rows, 13, dtype=np.int64)
    for name in ("row", "qualifier", "value"):
        offsets, _ = binary_parts(cells.column(name).combine_chunks())
        total += np.diff(offsets)
    return total


def roll_points(cells: pa.Table, max_bytes: int) -> list[int]:
    """Cut points of sorted cells into files of about ``max_bytes``, on row boundaries.

    A file is closed at the first row boundary at or after the cell where it would pass
    ``max_bytes`` (uncompressed cell bytes), so one row never spans two files.

    Returns:
        Offsets ``[0, c1, ..., n]``; file ``i`` holds cells ``[c_i, c_{i+1})``.
    """
    n = cells.num_rows
    if n == 0:
        return [0, 0]
    rolls = RollCuts(max_bytes)
    cuts = rolls.feed(cells)
    if rolls.tentative:  # all the cells make exactly one full file
        cuts = cuts[:-1]
    return [0, *cuts, n]


class RollCuts:
    """:func:`roll_points` of cells given chunk by chunk, each chunk whole rows.

    The cuts of the chunks fed in order, each relative to its chunk, are the cuts
    :func:`roll_points` makes in the chunks' concatenation, with one exception it cannot
    know before the end: when the first file's cells add up to exactly ``max_bytes`` and
    its last row is one cell, :func:`roll_points` keeps them one file only if no cell
    follows. :attr:`tentative` says a chunk's last cut is that one: the caller makes it
    only when another chunk comes.

    Args:
        max_bytes: A file is closed past this many uncompressed cell bytes.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        #: Bytes of the current file so far.
        self.held = 0
        #: Whether the last :meth:`feed`'s last cut depends on a later chunk (see above).
        self.tentative = False
        self._first = True  # no chunk fed yet
        self._cut = False  # some cut made

    def feed(self, cells: pa.Table) -> list[int]:
        """The cut points in ``cells`` (the next chunk): where a new file starts."""
        n = cells.num_rows
        self.tentative = False
        if n == 0:
            return []
        cum = np.concatenate([[0], np.cumsum(_cell_sizes(cells))]) + self.held
        starts = run_starts(cells.column("row"))  # row boundaries
        cuts: list[int] = []
        last = 0 if self._first else -1  # a cut is after this offset (a first file has cells)
        begin = 0  # bytes before the current file's first cell (in cum)
        while True:
            target = begin + self.max_bytes
            # The first row boundary at or after the point where the file would exceed.
            pos = int(np.searchsorted(starts, int(np.searchsorted(cum, target, side="left")) - 1))
            pos = max(pos, int(np.searchsorted(starts, last, side="right")))
            if pos >= len(starts):
                break
            last = int(starts[pos])
            cuts.append(last)
            begin = int(cum[last])
        self.tentative = not self._cut and cuts == [n - 1] and int(cum[-1]) == self.max_bytes
        self.held = int(cum[-1]) - begin
        self._first = False
        self._cut = self._cut or bool(cuts)
        return cuts

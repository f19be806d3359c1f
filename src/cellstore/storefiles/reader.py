"""Reading store files: footer, row-group pruning by row range, Bloom probes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cellstore.core.cells import CELL_SCHEMA
from cellstore.errors import CorruptFileError
from cellstore.storefiles.bloom import SplitBlockBloomFilter, parse_bloom_filter
from cellstore.storefiles.footer import FOOTER_KEY, StoreFileInfo

__all__ = ["RowGroupStats", "StoreFileReader", "read_store_file"]


@dataclass(frozen=True)
class RowGroupStats:
    """Row-key bounds of one row group (None when the writer kept no statistics).

    Attributes:
        index: Row-group number.
        num_cells: Cells in the row group.
        min_row: Smallest row key, or None if unknown.
        max_row: Largest row key, or None if unknown.
    """

    index: int
    num_cells: int
    min_row: bytes | None
    max_row: bytes | None

    def may_overlap(self, start: bytes, stop: bytes) -> bool:
        """Whether rows in ``[start, stop)`` (empty ``stop`` = unbounded) may be here."""
        if self.max_row is not None and start and self.max_row < start:
            return False
        return not (self.min_row is not None and stop and self.min_row >= stop)


class StoreFileReader:
    """An open store file.

    Args:
        fs: The filesystem.
        path: The file's path.
        verify_checksums: Verify Parquet page checksums while reading (default on).

    Raises:
        FileNotFoundError: if the file does not exist.
        CorruptFileError: if it is not a readable cellstore store file.
    """

    def __init__(
        self, fs: fsspec.AbstractFileSystem, path: str, *, verify_checksums: bool = True
    ) -> None:
        self.fs = fs
        self.path = path
        self._row_groups: list[RowGroupStats] | None = None
        self._blooms: dict[int, SplitBlockBloomFilter | None] = {}
        self._handle: Any = fs.open(path, "rb")
        try:
            self._pf = pq.ParquetFile(
                self._handle, page_checksum_verification=verify_checksums
            )
        except (pa.ArrowInvalid, OSError) as e:
            self._handle.close()
            raise CorruptFileError(f"{path}: not a readable Parquet file ({e})") from e
        meta = self._pf.metadata
        kv = meta.metadata or {}
        if FOOTER_KEY not in kv:
            self.close()
            raise CorruptFileError(f"{path}: Parquet file has no cellstore footer")
        self.info = StoreFileInfo.from_footer(
            kv[FOOTER_KEY],
            path=path,
            size=int(self._handle.size) if hasattr(self._handle, "size") else 0,
            row_groups=meta.num_row_groups,
        )

    # --------------------------------------------------------------- context
    def close(self) -> None:
        """Release the file handle."""
        self._handle.close()

    def __enter__(self) -> StoreFileReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ meta
    @property
    def parquet(self) -> pq.ParquetFile:
        """The underlying ``pyarrow.parquet.ParquetFile``."""
        return self._pf

    def row_groups(self) -> list[RowGroupStats]:
        """Row-key statistics of every row group (read from the footer once)."""
        if self._row_groups is None:
            self._row_groups = self._read_row_groups()
        return self._row_groups

    def _read_row_groups(self) -> list[RowGroupStats]:
        meta = self._pf.metadata
        out = []
        for i in range(meta.num_row_groups):
            rg = meta.row_group(i)
            col = rg.column(0)
            lo = hi = None
            if col.is_stats_set and col.statistics.has_min_max:
                lo, hi = col.statistics.min, col.statistics.max
                lo = lo.encode("latin-1") if isinstance(lo, str) else lo
                hi = hi.encode("latin-1") if isinstance(hi, str) else hi
            out.append(RowGroupStats(i, rg.num_rows, lo, hi))
        return out

    def row_groups_for(self, start: bytes = b"", stop: bytes = b"") -> list[int]:
        """Row groups that may hold rows in ``[start, stop)``."""
        return [g.index for g in self.row_groups() if g.may_overlap(start, stop)]

    def might_contain_row(self, row: bytes) -> bool:
        """Bloom-filter probe: False only if ``row`` is certainly not in the file.

        Uses row-group statistics first, then each candidate group's Parquet Bloom filter.
        Files written without a Bloom filter answer from statistics alone.
        """
        groups = self.row_groups_for(row, row + b"\x00")
        if not groups:
            return False
        if not self.info.bloom_filter:
            return True
        for i in groups:
            bloom = self._bloom(i)
            if bloom is None or bloom.might_contain(row):
                return True
        return False

    def _bloom(self, group: int) -> SplitBlockBloomFilter | None:
        """Row group ``group``'s row Bloom filter, read and parsed once; None if absent."""
        if group not in self._blooms:
            col = self._pf.metadata.row_group(group).column(0)
            offset, length = col.bloom_filter_offset, col.bloom_filter_length
            bloom = None
            if offset and length:
                data = self.fs.cat_file(self.path, start=offset, end=offset + length)
                bloom = parse_bloom_filter(data)
            self._blooms[group] = bloom
        return self._blooms[group]

    # ------------------------------------------------------------------ read
    def read(
        self,
        *,
        start: bytes = b"",
        stop: bytes = b"",
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        """Cells whose row is in ``[start, stop)``, in file order.

        Args:
            start: First row (inclusive); empty = from the first row.
            stop: Row after the last (exclusive); empty = to the last row.
            columns: Subset of the cell columns to read (``row`` is always read).

        Raises:
            CorruptFileError: if a page fails its checksum or cannot be decoded.
        """
        cols = list(CELL_SCHEMA.names if columns is None else columns)
        if "row" not in cols:
            cols = ["row", *cols]
        groups = self.row_groups_for(start, stop)
        try:
            if not groups:
                return CELL_SCHEMA.empty_table().select(cols)
            table = self._pf.read_row_groups(groups, columns=cols, use_threads=True)
        except (OSError, pa.ArrowInvalid) as e:
            raise CorruptFileError(f"{self.path}: {e}") from e
        table = table.replace_schema_metadata(None)
        if start or stop:
            row = table.column("row")
            lo = int(pc.sum(pc.less(row, start)).as_py() or 0) if start else 0
            hi = int(pc.sum(pc.less(row, stop)).as_py() or 0) if stop else table.num_rows
            table = table.slice(lo, max(hi - lo, 0))
        return table


def read_store_file(
    fs: fsspec.AbstractFileSystem,
    path: str,
    *,
    start: bytes = b"",
    stop: bytes = b"",
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """Read a store file's cells in ``[start, stop)`` (see :meth:`StoreFileReader.read`)."""
    with StoreFileReader(fs, path) as r:
        return r.read(start=start, stop=stop, columns=columns)

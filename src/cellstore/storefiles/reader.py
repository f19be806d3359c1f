"""Reading store files: footer, row-group pruning by row range, Bloom probes.

Store files are immutable, so what a reader learns from a file's footer (the Parquet
metadata, the row-group statistics, the Bloom filters it has loaded) is kept in a small
per-process cache and reused by the next reader of the same file. A cache entry is keyed by
the path, the file size and the footer digest, so a file rewritten under the same name is
never served stale metadata.

Every open reads the footer bytes itself (one read of the file's last 64 KiB, plus the
leading magic of a larger file), checks them structurally (both ``PAR1`` magics, a footer
length that fits in the file) and hashes them (:func:`~cellstore.storefiles.footer.footer_digest`);
pyarrow then parses those bytes, never reading the footer again. Opening a committed file
checks it against its manifest entry (pass ``entry=``): the footer digest, when the entry
records one, is compared BEFORE pyarrow parses the footer (pyarrow can abort the process on
some damaged footers); then the size and the footer's statistics must equal what the
manifest recorded at commit. So a file swapped for another one, replaced by a same-size
file, truncated or damaged in its footer raises :class:`~cellstore.errors.CorruptFileError`
instead of returning wrong cells or crashing. The checks run on every open, cached footer
or not. A file the manifest lists but that is gone raises
:class:`~cellstore.errors.MissingFileError`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq

from cellstore.core.cells import CELL_SCHEMA
from cellstore.core.columnar import (
    ROW_COLUMN,
    TS_COLUMN,
    Aliases,
    ColumnSpec,
    expand_records,
    key_names,
    record_rows,
    records_schema,
    restore_aliases,
    stored_names,
)
from cellstore.core.metadata import FileEntry
from cellstore.core.regions import bisect_rows
from cellstore.core.rowkey import RowKeySpec
from cellstore.errors import (
    BadCellError,
    CellstoreError,
    CorruptFileError,
    InvalidArgumentError,
    MissingFileError,
)
from cellstore.fs import is_local
from cellstore.storefiles.bloom import SplitBlockBloomFilter, parse_bloom_filter
from cellstore.storefiles.context import FileContext
from cellstore.storefiles.decode import as_dense, dictionary_columns
from cellstore.storefiles.footer import (
    FOOTER_KEY,
    PARQUET_MAGIC,
    StoreFileInfo,
    digest_mismatch,
    entry_mismatch,
    read_footer_bytes,
)
from cellstore.storefiles.footer import footer_digest as _digest_of

__all__ = [
    "RowGroupStats",
    "StoreFileReader",
    "clear_footer_cache",
    "known_info",
    "read_store_file",
]

#: Columns a dictionary-encoded read (``encoded=True``) returns as Arrow dictionaries.
ENCODED_COLUMNS: Final = ("row", "qualifier")

#: How many files' footers the per-process cache keeps.
_CACHE_ENTRIES: Final = 256


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

    def within(self, start: bytes, stop: bytes) -> bool:
        """Whether every row here is known to lie in ``[start, stop)``."""
        if start and (self.min_row is None or self.min_row < start):
            return False
        return not (stop and (self.max_row is None or self.max_row >= stop))


@dataclass
class _Footer:
    """What the cache keeps of one file (see the module docstring)."""

    metadata: pq.FileMetaData
    row_groups: list[RowGroupStats] | None = None
    blooms: dict[int, SplitBlockBloomFilter | None] = field(default_factory=dict)
    #: The parsed footer, once the file passed every check of an open (schema included).
    info: StoreFileInfo | None = None
    #: A column file's text columns read through their dictionaries (first read sets it).
    dictionary: frozenset[str] | None = None


_cache: OrderedDict[tuple[str, int, str], _Footer] = OrderedDict()
_cache_lock = threading.Lock()


def clear_footer_cache() -> None:
    """Forget every cached footer (for tests and benchmarks of cold opens)."""
    with _cache_lock:
        _cache.clear()


def _cache_get(key: tuple[str, int, str]) -> _Footer | None:
    with _cache_lock:
        entry = _cache.get(key)
        if entry is not None:
            _cache.move_to_end(key)
        return entry


def _cache_put(key: tuple[str, int, str], entry: _Footer) -> None:
    with _cache_lock:
        _cache[key] = entry
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_ENTRIES:
            _cache.popitem(last=False)


def known_info(path: str, entry: FileEntry) -> StoreFileInfo | None:
    """The footer of the file at ``path`` as an earlier open checked it, or None.

    From the footer cache, for a file of ``entry``'s size and footer digest (None when
    it is not cached or the entry records no digest). For planning only: a read still
    opens the file, which checks it against the entry.
    """
    if entry.footer_digest is None:
        return None
    cached = _cache_get((path, entry.size, entry.footer_digest))
    return cached.info if cached is not None else None


class StoreFileReader(FileContext):
    """An open store file.

    Args:
        fs: The filesystem.
        path: The file's path.
        verify_checksums: Verify Parquet page checksums while reading (default on).
        entry: The file's manifest entry. When given, the file's size and footer must
            agree with it (:func:`~cellstore.storefiles.footer.entry_mismatch`); every
            read of committed data passes it.
        table: The table's name, for error messages.
        version: The table version whose manifest lists the file, for error messages.
        footer_digest: The footer digest the file must have, when there is no ``entry``
            (:func:`~cellstore.storefiles.check` passes the entry's this way); with
            ``entry``, the entry's ``footer_digest`` is used.

    Attributes:
        info: The footer, with the file's size and actual footer digest.

    Raises:
        MissingFileError: if the file does not exist (also a ``FileNotFoundError``).
        CorruptFileError: if it is not a readable cellstore store file (too short, no
            ``PAR1`` at either end, a footer length outside the file...), its footer
            digest differs from the expected one ("footer digest mismatch", checked
            before pyarrow parses the footer), or it does not match ``entry``; the
            message names the file, the table version and the mismatch.
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        path: str,
        *,
        verify_checksums: bool = True,
        entry: FileEntry | None = None,
        table: object = None,
        version: int | None = None,
        footer_digest: str | None = None,
    ) -> None:
        self.fs = fs
        self.path = path
        self.verify_checksums = verify_checksums
        self.entry = entry
        where = _where(table, version)
        try:
            # local disk: the footer read through a built-in file, closed when the footer
            # is checked (fsspec's file costs more than the read; :attr:`parquet` opens
            # one when asked); reads open their own source (:meth:`_open_source`)
            local = is_local(fs)
            self._handle: Any = (
                open(fs._strip_protocol(path), "rb") if local else fs.open(path, "rb")  # noqa: SIM115
            )
        except FileNotFoundError as e:
            listed = "the manifest lists it but " if entry is not None else ""
            raise MissingFileError(
                f"{where}store file {path} is missing ({listed}the file is gone); "
                "run `cellstore verify` to list damaged files, then restore the table from "
                "a snapshot (`cellstore restore`) or the file from a backup"
            ) from e
        expected = entry.footer_digest if entry is not None else footer_digest
        try:
            size = (
                int(self._handle.size) if hasattr(self._handle, "size") else _seek_end(self._handle)
            )
            mismatch = None
            if entry is not None and size != entry.size:  # said first: it needs no read
                mismatch = f"size is {size} bytes, the manifest says {entry.size}"
            else:
                footer = read_footer_bytes(self._read_range, size, name=f"{where}{path}")
                digest = _digest_of(footer)
                if expected is not None and digest != expected:
                    mismatch = digest_mismatch(digest, expected)
            if mismatch is not None:
                raise _entry_mismatch_error(where, path, mismatch)
            key = (path, size, digest)
            cached = _cache_get(key)
            metadata = (
                cached.metadata
                if cached is not None
                else pq.read_metadata(pa.BufferReader(PARQUET_MAGIC + footer))
            )
            self._metadata: pq.FileMetaData = metadata
            self._pf: pq.ParquetFile | None = None  # built when asked for (:attr:`parquet`)
            meta = metadata
            kv = meta.metadata or {}
            if FOOTER_KEY not in kv:
                raise CorruptFileError(f"{where}{path}: Parquet file has no cellstore footer")
            known = cached.info if cached is not None else None
            self.info = known or StoreFileInfo.from_footer(
                kv[FOOTER_KEY],
                path=path,
                size=size,
                row_groups=meta.num_row_groups,
                footer_digest=digest,
            )
            if entry is not None:
                mismatch = entry_mismatch(self.info, entry)
                held = sum(self.info.group_cells) if self.info.columns else meta.num_rows
                if mismatch is None and held != entry.cells:
                    mismatch = f"the Parquet footer holds {held} cells"
                if mismatch is not None:
                    raise _entry_mismatch_error(where, path, mismatch)
            if known is None:  # a cached footer passed this check when first opened
                _check_schema(
                    self.parquet,
                    path,
                    where,
                    self.info.columns,
                    self.info.row_key,
                    self.info.aliases,
                )
            # Row-group statistics, parsed once per footer and checked on the way (a
            # column chunk whose type disagrees with the schema would abort pyarrow).
            groups = cached.row_groups if cached is not None else None
            if groups is None:
                groups = _row_group_stats(meta, f"{where}{path}", self.info)
        except CellstoreError:
            self._handle.close()
            raise
        except (pa.ArrowException, OSError, ValueError, IndexError) as e:
            self._handle.close()
            raise CorruptFileError(f"{where}{path}: not a readable Parquet file ({e})") from e
        finally:
            if local:
                self._handle.close()
                self._handle = None
                self._pf = None  # (the schema check's, on the closed file)
        if cached is None:
            cached = _Footer(meta, groups)
            _cache_put(key, cached)
        cached.row_groups = groups
        cached.info = self.info
        self._footer = cached

    def _read_range(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the file (fewer at its end), handle rewound after.

        Away from the file's end on a remote filesystem, one exact range request: the
        open handle's read-ahead would fetch a whole block for the 4-byte leading magic.
        """
        if not is_local(self.fs) and end < int(getattr(self._handle, "size", end + 1)):
            return bytes(self.fs.cat_file(self.path, start=start, end=end))
        handle = self._handle
        handle.seek(start)
        data = handle.read(end - start)
        handle.seek(0)
        return bytes(data)

    # --------------------------------------------------------------- context
    def close(self) -> None:
        """Release the file handle."""
        if self._handle is not None:
            self._handle.close()

    def _leave(self, *, failed: bool) -> None:
        self.close()

    # ------------------------------------------------------------------ meta
    @property
    def parquet(self) -> pq.ParquetFile:
        """The underlying ``pyarrow.parquet.ParquetFile`` (built on first use)."""
        if self._pf is None:
            if self._handle is None:  # (local disk: closed after the footer was read)
                self._handle = self.fs.open(self.path, "rb")
            self._pf = pq.ParquetFile(
                self._handle,
                metadata=self._metadata,
                page_checksum_verification=self.verify_checksums,
            )
        return self._pf

    @property
    def metadata(self) -> pq.FileMetaData:
        """The file's Parquet footer (parsed once per file and process)."""
        return self._metadata

    def row_groups(self) -> list[RowGroupStats]:
        """Row-key statistics of every row group (read from the footer once per file)."""
        groups = self._footer.row_groups
        assert groups is not None  # set at open
        return groups

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

    def rows_missing_from_bloom(self, rows: pa.ChunkedArray | pa.Array) -> list[bytes]:
        """The rows of the file's ``row`` column that their row group's Bloom filter lacks.

        Args:
            rows: The whole file's ``row`` column, in file order (so row group ``i``'s rows
                are its ``num_rows`` values after those of groups ``0 .. i - 1``).

        Returns:
            Each row (once per group) that its group's filter says is certainly absent; empty
            when the file has no filter. Probes run compiled, one pass per row group.
        """
        from cellstore.core.cells import run_starts

        if not self.info.bloom_filter:
            return []
        column = rows.combine_chunks() if isinstance(rows, pa.ChunkedArray) else rows
        missing: list[bytes] = []
        offset = 0
        for g in self.row_groups():
            group_rows = column.slice(offset, g.num_cells)
            offset += g.num_cells
            bloom = self._bloom(g.index)
            if bloom is None or not len(group_rows):
                continue
            distinct = group_rows.take(pa.array(run_starts(group_rows)))
            hits = bloom.might_contain_all(distinct)
            if not hits.all():
                missing.extend(distinct.filter(pa.array(~hits)).to_pylist())
        return missing

    def _bloom(self, group: int) -> SplitBlockBloomFilter | None:
        """Row group ``group``'s row Bloom filter, read and parsed once; None if absent."""
        blooms = self._footer.blooms
        if group not in blooms:
            col = self._metadata.row_group(group).column(0)
            offset, length = col.bloom_filter_offset, col.bloom_filter_length
            bloom = None
            if offset and length:
                data = self.fs.cat_file(self.path, start=offset, end=offset + length)
                bloom = parse_bloom_filter(data)
            blooms[group] = bloom
        return blooms[group]

    # ------------------------------------------------------------------ read
    def read(
        self,
        *,
        start: bytes = b"",
        stop: bytes = b"",
        columns: Sequence[str] | None = None,
        encoded: bool = False,
    ) -> pa.Table:
        """Cells whose row is in ``[start, stop)``, in file order.

        Args:
            start: First row (inclusive); empty = from the first row.
            stop: Row after the last (exclusive); empty = to the last row.
            columns: Subset of the cell columns to read (``row`` is always read).
            encoded: Return ``row`` and ``qualifier`` dictionary-encoded (cheaper to
                decode and to compare; see :meth:`read_row_groups`).

        Raises:
            CorruptFileError: if a page fails its checksum or cannot be decoded.
        """
        cols = list(CELL_SCHEMA.names if columns is None else columns)
        if "row" not in cols:
            cols = ["row", *cols]
        stats = [g for g in self.row_groups() if g.may_overlap(start, stop)]
        if not stats:
            return CELL_SCHEMA.empty_table().select(cols)
        table = self.read_row_groups([g.index for g in stats], columns=cols, encoded=encoded)
        return slice_rows(table, stats, start, stop)

    def read_row_groups(
        self,
        groups: Sequence[int],
        *,
        columns: Sequence[str] | None = None,
        encoded: bool = False,
        use_threads: bool = True,
        rows: tuple[bytes, bytes] | None = None,
    ) -> pa.Table:
        """Decode whole row groups (in the order given), without schema metadata.

        Safe to call from several threads at once: each call reads through its own file
        handle (a native one on local disk) and reuses the parsed footer.

        Args:
            groups: Row-group numbers.
            columns: Cell columns to read (default all).
            encoded: Read ``row`` and ``qualifier`` as Arrow dictionaries (one dictionary
                per row group, in the order values first appear, so sorted).
            use_threads: Decode columns in parallel.
            rows: ``(start, stop)``: of a column file, expand only the records whose row is
                in ``[start, stop)`` (empty: unbounded), so a point read expands one
                record, not its row group (the result then holds only those cells). A
                cell file's row groups are returned whole.

        Raises:
            CorruptFileError: if a page fails its checksum or cannot be decoded.
        """
        cols = list(CELL_SCHEMA.names if columns is None else columns)
        specs = self.info.columns
        key = self.info.row_key
        if specs:
            head = [ROW_COLUMN] if key is None else key_names(key)
            read = [*head, TS_COLUMN, *(s.value_name for s in specs)]
            if "ts" in cols:
                read += [s.ts_name for s in specs]
            logical, read = read, stored_names(read, specs, key, self.info.aliases)
            dictionary = None
        else:
            read = cols
            dictionary = [c for c in ENCODED_COLUMNS if c in cols] if encoded else None
        source: Any = None
        try:
            source = self._open_source()
            pf = pq.ParquetFile(
                source,
                metadata=self._metadata,
                read_dictionary=dictionary or None,
                page_checksum_verification=self.verify_checksums,
            )
            table = pf.read_row_groups(list(groups), columns=read, use_threads=use_threads)
            if specs:
                # a column file: its records' cells, in cell order (lossless, section 14)
                table = restore_aliases(table, logical, specs, key, self.info.aliases)
                table = self._with_rows(table)
                if rows is not None:
                    lo = bisect_rows(table.column(ROW_COLUMN), rows[0]) if rows[0] else 0
                    hi = bisect_rows(table.column(ROW_COLUMN), rows[1]) if rows[1] else len(table)
                    table = table.slice(lo, max(hi - lo, 0))
                table = expand_records(table, specs, columns=cols, encoded=encoded)
        except (OSError, pa.ArrowException, ValueError, IndexError) as e:
            raise CorruptFileError(f"{self.path}: cannot decode cells ({e})") from e
        except BadCellError as e:
            raise CorruptFileError(f"{self.path}: a record's key columns are bad ({e})") from e
        finally:
            if source is not None:
                source.close()
        return table.replace_schema_metadata(None)

    def read_records(
        self,
        groups: Sequence[int],
        *,
        columns: Sequence[str] | None = None,
        use_threads: bool = True,
        dense: bool = True,
    ) -> pa.Table:
        """A column file's records of row groups ``groups`` (no expansion to cells).

        A keyed file's rows (``__row``) are encoded from its key columns when asked for
        (first, as in an unkeyed file); its key columns (``__key:<field>``) can be read
        as they are. An aliased value column (docs/format.md 14.2) is its key column's
        values, read from that column.

        Args:
            groups: Row-group numbers.
            columns: Record columns to read (default all: row, the key columns of a keyed
                file, ts, values, timestamps).
            use_threads: Decode columns in parallel.
            dense: Text columns as their values' type. False: those read through their
                dictionaries (:mod:`~cellstore.storefiles.decode`) stay Arrow dictionary
                arrays, and aliased value columns too (except the key columns ``__row``
                is encoded from), for a caller that cuts the records before decoding them
                (:func:`~cellstore.storefiles.decode.as_dense`).

        Raises:
            InvalidArgumentError: the file is a cell file.
            CorruptFileError: if a page fails its checksum or cannot be decoded.
        """
        if not self.info.columns:
            raise InvalidArgumentError(f"{self.path} is a cell-layout file, it has no records")
        key = self.info.row_key
        want_rows = key is not None and (columns is None or ROW_COLUMN in columns)
        if key is not None and columns is not None:
            names = key_names(key)
            columns = [c for c in columns if c != ROW_COLUMN]
            if want_rows:
                columns = [*(n for n in names if n not in columns), *columns]
        aliases = self.info.aliases
        logical = columns
        if aliases and key is not None:
            logical = (
                columns if columns is not None else records_schema(self.info.columns, key).names
            )
            # an aliased value column is read as its key column; __row needs every key column
            extra = key_names(key) if want_rows else []
            columns = stored_names([*extra, *logical], self.info.columns, key, aliases)
        source: Any = None
        try:
            source = self._open_source()
            text = self._dictionary_columns()
            pf = pq.ParquetFile(
                source,
                metadata=self._metadata,
                read_dictionary=[c for c in columns or text if c in text] or None,
                page_checksum_verification=self.verify_checksums,
            )
            table = pf.read_row_groups(list(groups), columns=columns, use_threads=use_threads)
            # the same values, decoded faster (decode.py); or later, by the caller
            later = key_names(key) if want_rows and key is not None else []
            table = as_dense(table, text if dense else later)
            if want_rows:
                table = self._with_rows(table)
            if aliases and key is not None:
                names = [*([ROW_COLUMN] if want_rows else []), *(logical or ())]
                table = restore_aliases(table, names, self.info.columns, key, aliases)
        except (OSError, pa.ArrowException, ValueError, IndexError) as e:
            raise CorruptFileError(f"{self.path}: cannot decode records ({e})") from e
        except BadCellError as e:
            raise CorruptFileError(f"{self.path}: a record's key columns are bad ({e})") from e
        finally:
            if source is not None:
                source.close()
        return table.replace_schema_metadata(None)

    def _dictionary_columns(self) -> frozenset[str]:
        """The text columns read as dictionaries (:mod:`~cellstore.storefiles.decode`)."""
        known = self._footer.dictionary
        if known is None:
            known = self._footer.dictionary = dictionary_columns(self._metadata)
        return known

    def _with_rows(self, records: pa.Table) -> pa.Table:
        """``records`` with ``__row`` first (a keyed file's, encoded from its key columns).

        Raises:
            BadCellError: a key column holds a value the spec cannot encode.
        """
        if ROW_COLUMN in records.column_names or self.info.row_key is None:
            return records
        return records.add_column(0, ROW_COLUMN, record_rows(records, self.info.row_key))

    def _open_source(self) -> Any:
        """A fresh handle on the file for one read (positional reads, thread-safe).

        Local files are memory-mapped: Parquet pages are then decoded straight from the
        page cache, without a copy into read buffers (store files are immutable, so the
        mapping never sees the file change).
        """
        if is_local(self.fs):
            return pa.memory_map(self.fs._strip_protocol(self.path), "r")
        return self.fs.open(self.path, "rb")


def _row_group_stats(meta: pq.FileMetaData, name: str, info: StoreFileInfo) -> list[RowGroupStats]:
    """Row-key bounds of every row group, checking the row column chunk's physical type.

    Raises:
        CorruptFileError: the row column chunk's type is not the schema's, or a row group
            has the wrong number of columns or a negative cell count.
    """
    out = []
    heads = 1 if info.row_key is None else len(info.row_key.fields)
    width = (
        heads + 1 + 2 * len(info.columns) - len(info.aliases)
        if info.columns
        else len(_PHYSICAL_TYPES)
    )
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        if rg.num_columns != width or rg.num_rows < 0:
            raise CorruptFileError(f"{name}: row group {i} is malformed")
        cells = info.group_cells[i] if info.columns else rg.num_rows
        if info.columns and cells > rg.num_rows * len(info.columns):
            raise CorruptFileError(
                f"{name}: row group {i} claims {cells} cells in {rg.num_rows} records"
            )
        if info.row_key is not None:
            # a keyed file: the footer's row-group bounds (checked against the rows when
            # a group is verified); no statistics are touched
            out.append(RowGroupStats(i, cells, *info.group_rows[i]))
            continue
        # Only the row column's chunk metadata is touched here: pyarrow's accessor cannot
        # report some footer damage and aborts the process instead (the C++ read path
        # reports it as an error, so the other columns are checked when decoded).
        col = rg.column(0)
        if col.physical_type != _PHYSICAL_TYPES[0]:
            raise CorruptFileError(
                f"{name}: row group {i} row column is {col.physical_type}, not BYTE_ARRAY"
            )
        lo = hi = None
        if col.is_stats_set and col.statistics.has_min_max:
            lo, hi = col.statistics.min, col.statistics.max
            lo = lo.encode("latin-1") if isinstance(lo, str) else lo
            hi = hi.encode("latin-1") if isinstance(hi, str) else hi
        out.append(RowGroupStats(i, cells, lo, hi))
    return out


def _entry_mismatch_error(where: str, path: str, mismatch: str) -> CorruptFileError:
    """The error for a file that disagrees with its manifest entry (or expected digest)."""
    return CorruptFileError(
        f"{where}store file {path} does not match its manifest entry: {mismatch} (the file "
        "was replaced or damaged); run `cellstore verify`, then restore from a snapshot "
        "(`cellstore restore`)"
    )


def _seek_end(handle: Any) -> int:
    """The size of an open file that has no ``size`` attribute (handle rewound)."""
    size = int(handle.seek(0, 2))
    handle.seek(0)
    return size


def _where(table: object, version: int | None) -> str:
    """``table T version V: `` (what is known of it) for error messages, or ``""``."""
    if table is None:
        return "" if version is None else f"table version {version}: "
    return f"table {table}: " if version is None else f"table {table} version {version}: "


#: Parquet physical types of the cell columns, in order.
_PHYSICAL_TYPES: Final = ("BYTE_ARRAY", "BYTE_ARRAY", "INT64", "INT32", "BYTE_ARRAY")


def _check_schema(
    pf: pq.ParquetFile,
    path: str,
    where: str,
    columns: Sequence[ColumnSpec] = (),
    key: RowKeySpec | None = None,
    aliases: Aliases = (),
) -> None:
    """Refuse a Parquet file whose columns are not the cell schema (it is no store file).

    Both schemas are checked: the Parquet one (physical types; pyarrow aborts the process
    when statistics disagree with it) and the Arrow one the footer records. A column file
    (``columns``: its footer's column set) has the schema of its column set.
    """
    try:
        physical = tuple(pf.schema.column(i).physical_type for i in range(len(pf.schema)))
        schema = pf.schema_arrow
    except (pa.ArrowException, ValueError, IndexError) as e:
        raise CorruptFileError(f"{where}{path}: unreadable Parquet schema ({e})") from e
    if columns:
        _check_records_schema(physical, schema, path, where, columns, key, aliases)
        return
    if physical != _PHYSICAL_TYPES:
        raise CorruptFileError(
            f"{where}{path}: Parquet column types are {', '.join(physical)}; a store file's "
            f"are {', '.join(_PHYSICAL_TYPES)}"
        )
    got = [(f.name, f.type) for f in schema]
    if got != [(f.name, f.type) for f in CELL_SCHEMA]:
        raise CorruptFileError(
            f"{where}{path}: columns are {', '.join(f'{n} {t}' for n, t in got)}; "
            "a store file has the cell schema (row, qualifier, ts, type, value)"
        )


#: Parquet physical type of each Arrow type a column file holds.
_PHYSICAL_OF: Final = {
    pa.binary(): "BYTE_ARRAY",
    pa.string(): "BYTE_ARRAY",
    pa.int64(): "INT64",
    pa.int32(): "INT32",
    pa.int16(): "INT32",
    pa.int8(): "INT32",
    pa.uint8(): "INT32",
    pa.uint16(): "INT32",
    pa.uint32(): "INT32",
    pa.uint64(): "INT64",
    pa.float64(): "DOUBLE",
    pa.float32(): "FLOAT",
    pa.bool_(): "BOOLEAN",
}


def _check_records_schema(
    physical: tuple[str, ...],
    schema: pa.Schema,
    path: str,
    where: str,
    columns: Sequence[ColumnSpec],
    key: RowKeySpec | None,
    aliases: Aliases,
) -> None:
    """Refuse a column file whose columns are not its footer's column set's (section 14)."""
    want = records_schema(columns, key, aliases)
    if [(f.name, f.type) for f in schema] != [(f.name, f.type) for f in want] or physical != tuple(
        _PHYSICAL_OF[f.type] for f in want
    ):
        raise CorruptFileError(
            f"{where}{path}: columns are not the column set its footer names "
            f"({len(schema)} columns, expected {len(want)}: {', '.join(want.names[:6])}...)"
        )


def slice_rows(
    table: pa.Table,
    stats: Sequence[RowGroupStats],
    start: bytes,
    stop: bytes,
    *,
    row: str = "row",
) -> pa.Table:
    """The cells of ``table`` (the row groups ``stats``, in order) whose row is in range.

    Row groups entirely inside ``[start, stop)`` need no look at their rows; the two cut
    points are found by binary search over the sorted row column (``row``: its name; a
    column file's records have ``__row``).
    """
    if all(g.within(start, stop) for g in stats):
        return table
    rows = table.column(row)
    lo = bisect_rows(rows, start) if start else 0
    hi = bisect_rows(rows, stop) if stop else table.num_rows
    return table.slice(lo, max(hi - lo, 0))


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

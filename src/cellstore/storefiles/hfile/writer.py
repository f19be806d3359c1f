"""Write HBase HFile v3.3 files that ``completebulkload`` accepts, with no JVM.

* :class:`HFileWriter` streams cells already in HBase's order to a file on any fsspec
  filesystem, batch by batch, holding at most one data block plus index and Bloom state;
* :func:`write_hfile` sorts cells when needed and writes them through one
  :class:`HFileWriter`; :func:`build_hfile` builds a file in memory (tests, small files).

The layout (what ``HFileWriterImpl`` + ``StoreFileWriter`` write for
``HFileOutputFormat2``) is produced by :class:`~cellstore.storefiles.hfile.assembler.Assembler`.
The NONE path is vectorized (:mod:`cellstore.storefiles.hfile.cellbytes`); only the
per-block assembly is a Python loop. Encoded blocks (PREFIX/DIFF/FAST_DIFF) run a per-cell
encoder (:mod:`cellstore.storefiles.hfile.encoders`).
"""

from __future__ import annotations

import io
from dataclasses import replace
from typing import Any, Final, Literal, Unpack

import fsspec
from fsspec.implementations.local import LocalFileSystem

from cellstore.errors import InvalidArgumentError
from cellstore.storefiles.context import FileContext
from cellstore.storefiles.hfile.assembler import (
    KV_COMPARATOR,
    Assembler,
    BloomType,
    WrittenHFile,
    midpoint_key,
)
from cellstore.storefiles.hfile.cellbytes import (
    PreparedCells,
    UnorderedCellsError,
    as_table,
    prepare_cells,
    slice_cells,
)
from cellstore.storefiles.hfile.options import HFileKwargs, HFileOptions
from cellstore.storefiles.hfile.threads import ordered_map

__all__ = [
    "KV_COMPARATOR",
    "BloomType",
    "HFileKwargs",
    "HFileOptions",
    "HFileWriter",
    "WrittenHFile",
    "build_hfile",
    "midpoint_key",
    "write_hfile",
]


#: Cells serialized at a time by :func:`write_hfile` (a few tens of MB of cell bytes).
_SLICE_CELLS: Final = 1 << 20


def _family_bytes(family: bytes | str | None) -> bytes | None:
    return family.encode() if isinstance(family, str) else family


def hfile_options(options: HFileOptions | None, overrides: HFileKwargs) -> HFileOptions:
    """``options`` (default :class:`HFileOptions()`) with ``overrides`` applied.

    Raises:
        InvalidArgumentError: an invalid option.
        TypeError: an override that is not an :class:`HFileOptions` field.
    """
    base = options if options is not None else HFileOptions()
    return replace(base, **overrides) if overrides else base


class HFileWriter(FileContext):
    """Streams one HBase HFile v3.3 to a file, batch by batch (``HFileWriterImpl``).

    Each :meth:`write` takes a batch of cells already in HBase's order (row, family,
    qualifier ascending; timestamp, type descending) that sorts after the previous batch.
    Complete data blocks, with the leaf-index and Bloom chunks that become due, go to the
    file as they fill; memory holds the current batch, one held-back block, the index and
    the open Bloom chunk, not the file. :meth:`close` writes the indexes, FileInfo, Bloom
    metas and trailer. The file is byte-identical to :func:`write_hfile` of all the cells
    in one call, however the cells are split into batches.

    Used as a context manager, an exception inside the block aborts (deletes the partial
    file) and a normal exit closes the writer unless it was closed already.

    Args:
        fs: An fsspec filesystem; None writes to the local filesystem.
        path: Destination path on ``fs``.
        options: How the file is written (default :class:`HFileOptions()`).
        family: Family for every cell when the batches have no ``family`` column.
        **overrides: :class:`HFileOptions` fields replacing those of ``options``.

    Raises:
        InvalidArgumentError: An option is invalid (nothing is created then).
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem | None,
        path: str,
        options: HFileOptions | None = None,
        /,
        *,
        family: bytes | str | None = None,
        **overrides: Unpack[HFileKwargs],
    ) -> None:
        options = hfile_options(options, overrides)
        self._fs: fsspec.AbstractFileSystem = LocalFileSystem() if fs is None else fs
        self._path = path
        self._family = _family_bytes(family)
        self._file: Any = self._fs.open(path, "wb")
        self._asm = Assembler(self._file, options)
        self._state: Literal["open", "closed", "aborted"] = "open"

    @property
    def path(self) -> str:
        """The file being written."""
        return self._path

    @property
    def cells(self) -> int:
        """Cells accepted so far."""
        return self._asm.cells

    @property
    def uncompressed_bytes(self) -> int:
        """Bytes of the accepted cells in NONE layout (key, value, tags, memstore ts).

        This is the size a roll-over policy (``hbase.hregion.max.filesize``) compares.
        """
        return self._asm.uncompressed_bytes

    def _check_open(self) -> None:
        if self._state != "open":
            raise InvalidArgumentError(f"HFile writer for {self._path} is {self._state}")

    def write(self, cells: Any) -> None:
        """Append a batch of cells in HBase's order, sorting after every earlier cell.

        A refused batch leaves the writer as it was (nothing of it is written).

        Args:
            cells: pyarrow Table/RecordBatch or pandas DataFrame with the columns
                :func:`write_hfile` accepts.

        Raises:
            InvalidArgumentError: The writer is closed, or the batch is out of order
                (within itself or against the previous batch; the message names the first
                cell out of order).
            BadCellError: A cell is invalid.
        """
        self._check_open()
        self._asm.append(prepare_cells(cells, family=self._family, sort=False))

    def _write_slices(self, table: Any, size: int) -> None:
        """:meth:`write` of ``table`` in slices of ``size`` cells.

        With ``threads > 1`` the next slice is prepared (checked, converted, its order
        flags computed) on a thread while this one is laid out and written; errors come
        out in slice order, as :meth:`write` raises them.
        """
        self._check_open()
        threads = min(2, self._asm.options.threads)
        starts = range(0, table.num_rows, size)
        prepared = ordered_map(
            lambda start: prepare_cells(table.slice(start, size), family=self._family, sort=False),
            starts,
            threads=threads if len(starts) > 1 else 1,
            ahead=1,
        )
        try:
            for cells in prepared:
                self._asm.append(cells)
        finally:
            prepared.close()

    def _write_prepared(self, cells: PreparedCells) -> None:
        """Append prepared cells in order, :data:`_SLICE_CELLS` at a time.

        Slicing bounds the working memory; the bytes do not depend on it.
        """
        self._check_open()
        for start in range(0, len(cells), _SLICE_CELLS):
            self._asm.append(slice_cells(cells, start, min(len(cells), start + _SLICE_CELLS)))

    def close(self) -> WrittenHFile:
        """Finish the file (last block, indexes, Bloom, FileInfo, trailer) and close it.

        Returns:
            The summary of the file written.

        Raises:
            InvalidArgumentError: The writer was already closed or aborted.
        """
        self._check_open()
        try:
            summary = self._asm.finish()
            self._file.close()
        except BaseException:
            self.abort()
            raise
        self._state = "closed"
        return WrittenHFile(
            path=self._path,
            file_size=summary.file_size,
            entry_count=summary.entry_count,
            data_blocks=summary.data_blocks,
            index_levels=summary.index_levels,
            bloom_chunks=summary.bloom_chunks,
            first_row=summary.first_row,
            last_row=summary.last_row,
        )

    def abort(self) -> None:
        """Stop writing and delete the partial file (a no-op once closed or aborted)."""
        if self._state != "open":
            return
        self._state = "aborted"
        try:
            if isinstance(self._file, fsspec.spec.AbstractBufferedFile):
                self._file.discard()  # e.g. s3fs: abort the multipart upload, upload nothing
                self._file.closed = True
            else:
                self._file.close()
        finally:
            if self._fs.exists(self._path):
                self._fs.rm(self._path)

    def _leave(self, *, failed: bool) -> None:
        if failed:
            self.abort()
        elif self._state == "open":
            self.close()


def build_hfile(
    cells: Any,
    options: HFileOptions | None = None,
    /,
    *,
    family: bytes | None = None,
    **overrides: Unpack[HFileKwargs],
) -> tuple[bytes, WrittenHFile]:
    """Build an HFile in memory; see :func:`write_hfile` for the arguments.

    Returns:
        The file's bytes and its summary (with an empty ``path``).
    """
    options = hfile_options(options, overrides)
    prepared = prepare_cells(cells, family=family)
    buf = io.BytesIO()
    asm = Assembler(buf, options)
    asm.append(prepared)
    summary = asm.finish()
    return buf.getvalue(), summary


def write_hfile(
    path: str,
    cells: Any,
    options: HFileOptions | None = None,
    /,
    *,
    fs: fsspec.AbstractFileSystem | None = None,
    family: bytes | str | None = None,
    **overrides: Unpack[HFileKwargs],
) -> WrittenHFile:
    """Write ``cells`` as one HBase HFile v3.3 that HBase's bulk load accepts.

    The result is what HBase 2.x's ``HFileOutputFormat2`` writes for one family: v3.3,
    ``KeyValue$KVComparator``, CRC32C checksums in 16 KiB chunks, a one-, two- or
    more-level data index, HBase's compound Bloom filter (same hash and sizing, so HBase's
    gets use it; plus the DeleteFamily Bloom HBase adds unless the Bloom is ROWCOL), and the
    FileInfo of §12 (``BULKLOAD_TIMESTAMP``, ``BULKLOAD_SOURCE_TASK``,
    ``MAJOR_COMPACTION_KEY``, ``EXCLUDE_FROM_MINOR_COMPACTION``, ``TIMERANGE``,
    ``EARLIEST_PUT_TS``, ``DELETE_FAMILY_COUNT``, ``HISTORICAL``, Bloom keys,
    ``KEY_VALUE_VERSION``/``MAX_MEMSTORE_TS_KEY``, ``hfile.*``; no ``MAX_SEQ_ID_KEY``).

    Cells are put in HBase's order (row, family, qualifier ascending; timestamp, type
    descending) when they are not already; duplicates keep their input order. Input
    already in order is streamed in slices (no sort, bounded working memory); input out
    of order is detected as it streams, the partial file is dropped and everything is
    sorted and written again. Empty
    families and qualifiers, empty values and ``Long.MAX_VALUE`` timestamps are written as
    HBase's own writer would. One family per file is what bulk load expects; this is not
    enforced (HBase's writer does not either). Cells already in order and too many for
    memory can be streamed with :class:`HFileWriter` instead.

    Args:
        path: Destination path (on ``fs``, or local when ``fs`` is None).
        cells: pyarrow Table/RecordBatch or pandas DataFrame with ``row``, ``qualifier``,
            ``ts``, ``type`` (4 Put, 8 Delete, 10 DeleteFamilyVersion, 12 DeleteColumn, 14
            DeleteFamily), ``value``, and optionally ``family``, ``seq_id`` (memstore
            timestamp) and ``tags`` (serialized tag records).
        options: How the file is written: compression, encoding, block size, Bloom type,
            checksums, index and Bloom sizing, bulk-load FileInfo (see
            :class:`HFileOptions`; default ``HFileOptions()``).
        fs: An fsspec filesystem; None writes to the local filesystem.
        family: Family for every cell when ``cells`` has no ``family`` column.
        **overrides: :class:`HFileOptions` fields replacing those of ``options``
            (``write_hfile(path, cells, compression="gz", bloom="rowcol")``).

    Returns:
        A :class:`WrittenHFile` summary.

    Raises:
        BadCellError: A cell is invalid (missing column, null, unknown type, oversize).
        InvalidArgumentError: An option is invalid.
    """
    options = hfile_options(options, overrides)
    fam = _family_bytes(family)
    table = as_table(cells)
    # Sorted input (the common case) streams slice by slice: bounded memory, no sort.
    writer = HFileWriter(fs, path, options, family=fam)
    try:
        writer._write_slices(table, _SLICE_CELLS)
        return writer.close()
    except UnorderedCellsError:
        writer.abort()
    except BaseException:
        writer.abort()
        raise
    # Out of order: sort everything (stable), then write.
    prepared = prepare_cells(table, family=fam)
    with HFileWriter(fs, path, options, family=fam) as sorted_writer:
        sorted_writer._write_prepared(prepared)
        return sorted_writer.close()

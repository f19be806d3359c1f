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
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final, Literal

import fsspec
from fsspec.implementations.local import LocalFileSystem

from cellstore.errors import InvalidArgumentError
from cellstore.storefiles.hfile.assembler import (
    KV_COMPARATOR,
    Assembler,
    BloomType,
    WriteOptions,
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
from cellstore.storefiles.hfile.encoders import Encoding
from cellstore.storefiles.hfile.serialize import Codec

__all__ = [
    "KV_COMPARATOR",
    "BloomType",
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


class HFileWriter:
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
        family: Family for every cell when the batches have no ``family`` column.
        compression, encoding, block_size, bloom, include_mvcc, include_tags, checksum,
        bytes_per_checksum, index_block_max_size, index_min_entries, bloom_block_size,
        bloom_error_rate, comparator, bulkload_timestamp, create_time, source_task,
        major_compaction, exclude_from_minor_compaction, file_info: As for
            :func:`write_hfile`.

    Raises:
        InvalidArgumentError: An option is invalid (nothing is created then).
    """

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem | None,
        path: str,
        *,
        family: bytes | str | None = None,
        compression: Codec = "none",
        encoding: Encoding = "none",
        block_size: int = 65536,
        bloom: BloomType = "row",
        include_mvcc: bool = True,
        include_tags: bool = True,
        checksum: Literal["crc32c", "crc32", "none"] = "crc32c",
        bytes_per_checksum: int = 16384,
        index_block_max_size: int = 128 * 1024,
        index_min_entries: int = 16,
        bloom_block_size: int = 128 * 1024,
        bloom_error_rate: float = 0.01,
        comparator: str = KV_COMPARATOR,
        bulkload_timestamp: int | None = None,
        create_time: int | None = None,
        source_task: str | None = "cellstore",
        major_compaction: bool = True,
        exclude_from_minor_compaction: bool = False,
        file_info: Mapping[bytes, bytes] | None = None,
    ) -> None:
        options = WriteOptions(
            compression=compression,
            encoding=encoding,
            block_size=block_size,
            bloom=bloom,
            include_mvcc=include_mvcc,
            include_tags=include_tags,
            checksum=checksum,
            bytes_per_checksum=bytes_per_checksum,
            index_block_max_size=index_block_max_size,
            index_min_entries=index_min_entries,
            bloom_block_size=bloom_block_size,
            bloom_error_rate=bloom_error_rate,
            comparator=comparator,
            bulkload_timestamp=bulkload_timestamp,
            create_time=create_time,
            source_task=source_task,
            major_compaction=major_compaction,
            exclude_from_minor_compaction=exclude_from_minor_compaction,
            file_info=dict(file_info or {}),
        )
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

    def __enter__(self) -> HFileWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None:
            self.abort()
        elif self._state == "open":
            self.close()


def build_hfile(
    cells: Any,
    *,
    family: bytes | None = None,
    compression: Codec = "none",
    encoding: Encoding = "none",
    block_size: int = 65536,
    bloom: BloomType = "row",
    include_mvcc: bool = True,
    include_tags: bool = True,
    checksum: Literal["crc32c", "crc32", "none"] = "crc32c",
    bytes_per_checksum: int = 16384,
    index_block_max_size: int = 128 * 1024,
    index_min_entries: int = 16,
    bloom_block_size: int = 128 * 1024,
    bloom_error_rate: float = 0.01,
    comparator: str = KV_COMPARATOR,
    bulkload_timestamp: int | None = None,
    create_time: int | None = None,
    source_task: str | None = "cellstore",
    major_compaction: bool = True,
    exclude_from_minor_compaction: bool = False,
    file_info: Mapping[bytes, bytes] | None = None,
) -> tuple[bytes, WrittenHFile]:
    """Build an HFile in memory; see :func:`write_hfile` for the arguments.

    Returns:
        The file's bytes and its summary (with an empty ``path``).
    """
    options = WriteOptions(
        compression=compression,
        encoding=encoding,
        block_size=block_size,
        bloom=bloom,
        include_mvcc=include_mvcc,
        include_tags=include_tags,
        checksum=checksum,
        bytes_per_checksum=bytes_per_checksum,
        index_block_max_size=index_block_max_size,
        index_min_entries=index_min_entries,
        bloom_block_size=bloom_block_size,
        bloom_error_rate=bloom_error_rate,
        comparator=comparator,
        bulkload_timestamp=bulkload_timestamp,
        create_time=create_time,
        source_task=source_task,
        major_compaction=major_compaction,
        exclude_from_minor_compaction=exclude_from_minor_compaction,
        file_info=dict(file_info or {}),
    )
    prepared = prepare_cells(cells, family=family)
    buf = io.BytesIO()
    asm = Assembler(buf, options)
    asm.append(prepared)
    summary = asm.finish()
    return buf.getvalue(), summary


def write_hfile(
    path: str,
    cells: Any,
    *,
    fs: fsspec.AbstractFileSystem | None = None,
    family: bytes | str | None = None,
    compression: Codec = "none",
    encoding: Encoding = "none",
    block_size: int = 65536,
    bloom: BloomType = "row",
    include_mvcc: bool = True,
    include_tags: bool = True,
    checksum: Literal["crc32c", "crc32", "none"] = "crc32c",
    bytes_per_checksum: int = 16384,
    index_block_max_size: int = 128 * 1024,
    index_min_entries: int = 16,
    bloom_block_size: int = 128 * 1024,
    bloom_error_rate: float = 0.01,
    comparator: str = KV_COMPARATOR,
    bulkload_timestamp: int | None = None,
    create_time: int | None = None,
    source_task: str | None = "cellstore",
    major_compaction: bool = True,
    exclude_from_minor_compaction: bool = False,
    file_info: Mapping[bytes, bytes] | None = None,
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
        fs: An fsspec filesystem; None writes to the local filesystem.
        family: Family for every cell when ``cells`` has no ``family`` column.
        compression: ``none``, ``gz``, ``snappy``, ``lz4`` or ``zstd``.
        encoding: Data block encoding: ``none``, ``prefix``, ``diff``, ``fast_diff`` or
            ``row_index_v1``.
        block_size: Data block size (the family's BLOCKSIZE).
        bloom: ``row``, ``rowcol`` or ``none``.
        include_mvcc: Write a memstore timestamp per cell (HBase's default).
        include_tags: Write tags per cell (HBase's default for v3 bulk-load files).
        checksum: ``crc32c`` (HBase's default), ``crc32`` or ``none``.
        bytes_per_checksum: Checksum chunk size.
        index_block_max_size: ``hfile.index.block.max.size``: leaf/intermediate index
            chunk size that triggers another index level.
        index_min_entries: ``hfile.index.block.min.entries``.
        bloom_block_size: ``io.storefile.bloom.block.size``.
        bloom_error_rate: ``io.storefile.bloom.error.rate``.
        comparator: Trailer comparator class name.
        bulkload_timestamp: ``BULKLOAD_TIMESTAMP`` in ms (default: now).
        create_time: ``hfile.CREATE_TIME_TS`` in ms (default: now).
        source_task: ``BULKLOAD_SOURCE_TASK`` value, or None to omit it.
        major_compaction: ``MAJOR_COMPACTION_KEY``.
        exclude_from_minor_compaction: ``EXCLUDE_FROM_MINOR_COMPACTION``.
        file_info: Extra FileInfo entries (custom keys survive a bulk-load split).

    Returns:
        A :class:`WrittenHFile` summary.

    Raises:
        BadCellError: A cell is invalid (missing column, null, unknown type, oversize).
        InvalidArgumentError: An option is invalid.
    """
    fam = _family_bytes(family)
    options: dict[str, Any] = {
        "family": fam,
        "compression": compression,
        "encoding": encoding,
        "block_size": block_size,
        "bloom": bloom,
        "include_mvcc": include_mvcc,
        "include_tags": include_tags,
        "checksum": checksum,
        "bytes_per_checksum": bytes_per_checksum,
        "index_block_max_size": index_block_max_size,
        "index_min_entries": index_min_entries,
        "bloom_block_size": bloom_block_size,
        "bloom_error_rate": bloom_error_rate,
        "comparator": comparator,
        "bulkload_timestamp": bulkload_timestamp,
        "create_time": create_time,
        "source_task": source_task,
        "major_compaction": major_compaction,
        "exclude_from_minor_compaction": exclude_from_minor_compaction,
        "file_info": file_info,
    }
    table = as_table(cells)
    # Sorted input (the common case) streams slice by slice: bounded memory, no sort.
    writer = HFileWriter(fs, path, **options)
    try:
        for start in range(0, table.num_rows, _SLICE_CELLS):
            writer.write(table.slice(start, _SLICE_CELLS))
        return writer.close()
    except UnorderedCellsError:
        writer.abort()
    except BaseException:
        writer.abort()
        raise
    # Out of order: sort everything (stable), then write.
    prepared = prepare_cells(table, family=fam)
    with HFileWriter(fs, path, **options) as sorted_writer:
        sorted_writer._write_prepared(prepared)
        return sorted_writer.close()

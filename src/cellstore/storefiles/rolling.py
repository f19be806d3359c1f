"""The one roll loop: a region's cells of one family as one or more files, in any format.

:class:`RollingWriter` (and :func:`write_rolled`) cut sorted cells into files at a size
limit on row boundaries, cap the number of files, and clean up on failure. It writes
through a :class:`FileFormat`, which names each file (through
:mod:`~cellstore.storefiles.layout`) and opens a :class:`FileSink` for it:
:class:`ParquetFormat` writes our store files with
:class:`~cellstore.storefiles.writer.StoreFileWriter`; :class:`HFileFormat` writes HBase
bulk-load HFiles (``<family>/<32 hex>``, HFile v3.3 as ``HFileOutputFormat2`` writes them).
Loads, jobs and the HFile export all roll, cap and clean up files through this loop.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Generic, Protocol, TypeVar, overload

import fsspec
import numpy as np
import pyarrow as pa

from cellstore.core.cells import CELL_SCHEMA
from cellstore.core.family import Family
from cellstore.core.results import JsonForm
from cellstore.fs import join, makedirs_for
from cellstore.storefiles.columns import NO_LAYOUTS, Layouts, LayoutSink
from cellstore.storefiles.context import FileContext
from cellstore.storefiles.hfile.options import HFileOptions
from cellstore.storefiles.layout import bulkload_file_relpath, store_file_relpath
from cellstore.storefiles.writer import (
    DEFAULT_ROW_GROUP_CELLS,
    NO_ROLL,
    RollCuts,
    StoreFileWriter,
    WrittenFile,
    roll_points,
)

__all__ = [
    "BulkLoadFile",
    "FileFormat",
    "FileSink",
    "HFileFormat",
    "HFileSettings",
    "ParquetFormat",
    "RollingWriter",
    "cap_cuts",
    "write_rolled",
    "write_rolled_chunks",
]

#: What a format's sinks return when they close (one record per file written).
ResultT = TypeVar("ResultT")
ResultT_co = TypeVar("ResultT_co", covariant=True)


class FileSink(Protocol[ResultT_co]):
    """One output file being written, chunk by chunk (what a :class:`FileFormat` opens).

    Attributes:
        path: The file's path on the filesystem.
    """

    path: str

    @property
    def bytes(self) -> int:
        """Uncompressed cell bytes written so far (what rolling compares)."""
        ...

    def write(self, cells: pa.Table) -> None:
        """Append cells: the next part of the file's cell order."""
        ...

    def close(self) -> ResultT_co:
        """Finish the file; returns what was written."""
        ...

    def abort(self) -> None:
        """Delete the partial file (best effort)."""
        ...


class FileFormat(Protocol[ResultT_co]):
    """An output file format for :class:`RollingWriter`: names files and opens sinks."""

    def open(
        self,
        fs: fsspec.AbstractFileSystem,
        root: str,
        *,
        region: str,
        family: Family,
        stem: str,
        index: int,
    ) -> FileSink[ResultT_co]:
        """Open file ``index`` of a (region, family) under ``root``, named through layout.

        Args:
            fs: Filesystem to write to.
            root: The directory the format's relative names are under.
            region: Id of the region the cells belong to.
            family: Their family.
            stem: File-name stem, unique per load or job task (formats may ignore it).
            index: The file's number in the roll sequence (0, 1, ...).
        """
        ...


class _ParquetSink:
    """A :class:`StoreFileWriter` whose close returns a :class:`WrittenFile`."""

    def __init__(self, writer: StoreFileWriter, *, region: str, relpath: str) -> None:
        self.writer = writer
        self.path = writer.path
        self.region = region
        self.relpath = relpath

    @property
    def bytes(self) -> int:
        return self.writer.bytes

    def write(self, cells: pa.Table) -> None:
        self.writer.write(cells)

    def close(self) -> WrittenFile:
        return WrittenFile(self.region, self.relpath, self.writer.close())

    def abort(self) -> None:
        self.writer.abort()


#: Cells per row group of a delta: a cell file a load writes into a region-family whose
#: family is written as columns where it is empty (``auto``: the pair holds files). Reads
#: of a key range within the region then decode little of it (docs/format.md 14.4).
DELTA_ROW_GROUP_CELLS: Final = 8192


@dataclass(frozen=True, kw_only=True)
class ParquetFormat:
    """Our store files: ``data/<region>/<family>/<stem>-<k:03d>.parquet`` (docs/format.md).

    Files are written by :class:`StoreFileWriter` with the family's compression, block
    size and Bloom setting; ``root`` is the table directory.

    Attributes:
        seq: Sequence number for the footers.
        load_id: Id of the load or job.
        row_group_cells: Cells per Parquet row group.
        layouts: The (region, family) pairs written in the column layout (default none).
    """

    seq: int
    load_id: str
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS
    layouts: Layouts = NO_LAYOUTS

    def open(
        self,
        fs: fsspec.AbstractFileSystem,
        root: str,
        *,
        region: str,
        family: Family,
        stem: str,
        index: int,
    ) -> FileSink[WrittenFile]:
        """Open ``store_file_relpath(region, family, f"{stem}-{index:03d}")`` under ``root``.

        A (region, family) that :attr:`layouts` puts in the column layout gets a
        :class:`~cellstore.storefiles.columns.LayoutSink` (a column file ``...-c.parquet``
        beside that cell file), whose close returns both.
        """
        plan = self.layouts.plan_for(region, family.name)
        if plan is not None:
            return LayoutSink(  # type: ignore[return-value]
                fs,
                root,
                region=region,
                family=family,
                stem=f"{stem}-{index:03d}",
                plan=plan,
                seq=self.seq,
                load_id=self.load_id,
                row_group_cells=self.row_group_cells,
            )
        relpath = store_file_relpath(region, family.name, f"{stem}-{index:03d}")
        cells = self.row_group_cells
        if self.layouts.regions is not None and any(
            f == family.name for f, _ in self.layouts.plans
        ):
            # a delta: cells beside column files (a key-range read takes few row groups)
            cells = min(cells, DELTA_ROW_GROUP_CELLS)
        writer = StoreFileWriter(
            fs,
            join(root, relpath),
            family=family,
            seq=self.seq,
            load_id=self.load_id,
            row_group_cells=cells,
        )
        return _ParquetSink(writer, region=region, relpath=relpath)


#: How one family's HFiles are written: the earlier name of
#: :class:`~cellstore.storefiles.hfile.options.HFileOptions` (the same class).
HFileSettings = HFileOptions


@dataclass(frozen=True)
class BulkLoadFile(JsonForm):
    """One HFile written for HBase's bulk load.

    Attributes:
        family: The family (its directory name).
        region: Id of the region whose rows the file holds.
        path: The file, on the output filesystem.
        cells: Cells in the file.
        size: The file's size in bytes.
        first_row: Its first row.
        last_row: Its last row.
    """

    json_keys = "family region path cells bytes=size first_row last_row"

    family: str
    region: str
    path: str
    cells: int
    size: int
    first_row: bytes
    last_row: bytes


class _HFileSink:
    """One bulk-load HFile, streamed by :class:`~cellstore.storefiles.hfile.writer.HFileWriter`."""

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        path: str,
        *,
        region: str,
        family: str,
        options: HFileOptions,
    ) -> None:
        from cellstore.storefiles.hfile.writer import HFileWriter

        self.fs = fs
        self.path = path
        self.region = region
        self.family = family
        makedirs_for(fs, path)
        self.writer = HFileWriter(fs, path, options, family=family.encode("utf-8"))

    @property
    def bytes(self) -> int:
        """Cell bytes in HFile NONE layout (what ``hbase.hregion.max.filesize`` compares)."""
        return self.writer.uncompressed_bytes

    def write(self, cells: pa.Table) -> None:
        self.writer.write(cells.select(CELL_SCHEMA.names))

    def close(self) -> BulkLoadFile:
        if self.writer.cells == 0:
            self.abort()
            raise ValueError("an HFile for bulk load needs at least one cell")
        w = self.writer.close()
        assert w.first_row is not None and w.last_row is not None
        return BulkLoadFile(
            family=self.family,
            region=self.region,
            path=self.path,
            cells=w.entry_count,
            size=w.file_size,
            first_row=w.first_row,
            last_row=w.last_row,
        )

    def abort(self) -> None:
        self.writer.abort()


@dataclass(frozen=True, kw_only=True)
class HFileFormat:
    """HBase bulk-load HFiles: ``<family>/<32 lowercase hex>`` under the output directory.

    What ``HFileOutputFormat2`` writes and ``completebulkload`` walks (reference §12): one
    directory per family, random hex file names (the ``stem`` is not used), HFile v3.3
    with the bulk-load FileInfo. Picklable, so tasks carry it to workers.

    Attributes:
        default: Writer options of families not in ``families``.
        families: Writer options per family name.
        bulkload_timestamp: ``BULKLOAD_TIMESTAMP`` of every file (ms; None: the clock).
        source_task: ``BULKLOAD_SOURCE_TASK`` of every file.
    """

    default: HFileOptions = field(default_factory=HFileOptions)
    families: Mapping[str, HFileOptions] = field(default_factory=dict)
    bulkload_timestamp: int | None = None
    source_task: str | None = "cellstore"

    def settings(self, family: str) -> HFileOptions:
        """The options ``family``'s files are written with (as given)."""
        return self.families.get(family, self.default)

    def file_options(self, family: Family) -> HFileOptions:
        """The options of one file of ``family``.

        Its settings, with the family's block size when they give none, and this
        format's bulk-load FileInfo.
        """
        settings = self.settings(family.name)
        return replace(
            settings,
            block_size=settings.block_size or family.block_size,
            bulkload_timestamp=self.bulkload_timestamp,
            source_task=self.source_task,
        )

    def open(
        self,
        fs: fsspec.AbstractFileSystem,
        root: str,
        *,
        region: str,
        family: Family,
        stem: str,
        index: int,
    ) -> FileSink[BulkLoadFile]:
        """Open ``bulkload_file_relpath(family, <random hex>)`` under ``root``."""
        relpath = bulkload_file_relpath(family.name, uuid.uuid4().hex)
        return _HFileSink(
            fs,
            join(root, relpath),
            region=region,
            family=family.name,
            options=self.file_options(family),
        )


def _format_or_parquet(
    format: FileFormat[Any] | None,
    seq: int | None,
    load_id: str | None,
    row_group_cells: int,
    caller: str,
) -> FileFormat[Any]:
    """``format``, or store files (:class:`ParquetFormat`) when none is given.

    Raises:
        TypeError: ``<caller> needs seq and load_id, or a format``.
    """
    if format is not None:
        return format
    if seq is None or load_id is None:
        raise TypeError(f"{caller} needs seq and load_id, or a format")
    return ParquetFormat(seq=seq, load_id=load_id, row_group_cells=row_group_cells)


def cap_cuts(cuts: list[int], max_files: int) -> list[int]:
    """Merge adjacent pieces of ``cuts`` (row boundaries) so at most ``max_files`` remain.

    Args:
        cuts: Offsets from :func:`roll_points`.
        max_files: Most pieces wanted (at least 1).

    Returns:
        A subsequence of ``cuts`` with the same first and last offset.
    """
    if len(cuts) - 1 <= max_files:
        return cuts
    keep = np.unique(np.linspace(0, len(cuts) - 1, max_files + 1).round().astype(np.int64))
    return [cuts[int(i)] for i in keep]


class RollingWriter(FileContext, Generic[ResultT]):
    """Write one region's cells of one family as a sequence of files, in any format.

    The one loop that names, rolls and writes output files, for loads, jobs and the HFile
    export alike. File ``k`` is opened by ``format`` (default :class:`ParquetFormat`:
    ``data/<region>/<family>/<stem>-<k:03d>.parquet`` under ``table_path``, named by
    :func:`~cellstore.storefiles.layout.store_file_relpath`, which refuses a name that
    would leave the table directory). A new file is started before a chunk when the
    current one holds ``max_file_bytes`` of uncompressed cells, or on :meth:`roll`; so a
    caller that writes whole rows per chunk never splits a row across files. With
    ``max_files``, the last file allowed takes every remaining chunk (no more rolls).

    Use it as a context manager: leaving the block with an exception (or without
    :meth:`close`) deletes every file it wrote.

    Args:
        fs: Filesystem to write to.
        table_path: The directory file names are relative to (the table's, for Parquet).
        region: Id of the region the cells belong to.
        family: Their family.
        stem: File-name stem, unique per load or job task.
        seq: Sequence number for the footers (Parquet, when ``format`` is not given).
        load_id: Id of the load or job (Parquet, when ``format`` is not given).
        max_file_bytes: Roll to a new file past this many uncompressed cell bytes.
        row_group_cells: Cells per Parquet row group (when ``format`` is not given).
        format: The output format (default: ``ParquetFormat(seq, load_id, row_group_cells)``).
        max_files: Most files written (None: no limit).
    """

    @overload
    def __init__(
        self: RollingWriter[WrittenFile],
        fs: fsspec.AbstractFileSystem,
        table_path: str,
        *,
        region: str,
        family: Family,
        stem: str,
        seq: int,
        load_id: str,
        max_file_bytes: int,
        row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
        max_files: int | None = None,
    ) -> None: ...

    @overload
    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        table_path: str,
        *,
        region: str,
        family: Family,
        stem: str,
        max_file_bytes: int,
        format: FileFormat[ResultT],
        max_files: int | None = None,
    ) -> None: ...

    def __init__(
        self,
        fs: fsspec.AbstractFileSystem,
        table_path: str,
        *,
        region: str,
        family: Family,
        stem: str,
        seq: int | None = None,
        load_id: str | None = None,
        max_file_bytes: int,
        row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
        format: FileFormat[Any] | None = None,
        max_files: int | None = None,
    ) -> None:
        format = _format_or_parquet(format, seq, load_id, row_group_cells, "RollingWriter")
        if max_files is not None and max_files < 1:
            raise ValueError("max_files must be at least 1")
        self.fs = fs
        self.table_path = table_path
        self.region = region
        self.family = family
        self.stem = stem
        self.format: FileFormat[Any] = format
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self.written: list[ResultT] = []
        self._paths: list[str] = []
        self._sink: FileSink[Any] | None = None
        self._done = False

    def write(self, cells: pa.Table) -> None:
        """Append sorted cells, starting a new file first if the current one is full."""
        if cells.num_rows == 0:
            return
        if (
            self._sink is not None
            and self._sink.bytes >= self.max_file_bytes
            and (self.max_files is None or len(self.written) + 1 < self.max_files)
        ):
            self.roll()
        if self._sink is None:
            self._sink = self.format.open(
                self.fs,
                self.table_path,
                region=self.region,
                family=self.family,
                stem=self.stem,
                index=len(self.written),
            )
        self._sink.write(cells)

    def roll(self) -> None:
        """Close the current file (if any); the next write starts a new one."""
        if self._sink is not None:
            sink, self._sink = self._sink, None
            result = sink.close()
            if isinstance(result, list):  # a sink of several files (LayoutSink)
                self.written.extend(result)
                self._paths.extend(getattr(sink, "paths", ()))
            else:
                self.written.append(result)
                self._paths.append(sink.path)

    def close(self) -> list[ResultT]:
        """Close the last file; returns every file written, in cell order."""
        self.roll()
        self._done = True
        return list(self.written)

    def abort(self) -> None:
        """Delete the open file and every file already closed (best effort)."""
        if self._sink is not None:
            self._sink.abort()
            self._sink = None
        for path in self._paths:
            with contextlib.suppress(OSError):
                self.fs.rm(path)
        self.written = []
        self._paths = []
        self._done = True

    def _leave(self, *, failed: bool) -> None:
        if failed or not self._done:
            self.abort()


def _cut_writer(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    *,
    region: str,
    family: Family,
    stem: str,
    format: FileFormat[ResultT],
) -> RollingWriter[ResultT]:
    """A :class:`RollingWriter` that rolls only on :meth:`~RollingWriter.roll`.

    The caller makes the cuts (:func:`roll_points` or :class:`RollCuts`).
    """
    return RollingWriter(
        fs,
        table_path,
        region=region,
        family=family,
        stem=stem,
        max_file_bytes=NO_ROLL,
        format=format,
    )


@overload
def write_rolled(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    cells: pa.Table,
    *,
    region: str,
    family: Family,
    stem: str,
    seq: int,
    load_id: str,
    max_file_bytes: int,
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
    max_files: int | None = None,
) -> list[WrittenFile]: ...


@overload
def write_rolled(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    cells: pa.Table,
    *,
    region: str,
    family: Family,
    stem: str,
    max_file_bytes: int,
    format: FileFormat[ResultT],
    max_files: int | None = None,
) -> list[ResultT]: ...


def write_rolled(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    cells: pa.Table,
    *,
    region: str,
    family: Family,
    stem: str,
    seq: int | None = None,
    load_id: str | None = None,
    max_file_bytes: int,
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
    format: FileFormat[Any] | None = None,
    max_files: int | None = None,
) -> list[Any]:
    """Write a region's cells of one family as files cut by :func:`roll_points`.

    A :class:`RollingWriter` fed the pieces between :func:`roll_points`' cuts (merged by
    :func:`cap_cuts` to at most ``max_files``), so files are rolled at ``max_file_bytes``
    of uncompressed cells on row boundaries.

    Args:
        fs: Filesystem to write to.
        table_path: The directory file names are relative to (the table's, for Parquet).
        cells: The cells, in cell order with unique keys (none: nothing is written).
        region: Id of the region the cells belong to.
        family: Their family.
        stem: File-name stem, unique per load or job task.
        seq: Sequence number for the footers (Parquet, when ``format`` is not given).
        load_id: Id of the load or job (Parquet, when ``format`` is not given).
        max_file_bytes: Roll to a new file past this many uncompressed cell bytes.
        row_group_cells: Cells per Parquet row group (when ``format`` is not given).
        format: The output format (default :class:`ParquetFormat`).
        max_files: Most files written (None: no limit).

    Returns:
        The written files, in cell order (for Parquet: :class:`WrittenFile`, not committed).
    """
    if cells.num_rows == 0:
        return []
    cuts = roll_points(cells, max_file_bytes)
    if max_files is not None:
        cuts = cap_cuts(cuts, max_files)
    format = _format_or_parquet(format, seq, load_id, row_group_cells, "write_rolled")
    with _cut_writer(fs, table_path, region=region, family=family, stem=stem, format=format) as out:
        for k in range(len(cuts) - 1):
            out.write(cells.slice(cuts[k], cuts[k + 1] - cuts[k]))
            out.roll()
        return out.close()


def write_rolled_chunks(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    chunks: Iterable[pa.Table],
    *,
    region: str,
    family: Family,
    stem: str,
    max_file_bytes: int,
    format: FileFormat[ResultT],
) -> list[ResultT]:
    """:func:`write_rolled` of cells given chunk by chunk, never held whole.

    The files are those :func:`write_rolled` writes of the chunks' concatenation: the same
    cuts (:class:`~cellstore.storefiles.writer.RollCuts`), each chunk written as it comes
    (a compaction task streams its merged cells through here, so it holds a few chunks,
    not its whole output). Every chunk must be whole rows (no row continues into the next
    chunk) in cell order.

    Args:
        fs: Filesystem to write to.
        table_path: The directory file names are relative to (the table's, for Parquet).
        chunks: The cells, in cell order with unique keys, cut on row boundaries.
        region: Id of the region the cells belong to.
        family: Their family.
        stem: File-name stem, unique per load or job task.
        max_file_bytes: Roll to a new file past this many uncompressed cell bytes.
        format: The output format.

    Returns:
        The written files, in cell order (none when no chunk holds a cell).
    """
    rolls = RollCuts(max_file_bytes)
    with _cut_writer(fs, table_path, region=region, family=family, stem=stem, format=format) as out:
        held: pa.Table | None = None  # a tentative cut's last cell: next file, if any follows
        for cells in chunks:
            n = cells.num_rows
            if n == 0:
                continue
            if held is not None:
                out.roll()
                out.write(held)
                held = None
            cuts = rolls.feed(cells)
            if rolls.tentative:
                held = cells.take(pa.array([cuts.pop()]))  # a copy: the chunk goes
            bounds = [0, *cuts, n if held is None else n - 1]
            for k in range(len(bounds) - 1):
                if k:
                    out.roll()
                out.write(cells.slice(bounds[k], bounds[k + 1] - bounds[k]))
        if held is not None:
            out.write(held)
        return out.close()

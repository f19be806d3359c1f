r"""Export a scan to Parquet or CSV files, and copy a table into another table.

:func:`export` runs any scan (every :meth:`Table.scan <cellstore.warehouse.Table.scan>` option) and
writes one file per scan task, ``part-00000.parquet``, ``part-00001.parquet``, ... (or
``.csv``) under a directory URL on any fsspec filesystem, then an empty ``_SUCCESS`` marker
(Hadoop's convention: readers such as Spark and dask skip names starting with ``_``).
Parquet keeps the scan's Arrow schema (binary row keys, qualifiers and values); CSV writes
bytes in HBase's printable form (``\xHH`` escapes, ``Bytes.toStringBinary``) and cell
types by name, so a cells-shape CSV export loads back with ``cellstore load-cells``.

:func:`copy_table` copies a table's stored cells, raw (every version, every delete
marker, timestamps as they are), into another table, in the same warehouse or another
root: HBase's ``CopyTable`` with ``--all.cells``. Each source store file is read within its
region, routed to the destination's regions and written through the single store-file
write path; one commit adds everything, each file keeping its place in the source's
sequence order (ranked after the destination's own data), so exact key ties resolve as in
the source.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final, Literal

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.commit import Commit, FileChange, commit
from cellstore.core.cells import CellType, run_starts
from cellstore.core.keys import to_string_binary
from cellstore.core.metadata import FileEntry, TableMetadata
from cellstore.core.names import validate_load_id
from cellstore.core.results import JsonForm
from cellstore.errors import (
    InvalidArgumentError,
    InvalidFamilyError,
    TableNotFoundError,
)
from cellstore.fs import ensure_exclusive_create, join, makedirs_for, resolve_filesystem
from cellstore.handle import Catalog, TableHandle
from cellstore.jobs.common import new_job_id
from cellstore.loader.direct import WrittenFile, write_cells
from cellstore.loader.mapping import resolve_column_types
from cellstore.loader.mapping.decoding import decode_family_columns, recorded_codecs, with_decoded
from cellstore.loader.memory import release_memory
from cellstore.reader.options import SCAN_OPTION_NAMES
from cellstore.reader.plan import DEFAULT_TASK_MEMORY
from cellstore.reader.tables import scan_table
from cellstore.storefiles import DEFAULT_ROW_GROUP_CELLS, StoreFileReader

__all__ = [
    "CopyReport",
    "ExportFormat",
    "ExportReport",
    "ExportShape",
    "FileExportReport",
    "FileFormat",
    "copy_table",
    "export",
    "export_file",
    "printable_array",
]

ExportFormat = Literal["parquet", "csv"]
ExportShape = Literal["cells", "wide"]
ProgressFn = Callable[[int, int], None]

#: Name of the marker written last, when every part file is complete.
SUCCESS_MARKER: Final = "_SUCCESS"
_EXTENSIONS: Final[dict[str, str]] = {"parquet": "parquet", "csv": "csv"}

#: Bytes ``to_string_binary`` escapes (derived from it, so the two never disagree).
_ESCAPED: Final = np.array([to_string_binary(bytes([b])) != chr(b) for b in range(256)], dtype=bool)
_HEX: Final = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
#: HBase's type names by code (index = code), for CSV.
_TYPE_NAMES: Final = pa.array(
    [CellType(c).hbase_name if c in {int(t) for t in CellType} else None for c in range(16)],
    pa.string(),
)


#: An export's peak memory per byte of its scan tasks' budget: a task's decoded result is
#: about twice the uncompressed row groups it reads (what a task budget measures), and it is
#: read, merged and encoded into its part file at once, next to the chunks being read and
#: the memory-mapped store files. :func:`export` plans tasks at its ``memory_budget``
#: divided by this, so its peak stays about within the budget (docs/performance.md,
#: issue 18).
_EXPORT_EXPANSION: Final = 8

#: ``Table.scan`` keyword options :func:`export` passes through (the shape is its own).
_SCAN_OPTIONS: Final = frozenset(SCAN_OPTION_NAMES) - {"shape", "memory_budget"}


# ------------------------------------------------------------------------- one-file export
FileFormat = Literal["parquet", "csv", "json"]


@dataclass(frozen=True)
class FileExportReport:
    """What :func:`export_file` wrote.

    Attributes:
        path: The file written (on its filesystem).
        format: ``parquet``, ``csv`` or ``json`` (JSON lines).
        rows: Rows written.
        cells: Cells written (wide shape: non-null column values).
        bytes: The file's size.
    """

    path: str
    format: FileFormat
    rows: int
    cells: int
    bytes: int


class _FileSink:
    """One output file fed result batches: Parquet, CSV or JSON lines."""

    def __init__(self, f: Any, fmt: FileFormat, shape: ExportShape) -> None:
        self.f = f
        self.fmt = fmt
        self.shape = shape
        self._writer: Any = None
        self._schema: pa.Schema | None = None
        self._wrote_json = False

    @property
    def started(self) -> bool:
        """Whether anything (a schema or header at least) was written."""
        return self._schema is not None or self._wrote_json

    def write(self, batch: pa.Table) -> None:
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq

        if self.fmt == "parquet":
            self._write_table(batch, pq.ParquetWriter)
            return
        text = _csv_table(batch, self.shape)
        if self.fmt == "csv":
            self._write_table(text, pacsv.CSVWriter)
            return
        import json

        self._wrote_json = True
        self.f.write("".join(json.dumps(r) + "\n" for r in text.to_pylist()).encode("utf-8"))

    def _write_table(self, table: pa.Table, writer_type: Any) -> None:
        """Write through a table writer opened on the first table, with its schema."""
        if self._writer is None:
            self._schema = table.schema
            self._writer = writer_type(self.f, table.schema)
        self._writer.write_table(table.cast(self._schema))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def _decoding(
    metadata: TableMetadata, shape: ExportShape, decoded: bool, given: Any
) -> Callable[[pa.Table], pa.Table] | None:
    """What decodes a batch: a ``decoded`` column, or wide family-codec columns not given."""
    codecs = recorded_codecs(metadata) if decoded else None
    if codecs is None:
        return None
    if shape == "cells":
        return functools.partial(with_decoded, codecs)
    keep = frozenset(given) if isinstance(given, Mapping) else frozenset()
    return functools.partial(decode_family_columns, codecs, keep=keep)


def export_file(
    scan: Any,
    url: str,
    *,
    format: FileFormat,
    storage_options: Mapping[str, Any] | None = None,
    progress: ProgressFn | None = None,
    decoded: bool = False,
) -> FileExportReport:
    r"""Write a planned scan to one file (Parquet, CSV or JSON lines), whole or not at all.

    The one-file sibling of :func:`export` (``cellstore scan --output-file`` uses it).
    A cells-shape scan is written task by task (one task's result in memory at a time); a
    wide-shape scan whose columns are not named up front is collected first (its columns
    are known only once every row is read). Cells go to a hidden ``.<name>.<pid>.partial``
    file next to ``url`` that replaces it at the end, so a failed or interrupted export
    leaves nothing behind.

    Args:
        scan: A :class:`~cellstore.reader.Scan` (any shape and options).
        url: The file: a local path or any fsspec URL (replaced if it exists).
        format: ``parquet`` (the scan's Arrow schema), ``csv`` or ``json`` (JSON lines);
            csv and json write bytes in HBase's printable form and cell types by name, the
            columns ``load-cells`` reads.
        storage_options: fsspec options for ``url``.
        progress: Called with ``(done, total)`` scan tasks.
        decoded: On a table whose mapping-based loads recorded codecs: cells shape, add a
            ``decoded`` string column after ``value``, the value decoded with its codec
            (:func:`~cellstore.loader.mapping.decoding.decoded_text`; null where none
            applies; ``value`` keeps the stored bytes); wide shape, decode the columns of
            families with a family codec (``decoding.decode_family_columns``).

    Returns:
        A :class:`FileExportReport`.
    """
    if format not in ("parquet", "csv", "json"):
        raise InvalidArgumentError(f"format must be parquet, csv or json, not {format!r}")
    shape: ExportShape = scan.options.shape
    fs, path = resolve_filesystem(url, storage_options=storage_options)
    head, _, name = path.rpartition("/")
    partial = f"{head}/.{name}.{os.getpid()}.partial" if head else f".{name}.partial"
    tasks = len(scan.plan())
    batches = scan.to_batches() if shape == "cells" else iter([scan.to_arrow()])
    add = _decoding(scan.metadata, shape, decoded, scan.options.column_types)
    rows = cells = done = 0
    makedirs_for(fs, path)
    try:
        with fs.open(partial, "wb") as f:
            sink = _FileSink(f, format, shape)
            for batch in batches:
                if batch.num_rows == 0 and sink.started:
                    continue
                sink.write(batch if add is None else add(batch))
                r, c = _stats(batch, shape)
                rows += r
                cells += c
                done += 1
                if progress is not None:
                    progress(min(done, tasks), tasks)
            if not sink.started:  # no result: the file still has its header or schema
                empty = scan.to_arrow()  # empty: the scan had no result
                sink.write(empty if add is None else add(empty))
            sink.close()
        fs.mv(partial, path)
    except BaseException:
        if fs.exists(partial):
            fs.rm(partial)
        raise
    if progress is not None:
        progress(tasks, tasks)
    return FileExportReport(path, format, rows, cells, int(fs.size(path)))


# ---------------------------------------------------------------------------------- export
@dataclass(frozen=True)
class ExportReport(JsonForm):
    """What :func:`export` wrote.

    Attributes:
        table: The table's name.
        version: The table version exported.
        url: The output directory, as given.
        format: ``parquet`` or ``csv``.
        shape: ``cells`` or ``wide``.
        files: The part files written, as paths on the output filesystem, in scan order.
        rows: Rows exported.
        cells: Cells exported (wide shape: non-null column values).
        bytes: Total size of the part files.
    """

    table: str
    version: int
    url: str
    format: ExportFormat
    shape: ExportShape
    files: tuple[str, ...]
    rows: int
    cells: int
    bytes: int


def printable_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    r"""Binary values in HBase's printable form (``Bytes.toStringBinary``), vectorized.

    Printable ASCII stays as it is; every other byte and the backslash become ``\xHH``
    (upper-case hex). Nulls stay null.

    >>> printable_array(pa.array([b"a\x00\\", None, b"ok"])).to_pylist()
    ['a\\x00\\x5C', None, 'ok']
    """
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    arr = arr.cast(pa.binary())
    valid = pc.is_valid(arr) if arr.null_count else None
    filled = pc.fill_null(arr, b"") if valid is not None else arr
    n = len(filled)
    buffers = filled.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[filled.offset : filled.offset + n + 1]
    raw = (
        np.frombuffer(buffers[2], dtype=np.uint8)
        if buffers[2] is not None
        else np.empty(0, np.uint8)
    )
    data = raw[offsets[0] : offsets[-1]]
    esc = _ESCAPED[data]
    if not esc.any():
        out: pa.Array = filled.cast(pa.string())
    else:
        positions = np.zeros(len(data) + 1, dtype=np.int64)
        np.cumsum(1 + 3 * esc.astype(np.int64), out=positions[1:])
        text = np.empty(int(positions[-1]), dtype=np.uint8)
        starts = positions[:-1]
        text[starts[~esc]] = data[~esc]
        at, byte = starts[esc], data[esc]
        text[at] = ord("\\")
        text[at + 1] = ord("x")
        text[at + 2] = _HEX[byte >> 4]
        text[at + 3] = _HEX[byte & 15]
        new_offsets = positions[offsets - offsets[0]]
        big = new_offsets[-1] >= 2**31
        offsets_buffer = pa.py_buffer(new_offsets.astype(np.int64 if big else np.int32))
        out = pa.Array.from_buffers(
            pa.large_string() if big else pa.string(),
            n,
            [None, offsets_buffer, pa.py_buffer(text)],
        )
    if valid is not None:
        out = pc.if_else(valid, out, pa.scalar(None, out.type))
    return out


def _csv_table(batch: pa.Table, shape: ExportShape) -> pa.Table:
    """A result batch with binary columns printable and (cells shape) types by name."""
    columns = []
    for name in batch.column_names:
        col = batch.column(name)
        if pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type):
            col = printable_array(col)
        elif shape == "cells" and name == "type" and pa.types.is_int8(col.type):
            col = pc.take(_TYPE_NAMES, col.cast(pa.int32()))
        columns.append(col)
    return pa.table(columns, names=batch.column_names)


def _stats(batch: pa.Table, shape: ExportShape) -> tuple[int, int]:
    """(rows, cells) of one result batch (batches hold whole rows)."""
    if shape == "wide":
        cols = [n for n in batch.column_names if ":" in n]
        return batch.num_rows, sum(batch.num_rows - batch.column(n).null_count for n in cols)
    return len(run_starts(batch.column("row"))), batch.num_rows


def export(
    table: TableHandle,
    url: str,
    *,
    format: ExportFormat = "parquet",
    shape: ExportShape = "cells",
    storage_options: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    progress: ProgressFn | None = None,
    memory_budget: int | None = None,
    decoded: bool = False,
    **scan_options: Any,
) -> ExportReport:
    r"""Write a scan of ``table`` to Parquet or CSV files under the directory ``url``.

    One part file per scan task (a region's range, or a piece of it cut to fit
    ``memory_budget``), named ``part-NNNNN.<format>`` in scan order; tasks with no result
    write no file. ``_SUCCESS`` is written last: a directory without it holds an
    incomplete export. One task's results are in memory at a time, so the memory an
    export adds stays about within ``memory_budget``.

    Args:
        table: The table (the version the handle points at).
        url: Output directory: local path or any fsspec URL (``s3://bucket/out``).
        format: ``parquet`` (the scan's Arrow schema) or ``csv`` (bytes in printable
            form, types by HBase name; a header line per file).
        shape: ``cells`` (one line per cell: ``row, family, qualifier, ts, type, value``)
            or ``wide`` (one line per row, a ``family:qualifier`` column each). Wide files
            of one export have the columns found in their own rows unless ``columns=``
            (or ``column_types=``) name them.
        storage_options: fsspec options for ``url``.
        overwrite: Replace an earlier export in ``url`` (its ``part-*`` files and
            ``_SUCCESS`` are deleted first). Without it, such files make this fail.
        progress: Called with ``(done, total)`` scan tasks.
        memory_budget: Bytes the export may hold at once (default
            :data:`~cellstore.reader.plan.DEFAULT_TASK_MEMORY`, 256 MiB): scan tasks are
            planned with an eighth of it (``Table.scan``'s ``memory_budget``), since reading,
            merging and encoding a task take several times what a task budget counts.
        decoded: Decode as :func:`export_file` does.
        **scan_options: Any option of :meth:`Table.scan <cellstore.warehouse.Table.scan>`
            (``start_row``, ``row_prefix``, ``columns``, ``families``, ``time_range``,
            ``max_versions``, ``raw``, ``filter``, ``key``, ``column_types``, ...).

    Returns:
        An :class:`ExportReport`.

    Raises:
        InvalidArgumentError: an unknown format or shape, an invalid scan option, a
            ``memory_budget`` that is not positive, or an earlier export in ``url``
            without ``overwrite``.
    """
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if format not in _EXTENSIONS:
        raise InvalidArgumentError(f"format must be parquet or csv, not {format!r}")
    if shape not in ("cells", "wide"):
        raise InvalidArgumentError(f"shape must be cells or wide, not {shape!r}")
    unknown = sorted(set(scan_options) - _SCAN_OPTIONS)
    if unknown:
        raise InvalidArgumentError(
            f"unknown scan option(s) {', '.join(unknown)} (see Table.scan; give the shape as "
            "export(shape=...))"
        )
    budget = DEFAULT_TASK_MEMORY if memory_budget is None else memory_budget
    if budget <= 0:
        raise InvalidArgumentError(f"memory_budget must be > 0, got {budget}")
    if "column_types" in scan_options:
        scan_options["column_types"] = resolve_column_types(
            table.metadata, scan_options["column_types"]
        )
    scan = scan_table(
        table, shape=shape, memory_budget=max(1, budget // _EXPORT_EXPANSION), **scan_options
    )
    fs, root = _output_dir(url, storage_options, overwrite=overwrite)
    add = _decoding(table.metadata, shape, decoded, scan_options.get("column_types"))
    ext = _EXTENSIONS[format]
    tasks = len(scan.plan())
    files: list[str] = []
    rows = cells = size = 0
    for batch in scan.to_batches():
        batch = batch if add is None else add(batch)
        path = join(root, f"part-{len(files):05d}.{ext}")
        with fs.open(path, "wb") as f:
            if format == "parquet":
                pq.write_table(batch, f)
            else:
                pacsv.write_csv(_csv_table(batch, shape), f)
        files.append(path)
        r, c = _stats(batch, shape)
        rows += r
        cells += c
        size += int(fs.size(path))
        del batch
        release_memory()  # the allocators keep the task's freed pages otherwise
        if progress is not None:
            progress(min(len(files), tasks), tasks)
    with fs.open(join(root, SUCCESS_MARKER), "wb"):
        pass
    if progress is not None:
        progress(tasks, tasks)
    return ExportReport(
        table=str(table.name),
        version=table.version,
        url=url,
        format=format,
        shape=shape,
        files=tuple(files),
        rows=rows,
        cells=cells,
        bytes=size,
    )


def _output_dir(
    url: str, storage_options: Mapping[str, Any] | None, *, overwrite: bool
) -> tuple[fsspec.AbstractFileSystem, str]:
    """The export directory, made, with an earlier export's files deleted (``overwrite``).

    Raises:
        InvalidArgumentError: an earlier export is there and ``overwrite`` is False.
    """
    fs, root = resolve_filesystem(url, storage_options=storage_options)
    fs.invalidate_cache(root)
    previous = [
        p
        for p in (fs.ls(root, detail=False) if fs.isdir(root) else [])
        if p.rsplit("/", 1)[-1].startswith("part-") or p.endswith("/" + SUCCESS_MARKER)
    ]
    if previous and not overwrite:
        raise InvalidArgumentError(
            f"{url} already holds an export ({len(previous)} file(s)); pass overwrite=True "
            "(CLI: --overwrite) or choose another directory"
        )
    if previous:
        fs.rm(previous)
    makedirs_for(fs, join(root, SUCCESS_MARKER))
    return fs, root


# ------------------------------------------------------------------------------------ copy
@dataclass(frozen=True)
class CopyReport(JsonForm):
    """What :func:`copy_table` did.

    Attributes:
        source: The source table's name.
        source_version: The source version copied.
        dest: The destination table's name.
        dest_root: The destination warehouse's root URL.
        created: Whether the destination table was created by this copy.
        version: The destination version the copy committed (None: nothing to copy, or
            the copy's id was already applied).
        files_read: Source store files read.
        cells: Cells copied (as stored: every version and delete marker).
        files_written: Store files written into the destination.
        bytes: Their total size.
        job_id: The copy's id (recorded as the destination's load id).
    """

    source: str
    source_version: int
    dest: str
    dest_root: str
    created: bool
    version: int | None
    files_read: int
    cells: int
    files_written: int
    bytes: int
    job_id: str


def _dest_catalog(
    dest: Catalog[TableHandle] | str | os.PathLike[str] | None,
    source: TableHandle,
    storage_options: Mapping[str, Any] | None,
) -> Catalog[TableHandle]:
    """The destination catalog: the source's, a given one, or one of the same kind at a URL."""
    if dest is None:
        return source.catalog
    if isinstance(dest, Catalog):
        return dest
    return source.catalog.at(dest, storage_options=storage_options)


def _create_like(
    wh: Catalog[TableHandle], name: str, meta: TableMetadata, families: Sequence[str]
) -> TableHandle:
    """A new table like ``meta``: its ``families``, split keys (or salt), row key, properties."""
    salted = meta.salt_buckets is not None
    return wh.create_table(
        name,
        families=[meta.family(f) for f in families],
        splits=None if salted else meta.split_keys,
        salt_buckets=meta.salt_buckets if meta.row_key is None else None,
        properties=dict(meta.properties),
        row_key=meta.row_key,
    )


def _read_entry(source: TableHandle, entry: FileEntry, start: bytes, stop: bytes) -> pa.Table:
    """The stored cells of one entry (only its region's rows), with a ``family`` column."""
    with StoreFileReader(
        source.fs,
        source.file_path(entry),
        entry=entry,
        table=source.name,
        version=source.version,
    ) as reader:
        cells = reader.read(start=start, stop=stop)
    family = pc.fill_null(pa.nulls(cells.num_rows, pa.string()), entry.family)
    return cells.add_column(0, "family", family)


def copy_table(
    table: TableHandle,
    dest: Catalog[TableHandle] | str | os.PathLike[str] | None,
    dest_name: str,
    *,
    create: bool = True,
    families: Sequence[str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    job_id: str | None = None,
    workers: int = 4,
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
    progress: ProgressFn | None = None,
) -> CopyReport:
    """Copy a table's stored cells into another table (HBase's ``CopyTable --all.cells``).

    Every cell the source version stores is copied as it is: all versions, delete markers
    and timestamps, including cells that reads no longer return (masked, expired, over
    the version limit) until a major compaction of either table drops them. Each source
    file is read within its entry's region, routed to the destination's regions and
    written as new store files; one commit adds them all. The source's sequence order is
    kept: source files are ranked by ``seq`` and the ``k``-th distinct ``seq`` becomes
    the destination's ``next_seq + k``, so the copy wins ties with data the destination
    already held, as a load would, and ties inside the copy resolve as in the source.

    Args:
        table: The source (the version the handle points at).
        dest: The destination warehouse, its root URL, or None for the source's warehouse.
        dest_name: The destination table's name.
        create: Create the destination with the source's families, split keys (or salt),
            row-key spec and properties when it does not exist.
        families: Copy only these families (default: all).
        storage_options: fsspec options for a ``dest`` URL.
        job_id: Idempotency key, recorded as a load id in the destination: a copy with
            an id the destination has committed is not applied again (default: fresh).
        workers: Source files read and written at once.
        row_group_cells: Cells per Parquet row group of the written files.
        progress: Called with ``(done, total)`` source files.

    Returns:
        A :class:`CopyReport`.

    Raises:
        TableNotFoundError: the destination does not exist and ``create`` is False.
        InvalidFamilyError: a family to copy is unknown to the source or the destination.
        RegionsChangedError: the destination's regions changed while copying; nothing was
            committed, run the copy again.
        InvalidArgumentError: copying a table onto itself.
        InvalidNameError: a ``job_id`` that cannot name files (``validate_load_id``).
    """
    job = validate_load_id(job_id or new_job_id("copy"))
    src = table.metadata
    wanted = list(src.family_names if families is None else families)
    for name in wanted:
        src.family(name)
    wh = _dest_catalog(dest, table, storage_options)
    target, created = _copy_target(table, wh, dest_name, wanted, create=create)
    base = target.metadata
    entries = sorted(
        (f for f in src.files if f.family in wanted), key=lambda f: (f.seq, f.path, f.region)
    )
    nothing = CopyReport(
        source=str(table.name),
        source_version=src.version,
        dest=str(target.name),
        dest_root=wh.url,
        created=created,
        version=None,
        files_read=0,
        cells=0,
        files_written=0,
        bytes=0,
        job_id=job,
    )
    if job in base.load_ids or not entries:
        return nothing
    ensure_exclusive_create(target.fs, wh.root)
    written = _copy_files(
        table,
        target,
        entries,
        job=job,
        workers=workers,
        row_group_cells=row_group_cells,
        progress=progress,
    )
    by_rank: dict[int, list[WrittenFile]] = {}
    for w, rank in written:
        by_rank.setdefault(rank, []).append(w)
    result = commit(
        target.log,
        Commit(
            operation="copy",
            changes=[FileChange(add=ws, seq_rank=rank) for rank, ws in sorted(by_rank.items())],
            load_id=job,
            new_seq=True,
            base=base,
            summary={
                "source": str(table.name),
                "source-version": src.version,
                "job-id": job,
                "files": len(written),
                "cells": sum(w.info.cells for w, _ in written),
            },
        ),
    )
    if not result.committed:
        return nothing
    return dataclasses.replace(
        nothing,
        version=result.metadata.version,
        files_read=len(entries),
        cells=sum(w.info.cells for w, _ in written),
        files_written=len(written),
        bytes=sum(w.info.size for w, _ in written),
    )


def _copy_target(
    table: TableHandle,
    wh: Catalog[TableHandle],
    dest_name: str,
    wanted: Sequence[str],
    *,
    create: bool,
) -> tuple[TableHandle, bool]:
    """The destination table (created when absent and ``create``), and whether it was.

    Raises:
        TableNotFoundError: it does not exist and ``create`` is False.
        InvalidArgumentError: it is the source.
        InvalidFamilyError: it lacks a family to copy.
    """
    created = False
    if wh.exists(dest_name):
        target = wh.table(dest_name)
    elif create:
        target = _create_like(wh, dest_name, table.metadata, wanted)
        created = True
    else:
        raise TableNotFoundError(f"table {dest_name} does not exist in {wh.url}")
    if target.path == table.path and target.fs is table.fs:
        raise InvalidArgumentError(f"cannot copy table {table.name} onto itself")
    for name in wanted:
        if name not in target.metadata.family_names:
            raise InvalidFamilyError(
                f"table {target.name} has no family {name!r} to copy into (families: "
                f"{', '.join(target.metadata.family_names)})"
            )
    return target, created


def _copy_files(
    table: TableHandle,
    target: TableHandle,
    entries: Sequence[FileEntry],
    *,
    job: str,
    workers: int,
    row_group_cells: int,
    progress: ProgressFn | None,
) -> list[tuple[WrittenFile, int]]:
    """Read each source entry, write it routed to the target's regions: ``(file, rank)``.

    The ``k``-th distinct source ``seq`` gets rank ``k`` (the commit's ``seq_rank``).
    """
    base = target.metadata
    ranks = {seq: k for k, seq in enumerate(sorted({f.seq for f in entries}))}
    regions = {r.id: r for r in table.metadata.regions}
    done = [0]
    lock = threading.Lock()

    def copy_one(item: tuple[int, FileEntry]) -> list[tuple[WrittenFile, int]]:
        i, entry = item
        region = regions[entry.region]
        cells = _read_entry(table, entry, region.start, region.end)
        written: list[WrittenFile] = []
        if cells.num_rows:
            # i orders the written names like the source's (seq, path): ties of equal
            # seq then resolve as in the source (the path sorting last wins).
            written, _ = write_cells(
                target.fs,
                target.path,
                base,
                cells,
                load_id=f"{job}-{i:06d}",
                seq=base.next_seq + ranks[entry.seq],
                row_group_cells=row_group_cells,
                max_workers=1,
            )
        with lock:
            done[0] += 1
            if progress is not None:
                progress(done[0], len(entries))
        return [(w, ranks[entry.seq]) for w in written]

    items = list(enumerate(entries))
    if workers <= 1 or len(items) <= 1:
        results = [copy_one(item) for item in items]
    else:
        with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
            results = list(pool.map(copy_one, items))
    return [w for part in results for w in part]

"""Export a table as HBase HFiles for HBase's bulk load (``completebulkload``).

:func:`export_hfiles` writes the directory ``BulkLoadHFilesTool`` (``completebulkload``)
expects: ``<url>/<family>/<32-hex name>``, one directory per family, HFile v3.3 files as
``HFileOutputFormat2`` writes them (through the one roll loop,
:class:`~cellstore.storefiles.writer.RollingWriter`, with
:class:`~cellstore.storefiles.writer.HFileFormat`). Each file
holds the cells of one region of the table (first and last row inside the region's
``[start, end)``), so the tool never has to split and rewrite it, and there are at most
32 files per region and family (``hbase.mapreduce.bulkload.max.hfiles.perRegion.perFamily``).

The job plans one frozen, picklable :class:`HFileExportTask` per (region, family), runs them
on local threads or a ``distributed`` client, and writes everything under a hidden
temporary directory next to ``url`` (``.<name>.<uuid>.tmp``, :mod:`cellstore.storefiles.bulkload`),
moved into ``url`` only when every task succeeded: a failed export leaves nothing under ``url``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypedDict, Unpack

import fsspec
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.family import Family
from cellstore.core.results import JsonForm
from cellstore.errors import InvalidArgumentError, InvalidFamilyError
from cellstore.frames import run_tasks
from cellstore.handle import TableHandle
from cellstore.jobs.common import new_job_id
from cellstore.reader.plan import ScanTask
from cellstore.reader.scan import run_task
from cellstore.reader.tables import scan_table
from cellstore.storefiles.bulkload import stage_output
from cellstore.storefiles.hfile.options import HFileOptions
from cellstore.storefiles.rolling import BulkLoadFile, HFileFormat, write_rolled

__all__ = [
    "DEFAULT_HFILE_MAX_FILE_BYTES",
    "MAX_HFILES_PER_REGION_FAMILY",
    "ExportedHFile",
    "HFileExportKwargs",
    "HFileExportOptions",
    "HFileExportReport",
    "HFileExportTask",
    "export_hfiles",
    "export_options",
    "run_hfile_export_task",
]

ProgressFn = Callable[[int, int], None]

#: ``hbase.mapreduce.bulkload.max.hfiles.perRegion.perFamily``'s default.
MAX_HFILES_PER_REGION_FAMILY: Final = 32
#: ``hbase.hregion.max.filesize``'s default (10 GiB of uncompressed cells per file).
DEFAULT_HFILE_MAX_FILE_BYTES: Final = 10 << 30
#: Versions a raw export asks for when none are given (HBase's ``Integer.MAX_VALUE``).
_ALL_VERSIONS: Final = 2**31 - 1


#: One HFile an export wrote (the writer's :class:`~cellstore.storefiles.writer.BulkLoadFile`).
ExportedHFile = BulkLoadFile


@dataclass(frozen=True)
class HFileExportTask:
    """One (region, family) of an export: read its cells, write them as rolled HFiles.

    Frozen and picklable, so it runs on local threads or a ``distributed`` worker.

    Attributes:
        region: Region id.
        start: The region's first row (inclusive; empty = the first region).
        end: The row after the region (exclusive; empty = the last region).
        family: The family (its name is the output directory).
        scans: The scan tasks covering the region's rows of the family, in key order.
        out_root: The export's temporary directory (files go to ``<family>/<hex>``).
        format: How the HFiles are written (settings per family, bulk-load FileInfo).
        max_file_bytes: Files roll at about this many uncompressed cell bytes, on rows.
        max_files: At most this many files (rolls are merged to stay under it).
    """

    region: str
    start: bytes
    end: bytes
    family: Family
    scans: tuple[ScanTask, ...]
    out_root: str
    format: HFileFormat
    max_file_bytes: int
    max_files: int


@dataclass(frozen=True)
class HFileExportReport(JsonForm):
    """What :func:`export_hfiles` wrote.

    Attributes:
        table: The table's name.
        version: The table version exported.
        url: The output directory, as given.
        families: Families exported (one directory each when they have cells).
        regions: Regions of the table.
        tasks: (region, family) tasks run.
        files: The HFiles, in family then region order, paths under ``url``.
        cells: Cells written.
        bytes: Total size of the files.
    """

    table: str
    version: int
    url: str
    families: tuple[str, ...]
    regions: int
    tasks: int
    files: tuple[ExportedHFile, ...]
    cells: int
    bytes: int


# ------------------------------------------------------------------------------ execution
def run_hfile_export_task(
    fs: fsspec.AbstractFileSystem, out_fs: fsspec.AbstractFileSystem, task: HFileExportTask
) -> tuple[ExportedHFile, ...]:
    """Read one (region, family) task's cells and write them as HFiles under ``out_root``.

    Args:
        fs: The warehouse filesystem.
        out_fs: The output filesystem.
        task: The task.

    Returns:
        The files written (none when the region has no cells of the family).

    Raises:
        InvalidArgumentError: an invalid HFile option (codec, encoding, Bloom type).
        RuntimeError: a scan returned a row outside the task's region (a bug).
    """
    parts = [run_task(fs, s) for s in task.scans]
    parts = [p for p in parts if p.num_rows]
    if not parts:
        return ()
    cells = pa.concat_tables(parts).combine_chunks()
    rows = cells.column("row")
    lo, hi = pc.min(rows).as_py(), pc.max(rows).as_py()
    if lo < task.start or (task.end and hi >= task.end):
        raise RuntimeError(
            f"region {task.region} of family {task.family.name}: rows {lo!r}..{hi!r} outside "
            f"[{task.start!r}, {task.end!r})"
        )
    return tuple(
        write_rolled(
            out_fs,
            task.out_root,
            cells,
            region=task.region,
            family=task.family,
            stem=task.region,
            max_file_bytes=task.max_file_bytes,
            format=task.format,
            max_files=task.max_files,
        )
    )


# ----------------------------------------------------------------------------- the job
@dataclass(frozen=True, kw_only=True)
class HFileExportOptions:
    """Every option of :func:`export_hfiles` (validated on construction).

    Attributes:
        families: Families to export (default: every family).
        max_versions: Versions per column (default 1, the latest; capped by the family's
            ``VERSIONS`` unless ``raw``).
        raw: Every version and delete marker as stored (``max_versions`` default: all).
        time_range: ``(min_ts, max_ts)``, min inclusive, max exclusive.
        hfile_settings: How the HFiles are written (:class:`~cellstore.hbase.HFileOptions`:
            compression, encoding, block size (default: each family's), Bloom type, ...).
        max_file_bytes: Roll files at about this many uncompressed cell bytes (default
            10 GiB, ``hbase.hregion.max.filesize``).
        max_files_per_region: Most files per region and family (HBase's default 32).
        overwrite: Replace what the output holds (removed once the new files are complete).
        storage_options: fsspec options for the output URL.
        client: A ``distributed.Client`` to run the tasks on (default: local threads).
        progress: Called with ``(done, total)`` tasks.

    Raises:
        InvalidArgumentError: a size or count out of range.
    """

    families: Sequence[str] | None = None
    max_versions: int | None = None
    raw: bool = False
    time_range: tuple[int, int] | None = None
    hfile_settings: HFileOptions = field(default_factory=HFileOptions)
    max_file_bytes: int = DEFAULT_HFILE_MAX_FILE_BYTES
    max_files_per_region: int = MAX_HFILES_PER_REGION_FAMILY
    overwrite: bool = False
    storage_options: Mapping[str, Any] | None = field(default=None, repr=False)
    client: Any = field(default=None, compare=False, repr=False)
    progress: ProgressFn | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_file_bytes <= 0:
            raise InvalidArgumentError(
                f"max_file_bytes must be positive, not {self.max_file_bytes}"
            )
        if self.max_files_per_region < 1:
            raise InvalidArgumentError("max_files_per_region must be at least 1")
        if self.max_versions is not None and self.max_versions < 1:
            raise InvalidArgumentError(f"max_versions must be at least 1, not {self.max_versions}")


class HFileExportKwargs(TypedDict, total=False):
    """:class:`HFileExportOptions`' fields as keyword overrides, plus four shortcuts.

    ``compression``, ``encoding``, ``block_size`` and ``bloom`` replace those fields of
    ``hfile_settings``.
    """

    families: Sequence[str] | None
    max_versions: int | None
    raw: bool
    time_range: tuple[int, int] | None
    hfile_settings: HFileOptions
    max_file_bytes: int
    max_files_per_region: int
    overwrite: bool
    storage_options: Mapping[str, Any] | None
    client: Any
    progress: ProgressFn | None
    compression: str
    encoding: str
    block_size: int | None
    bloom: str


#: The :class:`HFileExportKwargs` that are :class:`HFileOptions` fields.
_HFILE_SHORTCUTS: Final = ("compression", "encoding", "block_size", "bloom")


def export_options(
    options: HFileExportOptions | None, overrides: HFileExportKwargs
) -> HFileExportOptions:
    """``options`` (default ``HFileExportOptions()``) with keyword overrides applied.

    Raises:
        InvalidArgumentError: an invalid option (an HFile codec, encoding or Bloom type
            the writer lacks, a size out of range).
    """
    base = options if options is not None else HFileExportOptions()
    changes: dict[str, Any] = dict(overrides)
    shortcuts = {k: changes.pop(k) for k in _HFILE_SHORTCUTS if k in changes}
    if shortcuts:
        settings = changes.get("hfile_settings", base.hfile_settings)
        changes["hfile_settings"] = dataclasses.replace(settings, **shortcuts)
    return dataclasses.replace(base, **changes) if changes else base


def _plan_tasks(
    table: TableHandle, names: Sequence[str], options: HFileExportOptions, out_root: str
) -> list[HFileExportTask]:
    """One task per (region, family) with cells to export, in family then region order."""
    by_name = {f.name: f for f in table.families}
    regions = {r.id: r for r in table.regions}
    raw = options.raw
    max_versions = options.max_versions
    versions = max_versions if max_versions is not None else (_ALL_VERSIONS if raw else 1)
    job_id = new_job_id("export-hfiles")
    hfile_format = HFileFormat(
        default=options.hfile_settings,
        bulkload_timestamp=int(time.time() * 1000),
        source_task=f"cellstore:{job_id}",
    )
    tasks: list[HFileExportTask] = []
    for name in names:
        scan = scan_table(
            table, families=[name], max_versions=versions, raw=raw, time_range=options.time_range
        )
        per_region: dict[str, list[ScanTask]] = {}
        for s in scan.plan():
            per_region.setdefault(s.region, []).append(dataclasses.replace(s, strip_salt=False))
        for rid, scans in per_region.items():
            region = regions[rid]
            tasks.append(
                HFileExportTask(
                    region=rid,
                    start=region.start,
                    end=region.end,
                    family=by_name[name],
                    scans=tuple(scans),
                    out_root=out_root,
                    format=hfile_format,
                    max_file_bytes=options.max_file_bytes,
                    max_files=options.max_files_per_region,
                )
            )
    return tasks


def export_hfiles(
    table: TableHandle,
    url: str,
    options: HFileExportOptions | None = None,
    /,
    **overrides: Unpack[HFileExportKwargs],
) -> HFileExportReport:
    """Write ``table`` as HFiles that HBase's ``completebulkload`` loads as they are.

    Layout: ``url/<family>/<32-hex name>``. Each file holds the cells of one region of the
    table (rows within the region's ``[start, end)``) and one family, in HBase's order;
    files roll at ``max_file_bytes`` of uncompressed cells, only between rows, and at most
    ``max_files_per_region`` per region and family (rolls are merged, making files larger,
    when there would be more). Rows are written as stored (a salted table keeps its salt
    byte, which its regions are split on). Load them afterwards with
    ``hbase completebulkload <url> <table>`` (docs/hbase.md).

    One task per (region, family) reads its region's cells of the family (the scan's
    tasks, so one region's cells of one family are in memory at a time per worker) and
    writes its files under a hidden ``.<name>.<uuid>.tmp`` directory next to ``url``.
    Only when every task succeeded are the files moved into ``url`` (one rename on local
    disk); a failure removes the temporary directory and leaves ``url`` as it was.

    Args:
        table: The table (the version the handle points at).
        url: Output directory: a local path or any fsspec URL. It must be absent or empty
            unless ``overwrite``.
        options: Every option of the export (:class:`HFileExportOptions`).
        **overrides: :class:`HFileExportOptions` fields replacing those of ``options``,
            and ``compression``, ``encoding``, ``block_size``, ``bloom`` replacing those
            of its ``hfile_settings`` (``export_hfiles(t, url, compression="gz")``).

    Returns:
        An :class:`HFileExportReport`.

    Raises:
        InvalidArgumentError: an invalid option, or a non-empty ``url`` without
            ``overwrite``.
        InvalidFamilyError: an unknown family.
    """
    opts = export_options(options, overrides)
    by_name = {f.name: f for f in table.families}
    names = list(by_name) if opts.families is None else list(dict.fromkeys(opts.families))
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise InvalidFamilyError(
            f"table {table.name} has no family {', '.join(map(repr, unknown))} "
            f"(families: {', '.join(by_name)})"
        )
    progress = opts.progress
    staged = stage_output(url, storage_options=opts.storage_options, overwrite=opts.overwrite)
    out_fs = staged.fs
    try:
        tasks = _plan_tasks(table, names, opts, staged.tmp)
        results, error = run_tasks(
            run_hfile_export_task, tasks, table.fs, out_fs, client=opts.client, progress=progress
        )
        if error is not None:
            raise error
        files = staged.publish([f for r in results for f in r])
    except BaseException:
        staged.discard()
        raise
    if progress is not None:
        progress(len(tasks), len(tasks))
    return HFileExportReport(
        table=str(table.name),
        version=table.version,
        url=url,
        families=tuple(names),
        regions=len(table.regions),
        tasks=len(tasks),
        files=tuple(files),
        cells=sum(f.cells for f in files),
        bytes=sum(f.size for f in files),
    )

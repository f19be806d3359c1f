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
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Final

import fsspec
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.family import Family
from cellstore.errors import InvalidArgumentError, InvalidFamilyError
from cellstore.handle import TableHandle
from cellstore.jobs.common import new_job_id
from cellstore.reader.plan import ScanTask
from cellstore.reader.scan import run_task
from cellstore.reader.tables import scan_table
from cellstore.storefiles.bulkload import stage_output
from cellstore.storefiles.rolling import BulkLoadFile, HFileFormat, HFileSettings, write_rolled

__all__ = [
    "DEFAULT_HFILE_MAX_FILE_BYTES",
    "MAX_HFILES_PER_REGION_FAMILY",
    "ExportedHFile",
    "HFileExportReport",
    "HFileExportTask",
    "export_hfiles",
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
class HFileExportReport:
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (kebab-case keys; rows in HBase's printable form)."""
        from cellstore.core.keys import to_string_binary

        return {
            "table": self.table,
            "version": self.version,
            "url": self.url,
            "families": list(self.families),
            "regions": self.regions,
            "tasks": self.tasks,
            "files": [
                {
                    "family": f.family,
                    "region": f.region,
                    "path": f.path,
                    "cells": f.cells,
                    "bytes": f.size,
                    "first-row": to_string_binary(f.first_row),
                    "last-row": to_string_binary(f.last_row),
                }
                for f in self.files
            ],
            "cells": self.cells,
            "bytes": self.bytes,
        }


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


def _run_local(
    fs: fsspec.AbstractFileSystem,
    out_fs: fsspec.AbstractFileSystem,
    tasks: Sequence[HFileExportTask],
    progress: ProgressFn | None,
) -> list[tuple[ExportedHFile, ...]]:
    """Run tasks on threads; the first failure cancels the rest and is raised once all stop."""
    if not tasks:
        return []
    with ThreadPoolExecutor(max_workers=min(len(tasks), os.cpu_count() or 4)) as pool:
        futures = [pool.submit(run_hfile_export_task, fs, out_fs, t) for t in tasks]
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_EXCEPTION)
            failed = [f for f in done if f.exception() is not None]
            if failed:
                for f in pending:
                    f.cancel()
                wait(pending)  # running tasks finish before the caller cleans up
                raise failed[0].exception()  # type: ignore[misc]
            if progress is not None:
                progress(len(tasks) - len(pending), len(tasks))
        return [f.result() for f in futures]


def _run_distributed(
    client: Any,
    fs: fsspec.AbstractFileSystem,
    out_fs: fsspec.AbstractFileSystem,
    tasks: Sequence[HFileExportTask],
    progress: ProgressFn | None,
) -> list[tuple[ExportedHFile, ...]]:
    """Run tasks on a ``distributed`` client; waits for every task before raising."""
    if not tasks:
        return []
    n = len(tasks)
    futures = client.map(run_hfile_export_task, [fs] * n, [out_fs] * n, list(tasks), pure=False)
    results: list[tuple[ExportedHFile, ...]] = []
    error: BaseException | None = None
    for i, fut in enumerate(futures):
        try:
            results.append(fut.result())
        except Exception as exc:  # re-raised once every task has stopped
            error = error or exc
        if progress is not None:
            progress(i + 1, n)
    if error is not None:
        raise error
    return results


# ----------------------------------------------------------------------------- the job
def export_hfiles(
    table: TableHandle,
    url: str,
    *,
    families: Sequence[str] | None = None,
    max_versions: int | None = None,
    raw: bool = False,
    time_range: tuple[int, int] | None = None,
    compression: str = "none",
    encoding: str = "none",
    block_size: int | None = None,
    bloom: str = "row",
    max_file_bytes: int = DEFAULT_HFILE_MAX_FILE_BYTES,
    max_files_per_region: int = MAX_HFILES_PER_REGION_FAMILY,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    client: Any = None,
    progress: ProgressFn | None = None,
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
        families: Families to export (default: every family).
        max_versions: Versions per column (default 1, the latest; capped by the family's
            ``VERSIONS`` unless ``raw``).
        raw: Every version and delete marker as stored (``max_versions`` default: all).
        time_range: ``(min_ts, max_ts)``, min inclusive, max exclusive.
        compression: HFile codec: ``none``, ``gz``, ``snappy``, ``lz4`` or ``zstd``
            (checked by :func:`~cellstore.hbase.write_hfile`, inside the tasks).
        encoding: Data block encoding: ``none``, ``prefix``, ``diff``, ``fast_diff``,
            ``row_index_v1``.
        block_size: Data block size (default: each family's ``block_size``).
        bloom: ``row``, ``rowcol`` or ``none``.
        max_file_bytes: Roll files at about this many uncompressed cell bytes (default
            10 GiB, ``hbase.hregion.max.filesize``).
        max_files_per_region: Most files per region and family (HBase's default 32).
        overwrite: Replace what ``url`` holds (removed once the new files are complete).
        storage_options: fsspec options for ``url``.
        client: A ``distributed.Client`` to run the tasks on (default: local threads).
        progress: Called with ``(done, total)`` tasks.

    Returns:
        An :class:`HFileExportReport`.

    Raises:
        InvalidArgumentError: an invalid option, or a non-empty ``url`` without
            ``overwrite``; an invalid HFile option (from the tasks).
        InvalidFamilyError: an unknown family.
    """
    by_name = {f.name: f for f in table.families}
    names = list(by_name) if families is None else list(dict.fromkeys(families))
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise InvalidFamilyError(
            f"table {table.name} has no family {', '.join(map(repr, unknown))} "
            f"(families: {', '.join(by_name)})"
        )
    if max_file_bytes <= 0:
        raise InvalidArgumentError(f"max_file_bytes must be positive, not {max_file_bytes}")
    if max_files_per_region < 1:
        raise InvalidArgumentError("max_files_per_region must be at least 1")
    if block_size is not None and block_size <= 0:
        raise InvalidArgumentError(f"block_size must be positive, not {block_size}")
    if max_versions is not None and max_versions < 1:
        raise InvalidArgumentError(f"max_versions must be at least 1, not {max_versions}")
    versions = max_versions if max_versions is not None else (_ALL_VERSIONS if raw else 1)

    regions = {r.id: r for r in table.regions}
    job_id = new_job_id("export-hfiles")
    settings = HFileSettings(
        compression=compression, encoding=encoding, block_size=block_size, bloom=bloom
    )
    hfile_format = HFileFormat(
        default=settings,
        bulkload_timestamp=int(time.time() * 1000),
        source_task=f"cellstore:{job_id}",
    )
    staged = stage_output(url, storage_options=storage_options, overwrite=overwrite)
    out_fs = staged.fs
    tasks: list[HFileExportTask] = []
    try:
        for name in names:
            scan = scan_table(
                table, families=[name], max_versions=versions, raw=raw, time_range=time_range
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
                        out_root=staged.tmp,
                        format=hfile_format,
                        max_file_bytes=max_file_bytes,
                        max_files=max_files_per_region,
                    )
                )

        if client is not None:
            results = _run_distributed(client, table.fs, out_fs, tasks, progress)
        else:
            results = _run_local(table.fs, out_fs, tasks, progress)
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
        regions=len(regions),
        tasks=len(tasks),
        files=tuple(files),
        cells=sum(f.cells for f in files),
        bytes=sum(f.size for f in files),
    )

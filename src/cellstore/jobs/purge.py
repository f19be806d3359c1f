"""TTL purge: remove expired cells, rewriting only the files that hold some (R8, R8.7)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.commit import now_ms as clock
from cellstore.core.cells import CELL_SCHEMA
from cellstore.core.family import Family
from cellstore.core.metadata import FileEntry
from cellstore.core.regions import Region
from cellstore.core.semantics import ReadSpec
from cellstore.handle import TableHandle
from cellstore.jobs.common import new_job_id
from cellstore.jobs.compact import (
    CompactionReport,
    CompactionTask,
    StoreCompaction,
    _check_names,
    _commit,
    _major_layouts,
    _StoreResult,
    compact,
    write_task_chunks,
)
from cellstore.loader.direct import WrittenFile
from cellstore.reader.plan import FamilyRead, ScanTask
from cellstore.storefiles import DEFAULT_ROW_GROUP_CELLS, StoreFileReader
from cellstore.storefiles.columns import NO_LAYOUTS, Layouts
from cellstore.storefiles.layout import entry_path

__all__ = ["purge_ttl"]


def purge_ttl(
    table: TableHandle,
    *,
    now_ms: int | None = None,
    regions: Iterable[str] | None = None,
    families: Iterable[str] | None = None,
    dry_run: bool = False,
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
    client: Any = None,
    progress: Any = None,
) -> CompactionReport:
    """Remove expired cells, rewriting only the files that hold some (R8).

    For a family with a TTL and MIN_VERSIONS = 0, every expired cell (Put or marker) is
    invisible to every normal read (R8.3, R5.11), whatever the other files hold: a file
    whose newest cell expired is dropped unread (R8.7), a file whose oldest cell expired is
    rewritten without its expired cells, keeping its sequence number; other files are not
    touched. With MIN_VERSIONS > 0, whether an expired cell is still visible depends on every
    version of its column, so those stores get a major compaction instead (only the stores
    that hold expired cells). Raw reads ignore TTL (R10.3): they stop seeing purged cells,
    as after an HBase compaction.
    """
    started = time.perf_counter()
    table.check_writable("purge")
    table.refresh()
    meta = table.metadata
    now = now_ms if now_ms is not None else clock()
    job_id = new_job_id("purge-ttl")
    want_regions = _check_names("region", regions, {r.id for r in meta.regions})
    want_families = _check_names("family", families, set(meta.family_names))
    plans: list[StoreCompaction] = []
    major_stores: list[tuple[str, str]] = []
    for region in meta.regions:
        if want_regions is not None and region.id not in want_regions:
            continue
        for fam in meta.families:
            if fam.ttl_ms is None or (want_families is not None and fam.name not in want_families):
                continue
            oldest = now - fam.ttl_ms
            files = meta.files_of(region.id, fam.name)
            holding = [f for f in files if f.min_ts < oldest]
            if not holding:
                continue
            if fam.min_versions > 0:
                major_stores.append((region.id, fam.name))
                continue
            layouts = _major_layouts(meta, region.id, fam)
            plans.append(
                _purge_store(
                    table.path, region, fam, holding, oldest, now, job_id, row_group_cells, layouts
                )
            )
    stores: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    version: int | None = None
    if dry_run:
        stores = [p.summary() for p in plans]
    elif plans:
        results = [
            _StoreResult(p, [_purge_file(table.fs, task, now) for task in p.tasks]) for p in plans
        ]
        version, skipped_res = _commit(
            table, results, operation="purge-ttl", summary={"job-id": job_id}
        )
        skipped = [
            {**s.plan.summary(), "reason": "inputs replaced by a concurrent job"}
            for s in skipped_res
        ]
        skipped_ids = {id(s) for s in skipped_res}
        stores = [res.report() for res in results if id(res) not in skipped_ids]
    if major_stores:
        by_family: dict[str, list[str]] = {}
        for region_id, fam_name in major_stores:
            by_family.setdefault(fam_name, []).append(region_id)
        for fam_name, region_ids in by_family.items():
            rep = compact(
                table,
                major=True,
                regions=region_ids,
                families=[fam_name],
                now_ms=now,
                dry_run=dry_run,
                client=client,
                progress=progress,
            )
            stores.extend(rep.stores)
            skipped.extend(rep.skipped)
            version = rep.version if rep.version is not None else version
    table.refresh()
    return CompactionReport(
        job_id=job_id,
        major=False,
        version=version,
        stores=tuple(stores),
        skipped=tuple(skipped),
        dry_run=dry_run,
        seconds=time.perf_counter() - started,
    )


def _purge_store(
    table_path: str,
    region: Region,
    fam: Family,
    holding: Sequence[FileEntry],
    oldest: int,
    now: int,
    job_id: str,
    row_group_cells: int,
    layouts: Layouts,
) -> StoreCompaction:
    """One store's purge: files entirely expired dropped, the others holding some rewritten.

    A file is rewritten in its own layout: a column file as a column file (``layouts``:
    the family's, as a major compaction writes it), a cell file as a cell file. Its
    cells are Puts of one write, the newest of each column first, so the column file
    keeps its invariants (docs/format.md section 14).
    """
    expired = [f for f in holding if f.max_ts < oldest]
    rewrite = [f for f in holding if f.max_ts >= oldest]
    tasks = tuple(
        CompactionTask(
            scan=ScanTask(
                table_path,
                region.id,
                region.start,
                region.end,
                (FamilyRead(fam, ((f.path, f.seq),), ReadSpec(now_ms=now), (f,)),),
            ),
            family=fam,
            out_seq=f.seq,
            job_id=job_id,
            piece=i,
            max_file_bytes=1 << 62,
            row_group_cells=row_group_cells,
            layouts=layouts if f.layout == "columns" else NO_LAYOUTS,
        )
        for i, f in enumerate(rewrite)
    )
    return StoreCompaction(
        region=region.id,
        family=fam.name,
        inputs=tuple(rewrite),
        expired=tuple(expired),
        drop_deletes=False,
        tasks=tasks,
    )


def _purge_file(fs: fsspec.AbstractFileSystem, task: CompactionTask, now: int) -> list[WrittenFile]:
    """One file without its expired cells (MIN_VERSIONS = 0: a plain timestamp filter).

    Streamed: the file is read a row group at a time and each group's live cells are
    written as they come (:func:`~cellstore.jobs.compact.write_task_chunks`), so the
    purge holds a row group or two, never the whole file.
    """
    (fam_read,) = task.scan.families
    ((path, _),) = fam_read.files
    ttl = task.family.ttl_ms
    assert ttl is not None
    with StoreFileReader(
        fs, entry_path(task.scan.table_path, path), entry=fam_read.entry(path)
    ) as reader:
        return write_task_chunks(fs, task, _live_cells(reader, now - ttl))


def _live_cells(reader: StoreFileReader, oldest: int) -> Iterator[pa.Table]:
    """A file's cells with a timestamp of at least ``oldest``, row group by row group.

    Each chunk ends on a row boundary (a row's cells in the next group join it), as
    :func:`~cellstore.storefiles.rolling.write_rolled_chunks` asks.
    """
    bound = pa.scalar(oldest, pa.int64())
    carry: pa.Table | None = None  # the last row of the previous chunk: it may go on
    for g in reader.row_groups():
        cells = reader.read_row_groups([g.index], use_threads=False).select(CELL_SCHEMA.names)
        cells = cells.filter(pc.greater_equal(cells.column("ts"), bound))
        if carry is not None:
            cells = pa.concat_tables([carry, cells]) if cells.num_rows else carry
        if not cells.num_rows:
            carry = None
            continue
        rows = cells.column("row")
        last = pc.equal(rows, rows[cells.num_rows - 1])  # (sorted: the row's cells end it)
        start = cells.num_rows - pc.sum(last).as_py()
        carry = cells.slice(start)
        if start:
            yield cells.slice(0, start)
    if carry is not None and carry.num_rows:
        yield carry

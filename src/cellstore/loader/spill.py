"""Spill mode: keep a load's files per region and family under a limit, in bounded memory.

In spill mode every load task writes a sorted run per region whenever its records fill
its share of the memory budget, so a big load can leave many runs in one region and
family. HBase refuses to bulk-load more than
``hbase.mapreduce.bulkload.max.hfiles.perRegion.perFamily`` (default 32) files into one
region and family (R14.4), and every extra run costs each reader a merge input. So before
the commit, a region and family holding more than ``max_files_per_region`` runs has them
merged, ``MERGE_FAN_IN`` at a time, by a k-way merge that streams every run in chunks:

* each run is read a chunk at a time (``iter_batches``); the cells of rows below the
  smallest "last row read" of the runs that are not exhausted are complete in memory, so
  they are merged (:func:`~cellstore.core.semantics.merge_runs`: later runs win exact key
  ties, as readers would resolve them) and streamed into the output file
  (:class:`~cellstore.storefiles.writer.RollingWriter`), rolled at
  ``max_file_bytes`` between chunks;
* memory per merge task stays about ``fan-in x chunk`` cells: the chunk size is derived
  from the memory budget per worker and the runs' cell size.

Passes repeat until the limit holds. The outcome is bounded: at most
``max(max_files_per_region, ceil(region-family bytes / max_file_bytes))`` files, since a
merge never writes files bigger than ``max_file_bytes`` (plus one chunk). Merged runs are
deleted; the merged files keep the load's sequence number and run order.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import fsspec
import pyarrow as pa

from cellstore.core.cells import CELL_SCHEMA, equal_key_runs
from cellstore.core.family import Family
from cellstore.core.semantics import merge_runs
from cellstore.fs import join
from cellstore.loader.compute import compute_all
from cellstore.loader.direct import WrittenFile
from cellstore.loader.memory import release_memory
from cellstore.loader.plan import MEMORY_FACTOR, LoadPlan
from cellstore.storefiles import StoreFileReader
from cellstore.storefiles.columns import group_records
from cellstore.storefiles.rolling import BulkLoadFile, FileFormat, ParquetFormat, RollingWriter

__all__ = [
    "MERGE_FAN_IN",
    "MergeTask",
    "consolidate_runs",
    "merge_run_group",
    "merge_runs_to_hfiles",
    "runs_to_hfiles",
]

ResultT = TypeVar("ResultT")

#: Runs merged by one merge task at most (open files and buffers at once).
MERGE_FAN_IN: Final = 32
#: Fewest cells read from a run at once.
MIN_CHUNK_CELLS: Final = 256
#: Merged chunks between two :func:`~cellstore.loader.memory.release_memory` calls.
RELEASE_EVERY: Final = 8
#: A column file's writer's memory per byte of the cells of the row group it holds (the
#: records, their concatenation, Parquet's encoders; bench/bench_memory.py, 1.7-1.8x).
COLUMN_GROUP_FACTOR: Final = 2
#: Columns a column file is assumed to hold when its plan declares fewer.
DEFAULT_GROUP_COLUMNS: Final = 8
#: Fewest ``row_group_cells`` a merge gives column files to fit its memory share.
MIN_COLUMN_GROUP_CELLS: Final = 16384


@dataclass(frozen=True, kw_only=True)
class MergeTask:
    """Merge consecutive runs of one region and family into few files (picklable).

    Attributes:
        region: Region id.
        family: Family name.
        files: The runs, oldest first (a later run wins an exact key tie).
        stem: File-name stem of the outputs: ``<load>-<nonce>-x<pass><group>``.
    """

    region: str
    family: str
    files: tuple[WrittenFile, ...]
    stem: str


def _filesystem(plan: LoadPlan) -> tuple[fsspec.AbstractFileSystem, str]:
    fs, path = fsspec.core.url_to_fs(plan.target.url, **dict(plan.target.storage_options))
    return fs, str(path).rstrip("/")


def _family(plan: LoadPlan, name: str) -> Family:
    for fam in plan.target.families:
        if fam.name == name:
            return fam
    raise KeyError(name)  # pragma: no cover - written files name the table's families


def _per_cell(readers: Sequence[StoreFileReader]) -> float:
    """The runs' largest uncompressed bytes per cell (at least 1)."""
    per_cell = 1.0
    for r in readers:
        meta = r.parquet.metadata
        if meta.num_rows:
            size = sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups))
            per_cell = max(per_cell, size / meta.num_rows)
    return per_cell


def column_group_cells(plan: LoadPlan, task: MergeTask, per_cell: float) -> int:
    """``row_group_cells`` for a merge task's files, so that a column file fits its share.

    A column file's writer holds a row group of records
    (:func:`~cellstore.storefiles.columns.group_records` of ``row_group_cells``) and
    Parquet's buffers for it: about :data:`COLUMN_GROUP_FACTOR` times the group's cells'
    bytes in the runs (measured). The setting is halved (down to
    :data:`MIN_COLUMN_GROUP_CELLS`) while that is more than half the task's share of the
    memory budget; a region and family written as cells keeps the setting.
    """
    cells = plan.settings.row_group_cells
    col_plan = plan.target.layouts.plan_for(task.region, task.family)
    if col_plan is None:
        return cells
    columns = max(len(col_plan.declared), DEFAULT_GROUP_COLUMNS)
    share = plan.settings.memory_budget // max(1, plan.settings.task_count)
    while (
        cells > MIN_COLUMN_GROUP_CELLS
        and COLUMN_GROUP_FACTOR * group_records(cells, columns) * columns * per_cell > share / 2
    ):
        cells //= 2
    return max(cells, min(MIN_COLUMN_GROUP_CELLS, plan.settings.row_group_cells))


def _chunk_cells(plan: LoadPlan, readers: Sequence[StoreFileReader]) -> int:
    """Cells to read per run at once so that all buffers fit the task's memory share."""
    per_cell = _per_cell(readers)
    budget = plan.settings.memory_budget // max(1, plan.settings.task_count)
    cells = int(budget / (MEMORY_FACTOR * max(1, len(readers)) * per_cell))
    return max(MIN_CHUNK_CELLS, min(cells, plan.settings.row_group_cells))


def _last_row(t: pa.Table) -> bytes:
    return bytes(t.column("row")[t.num_rows - 1].as_py())


def _one_row(t: pa.Table) -> bool:
    rows = t.column("row")
    return bool(rows[0].as_py() == rows[t.num_rows - 1].as_py())


def _count_below(rows: pa.ChunkedArray, bound: bytes) -> int:
    """How many of the sorted ``rows`` are below ``bound`` (binary search: O(log n))."""
    return bisect.bisect_left(rows, bound, key=operator.methodcaller("as_py"))


def _merged_chunks(readers: Sequence[StoreFileReader], chunk: int) -> Iterator[pa.Table]:
    """Merge sorted runs into cell order, chunk by chunk; equal keys: the later run wins.

    Yields tables of unique keys, each ending on a row boundary; concatenated they are the
    merge of every run.
    """
    k = len(readers)
    iters = [r.parquet.iter_batches(batch_size=chunk, columns=CELL_SCHEMA.names) for r in readers]
    bufs: list[pa.Table] = [CELL_SCHEMA.empty_table() for _ in range(k)]
    done = [False] * k

    def refill(i: int) -> None:
        batch = next(iters[i], None)
        if batch is None:
            done[i] = True
            return
        t = pa.Table.from_batches([batch]).replace_schema_metadata(None)
        bufs[i] = pa.concat_tables([bufs[i], t]) if bufs[i].num_rows else t

    while True:
        for i in range(k):  # a run must hold more than one row, unless it is exhausted
            while not done[i] and (bufs[i].num_rows == 0 or _one_row(bufs[i])):
                refill(i)
        live = [i for i in range(k) if bufs[i].num_rows]
        if not live:
            return
        open_runs = [i for i in live if not done[i]]
        # Rows below every open run's last buffered row are complete in memory.
        bound = min(_last_row(bufs[i]) for i in open_runs) if open_runs else None
        pieces: list[pa.Table] = []
        order: list[int] = []
        for i in live:
            t = bufs[i]
            cut = t.num_rows if bound is None else _count_below(t.column("row"), bound)
            if cut:
                pieces.append(t.slice(0, cut))
                order.append(i)
                bufs[i] = t.slice(cut)
        merged = merge_runs(pieces, order)  # higher run index = newer: first among equals
        keep = ~equal_key_runs(merged)
        yield (merged if keep.all() else merged.filter(pa.array(keep))).select(CELL_SCHEMA.names)


def _merge_into(
    plan: LoadPlan,
    task: MergeTask,
    out_fs: fsspec.AbstractFileSystem,
    out_root: str,
    format: FileFormat[ResultT],
    max_files: int | None,
    max_file_bytes: int,
) -> tuple[list[ResultT], int]:
    """Stream-merge a task's runs through the one roll loop in ``format``; delete the runs.

    Returns:
        The files written and the number of cells merged in.
    """
    fs, path = _filesystem(plan)
    family = _family(plan, task.family)
    with contextlib.ExitStack() as stack:
        readers = [
            stack.enter_context(
                StoreFileReader(fs, join(path, w.relpath), footer_digest=w.info.footer_digest)
            )
            for w in task.files
        ]
        total_in = sum(r.info.cells for r in readers)
        chunk = _chunk_cells(plan, readers)
        if isinstance(format, ParquetFormat):
            cells = column_group_cells(plan, task, _per_cell(readers))
            format = dataclasses.replace(format, row_group_cells=cells)
        with RollingWriter(
            out_fs,
            out_root,
            region=task.region,
            family=family,
            stem=task.stem,
            max_file_bytes=max_file_bytes,
            format=format,
            max_files=max_files,
        ) as writer:
            for n, cells in enumerate(_merged_chunks(readers, chunk), start=1):
                writer.write(cells)
                del cells
                if n % RELEASE_EVERY == 0:
                    release_memory()
            out = writer.close()
    for w in task.files:
        with contextlib.suppress(OSError):
            fs.rm(join(path, w.relpath))
    release_memory()
    return out, total_in


def merge_run_group(plan: LoadPlan, task: MergeTask) -> tuple[list[WrittenFile], int]:
    """Run one :class:`MergeTask`: stream-merge its runs into files, delete the runs.

    Returns:
        The merged files (in key order) and the number of duplicate-key cells dropped.
    """
    fs, path = _filesystem(plan)
    fmt = ParquetFormat(
        seq=plan.seq,
        load_id=plan.load_id,
        row_group_cells=plan.settings.row_group_cells,
        layouts=plan.target.layouts,
    )
    out, total_in = _merge_into(plan, task, fs, path, fmt, None, plan.run_file_bytes)
    return out, total_in - sum(w.info.cells for w in out)


def merge_runs_to_hfiles(plan: LoadPlan, task: MergeTask) -> tuple[list[BulkLoadFile], int]:
    """Stream-merge one region and family's runs into bulk-load HFiles (``hfile_output``).

    At most ``max_files_per_region`` files, rolled at ``max_file_bytes`` on row
    boundaries, under the plan's staging directory; the runs are deleted.

    Returns:
        The HFiles (in key order) and the number of duplicate-key cells dropped.
    """
    assert plan.hfiles is not None
    out_dir = plan.hfiles.output
    out, total_in = _merge_into(
        plan,
        task,
        out_dir.fs,
        out_dir.tmp,
        plan.hfiles.format,
        plan.settings.max_files_per_region,
        plan.settings.max_file_bytes,
    )
    return out, total_in - sum(f.cells for f in out)


def _run_all(
    plan: LoadPlan,
    tasks: Sequence[MergeTask],
    client: Any,
    fn: Callable[[LoadPlan, MergeTask], tuple[list[ResultT], int]] | None = None,
) -> list[tuple[list[ResultT], int]]:
    from dask.delayed import delayed

    ctx = delayed(plan, pure=True)
    run = merge_run_group if fn is None else fn
    graph = [  # task keys must be unique: stems repeat across regions and families
        delayed(run, pure=False)(
            ctx, t, dask_key_name=f"cellstore-load-{plan.nonce}-merge-{t.stem}-{i}"
        )
        for i, t in enumerate(tasks)
    ]
    return compute_all(graph, client=client, workers=plan.settings.task_count)


def consolidate_runs(
    plan: LoadPlan, written: Sequence[WrittenFile], *, client: Any = None
) -> tuple[list[WrittenFile], int, int]:
    """Merge runs where a region and family hold more than ``max_files_per_region``.

    Args:
        plan: The (spill-mode) load plan; its settings give the limit, memory budget,
            workers and file size.
        written: Every file the load wrote, in run order.
        client: A ``distributed.Client``, or None for local threads.

    Returns:
        The files to commit (per region and family in run order), the number of runs
        that were merged, and the duplicate-key cells the merges dropped.
    """
    limit = plan.settings.max_files_per_region
    groups: dict[tuple[str, str], list[WrittenFile]] = {}
    for w in written:
        groups.setdefault((w.region, w.info.family), []).append(w)
    for files in groups.values():  # readers let the path that sorts last win a tie
        files.sort(key=lambda w: w.relpath)
    merged = dropped = 0
    stuck: set[tuple[str, str]] = set()
    for npass in range(64):
        tasks: list[MergeTask] = []
        keys: list[tuple[str, str]] = []
        for key, files in groups.items():
            if len(files) <= limit or key in stuck:
                continue
            if npass == 0:
                merged += len(files)
            for g, lo in enumerate(range(0, len(files), MERGE_FAN_IN)):
                tasks.append(
                    MergeTask(
                        region=key[0],
                        family=key[1],
                        files=tuple(files[lo : lo + MERGE_FAN_IN]),
                        stem=f"{plan.load_id}-{plan.nonce}-x{npass:02d}g{g:04d}",
                    )
                )
                keys.append(key)
        if not tasks:
            break
        new: dict[tuple[str, str], list[WrittenFile]] = {}
        for key, (files, d) in zip(keys, _run_all(plan, tasks, client), strict=True):
            new.setdefault(key, []).extend(files)  # tasks of a group are in run order
            dropped += d
        for key, files in new.items():
            if len(files) >= len(groups[key]):  # files already roll at max_file_bytes
                stuck.add(key)
            groups[key] = files
    return [w for files in groups.values() for w in files], merged, dropped


def runs_to_hfiles(
    plan: LoadPlan, written: Sequence[WrittenFile], *, client: Any = None
) -> tuple[list[BulkLoadFile], int, int]:
    """Turn a spill-mode ``hfile_output`` load's sorted runs into bulk-load HFiles.

    Runs are first consolidated (:func:`consolidate_runs`) to at most
    ``min(max_files_per_region, MERGE_FAN_IN)`` per region and family; then one Dask task
    per region and family stream-merges them into HFiles.

    Returns:
        The HFiles, the number of runs merged, and the duplicate-key cells dropped.
    """
    limit = min(plan.settings.max_files_per_region, MERGE_FAN_IN)
    narrowed = dataclasses.replace(
        plan, settings=dataclasses.replace(plan.settings, max_files_per_region=limit)
    )
    runs, merged, dropped = consolidate_runs(narrowed, written, client=client)
    groups: dict[tuple[str, str], list[WrittenFile]] = {}
    for w in runs:
        groups.setdefault((w.region, w.info.family), []).append(w)
    tasks = [
        MergeTask(
            region=region,
            family=family,
            files=tuple(files),
            stem=f"{plan.load_id}-{plan.nonce}-h{g:05d}",
        )
        for g, ((region, family), files) in enumerate(groups.items())
    ]
    out: list[BulkLoadFile] = []
    for files, d in _run_all(plan, tasks, client, merge_runs_to_hfiles):
        out += files
        dropped += d
    return out, merged + sum(len(t.files) for t in tasks), dropped

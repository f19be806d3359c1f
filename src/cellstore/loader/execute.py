"""Running a load plan on Dask, and committing it once.

:func:`execute_plan` runs a plan's tasks on Dask (the local threaded scheduler by default,
or a ``distributed.Client``); :func:`commit_load` commits every written file in one
manifest commit. :func:`cellstore.loader.pipeline.load_table` chains plan, execute and
commit for ``Table.load``.

* Each :class:`~cellstore.loader.plan.LoadTask` streams its input part in batches, encodes
  them (bad records fail the load, or are collected when skipping), and routes the good
  records to regions. In ``merge`` mode it returns them per region and one task per region
  sorts them and writes that region's store files; in ``spill`` mode it writes a sorted run
  per region whenever its records fill its share of the memory budget.
* The commit adds all files with the next sequence number. If the regions changed since
  planning (a concurrent split or merge), files are re-assigned to the new region that
  holds them, or split at the new region bounds (as HBase's ``BulkLoadHFilesTool`` splits
  HFiles, R14.4), and the commit is retried.
* A load id the table has already committed is not applied again; a failed load commits
  nothing (its files are unreferenced; the loader deletes what it can).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

import fsspec
import numpy as np
import pyarrow as pa

from cellstore.commit import Staged
from cellstore.core.metadata import TableMetadata
from cellstore.core.regions import region_of, sorted_region_bounds
from cellstore.core.text import shorten
from cellstore.errors import BadRecordError, RegionsChangedError
from cellstore.fs import join
from cellstore.handle.hooks import LoadHook, PendingLoad
from cellstore.loader.compute import compute_all, wait_all
from cellstore.loader.direct import WrittenFile, commit_files
from cellstore.loader.inputs import Batch, read_part
from cellstore.loader.keycheck import KeySampler
from cellstore.loader.memory import release_memory
from cellstore.loader.plan import LoadPlan, LoadTask
from cellstore.loader.records import (
    bad_record_rows,
    encode_records,
    route_rows,
    write_region,
    write_region_hfiles,
)
from cellstore.loader.report import BadRecord
from cellstore.loader.settings import ProgressFn
from cellstore.manifest import TableLog
from cellstore.storefiles import NO_ROLL, read_store_file, write_rolled
from cellstore.storefiles.columns import NO_LAYOUTS
from cellstore.storefiles.rolling import BulkLoadFile

__all__ = [
    "ProgressFn",
    "RegionRecords",
    "TaskOutput",
    "commit_load",
    "execute_plan",
    "files_summary",
    "reduce_region",
    "reroute_files",
    "run_task",
]

#: How many times a commit re-routes files after a concurrent region change.
MAX_REROUTES: Final = 16
_TASK_PREFIX: Final = "cellstore-load-"
#: Spill mode: a task reads its input in batches of at most ``run_bytes / SPILL_BATCHES``
#: and at most ``SPILL_BATCH_ROWS`` records.
SPILL_BATCHES: Final = 4
SPILL_BATCH_ROWS: Final = 32_768


@dataclass(frozen=True)
class RegionRecords:
    """One task's good records for one region (``merge`` mode)."""

    region: int
    records: pa.Table


@dataclass(frozen=True)
class TaskOutput:
    """What one load task did.

    Attributes:
        index: The task's input part index.
        records: Input records read.
        rows: Good records.
        regions: ``merge`` mode: the good records per region.
        written: ``spill`` mode: the store files written.
        duplicates: Duplicate-key cells dropped (``spill`` mode).
        bad: Skipped records (``skip_bad_records``).
        keys: A systematic sample of the task's good row keys, in input order (for the
            key-design checks), or None.
        hfiles: ``merge`` mode with ``hfile_output``: the bulk-load HFiles written.
    """

    index: int
    records: int
    rows: int
    regions: tuple[RegionRecords, ...]
    written: tuple[WrittenFile, ...]
    duplicates: int
    bad: tuple[BadRecord, ...]
    keys: pa.Array | None = None
    hfiles: tuple[BulkLoadFile, ...] = ()

    def region_records(self, region: int) -> pa.Table | None:
        """This task's records for ``region``, or None."""
        for r in self.regions:
            if r.region == region:
                return r.records
        return None


def _filesystem(plan: LoadPlan) -> tuple[fsspec.AbstractFileSystem, str]:
    fs, path = fsspec.core.url_to_fs(plan.target.url, **dict(plan.target.storage_options))
    return fs, str(path).rstrip("/")


def _field_of(reason: str) -> str:
    field, sep, _ = reason.rpartition(": ")
    return field if sep else "?"


def _value_text(records: pa.Table, field: str, index: int) -> str:
    """``, got '517.0'`` (shortened): record ``index``'s ``field`` for a bad record's message.

    ``""`` when the records have no such column (a row-key part, a derived field), the
    value is null, or it has no Python form (a timestamp out of range).
    """
    if field not in records.column_names:
        return ""
    one = records.column(field).slice(index, 1).combine_chunks()
    if pa.types.is_string(one.type):  # text readers may let bytes that are not UTF-8 in
        one = one.view(pa.binary())
    elif pa.types.is_large_string(one.type):
        one = one.view(pa.large_binary())
    try:
        value = one[0].as_py()
    except (OverflowError, ValueError):
        return ""
    if value is None:
        return ""
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            value = "0x" + value.hex()
    return f", got {shorten(str(value))}"


def _bad_records(
    plan: LoadPlan, task: LoadTask, batch: Batch, enc_bad: np.ndarray, reasons: pa.Array
) -> list[BadRecord]:
    """Raise for the first bad record, or (skipping) describe every bad record."""
    part = task.part
    out: list[BadRecord] = []
    for ln, text, bad_field, bad_reason in batch.malformed_details():
        where = f"{part.source}, line {ln}" if ln is not None else part.source
        if not plan.settings.skip_bad_records:
            detail = (
                f": malformed record, cannot be parsed ({text[:80]!r})"
                if bad_field == "<line>"
                else f", field {bad_field!r}: {bad_reason.partition(': ')[2]}"
            )
            raise BadRecordError(
                f"{where}{detail}",
                source=part.source,
                line=ln,
                field=bad_field,
                reason="malformed record" if bad_field == "<line>" else bad_reason,
            )
        out.append(
            BadRecord(
                source=part.source,
                line=ln,
                record=None,
                field=bad_field,
                reason=bad_reason,
                values={"text": text},
            )
        )
    if not enc_bad.any():
        return out
    idx = np.flatnonzero(enc_bad)
    lines = batch.lines_of(idx)
    records = batch.records_of(idx)
    if not plan.settings.skip_bad_records:
        i = int(idx[0])
        reason = str(reasons[i].as_py())
        field, _, why = reason.rpartition(": ")
        line = int(lines[0]) if lines is not None else None
        record = int(records[0])
        raise BadRecordError(
            f"{part.where(record, line)}, field {field!r}: {why}"
            f"{_value_text(batch.table, field, i)} "
            "(nothing was committed; skip bad records with skip_bad_records, "
            "--skip-bad-records in the CLI)",
            source=part.source,
            line=line,
            record=record,
            field=field,
            reason=reason,
        )
    texts = reasons.take(pa.array(idx)).to_pylist()
    values = bad_record_rows(batch.table, enc_bad)
    for k, (reason, vals) in enumerate(zip(texts, values, strict=True)):
        out.append(
            BadRecord(
                source=part.source,
                line=int(lines[k]) if lines is not None else None,
                record=int(records[k]),
                field=_field_of(str(reason)),
                reason=str(reason),
                values=vals,
            )
        )
    return out


def _by_region(plan: LoadPlan, records: pa.Table) -> list[tuple[int, pa.Table]]:
    """Good records grouped by region number (stable: input order kept inside a region)."""
    if records.num_rows == 0:
        return []
    idx = route_rows(records.column("row"), plan.target.split_keys)
    if not idx.any():
        return [(0, records)]
    order = np.argsort(idx, kind="stable")
    ordered = records.take(pa.array(order))
    sorted_idx = idx[order]
    bounds = np.searchsorted(sorted_idx, np.arange(len(plan.target.regions) + 1))
    return [
        (r, ordered.slice(int(bounds[r]), int(bounds[r + 1] - bounds[r])))
        for r in range(len(plan.target.regions))
        if bounds[r + 1] > bounds[r]
    ]


def _write_store_files(
    plan: LoadPlan,
    fs: fsspec.AbstractFileSystem,
    path: str,
    records: pa.Table,
    region: int,
    *,
    name: str,
    max_file_bytes: int,
    final: bool,
) -> tuple[list[WrittenFile], int]:
    """Sort one region's records and write its store files (one roll set per family).

    ``final``: the files are the load's own (in the layouts the plan gives), not sorted
    runs a merge reads back (always cells).
    """
    return write_region(
        fs,
        path,
        records=records,
        bound=plan.bound,
        families=plan.target.families,
        region_id=plan.target.regions[region].id,
        name=name,
        seq=plan.seq,
        load_id=plan.load_id,
        max_file_bytes=max_file_bytes,
        row_group_cells=plan.settings.row_group_cells,
        layouts=plan.target.layouts if final else NO_LAYOUTS,
    )


def _write_runs(plan: LoadPlan, held: list[pa.Table], stem: str) -> tuple[list[WrittenFile], int]:
    """Write one sorted run per region of the records in ``held`` (which it empties).

    The unsorted records are dropped as soon as they are grouped by region, and each
    region's records once written, so a run costs one copy of its records at a time.
    """
    fs, path = _filesystem(plan)
    written: list[WrittenFile] = []
    dropped = 0
    by_region = _by_region(plan, held.pop())
    by_region.reverse()
    while by_region:
        r, part = by_region.pop()
        files, d = _write_store_files(
            plan, fs, path, part, r, name=stem, max_file_bytes=plan.run_file_bytes, final=False
        )
        del part
        release_memory()
        written += files
        dropped += d
    return written, dropped


def run_task(plan: LoadPlan, task: LoadTask, data: Any = None) -> TaskOutput:
    """Run one load task (see the module docstring); ``data`` is a Dask partition.

    Raises:
        BadRecordError: the first bad record, unless the plan skips bad records.
    """
    spill = plan.mode == "spill"
    run_bytes = plan.settings.run_bytes
    pending: list[pa.Table] = []
    pending_bytes = 0
    written: list[WrittenFile] = []
    bad: list[BadRecord] = []
    read = rows = dropped = run = 0
    sampler = KeySampler(task.key_sample)

    def flush() -> None:
        nonlocal pending, pending_bytes, dropped, run
        if not pending:
            return
        records, pending, pending_bytes = pa.concat_tables(pending), [], 0
        files, d = _write_runs(plan, [records], f"{task.name}r{run:04d}")
        del records
        written.extend(files)
        dropped += d
        run += 1

    # Spill mode reads small batches: a Parquet reader holds its current row group's
    # decoded pages for the batch being assembled, and that stays alive while a run is
    # written (see docs/performance.md, memory profile of a load).
    batch_rows = (
        task.part.batch_rows(run_bytes // SPILL_BATCHES, limit=SPILL_BATCH_ROWS)
        if spill
        else 262_144
    )
    for batch in read_part(task.part, data, batch_rows=batch_rows):
        read += batch.table.num_rows + len(batch.malformed)
        enc = encode_records(batch.table, plan.bound, now=plan.now_ms)
        bad += _bad_records(plan, task, batch, enc.bad, enc.reasons)
        rows += enc.records.num_rows
        sampler.add(enc.records.column("row"))
        if enc.records.num_rows:
            pending.append(enc.records)
            pending_bytes += enc.records.nbytes
        if spill and pending_bytes >= run_bytes:
            flush()
    regions: tuple[RegionRecords, ...] = ()
    if spill:
        flush()
    elif pending:
        records = pa.concat_tables(pending)
        regions = tuple(RegionRecords(r, t) for r, t in _by_region(plan, records))
    keys = sampler.sample() if task.key_sample else None
    return TaskOutput(
        task.part.index, read, rows, regions, tuple(written), dropped, tuple(bad), keys
    )


def reduce_region(plan: LoadPlan, region: int, *parts: pa.Table | TaskOutput | None) -> TaskOutput:
    """Sort one region's records from every task and write its store files (merge mode).

    ``parts`` are, in task order, either the tasks' outputs or their records for this
    region (None when a task had none).
    """
    tables = []
    for p in parts:
        t = p.region_records(region) if isinstance(p, TaskOutput) else p
        if t is not None and t.num_rows:
            tables.append(t)
    if not tables:
        return TaskOutput(-1, 0, 0, (), (), 0, ())
    records = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    if plan.hfiles is not None:
        out = plan.hfiles.output
        hfiles, dropped = write_region_hfiles(
            out.fs,
            out.tmp,
            records=records,
            bound=plan.bound,
            families=plan.target.families,
            region_id=plan.target.regions[region].id,
            format=plan.hfiles.format,
            max_file_bytes=plan.settings.max_file_bytes,
            max_files=plan.settings.max_files_per_region,
        )
        return TaskOutput(-1, 0, 0, (), (), dropped, (), hfiles=tuple(hfiles))
    fs, path = _filesystem(plan)
    files, dropped = _write_store_files(
        plan,
        fs,
        path,
        records,
        region,
        name=plan.region_file_stem(region),
        max_file_bytes=plan.settings.max_file_bytes,
        final=True,
    )
    return TaskOutput(-1, 0, 0, (), tuple(files), dropped, ())


def _region_records_of(output: TaskOutput, region: int) -> pa.Table | None:
    return output.region_records(region)


def _without_records(output: TaskOutput) -> TaskOutput:
    return dataclasses.replace(output, regions=())


def execute_plan(
    plan: LoadPlan,
    *,
    dask_frame: Any = None,
    client: Any = None,
    progress: ProgressFn | None = None,
) -> list[TaskOutput]:
    """Run a plan's tasks (and merge-mode region tasks) on Dask; returns every output.

    On a ``distributed`` client, merge-mode input tasks hand their records to the region
    tasks on the workers and come back to the client without them (counts only).

    Args:
        plan: The plan.
        dask_frame: The Dask DataFrame ``dask`` parts come from.
        client: A ``distributed.Client``; None runs on the local threaded scheduler with
            ``plan.settings.workers`` threads.
        progress: Called with ``(done, total)`` as tasks finish.

    Raises:
        BadRecordError: from the first failing task (bad input, not skipping).
    """
    from dask.delayed import delayed

    context = dataclasses.replace(plan, tasks=())
    ctx: Any
    if client is None:
        ctx = delayed(context, pure=True)
    else:
        # On every worker up front: as a task output it would live on one worker, and the
        # scheduler, placing every task next to its inputs, would run most input tasks
        # there (7 of 8 on one of two workers, measured) and leave the other idle.
        ctx = client.scatter(context, broadcast=True, hash=False)
    partitions = dask_frame.to_delayed() if dask_frame is not None else None
    maps = []
    for task in plan.tasks:
        data = partitions[task.part.partition] if partitions is not None else None
        maps.append(
            delayed(run_task, pure=False)(
                ctx, task, data, dask_key_name=f"{_TASK_PREFIX}{plan.nonce}-task-{task.part.index}"
            )
        )
    reduces = []
    if plan.mode == "merge":
        for r in range(len(plan.target.regions)):
            if client is None:
                inputs: Sequence[Any] = maps
            else:  # move only this region's records between workers
                inputs = [delayed(_region_records_of, pure=True)(m, r) for m in maps]
            reduces.append(
                delayed(reduce_region, pure=False)(
                    ctx, r, *inputs, dask_key_name=f"{_TASK_PREFIX}{plan.nonce}-region-{r}"
                )
            )
    graph = [*maps, *reduces]
    total = len(graph)
    if client is None:
        from dask.callbacks import Callback

        done = 0

        def posttask(key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
            nonlocal done
            if isinstance(key, str) and key.startswith(_TASK_PREFIX) and progress is not None:
                done += 1
                progress(done, total)

        with Callback(posttask=posttask):  # type: ignore[no-untyped-call]
            return compute_all(graph, workers=plan.settings.task_count)
    from distributed import as_completed

    if reduces:  # the client needs the map tasks' counts, not their records
        graph = [*(delayed(_without_records, pure=True)(m) for m in maps), *reduces]
    futures = client.compute(graph)
    # loop=: the given client need not be the default one (Client(set_as_default=False)).
    completed = as_completed(futures, loop=client.loop)  # type: ignore[no-untyped-call]
    for n, future in enumerate(completed, start=1):
        if future.status == "error":
            break
        if progress is not None:
            progress(n, total)
    wait_all(futures)  # a failed load cleans up only once no task is still writing
    return list(client.gather(futures))


# ------------------------------------------------------------------------------ commit
def reroute_files(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    metadata: TableMetadata,
    written: Sequence[WrittenFile],
    *,
    load_id: str,
    row_group_cells: int,
) -> tuple[list[WrittenFile], int]:
    """Fit written files to ``metadata``'s regions (after a concurrent split or merge).

    A file inside one current region is re-assigned to it (its path stays: paths in the
    manifest are authoritative); a file spanning several is split at the region bounds
    into new files (R14.4). Files whose region is unchanged stay as they are.

    Returns:
        The files to commit and how many were re-assigned or split.
    """
    splits = metadata.split_keys
    by_id = {r.id: r for r in metadata.regions}
    out: list[WrittenFile] = []
    changed = 0
    for w in written:
        first = region_of(splits, w.info.first_row)
        last = region_of(splits, w.info.last_row)
        if first == last:
            region = metadata.regions[first]
            if region.id != w.region:
                changed += 1
                w = WrittenFile(region.id, w.relpath, w.info)
            out.append(w)
            continue
        changed += 1
        family = metadata.family(w.info.family)
        cells = read_store_file(fs, join(table_path, w.relpath))
        bounds = sorted_region_bounds(cells.column("row"), splits)
        stem = w.relpath.rsplit("/", 1)[-1].removesuffix(".parquet")
        for i, region in enumerate(metadata.regions):
            lo, hi = bounds[i], bounds[i + 1]
            if hi <= lo:
                continue
            out += write_rolled(
                fs,
                table_path,
                cells.slice(lo, hi - lo),
                region=region.id,
                family=family,
                stem=f"{stem}-s{i:05d}",
                seq=w.info.seq,
                load_id=load_id,
                max_file_bytes=NO_ROLL,
                row_group_cells=row_group_cells,
            )
        with contextlib.suppress(OSError):
            fs.rm(join(table_path, w.relpath))
        assert by_id  # regions exist
    return out, changed


def files_summary(written: Sequence[WrittenFile]) -> dict[str, int]:
    """The ``cells``, ``files`` and ``bytes`` a load's history entry records for its files."""
    return {
        "cells": sum(w.info.cells for w in written),
        "files": len(written),
        "bytes": sum(w.info.size for w in written),
    }


def commit_load(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    log: TableLog,
    base: TableMetadata,
    written: Sequence[WrittenFile],
    *,
    load_id: str,
    summary: Mapping[str, Any],
    row_group_cells: int,
    update: Callable[[Staged], Mapping[str, Any]] | None = None,
    assign_seq_id: bool = True,
    hooks: Sequence[LoadHook] = (),
    storage_options: Mapping[str, Any] = MappingProxyType({}),
) -> tuple[TableMetadata, bool, list[WrittenFile], int]:
    """Commit the files in one manifest commit, re-routing them if regions changed.

    ``assign_seq_id=False`` commits them without a sequence number (see
    :func:`~cellstore.loader.direct.commit_files`, R14.5).

    ``update`` (``Commit.update``) changes further fields of the new version.

    ``hooks`` run first, each with the :class:`~cellstore.handle.PendingLoad` (the
    facade passes ``TableHandle.load_hooks``: the index upkeep, which writes and commits
    the index rows of the new files before the data commit); ``storage_options`` are the
    catalog's, handed to them.

    Returns:
        The committed metadata, whether the load id had been applied before, the files
        committed, and how many files were re-routed.

    Raises:
        CommitConflictError: a family was dropped, or regions kept changing.
    """
    files = list(written)
    rerouted = 0
    if files and hooks:
        pending = PendingLoad(
            fs, table_path, log, base, tuple(files), load_id, assign_seq_id, {**storage_options}
        )
        for hook in hooks:
            hook(pending)
    for _ in range(MAX_REROUTES):
        try:
            meta, already = commit_files(
                log,
                base,
                files,
                load_id=load_id,
                summary=dict(summary),
                update=update,
                assign_seq_id=assign_seq_id,
            )
            return meta, already, files, rerouted
        except RegionsChangedError:
            base = log.read(log.latest_version())
            files, n = reroute_files(
                fs, table_path, base, files, load_id=load_id, row_group_cells=row_group_cells
            )
            rerouted += n
    raise RegionsChangedError(
        f"table {base.name}: regions kept changing during load {load_id}; nothing committed"
    )

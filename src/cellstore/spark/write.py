"""Bulk-loading a Spark DataFrame: the loader's tasks on executors, one commit on the driver.

A Spark write is a bulk load whose input parts are Spark partitions:

1. the driver plans it (:func:`prepare_load`): the mapping is bound to the table's latest
   version, the target regions and families are fixed, and the load gets its id and a
   per-attempt nonce: the loader's :class:`~cellstore.loader.LoadPlan`, with no parts;
2. each executor task (:func:`write_partition`) streams its partition's Arrow batches in
   chunks of at most a share of the memory budget and hands each chunk to the loader's own
   task code (:func:`cellstore.loader.execute.run_task`, ``spill`` mode): records are
   encoded through the mapping (bad records fail the task, or are collected), routed to
   regions, sorted, and written as one sorted run per region and family;
3. the driver commits every file of every task in one manifest commit
   (:func:`commit_partitions`, the loader's :func:`~cellstore.loader.commit_load`, which
   re-routes files if regions were split or merged meanwhile), writes the load report and
   the bad-records file next to the table as the loader does; or, when Spark aborts the
   job, deletes what the tasks wrote (:func:`abort_partitions`). Nothing a task wrote is
   visible before the commit: the manifest is the only truth.

Nothing here imports pyspark.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import fsspec
import pyarrow as pa

from cellstore.core.names import validate_load_id
from cellstore.errors import InvalidArgumentError
from cellstore.fs import ensure_exclusive_create, join
from cellstore.loader import (
    BadRecord,
    InputPart,
    LoadPlan,
    LoadReport,
    LoadSettings,
    LoadTask,
    commit_load,
)
from cellstore.loader.direct import WrittenFile, new_load_id, now_ms
from cellstore.loader.execute import files_summary, run_task
from cellstore.loader.plan import TableTarget, bind_mapping
from cellstore.loader.report import write_bad_records, write_report
from cellstore.manifest import TableLog
from cellstore.spark.options import WriteOptions, missing_columns
from cellstore.storefiles.layout import loads_dir, store_dir_relpath
from cellstore.warehouse import LOAD_HOOKS, connect

__all__ = [
    "PartitionResult",
    "SparkLoad",
    "abort_partitions",
    "commit_partitions",
    "prepare_load",
    "write_partition",
]


@dataclass(frozen=True, kw_only=True)
class SparkLoad:
    """A planned Spark write (frozen, picklable; sent to every executor task).

    Attributes:
        plan: The loader's plan: bound mapping, target table, settings, load id, nonce;
            always ``spill`` mode and no parts (Spark partitions are the parts).
        columns: The input columns the mapping reads (others are dropped on arrival).
        already_applied: The load id was committed before: tasks write nothing.
        started: Wall-clock time (``time.time()``) the write was planned.
    """

    plan: LoadPlan
    columns: tuple[str, ...]
    already_applied: bool = False
    started: float = 0.0


@dataclass(frozen=True, kw_only=True)
class PartitionResult:
    """What one Spark task wrote (the payload of its commit message).

    Attributes:
        partition: Spark partition id.
        attempt: Spark task attempt id (unique in the application).
        records: Input records read.
        rows: Good records.
        written: Store files written, not yet committed.
        duplicates: Cells dropped because a later one in the same run had the same key.
        bad: Skipped bad records (``skip_bad_records``).
    """

    partition: int
    attempt: int
    records: int = 0
    rows: int = 0
    written: tuple[WrittenFile, ...] = ()
    duplicates: int = 0
    bad: tuple[BadRecord, ...] = ()


def prepare_load(options: WriteOptions, *, input_columns: Sequence[str]) -> SparkLoad:
    """Plan a Spark write on the driver: bind the mapping to the table's latest version.

    Args:
        options: The parsed write options.
        input_columns: The DataFrame's column names.

    Raises:
        TableNotFoundError: the table does not exist.
        InvalidFamilyError, InvalidArgumentError: a mapping that does not fit the table or
            names columns the DataFrame lacks.
    """
    wh = connect(options.root, storage_options=options.storage_options)
    table = wh.table(options.table)
    ensure_exclusive_create(table.fs, wh.root)
    meta = table.metadata
    bound = bind_mapping(options.mapping, meta)
    spec = getattr(meta, "row_key", None)
    missing = missing_columns(options.mapping, input_columns, spec)
    if missing:
        raise InvalidArgumentError(
            f"the DataFrame has no column(s) {missing} that the mapping reads "
            f"(it has {list(input_columns)})"
        )
    load_id = validate_load_id(options.load_id or new_load_id())
    settings = LoadSettings(
        memory_budget=options.memory_budget,
        max_file_bytes=options.max_file_bytes,
        row_group_cells=options.row_group_cells,
        skip_bad_records=options.skip_bad_records,
        workers=1,
    )
    target = TableTarget(
        url=table.fs.unstrip_protocol(table.path),
        storage_options=dict(wh.storage_options),
        name=meta.name,
        families=meta.families,
        regions=meta.regions,
        base_version=meta.version,
    )
    plan = LoadPlan(
        load_id=load_id,
        nonce=uuid.uuid4().hex[:8],
        seq=meta.next_seq,
        now_ms=options.now_ms if options.now_ms is not None else now_ms(),
        mode="spill",
        target=target,
        bound=bound,
        settings=settings,
        tasks=(),
        estimated_bytes=0,
    )
    return SparkLoad(
        plan=plan,
        columns=tuple(options.mapping.input_columns(spec)),
        already_applied=load_id in meta.load_ids,
        started=time.time(),
    )


def _table_fs(plan: LoadPlan) -> tuple[fsspec.AbstractFileSystem, str]:
    fs, path = fsspec.core.url_to_fs(plan.target.url, **dict(plan.target.storage_options))
    return fs, str(path).rstrip("/")


def _remove(plan: LoadPlan, files: Iterable[WrittenFile]) -> int:
    """Best effort: delete written (uncommitted) files; returns how many went."""
    fs, path = _table_fs(plan)
    removed = 0
    for w in files:
        with contextlib.suppress(OSError):
            fs.rm(join(path, w.relpath))
            removed += 1
    return removed


def write_partition(
    load: SparkLoad,
    batches: Iterable[pa.RecordBatch],
    *,
    partition: int,
    attempt: int,
) -> PartitionResult:
    """Write one Spark partition's records as sorted store files (on an executor).

    Batches are gathered into chunks of about ``plan.settings.run_bytes`` of input (the
    memory budget's share of one run) and each chunk is one loader task in ``spill`` mode:
    encoded, routed, sorted and written per region and family. On any error the files this
    task wrote are deleted before the error propagates (Spark then aborts the job).

    Raises:
        BadRecordError: the partition's first bad record (``<spark partition N>, record
            I``, field and reason), unless bad records are skipped.
    """
    plan = load.plan
    result = PartitionResult(partition=partition, attempt=attempt)
    if load.already_applied:
        return result
    stem = f"{plan.load_id}-{plan.nonce}-s{partition:05d}t{attempt}"
    pending: list[pa.RecordBatch] = []
    pending_bytes = 0
    first_record = 0
    chunk = 0
    written: list[WrittenFile] = []
    bad: list[BadRecord] = []
    records = rows = duplicates = 0

    def flush() -> None:
        nonlocal pending, pending_bytes, first_record, chunk, records, rows, duplicates
        table = pa.Table.from_batches(pending)
        pending, pending_bytes = [], 0
        part = InputPart(
            index=partition,
            kind="arrow",
            source=f"<spark partition {partition}>",
            first_record=first_record,
            table=table,
            estimated_bytes=table.nbytes,
            columns=load.columns,
            rows=table.num_rows,
        )
        out = run_task(plan, LoadTask(part=part, name=f"{stem}c{chunk:04d}"))
        written.extend(out.written)
        bad.extend(out.bad)
        records += out.records
        rows += out.rows
        duplicates += out.duplicates
        first_record += table.num_rows
        chunk += 1

    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            piece = batch.select(list(load.columns))
            pending.append(piece)
            pending_bytes += piece.nbytes
            if pending_bytes >= plan.settings.run_bytes:
                flush()
        if pending:
            flush()
    except BaseException:
        _remove(plan, written)
        raise
    return PartitionResult(
        partition=partition,
        attempt=attempt,
        records=records,
        rows=rows,
        written=tuple(written),
        duplicates=duplicates,
        bad=tuple(bad),
    )


def commit_partitions(load: SparkLoad, results: Sequence[PartitionResult]) -> LoadReport:
    """Commit every task's files in one manifest commit (on the driver).

    Files are committed in partition order (a later partition wins exact key ties, as a
    later input part does in the loader). If regions were split or merged since the write
    was planned, files are re-assigned or split first. The report (and the bad-records
    file, if records were skipped) is written to ``<table>/_loads/``.

    Returns:
        The load report.

    Raises:
        CommitConflictError: a family was dropped, or regions kept changing.
    """
    plan = load.plan
    fs, table_path = _table_fs(plan)
    ordered = sorted(results, key=lambda r: r.partition)
    written = [w for r in ordered for w in r.written]
    bad = [b for r in ordered for b in r.bad]
    log = TableLog(fs, table_path)
    base = log.read(plan.target.base_version)
    version = seq = None
    already = load.already_applied
    rerouted = 0
    if written and not already:
        meta, already, written, rerouted = commit_load(
            fs,
            table_path,
            log,
            base,
            written,
            load_id=plan.load_id,
            summary={
                **files_summary(written),
                "rows": sum(r.rows for r in ordered),
                "bad-records": len(bad),
                "mode": "spark",
            },
            row_group_cells=plan.settings.row_group_cells,
            hooks=LOAD_HOOKS,
            storage_options=plan.target.storage_options,
        )
        if not already:
            version = meta.version
            seq = meta.last_history.summary.get("seq")
    if already:
        _remove(plan, written)
        written = []
    report_dir = loads_dir(table_path)
    bad_path = write_bad_records(fs, report_dir, plan.load_id, bad) if bad else None
    reasons = Counter(b.reason for b in bad)
    report = LoadReport(
        table=plan.target.name,
        load_id=plan.load_id,
        version=version,
        seq=seq,
        already_applied=already,
        mode="spark",
        inputs=len(ordered),
        records=sum(r.records for r in ordered),
        rows=0 if already else sum(r.rows for r in ordered),
        cells=sum(w.info.cells for w in written),
        bytes=sum(w.info.size for w in written),
        files=len(written),
        files_per_region=dict(Counter(w.region for w in written)),
        duplicates_dropped=sum(r.duplicates for r in ordered),
        bad_records=len(bad),
        bad_reasons=dict(reasons),
        bad_records_path=bad_path,
        rerouted_files=rerouted,
        seconds=time.time() - load.started if load.started else 0.0,
    )
    return replace(report, report_path=write_report(fs, report_dir, report))


def abort_partitions(load: SparkLoad, results: Sequence[PartitionResult | None]) -> int:
    """Delete what the write's tasks wrote (on the driver, when Spark aborts the job).

    Files named in the tasks' results are deleted, then any other file of this write
    attempt (a task that failed midway deletes its own, but a killed executor cannot).
    Nothing was committed, so nothing becomes visible either way; vacuum removes what a
    lost driver leaves.

    Returns:
        How many files were deleted.
    """
    plan = load.plan
    removed = _remove(plan, (w for r in results if r is not None for w in r.written))
    fs, table_path = _table_fs(plan)
    prefix = f"{plan.load_id}-{plan.nonce}-"
    for region in plan.target.regions:
        for fam in plan.target.families:
            removed += _remove_prefixed(fs, _family_dir(table_path, region.id, fam.name), prefix)
    return removed


def _family_dir(table_path: str, region: str, family: str) -> str:
    return join(table_path, store_dir_relpath(region, family))


def _remove_prefixed(fs: fsspec.AbstractFileSystem, directory: str, prefix: str) -> int:
    removed = 0
    with contextlib.suppress(OSError, ValueError):
        fs.invalidate_cache(directory)
        if not fs.exists(directory):
            return 0
        for p in fs.ls(directory, detail=False):
            if str(p).rsplit("/", 1)[-1].startswith(prefix):
                fs.rm(p)
                removed += 1
    return removed

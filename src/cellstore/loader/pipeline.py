"""A load into a table as named steps: plan, execute, commit, report.

:func:`load_table` is the body of ``Table.load``: it takes a table handle (anything with
the :class:`LoadableTable` attributes; ``cellstore.warehouse.Table`` is one) and one
:class:`~cellstore.loader.LoadSettings`, and runs

1. :func:`~cellstore.loader.settings.resolve_settings`: defaults filled in (mapping
   object, load id, clock, workers);
2. :func:`~cellstore.loader.plan.plan_load`: the frozen plan (inputs cut into parts,
   the mapping bound to the table's newest version, ``merge`` or ``spill`` mode);
3. :func:`execute_load`: the plan's tasks on Dask (local threads or a ``distributed``
   client), spill runs merged down to ``max_files_per_region``; a failure deletes what
   the load wrote;
4. :func:`commit_written`: one manifest commit (re-routing files if regions changed,
   the table's load hooks (index upkeep) first: :func:`~cellstore.loader.execute.commit_load`);
5. :func:`LoadTally` and :func:`write_load_files`: the report, the bad-records file and
   the report JSON.

:func:`load_cells` is the same for cells given directly (``Table.load_cells``). The HFile
output of a load (:mod:`cellstore.loader.hfiles`) shares steps 1-3 and 5.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import fsspec

from cellstore.commit import Staged
from cellstore.core.metadata import TableMetadata
from cellstore.core.names import validate_load_id
from cellstore.fs import ensure_exclusive_create, join
from cellstore.handle import TableHandle
from cellstore.loader.direct import (
    KeyKind,
    WrittenFile,
    normalize_cells,
    salt_rows,
    write_cells,
)
from cellstore.loader.execute import TaskOutput, commit_load, execute_plan, files_summary
from cellstore.loader.inputs import DiscoveredInputs
from cellstore.loader.keycheck import KeyFinding, analyze_keys
from cellstore.loader.mapping import LoadMapping, properties_after_load
from cellstore.loader.plan import LoadPlan, load_layouts, plan_load
from cellstore.loader.report import BadRecord, LoadReport, write_bad_records, write_report
from cellstore.loader.settings import LoadSettings, new_load_id, resolve_settings
from cellstore.loader.spill import consolidate_runs
from cellstore.storefiles import DEFAULT_ROW_GROUP_CELLS
from cellstore.storefiles.layout import loads_dir, store_dir_relpath

__all__ = [
    "Committed",
    "LoadTally",
    "LoadableTable",
    "cleanup_load",
    "commit_written",
    "execute_load",
    "key_warnings",
    "load_cells",
    "load_table",
    "record_codecs",
    "report_location",
    "write_load_files",
]


#: What the loader takes: a table handle (``cellstore.warehouse.Table`` is one). The loader
#: reads the newest version from its log, writes under its path, sends tasks its URL and
#: storage options, and runs its load hooks (index upkeep) before the commit.
LoadableTable = TableHandle


# ------------------------------------------------------------------------------ steps
def execute_load(
    table: LoadableTable, plan: LoadPlan, inputs: DiscoveredInputs, settings: LoadSettings
) -> tuple[list[TaskOutput], list[WrittenFile], int, int]:
    """Run a table load's plan: its tasks, then (spill mode) the merge of surplus runs.

    Returns:
        The task outputs, the store files to commit, the sorted runs merged and the
        duplicate cells the merge dropped.

    Raises:
        BadRecordError: a bad record (not skipping); every file the load wrote is
            deleted (best effort; they are unreferenced anyway).
    """
    merged_runs = merge_dropped = 0
    try:
        outputs = execute_plan(
            plan, dask_frame=inputs.dask_frame, client=settings.client, progress=settings.progress
        )
        written = [w for o in outputs for w in o.written]
        if plan.mode == "spill":
            written, merged_runs, merge_dropped = consolidate_runs(
                plan, written, client=settings.client
            )
    except BaseException:
        cleanup_load(table.fs, table.path, plan)
        raise
    return outputs, written, merged_runs, merge_dropped


#: The fields of :class:`~cellstore.loader.report.LoadReport` a :class:`LoadTally` fills.
_REPORT_FIELDS: Final = (
    "mode",
    "inputs",
    "records",
    "duplicates_dropped",
    "bad_records",
    "bad_reasons",
    "merged_runs",
)


@dataclass(frozen=True)
class LoadTally:
    """What a load's tasks did, summed (the report's counts of input and bad records).

    Attributes:
        mode: The plan's mode.
        inputs: Input parts (tasks).
        records: Input records read.
        rows: Good records.
        duplicates_dropped: Duplicate-key cells dropped (tasks and run merges).
        merged_runs: Sorted runs merged before the commit or the HFile output.
        bad: The skipped bad records, in task order.
        warnings: Key-design findings on the sampled keys (regions as planned).
    """

    mode: str
    inputs: int
    records: int
    rows: int
    duplicates_dropped: int
    merged_runs: int
    bad: tuple[BadRecord, ...]
    warnings: tuple[KeyFinding, ...]

    @classmethod
    def of(
        cls, plan: LoadPlan, outputs: Sequence[TaskOutput], *, merged_runs: int, merge_dropped: int
    ) -> LoadTally:
        """Sum a plan's task outputs."""
        return cls(
            mode=plan.mode,
            inputs=len(plan.tasks),
            records=sum(o.records for o in outputs),
            rows=sum(o.rows for o in outputs),
            duplicates_dropped=sum(o.duplicates for o in outputs) + merge_dropped,
            merged_runs=merged_runs,
            bad=tuple(b for o in outputs for b in o.bad),
            warnings=key_warnings(plan, outputs),
        )

    @property
    def bad_records(self) -> int:
        """Bad records skipped."""
        return len(self.bad)

    @property
    def bad_reasons(self) -> dict[str, int]:
        """Bad records counted by reason."""
        return dict(Counter(b.reason for b in self.bad))

    def report_fields(self) -> dict[str, Any]:
        """The :class:`LoadReport` fields this tally fills (same names)."""
        return {name: getattr(self, name) for name in _REPORT_FIELDS}


@dataclass(frozen=True)
class Committed:
    """The outcome of a load's commit.

    Attributes:
        metadata: The table version after it (the base when nothing was committed).
        version: The version the commit created, or None.
        seq: The sequence number of the load's files, or None.
        already_applied: The load id had been committed before.
        files: The files committed (re-routed ones as committed).
        rerouted: Files re-assigned or split because regions changed.
    """

    metadata: TableMetadata
    version: int | None = None
    seq: int | None = None
    already_applied: bool = False
    files: tuple[WrittenFile, ...] = ()
    rerouted: int = 0


def commit_written(
    table: LoadableTable,
    base: TableMetadata,
    written: Sequence[WrittenFile],
    *,
    settings: LoadSettings,
    summary: Mapping[str, Any],
) -> Committed:
    """Commit a load's files in one manifest commit (nothing to commit: nothing done).

    The table properties record the codecs of the settings' mapping, if any; ``summary``
    goes into the history entry beside the files' cells, count and bytes.

    Raises:
        CommitConflictError: a family was dropped, or regions kept changing.
    """
    if not written:
        return Committed(base)
    assert settings.load_id is not None  # resolved
    mapping = settings.mapping
    meta, already, files, rerouted = commit_load(
        table.fs,
        table.path,
        table.log,
        base,
        written,
        load_id=settings.load_id,
        summary={
            **files_summary(written),
            **summary,
        },
        row_group_cells=settings.row_group_cells,
        update=record_codecs(mapping) if isinstance(mapping, LoadMapping) else None,
        assign_seq_id=settings.assign_seq_id,
        hooks=table.load_hooks,
        storage_options=table.storage_options,
    )
    if already:
        return Committed(meta, already_applied=True, files=tuple(files), rerouted=rerouted)
    seq = meta.last_history.summary.get("seq")
    return Committed(meta, meta.version, seq, False, tuple(files), rerouted)


def write_load_files(
    fs: fsspec.AbstractFileSystem | None, directory: str, report: LoadReport, *, report_file: bool
) -> LoadReport:
    """Write the load's report JSON (with ``report_file``) to ``directory``.

    Returns:
        The report, with ``report_path`` set when it was written.
    """
    if not report_file or fs is None:
        return report
    return dataclasses.replace(report, report_path=write_report(fs, directory, report))


def _table_report(
    name: str, settings: LoadSettings, tally: LoadTally, done: Committed, **fields: Any
) -> LoadReport:
    """The report of a load into a table (counts of what it committed)."""
    assert settings.load_id is not None  # resolved
    files = done.files if not done.already_applied else ()
    return LoadReport(
        table=name,
        load_id=settings.load_id,
        version=done.version,
        seq=done.seq,
        already_applied=done.already_applied,
        rows=tally.rows if not done.already_applied else 0,
        cells=sum(w.info.cells for w in files),
        bytes=sum(w.info.size for w in files),
        files=len(files),
        files_per_region=dict(Counter(w.region for w in files)),
        rerouted_files=done.rerouted,
        warnings=tally.warnings if not done.already_applied else (),
        **tally.report_fields(),
        **fields,
    )


# ---------------------------------------------------------------------------- the loads
def load_table(
    table: LoadableTable, source: Any, settings: LoadSettings
) -> tuple[LoadReport, TableMetadata]:
    """Plan, execute and commit a bulk load into ``table`` (the body of ``Table.load``).

    Returns:
        The report and the table metadata after the load.

    Raises:
        BadRecordError: a bad record (not skipping); nothing is committed.
        InvalidNameError: a load id that cannot name files (``validate_load_id``).
        InvalidFamilyError, InvalidArgumentError: mapping or options that do not fit.
        CommitConflictError: the table changed so that the load cannot apply.
        UnsupportedFilesystemError: the filesystem cannot do exclusive create.
    """
    started = time.perf_counter()
    settings = resolve_settings(settings)
    ensure_exclusive_create(table.fs, table.root)
    assert settings.load_id is not None  # resolved
    base = table.log.read(table.log.latest_version())
    if settings.load_id in base.load_ids:
        applied = LoadReport(
            table=base.name, load_id=settings.load_id, version=None, seq=None, already_applied=True
        )
        return applied, base
    plan, inputs = plan_load(
        base,
        table_url=table.fs.unstrip_protocol(table.path),
        storage_options=table.storage_options,
        source=source,
        settings=settings,
    )
    outputs, written, merged_runs, merge_dropped = execute_load(table, plan, inputs, settings)
    tally = LoadTally.of(plan, outputs, merged_runs=merged_runs, merge_dropped=merge_dropped)
    rfs, rdir = report_location(table.fs, table.path, settings.report_dir, table.storage_options)
    bad_path = write_bad_records(rfs, rdir, settings.load_id, tally.bad) if tally.bad else None
    summary = {"rows": tally.rows, "bad-records": len(tally.bad), "mode": plan.mode}
    done = commit_written(table, base, written, settings=settings, summary=summary)
    report = _table_report(
        base.name,
        settings,
        tally,
        done,
        bad_records_path=bad_path,
        seconds=time.perf_counter() - started,
    )
    return write_load_files(rfs, rdir, report, report_file=True), done.metadata


def load_cells(
    table: LoadableTable,
    cells: Any,
    *,
    load_id: str | None = None,
    now_ms: int,
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
    keys: KeyKind | None = None,
    assign_seq_id: bool = True,
) -> tuple[LoadReport, TableMetadata]:
    """Write cells and commit them at once (the body of ``Table.load_cells``).

    The cells are validated (:func:`~cellstore.loader.direct.normalize_cells`), salted on
    a salted table, routed to the newest version's regions, sorted and written one file
    per region and family, and committed with :func:`~cellstore.loader.execute.commit_load`
    (re-routed if regions change meanwhile).

    Returns:
        The report (``mode="cells"``) and the table metadata after the write.

    Raises:
        BadCellError: naming the first bad record and field; nothing is written.
        InvalidNameError: a load id that cannot name files.
        CommitConflictError: a concurrent change made the write impossible.
    """
    started = time.perf_counter()
    load_id = validate_load_id(load_id or new_load_id())
    base = table.log.read(table.log.latest_version())  # write where the newest regions are

    def report(**fields: Any) -> LoadReport:
        return LoadReport(
            table=str(table.name),
            load_id=load_id,
            mode="cells",
            seconds=time.perf_counter() - started,
            **{"version": None, "seq": None, **fields},
        )

    if load_id in base.load_ids:
        return report(already_applied=True), base
    ensure_exclusive_create(table.fs, table.root)
    normalized = normalize_cells(cells, metadata=base, now=now_ms)
    normalized = salt_rows(normalized, base.salt_buckets, keys=keys, row_key=base.row_key)
    if normalized.num_rows == 0:
        return report(), base
    written, dropped = write_cells(
        table.fs,
        table.path,
        base,
        normalized,
        load_id=load_id,
        seq=base.next_seq,
        row_group_cells=row_group_cells,
        layouts=load_layouts(base),
    )
    settings = LoadSettings(
        load_id=load_id, row_group_cells=row_group_cells, assign_seq_id=assign_seq_id
    )
    done = commit_written(table, base, written, settings=settings, summary={})
    if done.already_applied:
        return report(already_applied=True), done.metadata
    records = normalized.num_rows
    return report(
        version=done.version,
        seq=done.seq,
        inputs=1,
        records=records,
        rows=records,
        cells=sum(w.info.cells for w in done.files),
        files=len(done.files),
        bytes=sum(w.info.size for w in done.files),
        files_per_region=dict(Counter(w.region for w in done.files)),
        duplicates_dropped=dropped,
        rerouted_files=done.rerouted,
    ), done.metadata


# ---------------------------------------------------------------------------- helpers
def record_codecs(mapping: LoadMapping) -> Callable[[Staged], dict[str, Any]]:
    """``Commit.update`` recording the mapping's codecs in the table properties."""

    def update(staged: Staged) -> dict[str, Any]:
        meta = staged.meta
        props, _ = properties_after_load(meta.properties, mapping, stored_spec=meta.row_key)
        return {"properties": props} if props != dict(meta.properties) else {}

    return update


def cleanup_load(fs: fsspec.AbstractFileSystem, table_path: str, plan: LoadPlan) -> None:
    """Best effort: delete files a failed load wrote (they are unreferenced anyway)."""
    prefix = f"{plan.load_id}-{plan.nonce}-"
    for region in plan.target.regions:
        for fam in plan.target.families:
            d = join(table_path, store_dir_relpath(region.id, fam.name))
            with contextlib.suppress(OSError, ValueError):
                if not fs.exists(d):
                    continue
                for p in fs.ls(d, detail=False):
                    if str(p).rsplit("/", 1)[-1].startswith(prefix):
                        fs.rm(p)


def report_location(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    report_dir: str | None,
    storage_options: Mapping[str, Any],
) -> tuple[fsspec.AbstractFileSystem, str]:
    """Where a load's report and bad records go: ``report_dir``, else ``<table>/_loads``.

    ``storage_options`` (the table's) apply to a ``report_dir`` on the table's kind of
    filesystem.
    """
    if report_dir is None:
        return fs, loads_dir(table_path)
    rfs, rpath = fsspec.core.url_to_fs(report_dir)
    if type(rfs) is type(fs):
        rfs, rpath = fsspec.core.url_to_fs(report_dir, **dict(storage_options))
    if "file" in (rfs.protocol if isinstance(rfs.protocol, tuple) else (rfs.protocol,)):
        rpath = os.path.abspath(rpath)
    return rfs, str(rpath).rstrip("/")


def key_warnings(plan: LoadPlan, outputs: Sequence[TaskOutput]) -> tuple[KeyFinding, ...]:
    """The key-design warnings on the load's sampled keys (regions as planned)."""
    samples = [o.keys for o in outputs if o.keys is not None and len(o.keys)]
    if not samples:
        return ()
    advice = analyze_keys(
        samples,
        input_order=True,
        regions=plan.target.regions,
        salt_buckets=plan.bound.salt_buckets,
        table=plan.target.name,
        source="load",
    )
    return advice.warnings

"""Compaction and TTL purge (hbase-semantics R13, R8.7).

:func:`compact` merges the store files of each selected store (region x family) into new
ones. A **major** compaction takes every file of the store and drops delete markers, masked
and expired cells and versions past the family's VERSIONS (R13.4, R13.5); a **minor**
compaction takes a strict subset chosen like HBase's ratio-based policy and keeps markers
(R13.2, R13.7); a minor selection that happens to take every file drops deletes, as HBase
does (R13.3). Files made only of expired cells are dropped without reading them when
MIN_VERSIONS is 0 (R8.7). ``files=[...]`` compacts exactly the named files, per store
(HBase's ``CompactionTool``); ``policy=`` selects minor compactions with HBase's exploring
policy (:mod:`cellstore.jobs.selection`, as ``maintain`` does).

Plan, then execute: :func:`plan_compaction` returns frozen, picklable
:class:`CompactionTask` objects (one per store, cut into row ranges that fit the memory
budget); :func:`run_compaction_task` reads, merges and resolves one of them through the
reader's chunked pipeline (``ReadSpec(compaction=...)``) and writes rolled store files;
one commit replaces the inputs of every store whose inputs are still live (a store whose
files a concurrent job replaced is skipped and reported; a concurrent load's new files are
never inputs, so they are never lost).

Sequence numbers: the output of a store takes the highest sequence number of its inputs,
and a minor selection is always a contiguous run of the store's files in sequence order, so
equal-key ties with files outside the compaction resolve exactly as before (R3.2).

:func:`cellstore.jobs.purge.purge_ttl` rewrites only the files that hold expired cells.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, TypedDict, Unpack

import fsspec
import pyarrow as pa

from cellstore.commit import Commit, FileChange, Staged, commit, entry_key, file_entry
from cellstore.commit import now_ms as clock
from cellstore.core.cells import LATEST_TIMESTAMP
from cellstore.core.family import Family
from cellstore.core.metadata import FileEntry, TableMetadata
from cellstore.core.names import validate_load_id
from cellstore.core.results import JsonForm
from cellstore.core.semantics import CompactionSpec, ReadSpec
from cellstore.errors import InvalidArgumentError
from cellstore.handle import TableHandle
from cellstore.jobs.common import new_job_id, with_overrides
from cellstore.jobs.selection import (
    DEFAULT_MAX_FILES,
    DEFAULT_MIN_FILES,
    DEFAULT_RATIO,
    SelectionPolicy,
    check_order,
    select_exploring,
    select_minor,
    selected_stores,
    writes,
)
from cellstore.jobs.streaming import MAX_CHUNK_CELLS, chunk_cells, first_rows, released
from cellstore.loader.direct import WrittenFile
from cellstore.loader.memory import release_memory
from cellstore.loader.plan import DEFAULT_MAX_FILE_BYTES
from cellstore.reader.execute import read_task_chunks
from cellstore.reader.plan import DEFAULT_TASK_MEMORY, FamilyRead, ScanTask, split_tasks
from cellstore.storefiles import DEFAULT_ROW_GROUP_CELLS, StoreFileReader
from cellstore.storefiles.columnenc import TRIAL_RECORDS
from cellstore.storefiles.columns import (
    NO_LAYOUTS,
    Layouts,
    plan_layouts,
    recorded_codecs,
)
from cellstore.storefiles.layout import entry_path
from cellstore.storefiles.rolling import ParquetFormat, write_rolled_chunks

__all__ = [
    "CompactionKwargs",
    "CompactionOptions",
    "CompactionReport",
    "CompactionTask",
    "StoreCompaction",
    "compact",
    "plan_compaction",
    "run_compaction_task",
]

#: Table property recording the time of the last major compaction of the whole table.
LAST_MAJOR_PROPERTY: Final = "compaction.last-major-ms"


def _names(value: Iterable[str] | None) -> tuple[str, ...] | None:
    """Names as a tuple (one str is one name); None stays None."""
    if value is None:
        return None
    return (value,) if isinstance(value, str) else tuple(value)


@dataclass(frozen=True, kw_only=True)
class CompactionOptions:
    """What a compaction takes and writes (:func:`compact` documents each field).

    ``compact(table, major=True)`` and ``compact(table, CompactionOptions(major=True))``
    are the same call; keyword overrides replace fields of a given options object.
    ``regions``, ``families`` and ``files`` are kept as tuples (one string is one name).
    """

    major: bool = False
    regions: Iterable[str] | None = None
    families: Iterable[str] | None = None
    files: Iterable[str] | None = None
    now_ms: int | None = None
    min_files: int = DEFAULT_MIN_FILES
    max_files: int = DEFAULT_MAX_FILES
    ratio: float = DEFAULT_RATIO
    policy: SelectionPolicy | None = None
    off_peak: bool = False
    skip_compacted: bool = False
    time_to_purge_deletes_ms: int = 0
    memory_budget: int = DEFAULT_TASK_MEMORY
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS

    def __post_init__(self) -> None:
        for name in ("regions", "families", "files"):
            object.__setattr__(self, name, _names(getattr(self, name)))


class CompactionKwargs(TypedDict, total=False):
    """:class:`CompactionOptions` fields as keyword overrides (same names and types)."""

    major: bool
    regions: Iterable[str] | None
    families: Iterable[str] | None
    files: Iterable[str] | None
    now_ms: int | None
    min_files: int
    max_files: int
    ratio: float
    policy: SelectionPolicy | None
    off_peak: bool
    skip_compacted: bool
    time_to_purge_deletes_ms: int
    memory_budget: int
    max_file_bytes: int
    row_group_cells: int


@dataclass(frozen=True)
class CompactionTask:
    """One row range of one store to compact. Frozen and picklable.

    Attributes:
        scan: The reader task that yields the compacted cells (its single family read
            carries a ``ReadSpec`` with the :class:`CompactionSpec`).
        family: The family's settings.
        out_seq: Sequence number of the output (highest of the inputs).
        job_id: Id of the compaction run (part of output names).
        piece: Index of this row range within its store.
        max_file_bytes: Output files roll at about this many uncompressed bytes.
        row_group_cells: Cells per Parquet row group of the output.
        layouts: Whether the output is written in the column layout (a major compaction
            of a family whose layout is ``auto`` or ``columns``; default cells).
        chunk_cells: Cells per chunk of the task's streamed read (:func:`chunk_cells` of
            the memory budget and the task's input files).
    """

    scan: ScanTask
    family: Family
    out_seq: int
    job_id: str
    piece: int
    max_file_bytes: int
    row_group_cells: int
    layouts: Layouts = NO_LAYOUTS
    chunk_cells: int = MAX_CHUNK_CELLS


@dataclass(frozen=True)
class StoreCompaction:
    """What happened (or would happen) to one store.

    Attributes:
        region: Region id.
        family: Family name.
        inputs: Input entries (files merged).
        expired: Entries dropped whole because every cell expired (R8.7).
        drop_deletes: Whether markers were dropped (major, or all files: R13.3).
        tasks: The row-range tasks of the store.
        selection: How the inputs were chosen, for reports: ``policy`` (``files`` for a
            caller's list, ``exploring`` for HBase's policy), ``files`` (input paths) and
            the policy's findings (``stuck``, ``off-peak``, ``skipped-large``); None for
            major compactions and the legacy ratio selection.
    """

    region: str
    family: str
    inputs: tuple[FileEntry, ...]
    expired: tuple[FileEntry, ...]
    drop_deletes: bool
    tasks: tuple[CompactionTask, ...] = ()
    selection: dict[str, Any] | None = None

    def summary(self) -> dict[str, Any]:
        """JSON-able description of the plan."""
        return {
            "region": self.region,
            "family": self.family,
            "input-files": len(self.inputs),
            "input-cells": sum(e.cells for e in self.inputs),
            "input-bytes": sum(e.size for e in self.inputs),
            "input-markers": sum(e.delete_markers for e in self.inputs),
            "expired-files": len(self.expired),
            "drop-deletes": self.drop_deletes,
            **({"selection": dict(self.selection)} if self.selection is not None else {}),
        }


@dataclass(frozen=True)
class CompactionReport(JsonForm):
    """Result of :func:`compact` or :func:`purge_ttl`.

    Attributes:
        job_id: The run's id.
        major: Whether a major compaction was requested.
        version: Table version committed, or None when nothing was committed.
        stores: Per store: the plan summary plus ``output-files``/``output-cells``/
            ``output-bytes`` once executed.
        skipped: Stores not committed because a concurrent job replaced their inputs.
        dry_run: Whether only the plan was computed.
        seconds: Wall time.
    """

    json_keys = "job_id major version dry_run stores skipped input_cells output_cells seconds"

    job_id: str
    major: bool
    version: int | None
    stores: tuple[dict[str, Any], ...]
    skipped: tuple[dict[str, Any], ...] = ()
    dry_run: bool = False
    seconds: float = 0.0

    @property
    def input_cells(self) -> int:
        """Cells read."""
        return sum(int(s["input-cells"]) for s in self.stores)

    @property
    def output_cells(self) -> int:
        """Cells written."""
        return sum(int(s.get("output-cells", 0)) for s in self.stores)


def _expired_files(files: Sequence[FileEntry], family: Family, now: int) -> list[FileEntry]:
    """Files made only of expired cells, droppable unread when MIN_VERSIONS = 0 (R8.7).

    A column file and its companion cell file are one write (:func:`writes`): dropped
    together when every cell of both expired, as the cell layout's one file would be.
    """
    ttl = family.ttl_ms
    if ttl is None or family.min_versions > 0:
        return []
    oldest = now - ttl
    return [f for group in writes(files) if max(g.max_ts for g in group) < oldest for f in group]


def _already_compact(files: Sequence[FileEntry], family: Family, now: int) -> bool:
    """Whether a major compaction would leave the store as it is.

    That is one file, written by a compaction (so VERSIONS was enforced), without markers
    and without expired cells.
    """
    if len(files) != 1:
        return False
    (f,) = files
    ttl = family.ttl_ms
    fresh = ttl is None or f.min_ts >= now - ttl
    compacted = f.load_id.startswith(("compact-", "major-compact-"))
    return compacted and f.delete_markers == 0 and fresh


def _earliest_put_ts(
    fs: fsspec.AbstractFileSystem, table_path: str, files: Sequence[FileEntry]
) -> int:
    """Smallest Put timestamp over ``files`` (footer EARLIEST_PUT_TS), LATEST if none."""
    earliest = LATEST_TIMESTAMP
    for f in files:
        if f.delete_markers == 0:  # every cell is a Put
            earliest = min(earliest, f.min_ts)
            continue
        with StoreFileReader(fs, entry_path(table_path, f.path), entry=f) as reader:
            put_ts = reader.info.earliest_put_ts
        if put_ts is not None:
            earliest = min(earliest, put_ts)
    return earliest


# ------------------------------------------------------------------------------- planning
def plan_compaction(
    table: TableHandle,
    options: CompactionOptions | None = None,
    /,
    *,
    job_id: str | None = None,
    **overrides: Unpack[CompactionKwargs],
) -> list[StoreCompaction]:
    """The stores to compact and their tasks (see :func:`compact` for the options).

    A store is planned when a major compaction finds at least one file (a single file is
    rewritten too: its markers and dead cells go), or a minor selection finds enough files,
    or some file is entirely expired, or ``files`` names some of its files.
    """
    o = with_overrides(CompactionOptions, options, overrides)
    meta = table.metadata
    now = o.now_ms if o.now_ms is not None else clock()
    job_id = validate_load_id(job_id or new_job_id("compact"))
    want_regions = _check_names("region", o.regions, {r.id for r in meta.regions})
    want_families = _check_names("family", o.families, set(meta.family_names))
    selected: dict[tuple[str, str], list[FileEntry]] | None = None
    if o.files is not None:
        if o.major:
            raise InvalidArgumentError(
                "files and major exclude each other: a major compaction takes every file "
                "of a store (use regions/families to pick stores)"
            )
        if o.regions is not None or o.families is not None:
            raise InvalidArgumentError(
                "files and regions/families exclude each other: the files name their stores"
            )
        selected = selected_stores(meta, o.files)
    plans: list[StoreCompaction] = []
    for region in meta.regions:
        if want_regions is not None and region.id not in want_regions:
            continue
        for fam in meta.families:
            if want_families is not None and fam.name not in want_families:
                continue
            plan = _plan_store(table, region.id, fam, o, selected, now=now, job_id=job_id)
            if plan is not None:
                plans.append(plan)
    return plans


def _store_inputs(
    store_files: list[FileEntry],
    fam: Family,
    o: CompactionOptions,
    chosen: list[FileEntry] | None,
    now: int,
) -> tuple[list[FileEntry], list[FileEntry], list[FileEntry], dict[str, Any] | None]:
    """A store's ``(inputs, expired, live files, selection)`` under the options.

    ``chosen`` is the store's files named by ``files=`` (None: select by policy).
    """
    if chosen is not None:
        check_order(store_files, chosen)
        return chosen, [], store_files, {"policy": "files", "files": [f.path for f in chosen]}
    expired = _expired_files(store_files, fam, now)
    gone = {entry_key(e) for e in expired}
    live = [f for f in store_files if entry_key(f) not in gone]
    selection: dict[str, Any] | None = None
    if o.major:
        skip = o.skip_compacted and _already_compact(live, fam, now)
        inputs = [] if skip else live
    elif o.policy is not None:
        inputs, selection = select_exploring(live, policy=o.policy, off_peak=o.off_peak)
    else:
        inputs = select_minor(live, min_files=o.min_files, max_files=o.max_files, ratio=o.ratio)
    return inputs, expired, live, selection


def _plan_store(
    table: TableHandle,
    region: str,
    fam: Family,
    o: CompactionOptions,
    selected: dict[tuple[str, str], list[FileEntry]] | None,
    *,
    now: int,
    job_id: str,
) -> StoreCompaction | None:
    """The compaction of one store (region x family), or None when it needs none."""
    meta = table.metadata
    store_files = list(meta.files_of(region, fam.name))
    if not store_files:
        return None
    chosen = None if selected is None else selected.get((region, fam.name), [])
    if chosen is not None and not chosen:
        return None
    inputs, expired, live, selection = _store_inputs(store_files, fam, o, chosen, now)
    if not inputs and not expired:
        return None
    drop_deletes = bool(inputs) and len(inputs) == len(live)  # R13.3
    tasks: tuple[CompactionTask, ...] = ()
    if inputs:
        tasks = _store_tasks(
            table,
            meta,
            region,
            fam,
            inputs,
            spec=CompactionSpec(
                now_ms=now,
                drop_deletes=drop_deletes,
                earliest_put_ts=_earliest_put_ts(table.fs, table.path, inputs),
                time_to_purge_deletes_ms=o.time_to_purge_deletes_ms,
            ),
            job_id=job_id,
            memory_budget=o.memory_budget,
            max_file_bytes=o.max_file_bytes,
            row_group_cells=o.row_group_cells,
            layouts=_major_layouts(meta, region, fam) if o.major else NO_LAYOUTS,
        )
    return StoreCompaction(
        region=region,
        family=fam.name,
        inputs=tuple(inputs),
        expired=tuple(expired),
        drop_deletes=drop_deletes,
        tasks=tasks,
        selection=selection,
    )


def _check_names(kind: str, given: Iterable[str] | None, known: set[str]) -> set[str] | None:
    if given is None:
        return None
    wanted = {given} if isinstance(given, str) else set(given)
    unknown = sorted(wanted - known)
    if unknown:
        raise InvalidArgumentError(f"unknown {kind}(s): {', '.join(unknown)}")
    return wanted


def _store_tasks(
    table: TableHandle,
    meta: TableMetadata,
    region_id: str,
    family: Family,
    inputs: Sequence[FileEntry],
    *,
    spec: CompactionSpec,
    job_id: str,
    memory_budget: int,
    max_file_bytes: int,
    row_group_cells: int,
    layouts: Layouts = NO_LAYOUTS,
) -> tuple[CompactionTask, ...]:
    region = meta.region(region_id)
    read = FamilyRead(
        family,
        tuple((f.path, f.seq) for f in inputs),
        ReadSpec(now_ms=spec.now_ms, compaction=spec),
        tuple(inputs),
    )
    whole = ScanTask(
        table.path,
        region_id,
        region.start,
        region.end,
        (read,),
        table=meta.name,
        version=meta.version,
    )
    pieces = split_tasks(table.fs, [whole], budget=memory_budget, metadata=meta)
    out_seq = max(f.seq for f in inputs)
    if len(pieces) > 1 and layouts.plans:
        # A store cut into pieces by the budget is large: every piece is written as
        # columns. ``auto``'s fewest rows (AUTO_MIN_ROWS) is for a whole store; a short
        # piece written as cells would be a delta to every later wide read.
        layouts = replace(
            layouts, plans=tuple((n, replace(p, min_rows=1)) for n, p in layouts.plans)
        )
    return tuple(
        CompactionTask(
            scan=piece,
            family=family,
            out_seq=out_seq,
            job_id=job_id,
            piece=i,
            max_file_bytes=max_file_bytes,
            row_group_cells=row_group_cells,
            layouts=layouts,
            chunk_cells=chunk_cells(memory_budget, piece.families[0].entries),
        )
        for i, piece in enumerate(pieces)
    )


def _major_layouts(meta: TableMetadata, region: str, family: Family) -> Layouts:
    """The column layout of a major compaction's output (docs/format.md section 14).

    A family whose layout is ``auto`` or ``columns`` is written as column files (the
    columns its recorded codecs declare, or the qualifiers the output holds when few
    enough); ``cells`` and format-version-1 tables stay cells.
    """
    if meta.format_version < 2:
        return NO_LAYOUTS
    codecs = recorded_codecs(meta.properties)
    return plan_layouts([family], [region], codecs=codecs, major=True, key=meta.row_key)


# ------------------------------------------------------------------------------ execution
def run_compaction_task(fs: fsspec.AbstractFileSystem, task: CompactionTask) -> list[WrittenFile]:
    """Read, merge and resolve one task's row range and write the result as store files.

    The range is read in row-aligned chunks of about ``task.chunk_cells`` cells
    (:func:`read_task_chunks`, the next chunk read while one is written), each written as
    it comes (:func:`write_rolled_chunks`: the files ``write_rolled`` writes of the
    whole output). So a task holds two chunks, not its whole row range: its memory is
    about the budget plus a fixed overhead, whatever the size of its piece (issue 28).

    Returns:
        The written files (none when every cell was dropped). Nothing is committed.
    """
    chunks = read_task_chunks(fs, task.scan, chunk_cells=task.chunk_cells, ahead=1)
    return write_task_chunks(fs, task, chunks)


def write_task_chunks(
    fs: fsspec.AbstractFileSystem, task: CompactionTask, chunks: Iterator[pa.Table]
) -> list[WrittenFile]:
    """Write a compaction or purge task's output cells as they come, chunk by chunk.

    The chunks are whole rows in cell order; each is written as it comes
    (:func:`write_rolled_chunks`) and its memory released after it, so the task holds a
    chunk or two. The files are those ``write_rolled`` writes of the whole.
    """
    chunks = released(chunks)
    plan = task.layouts.plan_for(task.scan.region, task.family.name)
    if plan is not None:  # the first write decides auto's fewest rows and the encodings
        chunks = first_rows(chunks, max(plan.min_rows, TRIAL_RECORDS))
    written = write_rolled_chunks(fs, task.scan.table_path, chunks, **_output_args(task))
    release_memory()  # the allocators keep the task's freed pages otherwise
    return written


def _output_args(task: CompactionTask) -> dict[str, Any]:
    """Where and how a task's output files are written (rolled, named by job and piece)."""
    return {
        "region": task.scan.region,
        "family": task.family,
        "stem": f"{task.job_id}-{task.piece:03d}",
        "max_file_bytes": task.max_file_bytes,
        "format": ParquetFormat(
            seq=task.out_seq,
            load_id=task.job_id,
            row_group_cells=task.row_group_cells,
            layouts=task.layouts,
        ),
    }


def _execute(
    fs: fsspec.AbstractFileSystem, tasks: Sequence[CompactionTask], client: Any, progress: Any
) -> list[list[WrittenFile]]:
    """Run tasks locally (in order) or on a ``distributed`` client; results in task order."""
    if client is not None and tasks:
        futures = client.map(run_compaction_task, [fs] * len(tasks), tasks, pure=False)
        results: list[list[WrittenFile]] = []
        for i, fut in enumerate(futures):
            results.append(fut.result())
            if progress is not None:
                progress(i + 1, len(tasks))
        return results
    out: list[list[WrittenFile]] = []
    for i, task in enumerate(tasks):
        out.append(run_compaction_task(fs, task))
        if progress is not None:
            progress(i + 1, len(tasks))
    return out


@dataclass
class _StoreResult:
    """A store's plan and the files each of its tasks wrote."""

    plan: StoreCompaction
    per_task: list[list[WrittenFile]] = field(default_factory=list)

    @property
    def written(self) -> list[WrittenFile]:
        return [w for ws in self.per_task for w in ws]

    def added(self) -> list[FileEntry]:
        out: list[FileEntry] = []
        for task, written in zip(self.plan.tasks, self.per_task, strict=True):
            out.extend(file_entry(w, seq=task.out_seq, load_id=task.job_id) for w in written)
        return out

    def removed(self) -> list[FileEntry]:
        return [*self.plan.inputs, *self.plan.expired]

    def report(self) -> dict[str, Any]:
        written = self.written
        return {
            **self.plan.summary(),
            "output-files": len(written),
            "output-cells": sum(w.info.cells for w in written),
            "output-bytes": sum(w.info.size for w in written),
            "output-markers": sum(w.info.delete_markers for w in written),
        }


def _commit(
    table: TableHandle,
    results: Sequence[_StoreResult],
    *,
    operation: str,
    summary: dict[str, Any],
    properties: dict[str, str] | None = None,
) -> tuple[int | None, list[_StoreResult]]:
    """One commit for every store whose inputs are still live; returns (version, skipped)."""

    def update(staged: Staged) -> dict[str, Any]:
        fields: dict[str, Any] = {"summary": {"stores": len(results) - len(staged.skipped)}}
        if properties and not staged.skipped:
            fields["properties"] = {**staged.meta.properties, **properties}
        return fields

    result = commit(
        table.log,
        Commit(
            operation=operation,
            changes=[FileChange(remove=res.removed(), add=res.added()) for res in results],
            stale="skip",
            summary=summary,
            update=update,
            timestamp_ms=clock(),
        ),
    )
    skipped = [results[i] for i in result.skipped]
    return (result.metadata.version if result.committed else None), skipped


def compact(
    table: TableHandle,
    options: CompactionOptions | None = None,
    /,
    *,
    dry_run: bool = False,
    client: Any = None,
    progress: Any = None,
    **overrides: Unpack[CompactionKwargs],
) -> CompactionReport:
    """Compact the table's stores (hbase-semantics R13).

    Args:
        table: The table (its latest version is compacted; a pinned handle is refused).
        options: A :class:`CompactionOptions`; keyword overrides replace its fields
            (every field below from ``major`` to ``off_peak`` but ``dry_run``, ``client``
            and ``progress``).
        major: Major compaction (every file of each store, markers dropped). Otherwise a
            minor compaction with HBase's ratio-based selection.
        regions: Only these region ids (default: all).
        families: Only these families (default: all).
        now_ms: "Now" for TTL expiry (default: the clock).
        min_files: Fewest files a minor compaction takes per store.
        max_files: Most files a minor compaction takes per store.
        ratio: Minor selection ratio (see :func:`select_minor`).
        time_to_purge_deletes_ms: Keep markers younger than this in dropping compactions
            (``hbase.hstore.time.to.purge.deletes``, R13.6).
        memory_budget: Cells of one task stay within about this many bytes: a store larger
            than this is compacted in row ranges, each written to its own files.
        max_file_bytes: Output files roll at about this many uncompressed bytes.
        row_group_cells: Cells per Parquet row group of the output.
        dry_run: Only plan; commit nothing.
        client: A ``distributed.Client`` to run tasks on (default: this process).
        progress: Called with ``(done, total)`` tasks.
        skip_compacted: Leave out of a major compaction every store that is one file
            written by a compaction, without markers or expired cells (HBase does so for
            periodic major compactions; ``maintain`` sets it). By default a requested major
            compaction rewrites such a store too, as HBase's user-requested one does, so
            changed family settings (e.g. fewer VERSIONS) take effect.
        files: Compact exactly these store files, named by their ``path`` as
            ``Table.files`` lists them (HBase's ``CompactionTool`` over chosen files). Files
            of several stores (region x family) are compacted per store, all in one
            commit. Within a store this is a minor compaction (markers kept, R13.2) unless
            the files are all of the store's files (markers dropped, R13.3). The output
            takes the newest input's sequence number, so a file left out that shares rows
            with the selection must be newer than every chosen file or older than those it
            shares rows with (else :class:`InvalidArgumentError`, R3.2). Excludes
            ``major``, ``regions`` and ``families``.
        policy: Choose minor selections with HBase's exploring policy and these settings
            (:func:`select_exploring`) instead of the ratio walk of :func:`select_minor`
            (``min_files``/``max_files``/``ratio`` are then ignored). ``maintain`` sets it.
        off_peak: With ``policy``: use its off-peak ratio and size limit.

    Returns:
        A :class:`CompactionReport`. Compacting again gives the same cells.

    Raises:
        InvalidArgumentError: unknown region, family or file (with the closest live path),
            ``files`` together with ``major``/``regions``/``families``, a selection that
            would reorder equal keys, or a pinned table handle.
    """
    started = time.perf_counter()
    o = with_overrides(CompactionOptions, options, overrides)
    table.check_writable("compact")
    table.refresh()
    job_id = new_job_id("major-compact" if o.major else "compact")
    now = o.now_ms if o.now_ms is not None else clock()
    o = replace(o, now_ms=now)
    plans = plan_compaction(table, o, job_id=job_id)
    if dry_run or not plans:
        return CompactionReport(
            job_id=job_id,
            major=o.major,
            version=None,
            stores=tuple(p.summary() for p in plans),
            dry_run=dry_run,
            seconds=time.perf_counter() - started,
        )
    tasks = [t for p in plans for t in p.tasks]
    outputs = _execute(table.fs, tasks, client, progress)
    results = []
    it = iter(outputs)
    for p in plans:
        results.append(_StoreResult(p, [next(it) for _ in p.tasks]))
    whole_table = o.major and o.regions is None and o.families is None
    version, skipped = _commit(
        table,
        results,
        operation="compact",
        summary={"job-id": job_id, "major": o.major},
        properties={LAST_MAJOR_PROPERTY: str(now)} if whole_table else None,
    )
    table.refresh()
    skipped_ids = {id(s) for s in skipped}
    stores = [res.report() for res in results if id(res) not in skipped_ids]
    return CompactionReport(
        job_id=job_id,
        major=o.major,
        version=version,
        stores=tuple(stores),
        skipped=tuple(
            {**s.plan.summary(), "reason": "inputs replaced by a concurrent job"} for s in skipped
        ),
        seconds=time.perf_counter() - started,
    )

"""Importing an HBase snapshot or table into a cellstore table (``docs/hbase.md``, "Import").

:func:`import_snapshot` and :func:`import_table` create a cellstore table with the HBase
table's regions (start and end keys), families and family settings, and convert every
HFile of every store into Parquet store files: every cell as stored, delete markers
included, so every scan (raw or not, versions, time ranges, filters, reversed) returns
the same cells on the source and on the new table.

How HBase's order is kept:

* **Equal keys across files** (R3.1, R3.2): each (region, family) store is read as
  :class:`~cellstore.hbasefiles.store.HFileStore` reads it for a scan: one run per HFile,
  oldest first in HBase's file ranking, with every equal-key loser that the per-cell
  sequence ids (memstore timestamps, ``_SeqId_N_`` of bulk loads) would hide already
  dropped. The ``k``-th run becomes a store file with sequence rank ``k`` (the commit's
  ``next_seq + k``), so the newer file still wins every remaining tie.
* **Equal keys inside one HFile**: our store files hold unique keys (docs/format.md,
  section 8), so of equal keys inside one run only the first in file order is kept, the
  one HBase returns (R3.3: cells of equal key sort by descending sequence id inside a
  file, and later duplicates are never returned, not even by a raw scan). The dropped
  count is reported as ``duplicates_dropped``.

Execution is plan-then-execute (:mod:`cellstore.hbase.import_tasks`): one frozen,
picklable :class:`ImportTask` per (region, family) (a large store is cut into row ranges
at HFile block boundaries, as scans cut it), run on local threads or a ``distributed``
client. The table is created empty first
(it names the directory the files go to); no cell is visible before the one
:func:`~cellstore.commit.commit` that adds every file with the import's id as load id. A
retry with the same id finds it recorded and reports ``applied_before``. A failed run
deletes the files its tasks wrote and drops the (still empty) table it created.

How an import runs (id, client or threads, memory, file sizes, progress) is one frozen
:class:`ImportOptions`; each of its fields can also be given by name (:class:`ImportKwargs`).

This module sits below the warehouse layer, so it takes the warehouse as the
:class:`~cellstore.handle.Catalog` it is (:data:`ImportWarehouse`) and its tables as
handles (:data:`ImportedTable`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypedDict, Unpack

import fsspec

from cellstore.commit import Commit, CommitResult, FileChange, commit
from cellstore.core.metadata import TableMetadata
from cellstore.core.names import validate_load_id
from cellstore.core.results import JsonForm
from cellstore.errors import (
    InvalidArgumentError,
    TableExistsError,
    UnsupportedFormatError,
)
from cellstore.frames import run_tasks
from cellstore.fs import ensure_exclusive_create
from cellstore.handle import Catalog, TableHandle
from cellstore.hbase.import_tasks import (
    DEFAULT_IMPORT_MAX_FILE_BYTES,
    ImportTask,
    ImportTaskResult,
    ProgressFn,
    delete_written,
    run_import_task,
)
from cellstore.hbase.tables import HBaseTable, open_snapshot, open_table
from cellstore.hbasefiles.store import HFileStore
from cellstore.reader.plan import DEFAULT_TASK_MEMORY
from cellstore.storefiles.writer import DEFAULT_ROW_GROUP_CELLS, WrittenFile

__all__ = [
    "DEFAULT_IMPORT_MAX_FILE_BYTES",
    "IMPORT_OPERATION",
    "ImportKwargs",
    "ImportOptions",
    "ImportReport",
    "ImportTask",
    "ImportTaskResult",
    "ImportWarehouse",
    "ImportedTable",
    "derive_import_id",
    "import_hbase_table",
    "import_snapshot",
    "import_table",
    "plan_import",
    "run_import_task",
]

#: The history operation of the import's commit.
IMPORT_OPERATION: Final = "hbase-import"
#: Table properties the import records (the id lets a retry recognise its own table).
PROP_ID: Final = "hbase.import.id"
PROP_SOURCE: Final = "hbase.import.source"
PROP_SNAPSHOT: Final = "hbase.import.snapshot"
PROP_TABLE: Final = "hbase.import.table"
_ATTR_PREFIX: Final = "hbase.attr."


# --------------------------------------------------------------------------- targets
#: What the import needs of a cellstore table: its handle (``cellstore.warehouse.Table`` is
#: one).
ImportedTable = TableHandle
#: What the import needs of a warehouse: a catalog (``cellstore.Warehouse`` is one).
ImportWarehouse = Catalog[TableHandle]


# --------------------------------------------------------------------------- plan
def plan_import(
    source: HBaseTable,
    *,
    regions: Sequence[str],
    table_path: str,
    import_id: str,
    stem: str,
    memory_budget: int = DEFAULT_TASK_MEMORY,
    max_file_bytes: int = DEFAULT_IMPORT_MAX_FILE_BYTES,
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
) -> list[ImportTask]:
    """The tasks of an import: one per (region, family) store with files, in key order.

    A store whose HFiles are large compared with ``memory_budget`` is cut into row
    ranges at HFile data-block boundaries (the cuts an :class:`HBaseScan` makes), so one
    task holds about ``memory_budget`` bytes of cells.

    Args:
        source: The HBase table or snapshot.
        regions: The target's region ids, one per source region, in key order.
        table_path: The target table's directory.
        import_id: The import's id.
        stem: File-name stem of this attempt.
        memory_budget: Bytes of decoded cells one task should hold.
        max_file_bytes: Output files roll at about this many uncompressed cell bytes.
        row_group_cells: Cells per Parquet row group.
    """
    ids = {r.id: rid for r, rid in zip(source.regions, regions, strict=True)}
    fams = {f.name: f for f in source.families}
    tasks: list[ImportTask] = []
    for scan_task in source.scan(raw=True, memory_budget=memory_budget).plan():
        for fam in scan_task.families:
            if not fam.files or not isinstance(fam.source, HFileStore):
                continue
            tasks.append(
                ImportTask(
                    number=len(tasks),
                    region=ids[scan_task.region],
                    hbase_region=scan_task.region,
                    family=fams[fam.family.name],
                    start=scan_task.start,
                    stop=scan_task.stop,
                    store=fam.source,
                    table_path=table_path,
                    stem=stem,
                    import_id=import_id,
                    max_file_bytes=max_file_bytes,
                    row_group_cells=row_group_cells,
                )
            )
    return tasks


# --------------------------------------------------------------------------- the job
@dataclass(frozen=True)
class ImportReport(JsonForm):
    """What an import did.

    Attributes:
        source: The HBase root directory, as given.
        snapshot: The snapshot imported (None for a table).
        hbase_table: The HBase table's name.
        table: The cellstore table.
        import_id: The import's id (the load id of its commit).
        created: Whether this run created the table.
        applied_before: The id was already committed: nothing was done again.
        version: The table version the import committed (None when applied before).
        regions: Regions of the table.
        families: Its families.
        tasks: Tasks run.
        hfiles: HBase store files listed by the source (References and links included).
        cells_read: Cells read from the HFiles, less the equal-key losers of R3.2.
        cells: Cells written.
        duplicates_dropped: Equal keys inside one HFile never returned (R3.3), not written.
        files: Store files written.
        bytes: Their total size.
        seconds: Wall-clock time.
    """

    source: str
    snapshot: str | None
    hbase_table: str
    table: str
    import_id: str
    created: bool
    applied_before: bool
    version: int | None
    regions: int
    families: tuple[str, ...]
    tasks: int
    hfiles: int
    cells_read: int
    cells: int
    duplicates_dropped: int
    files: int
    bytes: int
    seconds: float


def derive_import_id(
    root: str,
    *,
    snapshot: str | None = None,
    table: str | None = None,
    fs: fsspec.AbstractFileSystem | None = None,
    created_ms: int | None = None,
) -> str:
    """The default import id: ``hbase-import-`` + 20 hex digits of a hash of the source.

    The hash covers the filesystem protocol and root, whether a snapshot or a table is
    imported, its name, and a snapshot's creation time (a snapshot deleted and taken again
    under the same name is another import), so a retry of the same import gets the same id.
    """
    protocol = fs.protocol if fs is not None else "file"
    proto = protocol if isinstance(protocol, str) else protocol[0]
    kind, name = ("snapshot", snapshot) if snapshot is not None else ("table", table)
    text = "\x00".join([proto, root.rstrip("/"), kind, str(name), str(created_ms or "")])
    return "hbase-import-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def _check_source(source: HBaseTable) -> None:
    """Refuse what the import cannot convert faithfully (before anything is written)."""
    where = f"HBase table {source.name} in {source.layout.root}"
    for fam in source.layout.descriptor.families:
        if fam.is_mob:
            raise UnsupportedFormatError(
                f"{where}: family {fam.name} is a MOB family (IS_MOB=true); its cells are "
                "references to MOB files, which cellstore does not import"
            )
        if fam.is_encrypted:
            raise UnsupportedFormatError(
                f"{where}: family {fam.name} is encrypted; encrypted HFiles are not supported"
            )
        if fam.new_version_behavior:
            raise UnsupportedFormatError(
                f"{where}: family {fam.name} has NEW_VERSION_BEHAVIOR=true, which cellstore "
                "does not implement (R17.1)"
            )


def _properties(source: HBaseTable, root: str, import_id: str) -> dict[str, str]:
    snap = source.layout.snapshot
    props = {f"{_ATTR_PREFIX}{k}": str(v) for k, v in source.layout.descriptor.attributes.items()}
    props[PROP_ID] = import_id
    props[PROP_SOURCE] = root
    if snap is not None:
        props[PROP_SNAPSHOT] = snap.name
    props[PROP_TABLE] = source.name
    return props


def _own_table(warehouse: ImportWarehouse, name: str, import_id: str) -> ImportedTable:
    """The existing table ``name`` if an earlier attempt of this import created it."""
    table = warehouse.table(name)
    if table.metadata.properties.get(PROP_ID) == import_id:
        return table
    raise TableExistsError(
        f"table {name} already exists in {warehouse.url}; import into a new table name "
        f"(it was not created by import {import_id})"
    )


def _drop_unfinished(warehouse: ImportWarehouse, name: str, import_id: str) -> None:
    """Drop ``name`` (files too) if this import created it and it is still empty."""
    with contextlib.suppress(Exception):
        meta = warehouse.table(name).metadata
        if (
            meta.properties.get(PROP_ID) == import_id
            and import_id not in meta.load_ids
            and not meta.files
        ):
            warehouse.drop_table(name, purge=True)


@dataclass(frozen=True)
class ImportOptions:
    """How an import runs; every field has a default.

    Attributes:
        import_id: Idempotency key, recorded as the commit's load id (default: derived
            from the source, :func:`derive_import_id`): a retry with an id the table has
            committed does nothing and reports ``applied_before``.
        client: A ``distributed.Client`` to run the tasks on (default: local threads).
        workers: Threads for local runs (default: the CPU count).
        memory_budget: Bytes of decoded cells one task holds (large stores are cut).
        max_file_bytes: Output store files roll at about this many uncompressed bytes.
        row_group_cells: Cells per Parquet row group.
        progress: Called with ``(done, total)`` tasks.
    """

    import_id: str | None = None
    client: Any = None
    workers: int | None = None
    memory_budget: int = DEFAULT_TASK_MEMORY
    max_file_bytes: int = DEFAULT_IMPORT_MAX_FILE_BYTES
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS
    progress: ProgressFn | None = None


class ImportKwargs(TypedDict, total=False):
    """:class:`ImportOptions`' fields as keyword overrides (same names and types)."""

    import_id: str | None
    client: Any
    workers: int | None
    memory_budget: int
    max_file_bytes: int
    row_group_cells: int
    progress: ProgressFn | None


def _options(options: ImportOptions | None, overrides: ImportKwargs) -> ImportOptions:
    """``options`` (default: all defaults) with ``overrides`` applied."""
    base = options if options is not None else ImportOptions()
    return dataclasses.replace(base, **overrides) if overrides else base


def _import_id(source: HBaseTable, import_id: str | None) -> str:
    """The import's id: ``import_id``, or one derived from the source (validated)."""
    snap = source.layout.snapshot
    return validate_load_id(
        import_id
        or derive_import_id(
            source.layout.root,
            snapshot=None if snap is None else snap.name,
            table=source.name,
            fs=source.fs,
            created_ms=None if snap is None else snap.creation_time,
        )
    )


@dataclass(frozen=True)
class _Reporter:
    """Builds the :class:`ImportReport` of one import from what varies per outcome."""

    source: HBaseTable
    root: str
    job: str
    started: float

    def __call__(self, target: ImportedTable, **fields: Any) -> ImportReport:
        meta = target.metadata
        snap = self.source.layout.snapshot
        regions = self.source.layout.regions
        empty = ImportReport(
            source=self.root,
            snapshot=None if snap is None else snap.name,
            hbase_table=self.source.name,
            table=str(meta.name),
            import_id=self.job,
            created=False,
            applied_before=False,
            version=None,
            regions=len(meta.regions),
            families=tuple(meta.family_names),
            tasks=0,
            hfiles=sum(len(files) for r in regions for files in r.files.values()),
            cells_read=0,
            cells=0,
            duplicates_dropped=0,
            files=0,
            bytes=0,
            seconds=time.perf_counter() - self.started,
        )
        return dataclasses.replace(empty, **fields)


def _check_target(base: TableMetadata, source: HBaseTable, table: str, job: str) -> None:
    """Refuse a target whose regions differ from the source's, or that holds data."""
    if len(base.regions) != len(source.regions) or any(
        a.start != b.start or a.end != b.end
        for a, b in zip(base.regions, source.regions, strict=True)
    ):
        raise InvalidArgumentError(
            f"table {table}: its regions differ from those of HBase table {source.name}"
        )
    if base.files:
        raise TableExistsError(f"table {table} already holds data that import {job} did not commit")


def _commit_import(
    target: ImportedTable,
    base: TableMetadata,
    written: Sequence[tuple[WrittenFile, int]],
    summary: dict[str, Any],
) -> CommitResult:
    """One commit adding every written file, each HFile rank its own sequence number."""
    by_rank: dict[int, list[WrittenFile]] = {}
    for w, rank in written:
        by_rank.setdefault(rank, []).append(w)
    return commit(
        target.log,
        Commit(
            operation=IMPORT_OPERATION,
            changes=[FileChange(add=ws, seq_rank=k) for k, ws in sorted(by_rank.items())],
            load_id=summary["import-id"],
            new_seq=bool(written),
            base=base,
            summary=summary,
        ),
    )


def import_hbase_table(
    source: HBaseTable,
    warehouse: ImportWarehouse,
    table: str,
    options: ImportOptions | None = None,
    *,
    root: str | None = None,
    **overrides: Unpack[ImportKwargs],
) -> ImportReport:
    """Import an opened HBase table or snapshot into a new cellstore table.

    :func:`import_snapshot` and :func:`import_table` open the source and call this; see
    them for the arguments. ``root`` is the source root as the user gave it (recorded in
    the table's properties and the report; default: the opened layout's root).
    """
    started = time.perf_counter()
    opts = _options(options, overrides)
    _check_source(source)
    root_text = root if root is not None else source.layout.root
    job = _import_id(source, opts.import_id)
    if opts.max_file_bytes <= 0:
        raise InvalidArgumentError(f"max_file_bytes must be positive, not {opts.max_file_bytes}")
    if opts.memory_budget <= 0:
        raise InvalidArgumentError(f"memory_budget must be positive, not {opts.memory_budget}")
    report = _Reporter(source, root_text, job, started)
    created = False
    if warehouse.exists(table):
        target = _own_table(warehouse, table, job)
        if job in target.metadata.load_ids:
            return report(target, applied_before=True, version=target.metadata.version)
    else:
        target = warehouse.create_table(
            table,
            families=list(source.families),
            splits=[r.start for r in source.regions[1:]],
            properties=_properties(source, root_text, job),
        )
        created = True
    base = target.metadata
    try:
        _check_target(base, source, table, job)
        ensure_exclusive_create(target.fs, warehouse.root)
        tasks = plan_import(
            source,
            regions=[r.id for r in base.regions],
            table_path=target.path,
            import_id=job,
            stem=f"{job}-{uuid.uuid4().hex[:8]}",
            memory_budget=opts.memory_budget,
            max_file_bytes=opts.max_file_bytes,
            row_group_cells=opts.row_group_cells,
        )
        results, error = run_tasks(
            run_import_task,
            tasks,
            source.fs,
            target.fs,
            client=opts.client,
            workers=opts.workers,
            progress=opts.progress,
        )
        written = [f for r in results for f in r.files]
        cells = sum(r.cells for r in results)
        try:
            if error is not None:
                raise error
            snap = source.layout.snapshot
            summary = {
                "import-id": job,
                "source": root_text,
                "hbase-table": source.name,
                "snapshot": None if snap is None else snap.name,
                "files": len(written),
                "cells": cells,
            }
            result = _commit_import(target, base, written, summary)
        except BaseException:
            delete_written(target.fs, target.path, [w for w, _ in written])
            raise
    except BaseException:
        _drop_unfinished(warehouse, table, job)
        raise
    if result.applied_before:  # a concurrent attempt with the same id committed first
        delete_written(target.fs, target.path, [w for w, _ in written])
        return report(target, applied_before=True, version=result.metadata.version)
    if opts.progress is not None:
        opts.progress(len(tasks), len(tasks))
    cells_read = sum(r.cells_read for r in results)
    return report(
        target,
        created=created,
        version=result.metadata.version,
        tasks=len(tasks),
        cells_read=cells_read,
        cells=cells,
        duplicates_dropped=cells_read - cells,
        files=len(written),
        bytes=sum(w.info.size for w, _ in written),
    )


def import_snapshot(
    root: str,
    name: str,
    warehouse: ImportWarehouse,
    table: str,
    options: ImportOptions | None = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
    follow_symlinks: bool = False,
    **overrides: Unpack[ImportKwargs],
) -> ImportReport:
    """Import an HBase snapshot (exported or not) into a new cellstore table.

    The table gets the snapshot's regions (same start and end keys; cellstore region
    ids), its families with their settings (``VERSIONS``, ``MIN_VERSIONS``, ``TTL``,
    ``KEEP_DELETED_CELLS``; ``COMPRESSION``, ``BLOOMFILTER`` and ``BLOCKSIZE`` mapped to
    their Parquet equivalents), the table attributes as ``hbase.attr.*`` properties, and
    every cell of every HFile as stored, delete markers included, in HBase's order
    (module docstring). One commit makes it all visible.

    Args:
        root: The HBase root directory or ``ExportSnapshot`` target (path or fsspec URL).
        name: The snapshot.
        warehouse: The cellstore warehouse (``cellstore.connect(...)``).
        table: The new table's name (``ns:name``); it must not exist, unless an earlier
            attempt of this same import created it.
        options: How the import runs (:class:`ImportOptions`: ``import_id``, ``client``,
            ``workers``, ``memory_budget``, ``max_file_bytes``, ``row_group_cells``,
            ``progress``).
        storage_options: fsspec options for ``root``.
        follow_symlinks: Follow symlinks that lead outside ``root`` (local disk; by
            default only those inside it are followed, as ``open_snapshot``).
        **overrides: Any :class:`ImportOptions` field by name (``workers=2``), over
            ``options``.

    Returns:
        An :class:`ImportReport`.

    Raises:
        SnapshotNotFoundError: no such snapshot (the message lists the snapshots).
        CorruptFileError: a manifest, descriptor or HFile that does not parse, a name in
            one that breaks HBase's rules, a symlink leading outside ``root``.
        MissingFileError: a store file in none of the places HBase looks.
        UnsupportedFormatError: MOB, encrypted data, ``NEW_VERSION_BEHAVIOR=true``.
        TableExistsError: ``table`` exists (and was not created by this import).
        InvalidNameError: a bad table, snapshot or ``import_id`` name.
    """
    source = open_snapshot(
        root, name, storage_options=storage_options, follow_symlinks=follow_symlinks
    )
    return import_hbase_table(source, warehouse, table, _options(options, overrides), root=root)


def import_table(
    root: str,
    name: str,
    warehouse: ImportWarehouse,
    table: str,
    options: ImportOptions | None = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
    follow_symlinks: bool = False,
    **overrides: Unpack[ImportKwargs],
) -> ImportReport:
    """Import a table of an HBase root directory (0.94 or 2.x/3.x) into a new table.

    As :func:`import_snapshot`, reading the table's region directories instead of a
    manifest. Only flushed data is in the files: import a snapshot of a live cluster, or
    the root of a stopped one. ``name`` is ``ns:table`` (0.94 tables by name).
    ``options``, ``follow_symlinks`` and the overrides as :func:`import_snapshot`.

    Raises:
        TableNotFoundError: no such HBase table (the message lists the tables).
        CorruptFileError, MissingFileError, UnsupportedFormatError, TableExistsError,
        InvalidNameError: as :func:`import_snapshot`.
    """
    source = open_table(
        root, name, storage_options=storage_options, follow_symlinks=follow_symlinks
    )
    return import_hbase_table(source, warehouse, table, _options(options, overrides), root=root)

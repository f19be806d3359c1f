"""Creating, building and dropping secondary indexes.

A **full build** scans the data table once (task by task, or on Dask with a client),
turns each batch into index cells, writes them as store files of the index table and
commits them in one commit that also retires every file the index table had: readers see
the old index or the new one, never a mix.

An **incremental build** re-indexes the data rows that changed since the previous build
(every file the data table gained since then: its sequence number is at least the one the
previous build recorded) or in a time range:

1. touched rows: rows with any cell of the watched columns (or, for a key-only index, any
   cell) in those files or that time range, delete markers included (a raw read);
2. their index rows now: a normal read of those rows, as a full build computes them;
3. what the index holds for them: the index rows whose data row key is a touched row
   (one read of the index table; its keys end with the data row key);
4. writes: a DeleteFamily on every index row of a touched row whose key is no longer the
   row's key, at that index row's newest timestamp; for every index row that is new or
   differs, its cells at a timestamp above every cell that row key has in the index
   (normally the data timestamp), with a DeleteColumn for covered columns the data row no
   longer has. Unchanged rows are not written, so running it again writes nothing.

Limits (docs/format.md, section 12; verify reports what they leave behind, a full build
repairs it): TTL expiry of data cells is not seen (nothing is written); with a time range,
cells loaded later with older timestamps are not seen; a value changed back to one whose
index row was deleted at the same timestamp stays hidden.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Unpack

import pyarrow as pa
import pyarrow.compute as pc

from cellstore.commit import Commit, FileChange, commit
from cellstore.core.cells import CellType
from cellstore.core.keys import split_column
from cellstore.core.metadata import FileEntry, TableMetadata
from cellstore.core.results import JsonForm
from cellstore.core.rowkey import RowKeySpec
from cellstore.errors import (
    InvalidArgumentError,
)
from cellstore.fs import ensure_exclusive_create
from cellstore.jobs.common import new_job_id, with_overrides
from cellstore.jobs.index.catalog import (
    IndexKwargs,
    IndexOptions,
    _check_columns,
    create_index,
    definition_of,
    open_index_table,
)
from cellstore.jobs.index.definition import (
    LOCAL_FAMILY,
    PROPERTY_BUILD,
    IndexDefinition,
)
from cellstore.jobs.index.keys import IndexType
from cellstore.jobs.index.rows import (
    RowStats,
    cells_of,
    empty_rows,
    in_watched_columns,
    index_rows,
    marker_cells,
    read_rows,
    stored_rows,
)
from cellstore.loader.direct import WrittenFile, normalize_cells, now_ms, write_cells
from cellstore.reader import Scan, ScanOptions
from cellstore.reader.tables import scan_table

if TYPE_CHECKING:
    import fsspec

    from cellstore.handle import TableHandle

__all__ = [
    "DEFAULT_BATCH_CELLS",
    "IndexBuildReport",
    "build_index",
]

#: A full build writes a store file each time it has gathered this many index cells.
DEFAULT_BATCH_CELLS: Final = 1 << 20

Mode = Literal["full", "incremental"]


@dataclass(frozen=True)
class IndexBuildReport(JsonForm):
    """What one build did.

    Attributes:
        table: The data table.
        index: The index name.
        index_table: The index table.
        mode: ``full`` or ``incremental``.
        job_id: This run's id (recorded as the commit's load id).
        data_version: The data table version read.
        index_version: The index table version committed, None when nothing was.
        rows_read: Data rows read (all rows for a full build, touched rows otherwise).
        index_rows: Index rows written.
        deleted_rows: Index rows deleted (DeleteFamily markers written; incremental).
        missing: Rows read that have no value for a column part (not indexed).
        unindexable: Rows whose value does not decode or whose index key is too long.
        cells: Cells written (puts and delete markers).
        files: Store files written.
        bytes: Bytes written.
        since_seq: Incremental builds: the data sequence number changes were read from.
        time_range: Incremental builds: the ``[min, max)`` timestamp range read.
        seconds: Wall-clock time of the run.
    """

    table: str
    index: str
    index_table: str
    mode: Mode
    job_id: str
    data_version: int
    index_version: int | None
    rows_read: int
    index_rows: int
    deleted_rows: int
    missing: int
    unindexable: int
    cells: int
    files: int
    bytes: int
    since_seq: int | None = None
    time_range: tuple[int, int] | None = None
    seconds: float = 0.0


# ---------------------------------------------------------------------------- writes
@dataclass(frozen=True)
class _Writer:
    """Writes index cells as store files of the index table (picklable, for Dask)."""

    fs: fsspec.AbstractFileSystem
    path: str
    metadata: TableMetadata
    definition: IndexDefinition
    types: tuple[IndexType, ...]
    spec: RowKeySpec | None

    def write(self, cells: pa.Table, load_id: str) -> list[WrittenFile]:
        """Write index cells (uncommitted): one store file per region, named by ``load_id``."""
        if cells.num_rows == 0:
            return []
        normalized = normalize_cells(cells, metadata=self.metadata, now=now_ms())
        written, _ = write_cells(
            self.fs,
            self.path,
            self.metadata,
            normalized,
            load_id=load_id,
            seq=self.metadata.next_seq,
        )
        return written

    def partition(self, frame: Any, load_id: str) -> tuple[list[WrittenFile], RowStats]:
        """Index one Dask partition of the data scan and write its files."""
        data = pa.Table.from_pandas(frame, preserve_index=False)
        rows, stats = index_rows(data, self.definition, self.types, self.spec)
        return self.write(cells_of(rows, self.definition), load_id), stats


def _commit(
    index: TableHandle,
    written: Sequence[WrittenFile],
    *,
    remove: Sequence[FileEntry],
    job_id: str,
    operation: str,
    summary: dict[str, Any],
    build: dict[str, Any],
) -> TableMetadata:
    """Commit a build: retire ``remove``, add ``written``, record the build.

    ``remove`` must still be live (else :class:`JobConflictError`); the build document
    goes into the index table's properties in the same commit.
    """
    build_doc = json.dumps(build, sort_keys=True, separators=(",", ":"))
    ensure_exclusive_create(index.fs, index.root)
    result = commit(
        index.log,
        Commit(
            operation=operation,
            changes=[FileChange(remove=remove, add=written)],
            load_id=job_id,
            new_seq=True,
            base=index.metadata,
            summary=summary,
            update=lambda staged: {
                "properties": {**staged.meta.properties, PROPERTY_BUILD: build_doc}
            },
        ),
    )
    return result.metadata


# ---------------------------------------------------------------------------- builds
def data_scan(table: TableHandle, definition: IndexDefinition) -> Scan:
    """The scan an index is built from: the watched columns, or whole rows (key-only)."""
    columns = None if definition.whole_row else list(definition.watched_columns)
    return scan_table(table, columns=columns)


def _full(
    table: TableHandle,
    definition: IndexDefinition,
    writer: _Writer,
    *,
    job_id: str,
    client: Any,
    batch_cells: int,
) -> tuple[list[WrittenFile], RowStats]:
    scan = data_scan(table, definition)
    if client is not None:
        from dask.delayed import delayed

        frames = scan.to_dask().to_delayed()
        tasks = [
            delayed(writer.partition)(frame, f"{job_id}-{i:05d}") for i, frame in enumerate(frames)
        ]
        results = client.compute(tasks, sync=True)
        written = [w for files, _ in results for w in files]
        stats = sum((s for _, s in results), RowStats())
        return written, stats
    written = []
    stats = RowStats()
    pending: list[pa.Table] = []
    pending_cells = 0
    writes = 0
    for batch in scan.to_batches():
        rows, batch_stats = index_rows(batch, definition, writer.types, writer.spec)
        stats += batch_stats
        cells = cells_of(rows, definition)
        pending.append(cells)
        pending_cells += cells.num_rows
        if pending_cells >= batch_cells:
            written += writer.write(pa.concat_tables(pending), f"{job_id}-{writes:05d}")
            pending, pending_cells, writes = [], 0, writes + 1
    if pending_cells:
        written += writer.write(pa.concat_tables(pending), f"{job_id}-{writes:05d}")
    return written, stats


def _watched_filter(definition: IndexDefinition, cells: pa.Table) -> pa.Table:
    """The raw cells that touch the index: watched columns and family-wide markers."""
    if definition.whole_row:
        return cells
    families = {split_column(c)[0] for c in definition.watched_columns}
    family_markers = pc.and_(
        pc.is_in(cells.column("family"), value_set=pa.array(sorted(families))),
        pc.is_in(
            cells.column("type"),
            value_set=pa.array(
                [int(CellType.DELETE_FAMILY), int(CellType.DELETE_FAMILY_VERSION)], pa.int8()
            ),
        ),
    )
    return cells.filter(pc.or_(in_watched_columns(cells, definition), family_markers))


def _touched_rows(
    table: TableHandle,
    definition: IndexDefinition,
    *,
    since_seq: int | None,
    time_range: tuple[int, int] | None,
) -> pa.Array:
    """Sorted distinct data rows with a watched cell in the new files / the time range."""
    meta = table.metadata
    if since_seq is not None:
        # files loaded without a sequence id (seq -1, R14.5) may be newer than the last build
        new = tuple(f for f in meta.files if f.seq >= since_seq or not f.seq_assigned)
        meta = dataclasses.replace(meta, files=new)
    families = tuple(f for f in meta.family_names if f != LOCAL_FAMILY)
    if not definition.whole_row:
        families = tuple(sorted({split_column(c)[0] for c in definition.watched_columns}))
    options = ScanOptions(raw=True, families=families, time_range=time_range)
    scan = Scan(table.fs, table.path, meta, options, now_ms=now_ms())
    found: list[pa.Array] = []
    for batch in scan.to_batches():
        rows = _watched_filter(definition, batch).column("row")
        if len(rows):
            found.append(pc.unique(rows.combine_chunks()))
    if not found:
        return pa.array([], pa.binary())
    rows = pc.unique(pa.concat_arrays(found))
    return rows.take(pc.sort_indices(rows))


def _join_old(new: pa.Table, old: pa.Table, definition: IndexDefinition) -> pa.Table:
    """``new`` rows joined with the index's visible rows of the same key (``old.*``)."""
    renamed = old.rename_columns([f"old.{c}" if c != "key" else "key" for c in old.column_names])
    return new.join(renamed, keys="key", join_type="left outer")


def _same_covered(joined: pa.Table, definition: IndexDefinition) -> pa.Array:
    same = pc.is_valid(joined.column("old.ts"))
    for c in definition.covered:
        a, b = joined.column(c), joined.column(f"old.{c}")
        equal = pc.fill_null(pc.equal(a, b), False)
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        same = pc.and_(same, pc.or_(equal, both_null))
    return same


def _incremental(
    table: TableHandle,
    index: TableHandle,
    definition: IndexDefinition,
    writer: _Writer,
    *,
    since_seq: int | None,
    time_range: tuple[int, int] | None,
) -> tuple[pa.Table, RowStats, int, int, int]:
    """The cells an incremental build writes, with counts.

    Returns:
        ``(cells, stats, touched, puts, deletes)``.
    """
    touched = _touched_rows(table, definition, since_seq=since_seq, time_range=time_range)
    if len(touched) == 0:
        return cells_of(empty_rows(definition), definition), RowStats(), 0, 0, 0
    columns = None if definition.whole_row else list(definition.watched_columns)
    data = read_rows(table, touched, columns=columns)
    new, stats = index_rows(data, definition, writer.types, writer.spec)
    # What the index holds for the touched rows (the data row key ends every index key).
    held: list[pa.Table] = []
    for batch in scan_table(index, families=[definition.family]).to_batches():
        rows, newest, marked = stored_rows(batch, definition, writer.types)
        keep = pc.fill_null(pc.is_in(rows.column("row"), value_set=touched), False)
        rows = rows.append_column("newest", newest).append_column("marked", pa.array(marked))
        held.append(rows.filter(keep))
    old = (
        pa.concat_tables(held)
        if held
        else empty_rows(definition)
        .append_column("newest", pa.array([], pa.int64()))
        .append_column("marked", pa.array([], pa.bool_()))
    )
    # Index rows of touched rows whose key is gone: hide the whole row.
    deletes, stale = _hide_gone(old, new, definition)
    # New or changed index rows.
    visible = old.filter(old.column("marked")).drop_columns(["row", "newest", "marked"])
    writes, changed = _changed_cells(index, new, visible, definition)
    out = pa.concat_tables([c.cast(deletes.schema) for c in [deletes, *writes]])
    return out, stats, len(touched), changed, stale


def _hide_gone(held: pa.Table, new: pa.Table, definition: IndexDefinition) -> tuple[pa.Table, int]:
    """Family delete markers hiding the rows of ``held`` whose key ``new`` lacks.

    Args:
        held: Index rows as stored, with their ``newest`` timestamp.
        new: The index rows the data now gives.
        definition: The index.

    Returns:
        The markers and how many index rows they hide.
    """
    gone = held.filter(pc.invert(pc.is_in(held.column("key"), value_set=new.column("key"))))
    deletes = marker_cells(
        gone.column("key").combine_chunks(),
        definition.family,
        b"",
        gone.column("newest").combine_chunks(),
        CellType.DELETE_FAMILY,
    )
    return deletes, gone.num_rows


def _changed_cells(
    index: TableHandle, new: pa.Table, visible: pa.Table, definition: IndexDefinition
) -> tuple[list[pa.Table], int]:
    """The cells that write the rows of ``new`` the index does not hold as they are.

    Args:
        index: The index table.
        new: The index rows the data now gives.
        visible: The index rows as stored and visible (``new``'s columns).
        definition: The index.

    Returns:
        The cells (in key order, stamped above what the index holds) and how many rows
        are new or changed.
    """
    joined = _join_old(new, visible, definition)
    changed = joined.filter(pc.invert(_same_covered(joined, definition))).select(new.column_names)
    if changed.num_rows == 0:
        return [], 0
    changed = changed.take(pc.sort_indices(changed, sort_keys=[("key", "ascending")]))
    keys = changed.column("key").combine_chunks()
    raw = read_rows(index, keys, families=[definition.family], raw=True)
    stamps = _above(keys, changed.column("ts").combine_chunks(), raw)
    cells = cells_of(changed, definition, ts=stamps)
    return [cells, _dropped_covered(changed, definition, stamps, raw)], changed.num_rows


def _above(keys: pa.Array, stamps: pa.Array, raw: pa.Table) -> pa.Array:
    """The timestamps to write the changed index rows at.

    Per key, ``stamps``, or one more than the index row's newest cell when it already has
    a cell at or above that stamp (so the new cells win and no old marker hides them).
    """
    if raw.num_rows == 0:
        return stamps
    newest = raw.group_by("row").aggregate([("ts", "max")])
    at = pc.index_in(keys, value_set=newest.column("row"))
    existing = pc.take(newest.column("ts_max"), at)
    bumped = pc.if_else(
        pc.fill_null(pc.greater_equal(existing, stamps), False), pc.add(existing, 1), stamps
    )
    out: pa.Array = bumped.cast(pa.int64())
    return out


def _dropped_covered(
    changed: pa.Table, definition: IndexDefinition, stamps: pa.Array, raw: pa.Table
) -> pa.Table:
    """DeleteColumn markers for covered columns an index row has and the data lost."""
    parts = []
    for name in definition.covered:
        fam, qual = split_column(name)
        qualifier = fam.encode("utf-8") + b":" + qual
        has = raw.filter(pc.equal(raw.column("qualifier"), pa.scalar(qualifier, pa.binary())))
        lost = pc.and_(
            pc.is_null(changed.column(name)),
            pc.is_in(changed.column("key"), value_set=has.column("row").combine_chunks()),
        )
        parts.append(
            marker_cells(
                changed.column("key").combine_chunks().filter(lost),
                definition.family,
                qualifier,
                stamps.filter(lost),
                CellType.DELETE_COLUMN,
            )
        )
    if not parts:
        return marker_cells(
            pa.array([], pa.binary()),
            definition.family,
            b"",
            pa.array([], pa.int64()),
            CellType.DELETE_COLUMN,
        )
    return pa.concat_tables(parts)


def _previous_build(index: TableHandle) -> dict[str, Any] | None:
    text = index.metadata.properties.get(PROPERTY_BUILD)
    if text is None:
        return None
    doc: dict[str, Any] = json.loads(text)
    return doc


def build_index(
    table: TableHandle,
    options: IndexOptions | None = None,
    /,
    *,
    name: str,
    mode: Mode = "full",
    time_range: tuple[int, int] | None = None,
    client: Any = None,
    batch_cells: int = DEFAULT_BATCH_CELLS,
    **overrides: Unpack[IndexKwargs],
) -> IndexBuildReport:
    """Build (or bring up to date) the global secondary index ``name`` of ``table``.

    With ``column`` or ``expression`` the index is defined first (see
    :func:`create_index`; the same definition again is fine, a different one is an
    error); without them it must already be defined. The data table is read at the
    version ``table`` points at.

    Args:
        table: The data table.
        options: An :class:`~cellstore.jobs.index.catalog.IndexOptions` (the definition's
            keyword form); keyword overrides replace its fields (``column`` to ``local``).
        name: The index name.
        column: Define the index on this ``family:qualifier`` (with ``codec``).
        codec: The column's value codec (default ``bytes``).
        expression: Define the index on these parts (``key(FIELD)``,
            ``CODEC(family:qualifier)``, ``family:qualifier``), in order.
        covered: Columns copied into the index rows (when defining).
        index_table: The index table's name (when defining).
        maintain: Keep the index current on every load (when defining; see
            :func:`create_index`).
        local: Define a local index (see :func:`create_index`). A local index is built
            by rebuilding every local index of the table region by region
            (:func:`~cellstore.jobs.index.local.rebuild_local`); only ``mode="full"``.
        mode: ``"full"``: rebuild the whole index in one commit that replaces its files;
            ``"incremental"``: re-index the rows changed since the previous build (or in
            ``time_range``), see the module docs.
        time_range: Incremental builds: re-index rows with a watched cell (or delete
            marker) whose timestamp is in ``[min, max)`` instead of the rows changed since
            the previous build.
        client: A ``distributed.Client``: a full build indexes the scan's partitions on
            the cluster, each task writing its own store files (the filesystem must be
            reachable from the workers); one commit adds them all.
        batch_cells: A full build without a client writes a file per this many index cells.

    Returns:
        An :class:`IndexBuildReport`.

    Raises:
        IndexNotFoundError: the index is not defined and no ``column``/``expression`` was
            given.
        InvalidArgumentError: a bad option; an incremental build without a previous build
            to continue from (or on a data table that was recreated or restored).
        JobConflictError: another build replaced the index's files meanwhile; nothing was
            committed.
    """
    started = time.perf_counter()
    _check_build(mode, time_range, batch_cells)
    o = with_overrides(IndexOptions, options, overrides)
    if o.defines:
        definition = create_index(table, o, name=name)
    else:
        if o.codec is not None or o.covered or o.index_table is not None:
            raise InvalidArgumentError(
                "codec, covered and index_table define an index: give column or expression too"
            )
        definition = definition_of(table, name)
    if definition.local:
        return _build_local(table, definition, mode, started)
    return _build_global(
        table,
        definition,
        mode=mode,
        time_range=time_range,
        client=client,
        batch_cells=batch_cells,
        started=started,
    )


def _check_build(mode: Mode, time_range: tuple[int, int] | None, batch_cells: int) -> None:
    """Refuse a bad mode, time range or batch size (before anything is read)."""
    if mode not in ("full", "incremental"):
        raise InvalidArgumentError(f"mode must be 'full' or 'incremental', not {mode!r}")
    if time_range is not None:
        if mode != "incremental":
            raise InvalidArgumentError("time_range applies to incremental builds")
        lo, hi = time_range
        if not 0 <= lo < hi:
            raise InvalidArgumentError(
                f"time_range must be (min, max) with 0 <= min < max, got {time_range}"
            )
    if batch_cells < 1:
        raise InvalidArgumentError(f"batch_cells must be >= 1, got {batch_cells}")


def _build_global(
    table: TableHandle,
    definition: IndexDefinition,
    *,
    mode: Mode,
    time_range: tuple[int, int] | None,
    client: Any,
    batch_cells: int,
    started: float,
) -> IndexBuildReport:
    """A full or incremental build of a global index, committed to its index table."""
    meta = table.metadata
    _check_columns(definition, meta)
    spec = meta.row_key
    types = definition.part_types(spec)
    index = open_index_table(table.catalog, definition)
    job_id = new_job_id(f"index-{mode}")
    writer = _Writer(index.fs, index.path, index.metadata, definition, types, spec)
    build = {
        "job-id": job_id,
        "mode": mode,
        "data-table-uuid": meta.table_uuid,
        "data-version": meta.version,
        "data-next-seq": meta.next_seq,
        "time-range": list(time_range) if time_range is not None else None,
    }
    since_seq: int | None = None
    if mode == "full":
        written, stats = _full(
            table, definition, writer, job_id=job_id, client=client, batch_cells=batch_cells
        )
        rows_read, puts, deletes = stats.rows, stats.indexed, 0
        remove: Sequence[FileEntry] = index.metadata.files
        commit = True
    else:
        if time_range is None:
            since_seq = _since_seq(index, definition, meta)
        cells, stats, rows_read, puts, deletes = _incremental(
            table, index, definition, writer, since_seq=since_seq, time_range=time_range
        )
        written = writer.write(cells, job_id)
        remove = ()
        previous = _previous_build(index) or {}
        commit = bool(written) or previous.get("data-next-seq") != meta.next_seq
    version = None
    if commit:
        version = _commit(
            index,
            written,
            remove=remove,
            job_id=job_id,
            operation=f"index-{mode}",
            summary={"index-rows": puts, "deleted-rows": deletes, "files": len(written)},
            build=build,
        ).version
    return IndexBuildReport(
        table=str(table.name),
        index=definition.name,
        index_table=definition.index_table,
        mode=mode,
        job_id=job_id,
        data_version=meta.version,
        index_version=version,
        rows_read=rows_read,
        index_rows=puts,
        deleted_rows=deletes,
        missing=stats.missing,
        unindexable=stats.unindexable,
        cells=sum(w.info.cells for w in written),
        files=len(written),
        bytes=sum(w.info.size for w in written),
        since_seq=since_seq,
        time_range=time_range,
        seconds=time.perf_counter() - started,
    )


def _build_local(
    table: TableHandle, definition: IndexDefinition, mode: Mode, started: float
) -> IndexBuildReport:
    from cellstore.jobs.index.local import rebuild_local

    if mode != "full":
        raise InvalidArgumentError(
            f"index {definition.name} is local: it is built in full, region by region "
            "(loads keep it current)"
        )
    done = rebuild_local(table)
    return IndexBuildReport(
        table=str(table.name),
        index=definition.name,
        index_table=definition.index_table,
        mode=mode,
        job_id=f"local-{done.version}",
        data_version=table.version,
        index_version=done.version,
        rows_read=0,
        index_rows=done.index_rows,
        deleted_rows=0,
        missing=0,
        unindexable=0,
        cells=0,
        files=done.files,
        bytes=0,
        seconds=time.perf_counter() - started,
    )


def _since_seq(index: TableHandle, definition: IndexDefinition, meta: TableMetadata) -> int:
    previous = _previous_build(index)
    if previous is None:
        raise InvalidArgumentError(
            f"index {definition.name} has not been built yet; run a full build first"
        )
    if previous.get("data-table-uuid") != meta.table_uuid:
        raise InvalidArgumentError(
            f"index {definition.name} was built from another table {definition.table} "
            "(dropped and recreated); run a full build"
        )
    seq = int(previous["data-next-seq"])
    if seq > meta.next_seq:
        raise InvalidArgumentError(
            f"index {definition.name} was built from a newer version of {definition.table} "
            "than the one being read (restored or opened as-of?); run a full build"
        )
    return seq

"""Snapshots: name a table version, list and delete names, restore a table, clone a snapshot.

Metadata versions are immutable and deleted only by ``jobs.expire``, which keeps every
snapshot's version, so a snapshot is only a name for one of them: the table's metadata
carries ``snapshots`` (name -> version and creation time, docs/format.md section 6), and
taking, deleting or restoring a snapshot is one ordinary
commit. Reading a snapshot is reading the table at that version. Vacuum keeps every file a
snapshot's version references.

A **clone** is a new table (through the catalog) whose version 1 has the snapshot's
schema, regions and files, with no data copied: its file entries point into the source
table's directory as ``../../../<source location>/<path>`` (built by
:func:`cellstore.storefiles.layout.clone_link`: table directories are always three levels
below the root). Loads, compactions and splits of the clone write into its own
directory; the source's vacuum and ``drop_table(purge=True)`` respect the links.

Like HBase's ``snapshot``, ``list_snapshots``, ``delete_snapshot``, ``restore_snapshot`` and
``clone_snapshot``, but a snapshot belongs to its table (names are unique per table).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from cellstore.commit import Commit, Staged, commit, now_ms
from cellstore.core.metadata import FileEntry, SnapshotRef, TableMetadata
from cellstore.core.names import validate_snapshot_name
from cellstore.core.results import JsonForm
from cellstore.errors import (
    InvalidArgumentError,
    SnapshotExistsError,
    SnapshotNotFoundError,
    TableNotFoundError,
)
from cellstore.fs import ensure_exclusive_create
from cellstore.handle import TableHandle
from cellstore.storefiles.layout import clone_link, entry_path

__all__ = [
    "CloneReport",
    "RestoreReport",
    "SnapshotInfo",
    "clone",
    "delete_snapshot",
    "link_path",
    "list_snapshots",
    "restore",
    "snapshot",
]


@dataclass(frozen=True)
class SnapshotInfo(JsonForm):
    """One named snapshot of a table.

    Attributes:
        table: The table's name.
        name: The snapshot's name.
        version: The table version it names.
        created_ms: When it was taken (ms since the epoch).
        files: Live store files of that version.
        cells: Cells in them.
        bytes: Their total size.
    """

    table: str
    name: str
    version: int
    created_ms: int
    files: int
    cells: int
    bytes: int


@dataclass(frozen=True)
class RestoreReport(JsonForm):
    """What :func:`restore` committed.

    Attributes:
        table: The table's name.
        snapshot: The snapshot restored.
        snapshot_version: The version the snapshot names.
        version: The new table version (its content is the snapshot's).
        files: Live files after the restore.
        cells: Cells in them.
        files_removed: Entries of the previous version that are no longer live.
        files_restored: Entries of the snapshot that were not live before.
    """

    table: str
    snapshot: str
    snapshot_version: int
    version: int
    files: int
    cells: int
    files_removed: int
    files_restored: int


@dataclass(frozen=True)
class CloneReport(JsonForm):
    """What :func:`clone` created.

    Attributes:
        source: The source table's name.
        snapshot: The snapshot cloned.
        snapshot_version: The source version the snapshot names.
        table: The new table's name.
        files: Files the clone links to (none were copied).
        cells: Cells in them.
        bytes: Their total size.
    """

    source: str
    snapshot: str
    snapshot_version: int
    table: str
    files: int
    cells: int
    bytes: int


# --------------------------------------------------------------------------------- helpers
def _check_name(name: str) -> str:
    return validate_snapshot_name(name)


def _current(table: TableHandle) -> TableMetadata:
    """The version a job works on: the handle's if pinned, else the newest committed."""
    if table.pinned:
        return table.metadata
    return table.log.read(table.log.latest_version())


def _follow(table: TableHandle) -> None:
    """Move an unpinned handle to the newest version after a commit."""
    if not table.pinned:
        table.refresh()


def _ref(meta: TableMetadata, name: str) -> SnapshotRef:
    ref = meta.snapshots.get(name)
    if ref is None:
        known = ", ".join(sorted(meta.snapshots)) or "none"
        raise SnapshotNotFoundError(
            f"table {meta.name} has no snapshot {name!r} (snapshots: {known})"
        )
    return ref


def _read_version(table: TableHandle, version: int) -> TableMetadata:
    try:
        return table.log.read(version)
    except FileNotFoundError:
        raise TableNotFoundError(f"table {table.name} has no version {version}") from None


def _info(table: TableHandle, name: str, ref: SnapshotRef) -> SnapshotInfo:
    totals = _read_version(table, ref.version).file_totals()  # no manifest read (format 2)
    return SnapshotInfo(
        table=str(table.name),
        name=name,
        version=ref.version,
        created_ms=ref.created_ms,
        **asdict(totals),  # files, cells, bytes
    )


#: The entry path, relative to a clone's directory, of a source table's file (the one
#: builder lives in :mod:`cellstore.storefiles.layout`; kept here under its old name).
link_path = clone_link


# ------------------------------------------------------------------------------------ jobs
def snapshot(table: TableHandle, name: str, *, version: int | None = None) -> SnapshotInfo:
    """Take a named snapshot of a table version (HBase's ``snapshot``).

    One commit (operation ``snapshot``) records ``name -> version`` in the table's
    metadata; no data is copied or rewritten.

    Args:
        table: The table. A pinned handle (``warehouse.table(name, version=v)``) snapshots
            its version ``v``.
        name: Snapshot name: letters, digits, '_', '-', '.' (HBase's rules).
        version: The version to name (default: the pinned version, else the newest at
            commit time, which this commit does not change).

    Returns:
        The new snapshot.

    Raises:
        InvalidNameError: bad snapshot name.
        SnapshotExistsError: the table has a snapshot of that name.
        TableNotFoundError: ``version`` does not exist.
    """
    _check_name(name)
    wanted = table.version if table.pinned and version is None else version
    if wanted is not None:
        _read_version(table, wanted)  # must exist (expire keeps it once the snapshot names it)
    ensure_exclusive_create(table.fs, table.root)
    created = now_ms()

    def update(staged: Staged) -> dict[str, Any]:
        meta = staged.meta
        if name in meta.snapshots:
            raise SnapshotExistsError(f"table {meta.name} already has a snapshot {name!r}")
        target = meta.version if wanted is None else wanted
        if target > meta.version:
            raise TableNotFoundError(f"table {meta.name} has no version {target}")
        ref = SnapshotRef(version=target, created_ms=created)
        return {
            "summary": {"snapshot": name, "snapshot-version": target},
            "snapshots": {**meta.snapshots, name: ref},
        }

    new = commit(
        table.log, Commit(operation="snapshot", update=update, timestamp_ms=created)
    ).metadata
    _follow(table)
    return _info(table, name, new.snapshots[name])


def list_snapshots(table: TableHandle) -> list[SnapshotInfo]:
    """The table's snapshots, oldest first (HBase's ``list_snapshots``).

    Reads the newest version (a pinned handle: its own version) and each snapshot's
    version (for the file and cell counts).
    """
    meta = _current(table)
    refs = sorted(meta.snapshots.items(), key=lambda kv: (kv[1].created_ms, kv[0]))
    return [_info(table, name, ref) for name, ref in refs]


def delete_snapshot(table: TableHandle, name: str) -> SnapshotInfo:
    """Delete a snapshot name (HBase's ``delete_snapshot``): one commit, no data deleted.

    The files only the snapshot kept become eligible for :func:`~cellstore.jobs.vacuum`
    once they are older than its retention period.

    Returns:
        The snapshot that was deleted.

    Raises:
        SnapshotNotFoundError: no snapshot of that name.
    """
    ensure_exclusive_create(table.fs, table.root)
    deleted: list[SnapshotRef] = []

    def update(staged: Staged) -> dict[str, Any]:
        ref = _ref(staged.meta, name)
        deleted[:] = [ref]
        return {
            "summary": {"snapshot": name, "snapshot-version": ref.version},
            "snapshots": {k: v for k, v in staged.meta.snapshots.items() if k != name},
        }

    commit(table.log, Commit(operation="delete-snapshot", update=update))
    _follow(table)
    return _info(table, name, deleted[0])


def restore(table: TableHandle, snapshot: str) -> RestoreReport:
    """Restore a table to a snapshot (HBase's ``restore_snapshot``), in one commit.

    The new version takes the snapshot version's families, regions, files, salt, row-key
    spec and properties; it keeps the table's snapshots and remembered load ids, and the
    sequence number and region id counters never go back (``max`` of both versions), so
    later loads still win ties and region ids are never reused. Data committed after the
    snapshot leaves the table (it stays readable as-of the versions before the restore,
    until vacuum). A load that commits concurrently either lands before the restore (and
    is undone by it) or after it (and is kept).

    Raises:
        SnapshotNotFoundError: no snapshot of that name.
        InvalidArgumentError: the handle is pinned to an old version.
    """
    if table.pinned:
        raise InvalidArgumentError(
            f"table {table.name} was opened at version {table.version}; cannot restore it"
        )
    ref = _ref(_current(table), snapshot)
    snap = _read_version(table, ref.version)
    ensure_exclusive_create(table.fs, table.root)
    before: list[Sequence[FileEntry]] = []

    def update(staged: Staged) -> dict[str, Any]:
        meta = staged.meta
        _ref(meta, snapshot)  # still there (a concurrent delete_snapshot wins)
        before[:] = [meta.files]
        return {
            "summary": {
                "snapshot": snapshot,
                "snapshot-version": ref.version,
                "files": len(snap.files),
            },
            "families": snap.families,
            "regions": snap.regions,
            "salt_buckets": snap.salt_buckets,
            "files": snap.files,
            "row_key": snap.row_key,
            "properties": dict(snap.properties),
            "next_seq": max(meta.next_seq, snap.next_seq),
            "next_region_id": max(meta.next_region_id, snap.next_region_id),
        }

    new = commit(table.log, Commit(operation="restore", update=update)).metadata
    _follow(table)
    old_paths = {(f.path, f.region, f.family) for f in before[0]}
    new_paths = {(f.path, f.region, f.family) for f in new.files}
    return RestoreReport(
        table=str(table.name),
        snapshot=snapshot,
        snapshot_version=ref.version,
        version=new.version,
        files=len(new.files),
        cells=sum(f.cells for f in new.files),
        files_removed=len(old_paths - new_paths),
        files_restored=len(new_paths - old_paths),
    )


def clone(table: TableHandle, snapshot: str, new_name: str) -> CloneReport:
    """Create table ``new_name`` from a snapshot without copying data (``clone_snapshot``).

    The clone's version 1 has the snapshot's families, regions, salt, row-key spec,
    properties and files; its entries link to the source's files
    (``../../../<source location>/<path>``, see
    :func:`~cellstore.storefiles.layout.clone_link`), keeping their sequence numbers. The
    clone is an ordinary table from then on: its loads, compactions and splits write into
    its own directory and never touch the source. The source's vacuum
    keeps files a clone still references, and purging the source is refused while a
    clone reads its files.

    Args:
        table: The source table (its newest version's snapshots are looked up).
        snapshot: The snapshot to clone.
        new_name: ``[namespace:]name`` of the new table, in the same warehouse.

    Returns:
        What was created.

    Raises:
        SnapshotNotFoundError: no snapshot of that name.
        TableExistsError: ``new_name`` exists.
        InvalidNameError: bad table name.
        CorruptFileError: a file path of the snapshot's version leaves the warehouse.
    """
    ref = _ref(_current(table), snapshot)
    snap = _read_version(table, ref.version)
    for f in snap.files:  # never turn a path that leaves the warehouse into a link
        entry_path(table.path, f.path, table=table.name, version=snap.version)
    files = tuple(replace(f, path=clone_link(table.location, f.path)) for f in snap.files)
    template = snap.evolve(files=files)
    created = table.catalog.create_table_from(
        new_name,
        template=template,
        operation="clone",
        summary={
            "source": str(table.name),
            "snapshot": snapshot,
            "source-version": ref.version,
            "files": len(files),
        },
    )
    return CloneReport(
        source=str(table.name),
        snapshot=snapshot,
        snapshot_version=ref.version,
        table=str(created.name),
        files=len(files),
        cells=sum(f.cells for f in files),
        bytes=sum(f.size for f in files),
    )

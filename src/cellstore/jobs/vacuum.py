"""Vacuum: delete the files of a table that nothing references any more, after a retention.

Commits never delete files (docs/format.md section 4): a compaction, a TTL purge, a split,
a dropped family or a restore leaves the files it replaced in place, and a load or job that
died before its commit leaves files nothing references. :func:`vacuum` is the separate GC
step (LevelDB's obsolete-file deletion, Delta's ``VACUUM``). It is the only part of
cellstore that lists a directory: it lists the table's ``data/`` directory and deletes a
file only when

- it is older than the retention period (so a load or job still writing files before its
  commit keeps them), and
- no version that may still be read references it: not the newest version, not a
  snapshot's version, not a version that was current at some time within the retention
  period (as-of reads), and not a version of that kind of any other table of the warehouse
  whose entries link into this table's directory (clones, see
  :mod:`cellstore.jobs.snapshots`).

It also deletes bulk-load reports (``_loads/``) and leftover temporary files of exclusive
writes (``_meta/*.tmp``) older than the retention period. It never deletes metadata
versions, manifest files or parts (:mod:`cellstore.jobs.expire` does, in step with this
retention). Dry run by default: the report says what would be deleted.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import fsspec
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.commit import now_ms as clock
from cellstore.core.metadata import ManifestRef, TableMetadata
from cellstore.core.results import JsonForm
from cellstore.errors import TableNotFoundError
from cellstore.fs import is_local, join
from cellstore.handle import TableHandle
from cellstore.jobs.common import DEFAULT_RETENTION_MS, MIN_RETENTION_MS, check_retention
from cellstore.manifest import TableLog
from cellstore.manifest.files import apply_last_wins, read_manifest
from cellstore.storefiles.layout import DATA_DIR, LOADS_DIR, entry_path, is_clone_link

__all__ = [
    "DEFAULT_RETENTION_MS",
    "KEEP_REASONS",
    "MIN_RETENTION_MS",
    "VacuumReport",
    "retained_versions",
    "vacuum",
]

#: Operations whose version may list manifests of an older version again (a restore takes
#: up the snapshot's): vacuum reads such an as-of version's whole live set.
_ADOPTING_OPERATIONS: Final = frozenset({"restore"})
#: Why a data file was kept, in the order the reasons are tested.
KEEP_REASONS: Final = ("current", "snapshot", "as-of", "clone", "recent")


@dataclass(frozen=True)
class VacuumReport(JsonForm):
    """What :func:`vacuum` deleted, or would delete in a dry run.

    Attributes:
        table: The table's name.
        version: The table version the references were taken from (its newest).
        dry_run: True when nothing was deleted.
        retention_ms: The retention period.
        cutoff_ms: Files modified before this time (and versions current only before it)
            were old enough to go.
        files: Data files found in the table's ``data/`` directory.
        deleted: Data files deleted (or that would be), relative to the table directory.
        bytes_deleted: Their total size.
        kept: Data files kept, by reason: ``current`` (newest version), ``snapshot``,
            ``as-of`` (a version current within the retention period), ``clone``
            (another table links to it), ``recent`` (unreferenced but younger than the
            retention: maybe a load that has not committed yet).
        other_deleted: ``_loads/`` reports and leftover temporary files deleted (or that
            would be), relative to the table directory.
        versions_retained: Versions of this table whose files were kept for as-of reads.
    """

    json_keys = (
        "table version dry_run retention_ms cutoff_ms files files_deleted bytes_deleted "
        "deleted kept other_deleted versions_retained"
    )

    table: str
    version: int
    dry_run: bool
    retention_ms: int
    cutoff_ms: int
    files: int
    deleted: tuple[str, ...]
    bytes_deleted: int
    kept: Mapping[str, int] = field(default_factory=dict)
    other_deleted: tuple[str, ...] = ()
    versions_retained: int = 0

    @property
    def files_deleted(self) -> int:
        """Number of data files deleted (or that would be)."""
        return len(self.deleted)

    def _json_value(self, name: str) -> Any:
        if name == "kept":  # every reason, in this order, 0 when none
            return {reason: self.kept.get(reason, 0) for reason in KEEP_REASONS}
        return super()._json_value(name)


def retained_versions(
    log: TableLog, *, cutoff_ms: int, latest: TableMetadata | None = None
) -> Iterator[tuple[str, TableMetadata]]:
    """The versions of a table that may still be read, each with why.

    Yields ``("current", newest)``, then ``("snapshot", v)`` for each snapshot's version,
    then ``("as-of", v)`` for every older version that was current at some time at or
    after ``cutoff_ms`` (version v is current from its commit until the next one's),
    stopping at an expired version. Reads one metadata file per version; lists nothing.
    """
    if latest is None:
        latest = log.read(log.latest_version())
    yield "current", latest
    for ref in sorted(latest.snapshots.values(), key=lambda r: r.version):
        yield "snapshot", log.read(ref.version)
    successor_ts = latest.last_history.timestamp_ms
    v = latest.version - 1
    while v >= 1 and successor_ts >= cutoff_ms:
        try:
            meta = log.read(v)
        except FileNotFoundError:  # expired (jobs.expire): nothing older can be read
            return
        yield "as-of", meta
        successor_ts = meta.last_history.timestamp_ms
        v -= 1


def _mtime_ms(fs: fsspec.AbstractFileSystem, path: str, info: Mapping[str, Any]) -> int:
    """Modification time of a listed file, from its listing entry when it has one."""
    for key in ("mtime", "LastModified", "last_modified", "modified", "created"):
        value = info.get(key)
        if isinstance(value, datetime):
            return int(value.timestamp() * 1000)
        if isinstance(value, int | float):
            return int(float(value) * 1000)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                return int(datetime.fromisoformat(value).timestamp() * 1000)
    modified = fs.modified(path)
    return int(modified.timestamp() * 1000)


def _listing(fs: fsspec.AbstractFileSystem, path: str) -> dict[str, Mapping[str, Any]]:
    fs.invalidate_cache(path)
    if not fs.exists(path):
        return {}
    found: dict[str, Mapping[str, Any]] = fs.find(path, detail=True)
    return {p: info for p, info in found.items() if info.get("type", "file") == "file"}


def _links_into(table: TableHandle, target: str, cutoff_ms: int) -> set[str]:
    """Files under ``target`` that other tables of the warehouse may still read.

    Only a table created by a clone (version 1 operation ``clone``) holds linked entries
    (docs/format.md section 3.2), so only those tables' retained versions are read.
    """
    wh = table.catalog
    out: set[str] = set()
    for name in wh.list_tables():
        try:
            other = wh.table(name)
        except TableNotFoundError:  # dropped meanwhile: its links no longer count
            continue
        if other.location == table.location:
            continue
        if not other.log.exists(1) or other.log.read(1).last_history.operation != "clone":
            continue
        for _, meta in retained_versions(other.log, cutoff_ms=cutoff_ms, latest=other.metadata):
            for f in meta.files:
                # A link that leaves the warehouse protects nothing (verify reports it).
                if is_clone_link(f.path):
                    path = join(other.path, f.path)
                    if path.startswith(target):
                        out.add(path)
    return out


def _remove_empty_dirs(root: str) -> None:
    """Remove empty directories under ``root`` on local disk (object stores have none)."""
    for dirpath, _, _ in sorted(os.walk(root), key=lambda w: -len(w[0])):
        if dirpath != root:
            with contextlib.suppress(OSError):
                os.rmdir(dirpath)


class _Referenced:
    """The data files the retained versions of a table reference, each with why it is kept.

    Manifests shared by versions are read once.
    """

    def __init__(self, table: TableHandle) -> None:
        self.table = table
        self.reason_of: dict[str, str] = {}
        self._manifests: dict[str, pa.Table] = {}

    def rows(self, ref: ManifestRef) -> pa.Table:
        """A manifest's rows (read once)."""
        if ref.path not in self._manifests:
            self._manifests[ref.path] = read_manifest(self.table.fs, self.table.path, ref)
        return self._manifests[ref.path]

    def live_paths(self, meta: TableMetadata) -> set[str]:
        """The entry paths live in one version."""
        if meta.format_version < 2:
            return {f.path for f in meta.files}
        live = apply_last_wins([self.rows(ref) for ref in meta.manifests])
        return set(live.column("path").to_pylist())

    def keep(self, paths: set[str], reason: str, version: int) -> None:
        """Keep ``paths`` (entry paths of ``version``) for ``reason`` (the first one wins)."""
        table = self.table
        for rel in sorted(paths):
            path = entry_path(table.path, rel, table=table.name, version=version)
            self.reason_of.setdefault(path, reason)

    def of_retained(self, latest: TableMetadata, cutoff: int) -> tuple[dict[str, str], int]:
        """Reasons by file path for every retained version, and the as-of versions kept."""
        retained = 0
        asof_refs: dict[str, ManifestRef] = {}
        oldest: TableMetadata | None = None
        for reason, meta in retained_versions(self.table.log, cutoff_ms=cutoff, latest=latest):
            retained += reason == "as-of"
            if reason == "as-of" and meta.format_version >= 2:
                asof_refs.update((ref.path, ref) for ref in meta.manifests)
                oldest = meta  # as-of versions come newest first
                if meta.last_history.operation not in _ADOPTING_OPERATIONS:
                    continue  # else: it may list older manifests again; read its live set
            self.keep(self.live_paths(meta), reason, meta.version)
        if oldest is not None:
            self.keep(self._asof_paths(oldest, asof_refs), "as-of", oldest.version)
        return self.reason_of, retained

    def _asof_paths(self, oldest: TableMetadata, asof_refs: dict[str, ManifestRef]) -> set[str]:
        """Every file live in some as-of version.

        Live in the oldest, or added since by a manifest one of them lists (13.4: each
        commit's adds stay in a manifest its own version lists), without applying every
        version's manifests (a superset: safe).
        """
        paths = self.live_paths(oldest)
        oldest_refs = {ref.path for ref in oldest.manifests}
        for ref in asof_refs.values():
            # newer manifests, and older ones a later version took up (a restore)
            if ref.added_version > oldest.version or ref.path not in oldest_refs:
                r = self.rows(ref)
                paths.update(
                    r.filter(pc.equal(r.column("action"), "add")).column("path").to_pylist()
                )
        return paths


def vacuum(
    table: TableHandle,
    *,
    retention_ms: int = DEFAULT_RETENTION_MS,
    dry_run: bool = True,
    enforce_retention: bool = True,
    now_ms: int | None = None,
) -> VacuumReport:
    """Delete a table's files that no readable version references, after a retention.

    See the module docstring for what is kept. Safe to run while loads and jobs commit:
    a file becomes unreferenced only by a commit that is already visible, and a file not
    yet committed is younger than the retention period.

    Args:
        table: The table (its newest version is used whatever the handle points at).
        retention_ms: Keep files (and the versions current) younger than this; default
            7 days.
        dry_run: Only report what would be deleted (the default).
        enforce_retention: Refuse a retention shorter than :data:`MIN_RETENTION_MS` (an
            hour); pass False only when no load or job can be running.
        now_ms: "Now" (default: the clock); files are compared with ``now - retention``.

    Returns:
        A :class:`VacuumReport`.

    Raises:
        InvalidArgumentError: a negative retention, or one under an hour while
            ``enforce_retention`` is on.
    """
    check_retention(retention_ms, enforce=enforce_retention)
    fs = table.fs
    log = table.log
    now = clock() if now_ms is None else now_ms
    cutoff = now - retention_ms
    latest = log.read(log.latest_version())
    reason_of, retained = _Referenced(table).of_retained(latest, cutoff)
    data_dir = join(table.path, DATA_DIR)
    for path in _links_into(table, data_dir + "/", cutoff):
        reason_of.setdefault(path, "clone")

    listed = _listing(fs, data_dir)
    kept: Counter[str] = Counter()
    doomed: list[str] = []
    size = 0
    for path, info in sorted(listed.items()):
        why = reason_of.get(path)
        if why is None and _mtime_ms(fs, path, info) >= cutoff:
            why = "recent"
        if why is not None:
            kept[why] += 1
            continue
        doomed.append(path)
        size += int(info.get("size") or 0)

    others: list[str] = []
    for sub, suffix in ((LOADS_DIR, ""), ("_meta", ".tmp")):
        for path, info in sorted(_listing(fs, join(table.path, sub)).items()):
            if path.endswith(suffix) and _mtime_ms(fs, path, info) < cutoff:
                others.append(path)

    if not dry_run and (doomed or others):
        fs.rm(doomed + others)
        if is_local(fs):
            _remove_empty_dirs(data_dir)
        fs.invalidate_cache(table.path)
    prefix = table.path + "/"
    return VacuumReport(
        table=str(table.name),
        version=latest.version,
        dry_run=dry_run,
        retention_ms=retention_ms,
        cutoff_ms=cutoff,
        files=len(listed),
        deleted=tuple(p.removeprefix(prefix) for p in doomed),
        bytes_deleted=size,
        kept=dict(kept),
        other_deleted=tuple(p.removeprefix(prefix) for p in others),
        versions_retained=retained,
    )

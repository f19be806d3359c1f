"""Expire: delete old metadata versions, and the manifest files only they list.

Metadata versions accumulate with every commit. :func:`expire` deletes the versions older
than the retention period that no reader may still need (docs/format.md 13.5), in step with
:func:`~cellstore.jobs.vacuum.vacuum`: it keeps exactly the versions whose files vacuum
keeps (:func:`~cellstore.jobs.vacuum.retained_versions`: the newest, every snapshot's,
every version current within the retention) and always version 1 (a clone is recognized
by it). Then it deletes the manifest files and part documents under ``_meta/`` that no
kept version lists and that are older than the retention (a commit in progress may be
about to list a young one). Before deleting anything it records the lowest kept version
of the newest run in ``_meta/oldest`` so that finding the newest version never probes
across the gap.

Optionally (``rewrite=True``) it first folds the newest version's manifests into one
(:func:`rewrite_manifests`), so that the many small manifests of old commits become
unreferenced once their versions expire. Dry run by default.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Final

from cellstore.commit import Commit, NothingToCommit, Staged, commit
from cellstore.commit import now_ms as clock
from cellstore.core.results import JsonForm
from cellstore.fs import join
from cellstore.handle import TableHandle
from cellstore.jobs.common import DEFAULT_RETENTION_MS, check_retention
from cellstore.jobs.vacuum import (
    _listing,
    _mtime_ms,
    retained_versions,
)
from cellstore.manifest import LiveFiles
from cellstore.manifest.files import MANIFEST_DIR
from cellstore.manifest.log import PARTS_DIR

__all__ = ["ExpireReport", "expire", "rewrite_manifests"]

#: ``rewrite_manifests`` leaves a list of at most this many manifests alone.
REWRITE_MIN_MANIFESTS: Final = 2


@dataclass(frozen=True)
class ExpireReport(JsonForm):
    """What :func:`expire` deleted, or would delete in a dry run.

    Attributes:
        table: The table's name.
        version: Its newest version.
        dry_run: True when nothing was deleted.
        retention_ms: The retention period.
        versions_kept: Versions kept (newest, snapshots', current within the retention,
            version 1).
        versions_deleted: Versions deleted (or that would be).
        files_deleted: Manifest files and part documents deleted, relative to the table.
        rewritten: Whether the newest version's manifests were folded into one first.
    """

    table: str
    version: int
    dry_run: bool
    retention_ms: int
    versions_kept: tuple[int, ...]
    versions_deleted: tuple[int, ...]
    files_deleted: tuple[str, ...]
    rewritten: bool = False


def rewrite_manifests(table: TableHandle, *, min_manifests: int = REWRITE_MIN_MANIFESTS) -> bool:
    """Commit a version whose manifest list is one manifest of the live entries.

    A format-version-2 table only; the live set does not change. Returns whether a
    version was committed (not when the list has fewer than ``min_manifests``).
    """
    log = table.log

    def update(staged: Staged) -> dict[str, Any]:
        meta = staged.meta
        if meta.format_version < 2 or len(meta.manifests) < min_manifests:
            raise NothingToCommit
        refs = log.rewrite_manifests(meta, version=meta.version + 1)
        return {
            "files": LiveFiles(log.fs, log.table_path, refs),
            "summary": {"manifests-before": len(meta.manifests), "manifests": len(refs)},
        }

    result = commit(log, Commit("rewrite-manifests", update=update))
    return result.committed


def expire(
    table: TableHandle,
    *,
    retention_ms: int = DEFAULT_RETENTION_MS,
    dry_run: bool = True,
    rewrite: bool = False,
    enforce_retention: bool = True,
    now_ms: int | None = None,
) -> ExpireReport:
    """Delete metadata versions older than the retention that nothing may read.

    Args:
        table: The table.
        retention_ms: Keep versions current within this period (default 7 days).
        dry_run: Only report (the default).
        rewrite: Fold the newest version's manifests into one first (a commit; not in a
            dry run).
        enforce_retention: Refuse a retention under an hour (as vacuum).
        now_ms: "Now" (default: the clock).

    Raises:
        InvalidArgumentError: a negative retention, or one under an hour while
            ``enforce_retention`` is on.
    """
    check_retention(retention_ms, enforce=enforce_retention)
    log = table.log
    fs = table.fs
    rewritten = False
    if rewrite and not dry_run:
        rewritten = rewrite_manifests(table)
        if rewritten and not table.pinned:
            table.refresh()  # the handle follows the commit
    now = clock() if now_ms is None else now_ms
    cutoff = now - retention_ms
    latest = log.read(log.latest_version())
    keep = {1: log.read(1)} if latest.version > 1 else {}
    for _, meta in retained_versions(log, cutoff_ms=cutoff, latest=latest):
        keep[meta.version] = meta
    oldest = log.oldest_version()
    # the unbroken run of kept versions ending at the newest one
    run_start = latest.version
    while run_start - 1 in keep and run_start - 1 > 1:
        run_start -= 1
    doomed = [
        v
        for v in range(2, latest.version)
        if v not in keep and (v >= oldest or log.exists(v))  # below oldest: mostly gone
    ]
    referenced: set[str] = set()
    for meta in keep.values():
        referenced.update(ref.path for ref in meta.manifests)
        referenced.update(meta.part_paths)  # regions, load ids, leading manifests
    files: list[str] = []
    for sub in (MANIFEST_DIR, PARTS_DIR):
        for path, info in sorted(_listing(fs, join(table.path, sub)).items()):
            rel = path.removeprefix(table.path + "/")
            if rel not in referenced and _mtime_ms(fs, path, info) < cutoff:
                files.append(rel)
    if not dry_run and (doomed or files):
        if run_start > oldest:
            log.set_oldest_version(run_start)
        paths = [log.version_path(v) for v in doomed] + [join(table.path, f) for f in files]
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                fs.rm_file(path)
        fs.invalidate_cache(log.path)
    return ExpireReport(
        table=str(table.name),
        version=latest.version,
        dry_run=dry_run,
        retention_ms=retention_ms,
        versions_kept=tuple(sorted(keep)),
        versions_deleted=tuple(doomed),
        files_deleted=tuple(files),
        rewritten=rewritten,
    )

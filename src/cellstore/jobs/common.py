"""What every batch job shares: job ids, entry/written-file conversion, the replace commit.

A job rewrites or re-references store files and then commits once through the manifest with
:func:`replace_files`: the commit removes the job's input entries and adds its outputs, and
only if every input entry is still live in the newest version (same path, region and
family). A load that lands while the job runs is kept (its files are not inputs); a job
whose inputs were changed underneath it (another compaction, a split) fails with
:class:`~cellstore.errors.JobConflictError` and leaves only unreferenced files, which vacuum
removes. Jobs are idempotent: re-running one on an already-healthy table commits nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cellstore.core.metadata import FileEntry, TableMetadata
from cellstore.errors import JobConflictError
from cellstore.ingest import WrittenFile, now_ms
from cellstore.manifest import TableLog

__all__ = [
    "Replacement",
    "entry_key",
    "file_entry",
    "new_job_id",
    "replace_files",
]


def new_job_id(kind: str) -> str:
    """A fresh, unique id for one run of job ``kind`` (sortable by time), e.g. ``compact-...``."""
    return f"{kind}-{now_ms():013d}-{uuid.uuid4().hex[:8]}"


def entry_key(entry: FileEntry) -> tuple[str, str, str]:
    """Identity of a live entry: (path, region, family)."""
    return (entry.path, entry.region, entry.family)


def file_entry(written: WrittenFile, *, seq: int, load_id: str) -> FileEntry:
    """The manifest entry for a file a job wrote (``seq`` is the manifest's, authoritative)."""
    info = written.info
    return FileEntry(
        path=written.relpath,
        region=written.region,
        family=info.family,
        seq=seq,
        cells=info.cells,
        delete_markers=info.delete_markers,
        size=info.size,
        first_row=info.first_row,
        last_row=info.last_row,
        min_ts=info.min_ts,
        max_ts=info.max_ts,
        load_id=load_id,
    )


@dataclass(frozen=True)
class Replacement:
    """One commit's worth of file changes.

    Attributes:
        remove: Entries that must still be live; they leave the table.
        add: Entries that join it (their ``seq`` is kept as given: a compaction's output
            takes the highest sequence number of its inputs, R3.2 ordering is preserved).
        operation: History operation name (``compact``, ``split``, ``purge-ttl``...).
        summary: JSON scalars recorded in the history entry.
        change: Optional further change of the metadata (e.g. new regions), applied after
            the file change: it receives the newest metadata with the file change staged
            and returns more ``next_version`` fields; a returned ``files`` replaces the
            staged file list (a split moves files a concurrent load added to the region it
            splits). It runs again on every retry and must re-check its own preconditions.
    """

    remove: Sequence[FileEntry]
    add: Sequence[FileEntry]
    operation: str
    summary: dict[str, Any] = field(default_factory=dict)
    change: Callable[[TableMetadata], dict[str, Any]] | None = None


def replace_files(log: TableLog, replacement: Replacement) -> TableMetadata:
    """Commit ``replacement`` on the newest version, retrying on concurrent commits.

    Returns:
        The committed metadata.

    Raises:
        JobConflictError: if an input entry is no longer live (a concurrent job replaced
            it); nothing of this job becomes visible.
    """
    wanted = {entry_key(e) for e in replacement.remove}

    def change(meta: TableMetadata) -> TableMetadata:
        live = {entry_key(e) for e in meta.files}
        gone = wanted - live
        if gone:
            path, region, family = sorted(gone)[0]
            raise JobConflictError(
                f"table {meta.name}: {replacement.operation} input {path} (region {region}, "
                f"family {family}) is no longer live: another job changed it; nothing was "
                "committed, run the job again"
            )
        files = tuple(e for e in meta.files if entry_key(e) not in wanted)
        files += tuple(replacement.add)
        extra: dict[str, Any] = {}
        if replacement.change is not None:
            extra = dict(replacement.change(meta.evolve(files=files)))
            files = tuple(extra.pop("files", files))
        return meta.next_version(
            operation=replacement.operation,
            timestamp_ms=now_ms(),
            summary=replacement.summary,
            files=files,
            **extra,
        )

    new, _ = log.commit_table(change)
    return new


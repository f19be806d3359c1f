"""The one commit path: every change of a table's state goes through :func:`commit`.

Loads, compactions, TTL purges, splits and merges, copies, index builds, snapshots,
restores and schema changes all describe what they change as a :class:`Commit` and hand
it to :func:`commit`, which applies it to the newest table version with exclusive create
and re-applies it after a concurrent commit (docs/format.md, section 4). What a
:class:`Commit` can say:

- **files added** (``FileChange.add``): store files a load or job wrote. A
  :class:`~cellstore.storefiles.WrittenFile` becomes a manifest entry here, and only
  here (:func:`file_entry`); with ``new_seq`` it takes the version's next sequence
  number (loads, builds: newest wins ties, R3.2), otherwise the seq it carries
  (compaction outputs keep the highest input seq).
- **files removed** (``FileChange.remove``): entries that must still be live in the
  newest version. If one is not, the change is *stale*: with ``stale="fail"`` the commit
  raises :class:`~cellstore.errors.JobConflictError`; with ``stale="skip"`` that change
  alone is left out (compaction skips a store another job rewrote) and the result says
  which.
- **a load id** recorded in the version's ``load_ids``: a version that already records it
  means the commit was applied before (a retried load), and nothing is written again.
- **a base version** whose regions the added files were routed by: if any of those
  regions was split or merged since, :class:`~cellstore.errors.RegionsChangedError`
  (the loader re-routes and tries again).
- **any other field** of the next version (regions, families, snapshots, properties...)
  through ``update``, a function of the newest metadata that runs again on every retry and
  must re-check its own preconditions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from cellstore.core.metadata import (
    COLUMNS_FORMAT_VERSION,
    DEFAULT_FORMAT_VERSION,
    FileEntry,
    TableMetadata,
)
from cellstore.errors import (
    CommitConflictError,
    InvalidArgumentError,
    JobConflictError,
    RegionsChangedError,
)
from cellstore.manifest import LiveFiles, TableLog, entry_key
from cellstore.storefiles.writer import WrittenFile

__all__ = [
    "Commit",
    "CommitResult",
    "FileChange",
    "NothingToCommit",
    "Staged",
    "commit",
    "entry_key",
    "file_entry",
    "now_ms",
]


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch (HBase's ``EnvironmentEdge`` default)."""
    return time.time_ns() // 1_000_000


def file_entry(written: WrittenFile, *, seq: int, load_id: str) -> FileEntry:
    """The manifest entry of a written store file (the only place entries are built).

    Args:
        written: The file, as the writer returned it.
        seq: Sequence number to record (the manifest's is authoritative, R3.2).
        load_id: Id of the load or job that wrote it.
    """
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
        footer_digest=info.footer_digest,
        layout=info.layout,
    )


@dataclass(frozen=True)
class FileChange:
    """Files that leave and join the table together (one store of a compaction, a load).

    Attributes:
        remove: Entries that must still be live; they leave the table.
        add: Entries (kept as given) or written files (made entries by :func:`commit`).
        seq_rank: With ``Commit.new_seq``, written files take ``next_seq + seq_rank``
            (a copy keeps its source's relative load order); the version's ``next_seq``
            then advances past the highest rank used.
    """

    remove: Sequence[FileEntry] = ()
    add: Sequence[FileEntry | WrittenFile] = ()
    seq_rank: int = 0


@dataclass(frozen=True)
class Staged:
    """What ``Commit.update`` sees: the newest metadata with the file changes staged.

    Attributes:
        meta: The newest metadata, its ``files`` already changed.
        skipped: Indexes of stale changes left out (``stale="skip"``).
        seq: The sequence number written files take (``new_seq``), else None.
    """

    meta: TableMetadata
    skipped: tuple[int, ...]
    seq: int | None


class NothingToCommit(Exception):
    """Raised by an ``update`` function to commit nothing (the result is not committed)."""


@dataclass(frozen=True)
class Commit:
    """One commit's worth of change (see the module docstring).

    Attributes:
        operation: History operation name (``load``, ``compact``, ``split``, ``snapshot``...).
        changes: File changes; each is applied whole or (``stale="skip"``) not at all.
        stale: What a change whose removals are no longer live does: ``"fail"`` the commit
            or ``"skip"`` that change.
        load_id: Id recorded in ``load_ids`` (loads, copies, builds); a newest version
            that already has it makes the commit a no-op reported as applied before.
        new_seq: Written files take the next sequence number, which then advances.
        base: Metadata whose regions routed the added files: a region changed since then
            raises :class:`~cellstore.errors.RegionsChangedError`.
        summary: JSON scalars for the history entry.
        update: Further fields of the next version, computed from the :class:`Staged`
            newest metadata (``files`` returned replaces the staged file list, ``summary``
            returned is merged into the summary). It may raise :class:`NothingToCommit`,
            or a :class:`~cellstore.errors.CellstoreError` when its preconditions no
            longer hold.
        timestamp_ms: The history timestamp (default: now).
    """

    operation: str
    changes: Sequence[FileChange] = ()
    stale: Literal["fail", "skip"] = "fail"
    load_id: str | None = None
    new_seq: bool = False
    base: TableMetadata | None = None
    summary: Mapping[str, Any] = field(default_factory=dict)
    update: Callable[[Staged], Mapping[str, Any]] | None = None
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class CommitResult:
    """What :func:`commit` did.

    Attributes:
        metadata: The committed version (or, when nothing was committed, the newest one).
        committed: Whether a new version was written.
        applied_before: The load id was already recorded: nothing was written again.
        skipped: Indexes (into ``Commit.changes``) of stale changes left out.
        seq: The sequence number given to written files (``new_seq``), else None.
    """

    metadata: TableMetadata
    committed: bool
    applied_before: bool = False
    skipped: tuple[int, ...] = ()
    seq: int | None = None


class _Done(Exception):
    def __init__(self, result: CommitResult) -> None:
        super().__init__("nothing to commit")
        self.result = result


def _check_regions(meta: TableMetadata, c: Commit) -> None:
    if c.base is None:
        return
    regions = {r.id: r for r in meta.regions}
    for change in c.changes:
        for added in change.add:
            region = added.region
            if regions.get(region) != c.base.region(region):
                what = f"load {c.load_id}" if c.load_id else c.operation
                raise RegionsChangedError(
                    f"table {meta.name}: region {region} changed (split or merged) while "
                    f"{what} was running; nothing was committed, run it again"
                )


def _check_families(meta: TableMetadata, c: Commit) -> None:
    names = set(meta.family_names)
    for change in c.changes:
        for added in change.add:
            family = added.family if isinstance(added, FileEntry) else added.info.family
            if family not in names:
                what = f"load {c.load_id}" if c.load_id else c.operation
                raise CommitConflictError(
                    f"table {meta.name}: family {family!r} was dropped while {what} was "
                    "running; nothing was committed"
                )


def _columns_version(meta: TableMetadata) -> int:
    """The format version a table takes with its first column file (docs/format.md 14).

    Raises:
        InvalidArgumentError: the table is at format version 1 (run ``upgrade`` first).
    """
    if meta.format_version < DEFAULT_FORMAT_VERSION:
        raise InvalidArgumentError(
            f"table {meta.name}: column-layout files need format version "
            f"{COLUMNS_FORMAT_VERSION}; the table is at version {meta.format_version} "
            "(run `cellstore upgrade` first)"
        )
    return COLUMNS_FORMAT_VERSION


def commit(log: TableLog, c: Commit) -> CommitResult:
    """Apply ``c`` to the newest version of the table in ``log``, retrying on conflict.

    Returns:
        What was committed (see :class:`CommitResult`); with every change skipped as stale,
        or ``update`` raising :class:`NothingToCommit`, nothing is written.

    Raises:
        JobConflictError: a change's removals are no longer live and ``stale="fail"``.
        RegionsChangedError: a region the added files were routed to changed since
            ``c.base``.
        CommitConflictError: a family of an added file was dropped, or retries ran out.
    """
    skipped: list[int] = []
    seq_used: list[int] = []

    def change(meta: TableMetadata) -> TableMetadata:
        skipped.clear()
        seq_used.clear()
        if c.load_id is not None and c.load_id in meta.load_ids:
            raise _Done(CommitResult(meta, committed=False, applied_before=True))
        _check_regions(meta, c)
        _check_families(meta, c)
        if isinstance(
            meta.files, LiveFiles
        ):  # format version 2: read only the entries of the regions that lose files
            touched = {e.region for fc in c.changes for e in fc.remove}
            live = {entry_key(e): e for e in meta.files_in(touched)} if touched else {}
        else:
            live = {entry_key(e): e for e in meta.files}
        seq = meta.next_seq
        top_rank = 0
        remove: set[tuple[str, str, str]] = set()
        add: list[FileEntry] = []
        for i, fc in enumerate(c.changes):
            keys = {entry_key(e) for e in fc.remove}
            gone = keys - live.keys()
            if gone:
                if c.stale == "skip":
                    skipped.append(i)
                    continue
                path, region, family = sorted(gone)[0]
                raise JobConflictError(
                    f"table {meta.name}: {c.operation} input {path} (region {region}, family "
                    f"{family}) is no longer live: another job changed it; nothing was "
                    "committed, run it again"
                )
            remove |= keys
            if fc.add:
                top_rank = max(top_rank, fc.seq_rank)
            for a in fc.add:
                if isinstance(a, FileEntry):
                    add.append(a)
                else:
                    a_seq = seq + fc.seq_rank if c.new_seq else a.info.seq
                    add.append(file_entry(a, seq=a_seq, load_id=c.load_id or a.info.load_id))
        if c.changes and len(skipped) == len(c.changes):  # every change was stale
            raise _Done(CommitResult(meta, committed=False, skipped=tuple(skipped)))
        files: Sequence[FileEntry]
        if isinstance(meta.files, LiveFiles):
            files = meta.files.with_delta(add, [live[k] for k in sorted(remove)])
        else:
            files = tuple(e for e in meta.files if entry_key(e) not in remove) + tuple(add)
        fields: dict[str, Any] = {"files": files}
        if meta.format_version < COLUMNS_FORMAT_VERSION and any(e.layout != "cells" for e in add):
            fields["format_version"] = _columns_version(meta)
        summary = dict(c.summary)
        if c.new_seq:
            fields["next_seq"] = seq + top_rank + 1
            summary.setdefault("seq", seq)
            seq_used.append(seq)
        if c.load_id is not None:
            fields["load_ids"] = (*meta.load_ids, c.load_id)
        if c.update is not None:
            try:
                staged = Staged(
                    meta.evolve(files=files), tuple(skipped), seq if c.new_seq else None
                )
                extra = dict(c.update(staged))
            except NothingToCommit:
                raise _Done(CommitResult(meta, committed=False, skipped=tuple(skipped))) from None
            summary.update(extra.pop("summary", {}))
            fields.update(extra)
        return meta.next_version(
            operation=c.operation,
            timestamp_ms=c.timestamp_ms if c.timestamp_ms is not None else now_ms(),
            summary=summary,
            **fields,
        )

    try:
        new, _ = log.commit_table(change)
    except _Done as done:
        return done.result
    return CommitResult(
        new,
        committed=True,
        skipped=tuple(skipped),
        seq=seq_used[0] if seq_used else None,
    )

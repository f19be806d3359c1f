"""Region split (see :mod:`cellstore.jobs.regions`)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.commit import Commit, FileChange, commit, file_entry
from cellstore.core.cells import CELL_SCHEMA, equal_key_runs, run_starts
from cellstore.core.keys import to_string_binary
from cellstore.core.metadata import FileEntry, TableMetadata
from cellstore.core.regions import Region, check_regions, region_id, region_of
from cellstore.core.semantics import merge_runs
from cellstore.errors import InvalidArgumentError, InvalidRowRangeError, JobConflictError
from cellstore.fs import join
from cellstore.handle import TableHandle
from cellstore.jobs.common import new_job_id
from cellstore.loader.direct import WrittenFile
from cellstore.storefiles import (
    DEFAULT_ROW_GROUP_CELLS,
    NO_ROLL,
    RowGroupStats,
    StoreFileReader,
    write_rolled,
)

__all__ = ["split", "split_point"]

#: Store files a split rewrites concurrently (pyarrow releases the GIL).
from cellstore.jobs.regions._common import (
    DEFAULT_MAX_WORKERS,
    RegionSplit,
    SplitReport,
    _bounds,
    _child_index,
    _children,
    _latest,
    _overlapping,
    _region,
    _split_keys,
    region_sizes,
)


def split_point(table: TableHandle, *, region: str) -> bytes | None:
    """The row nearest the middle of ``region``'s cells (all families), or None.

    The key returned is a row of the region's data whose rows before it hold as close to
    half of the region's cells as any row's; the rows below it are never empty, so it is
    never the region's start. None when the region holds fewer than two distinct rows.
    Reads the newest version's footers and the ``row`` column of only the row groups that
    can hold the median cell (all row groups when statistics are missing).

    Raises:
        InvalidArgumentError: if there is no such region.
    """
    meta = table.log.read(table.log.latest_version())
    r = _region(meta, region)
    files = [f for f in meta.files if f.region == r.id]
    return _split_point(table, files)


def _split_point(table: TableHandle, files: Sequence[FileEntry]) -> bytes | None:
    if not files:
        return None
    readers = [StoreFileReader(table.fs, table.file_path(f), entry=f) for f in files]
    try:
        groups = [(i, g) for i, rd in enumerate(readers) for g in rd.row_groups()]
        total = sum(g.num_cells for _, g in groups)
        if total == 0:
            return None
        window = _median_window([g for _, g in groups], total // 2)
        if window is not None:
            key = _best_key(readers, groups, total, window)
            if key is not None:
                return key
        return _best_key(readers, groups, total, None)
    finally:
        for rd in readers:
            rd.close()


def _median_window(groups: Sequence[RowGroupStats], p: int) -> tuple[bytes, bytes] | None:
    """Rows ``[a, b]`` that surely hold both candidates for the best split key.

    The candidates are the row ``m`` of cell number ``p`` (0-based, in row order) and the
    data row after ``m``. From row-group statistics alone: ``a`` is the largest group
    minimum with at most ``p`` cells in groups starting below it (so ``a <= m``); ``b`` is
    the group maximum after the smallest one with more than ``p`` cells in groups ending at
    or below it (that one is ``>= m``; the next larger is a data row above it). None when a
    group has no statistics.
    """
    if any(g.min_row is None or g.max_row is None for g in groups):
        return None
    by_min = sorted(groups, key=lambda g: g.min_row or b"")
    a = by_min[0].min_row or b""
    below = 0  # cells in groups whose min is < the current candidate
    i = 0
    while i < len(by_min):
        key = by_min[i].min_row or b""
        if below > p:
            break
        a = key
        while i < len(by_min) and by_min[i].min_row == key:
            below += by_min[i].num_cells
            i += 1
    by_max = sorted(groups, key=lambda g: g.max_row or b"")
    upto = 0  # cells in groups whose max is <= the current candidate
    b = by_max[-1].max_row or b""
    i = 0
    while i < len(by_max):
        key = by_max[i].max_row or b""
        while i < len(by_max) and by_max[i].max_row == key:
            upto += by_max[i].num_cells
            i += 1
        if upto > p:
            following = by_max[i].max_row if i < len(by_max) else None
            b = following if following is not None else key
            break
    return a, b


def _best_key(
    readers: Sequence[StoreFileReader],
    groups: Sequence[tuple[int, RowGroupStats]],
    total: int,
    window: tuple[bytes, bytes] | None,
) -> bytes | None:
    """The data row in ``window`` (all rows when None) that best halves ``total`` cells.

    Reads only the ``row`` column, dictionary-encoded, of the row groups meeting the
    window; per row group, distinct rows are counted with ``bincount`` over the indices.
    """
    below = 0  # cells surely before the window
    rows: list[pa.Array] = []
    counts: list[np.ndarray] = []
    for i, g in groups:
        if window is not None:
            a, b = window
            assert g.min_row is not None and g.max_row is not None
            if g.max_row < a:
                below += g.num_cells
                continue
            if g.min_row > b:
                continue
        col = readers[i].read_row_groups([g.index], columns=["row"], encoded=True).column("row")
        for chunk in col.chunks:
            if not isinstance(chunk, pa.DictionaryArray):
                chunk = chunk.dictionary_encode()
            dictionary = chunk.dictionary.cast(pa.binary())
            n = np.bincount(chunk.indices.to_numpy(zero_copy_only=False), minlength=len(dictionary))
            if window is not None:
                lt = pc.less(dictionary, pa.scalar(window[0], pa.binary()))
                le = pc.less_equal(dictionary, pa.scalar(window[1], pa.binary()))
                lt_np = lt.to_numpy(zero_copy_only=False)
                below += int(n[lt_np].sum())
                keep = np.logical_and(~lt_np, le.to_numpy(zero_copy_only=False))
                dictionary = dictionary.filter(pa.array(keep))
                n = n[keep]
            rows.append(dictionary)
            counts.append(n)
    all_rows = pa.concat_arrays(rows) if rows else pa.array([], pa.binary())
    if len(all_rows) == 0:
        return None
    all_counts = np.concatenate(counts)
    order = pc.sort_indices(all_rows).to_numpy()
    sorted_rows = all_rows.take(pa.array(order))
    sorted_counts = all_counts[order]
    starts = run_starts(sorted_rows)
    distinct = sorted_rows.take(pa.array(starts))
    per_row = np.add.reduceat(sorted_counts, starts)
    before = below + np.concatenate(([0], np.cumsum(per_row)[:-1]))
    # A key needs cells below it (so it is above the region start) and a row at it.
    valid = np.logical_and(before > 0, per_row > 0)
    if not valid.any():
        return None
    cost = np.where(valid, np.abs(2 * before - total), np.iinfo(np.int64).max)
    best = int(np.argmin(cost))
    key: bytes = distinct[best].as_py()
    return key


# --------------------------------------------------------------------------- split plan
@dataclass(frozen=True)
class _Unit:
    """Files of one region and family rewritten together into pieces per child."""

    number: int
    parent: str
    family: str
    seq: int
    entries: tuple[FileEntry, ...]  # in path order: the last wins exact key ties


@dataclass(frozen=True)
class _RegionPlan:
    parent: Region
    keys: tuple[bytes, ...]
    children: tuple[Region, ...]
    reassigned: tuple[tuple[FileEntry, FileEntry], ...]  # (old entry, new entry)
    units: tuple[_Unit, ...]


def _plan_region(
    meta: TableMetadata, parent: Region, keys: Sequence[bytes], *, first_id: int, first_unit: int
) -> _RegionPlan:
    """Plan one region's split: which files are re-assigned and which are cut.

    Children take ids from ``first_id``; units are numbered from ``first_unit``.
    """
    children = _children(parent, keys, first_id)
    numbers = itertools.count(first_unit)
    reassigned: list[tuple[FileEntry, FileEntry]] = []
    units: list[_Unit] = []
    for family in meta.family_names:
        by_seq: dict[int, list[FileEntry]] = {}
        for f in meta.files_of(parent.id, family):
            by_seq.setdefault(f.seq, []).append(f)
        for seq, entries in by_seq.items():
            spans = [
                _child_index(keys, e.first_row) != _child_index(keys, e.last_row) for e in entries
            ]
            group = any(spans) and len(entries) > 1 and _overlapping(entries)
            if group:
                ordered = tuple(sorted(entries, key=lambda e: e.path))
                units.append(_Unit(next(numbers), parent.id, family, seq, ordered))
                continue
            for e, span in zip(entries, spans, strict=True):
                if span:
                    units.append(_Unit(next(numbers), parent.id, family, seq, (e,)))
                else:
                    child = children[_child_index(keys, e.first_row)]
                    reassigned.append((e, dataclasses.replace(e, region=child.id)))
    return _RegionPlan(parent, tuple(keys), children, tuple(reassigned), tuple(units))


def _cut(
    table: TableHandle,
    meta: TableMetadata,
    unit: _Unit,
    children: Sequence[Region],
    *,
    job_id: str,
    row_group_cells: int,
) -> list[WrittenFile]:
    """Write ``unit``'s cells as one file per child region they meet."""
    family = meta.family(unit.family)
    first = min(e.first_row for e in unit.entries)
    last = max(e.last_row for e in unit.entries)
    readers = [StoreFileReader(table.fs, table.file_path(e), entry=e) for e in unit.entries]
    out: list[WrittenFile] = []
    try:
        for child in children:
            if not child.overlaps(first, last + b"\x00"):
                continue
            parts = [
                rd.read(start=child.start, stop=child.end)
                for rd, e in zip(readers, unit.entries, strict=True)
                if child.overlaps(e.first_row, e.last_row + b"\x00")
            ]
            parts = [p for p in parts if p.num_rows]
            if not parts:
                continue
            if len(parts) == 1:
                cells = parts[0]
            else:
                # Path order, stable sort, keep the last of equal keys: what a read does.
                # The unit's files share one seq: merge_runs ranks the later path newer
                # and puts its cell first among equal keys (R3.2), which a read keeps.
                merged = merge_runs(parts, [unit.seq] * len(parts))
                cells = merged.filter(pa.array(~equal_key_runs(merged)))
            # One file per child (no rolling: the parent's file was within its limit).
            out += write_rolled(
                table.fs,
                table.path,
                cells.select(CELL_SCHEMA.names),
                region=child.id,
                family=family,
                stem=f"{job_id}-f{unit.number:04d}",
                seq=unit.seq,
                load_id=job_id,
                max_file_bytes=NO_ROLL,
                row_group_cells=row_group_cells,
            )
    finally:
        for rd in readers:
            rd.close()
    return out


def _remove_quietly(table: TableHandle, written: Iterable[WrittenFile]) -> None:
    """Best effort: delete files a failed job wrote (they are unreferenced anyway)."""
    for w in written:
        with contextlib.suppress(OSError):
            table.fs.rm(join(table.path, w.relpath))


def _run_parallel(
    table: TableHandle, tasks: Sequence[Callable[[], list[WrittenFile]]], *, max_workers: int
) -> list[WrittenFile]:
    """Run the rewrite tasks on threads; on failure remove what the others wrote, re-raise."""
    if not tasks:
        return []
    written: list[WrittenFile] = []
    error: BaseException | None = None
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(tasks)))) as pool:
        futures = [pool.submit(t) for t in tasks]
        for fut in futures:
            try:
                written.extend(fut.result())
            except BaseException as e:  # collect the others' files before raising
                error = error or e
    if error is not None:
        _remove_quietly(table, written)
        raise error
    return written


def _renumber(base_next: int, meta: TableMetadata, planned: Sequence[str]) -> dict[str, str]:
    """Planned new region ids -> ids taken from ``meta`` (equal when nothing intervened)."""
    if meta.next_region_id == base_next:
        return {p: p for p in planned}
    start = meta.next_region_id
    return {p: region_id(start + i) for i, p in enumerate(planned)}


# --------------------------------------------------------------------------------- split
def split(
    table: TableHandle,
    *,
    region: str | None = None,
    at: bytes | str | Iterable[bytes | str] | None = None,
    dry_run: bool = False,
    max_workers: int = DEFAULT_MAX_WORKERS,
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
) -> SplitReport:
    """Split regions of ``table`` (its newest version) at given keys or near their middle.

    Contract: after the commit every read (normal, raw, all versions; delete markers and
    exact key ties between loads resolve as before) returns what it returned before; every
    file entry's rows lie inside its region; files entirely on one side of a key are
    re-assigned, files spanning one are rewritten keeping their sequence number (module
    docstring). One commit; nothing is visible before it, and a failure leaves only
    unreferenced files (removed on a best-effort basis, else by vacuum).

    Args:
        table: The table (a handle at the latest version; it is refreshed first and moved
            to the committed version after).
        region: Id of the region to split. Without ``at``: that region is split at
            :func:`split_point`. With ``at``: every key must lie inside it.
        at: Split key(s) (bytes, or str encoded as UTF-8). Several keys make several
            children; keys in several regions split each of them (in one commit). A key
            that already is a region boundary is skipped (so re-running a split is a
            no-op). Without ``at`` and ``region``, the largest region (by bytes; the first
            of equals) is split near its middle.
        dry_run: Plan only: report the keys, children and files, write and commit nothing.
        max_workers: Files rewritten concurrently.
        row_group_cells: Cells per Parquet row group of rewritten files.

    Returns:
        A :class:`SplitReport`.

    Raises:
        InvalidArgumentError: unknown region; a pinned handle; nothing to split (without
            ``at``: an empty table or region, or one holding a single row).
        InvalidRowRangeError: a key that is empty, too long, or outside ``region``.
        JobConflictError: a concurrent job changed the region or its files, or a
            concurrent load added a file spanning a new key; nothing was committed.
    """
    started = time.perf_counter()
    meta = _latest(table, "split")
    job_id = new_job_id("split")
    targets, skipped = _targets(table, meta, region, at)
    plans = _plans(meta, targets)

    def report(
        plans: Sequence[_RegionPlan], version: int | None, written: Sequence[WrittenFile]
    ) -> SplitReport:
        return SplitReport(
            table=meta.name,
            job_id=job_id,
            version=version,
            splits=tuple(_region_split(p, written) for p in plans),
            skipped_keys=tuple(skipped),
            dry_run=dry_run,
            seconds=time.perf_counter() - started,
        )

    if dry_run or not plans:
        return report(plans, None, [])
    tasks = [
        functools.partial(
            _cut, table, meta, u, p.children, job_id=job_id, row_group_cells=row_group_cells
        )
        for p in plans
        for u in p.units
    ]
    written = _run_parallel(table, tasks, max_workers=max_workers)
    try:
        committed = _commit_split(table, meta, plans, written, job_id=job_id)
    except BaseException:
        _remove_quietly(table, written)
        raise
    table.refresh()
    # Report the ids the commit actually used.
    planned_ids = [c.id for p in plans for c in p.children]
    ids = _renumber(meta.next_region_id, _before(committed, len(planned_ids)), planned_ids)
    plans = [
        dataclasses.replace(
            p, children=tuple(dataclasses.replace(c, id=ids[c.id]) for c in p.children)
        )
        for p in plans
    ]
    written = [dataclasses.replace(w, region=ids[w.region]) for w in written]
    from cellstore.jobs.index.local import after_regions_change

    after_regions_change(table, [c.id for p in plans for c in p.children])  # local indexes
    return report(plans, committed.version, written)


def _targets(
    table: TableHandle,
    meta: TableMetadata,
    region: str | None,
    at: bytes | str | Iterable[bytes | str] | None,
) -> tuple[dict[str, list[bytes]], list[bytes]]:
    """The split keys per region id, and the keys skipped (already region boundaries)."""
    targets: dict[str, list[bytes]] = {}
    skipped: list[bytes] = []
    if at is None:
        chosen = _largest_or(meta, region)
        files = [f for f in meta.files if f.region == chosen.id]
        if not files:
            raise InvalidArgumentError(
                f"table {meta.name}: region {chosen.id} {_bounds(chosen)} is empty; "
                "give a split key to split it"
            )
        point = _split_point(table, files)
        if point is None:
            raise InvalidArgumentError(
                f"table {meta.name}: region {chosen.id} {_bounds(chosen)} holds a single "
                "row; it cannot be split"
            )
        return {chosen.id: [point]}, skipped
    boundaries = {r.start for r in meta.regions}
    only = _region(meta, region) if region is not None else None
    for key in _split_keys(at):
        if key in boundaries:
            skipped.append(key)
            continue
        owner = meta.regions[region_of(meta.split_keys, key)]
        if only is not None and owner.id != only.id:
            raise InvalidRowRangeError(
                f"table {meta.name}: split key '{to_string_binary(key)}' is outside "
                f"region {only.id} {_bounds(only)}"
            )
        targets.setdefault(owner.id, []).append(key)
    return targets, skipped


def _largest_or(meta: TableMetadata, region: str | None) -> Region:
    """Region ``region``, or (None) the largest by bytes, the first of equals."""
    if region is not None:
        return _region(meta, region)
    sizes = region_sizes(meta)
    if not any(sizes.values()):
        raise InvalidArgumentError(f"table {meta.name} holds no data to split")
    return max(meta.regions, key=lambda r: sizes[r.id])  # first of equals


def _plans(meta: TableMetadata, targets: Mapping[str, list[bytes]]) -> list[_RegionPlan]:
    """One plan per region to split, in key order (children ids ascend with keys)."""
    plans: list[_RegionPlan] = []
    next_id = meta.next_region_id
    unit_no = 0
    for r in meta.regions:
        if r.id not in targets:
            continue
        p = _plan_region(meta, r, targets[r.id], first_id=next_id, first_unit=unit_no)
        plans.append(p)
        next_id += len(p.children)
        unit_no += len(p.units)
    return plans


def _region_split(p: _RegionPlan, written: Sequence[WrittenFile]) -> RegionSplit:
    """What the split of one region did (``written``: every file the split wrote)."""
    ids = {c.id for c in p.children}
    mine = [w for w in written if w.region in ids]
    return RegionSplit(
        parent=p.parent.id,
        start=p.parent.start,
        end=p.parent.end,
        keys=p.keys,
        children=tuple(c.id for c in p.children),
        files_reassigned=len(p.reassigned),
        files_cut=sum(len(u.entries) for u in p.units),
        files_written=len(mine),
        cells_rewritten=sum(w.info.cells for w in mine),
        bytes_written=sum(w.info.size for w in mine),
    )


def _commit_split(
    table: TableHandle,
    meta: TableMetadata,
    plans: Sequence[_RegionPlan],
    written: Sequence[WrittenFile],
    *,
    job_id: str,
) -> TableMetadata:
    """Commit the children, the re-assigned files and the cut pieces in one commit."""
    # Every piece keeps its unit's seq (written into its footer too).
    added = [file_entry(w, seq=w.info.seq, load_id=job_id) for w in written]
    removed = [old for p in plans for old, _ in p.reassigned]
    removed += [e for p in plans for u in p.units for e in u.entries]
    moved = [new for p in plans for _, new in p.reassigned]
    planned_ids = [c.id for p in plans for c in p.children]
    ours = {(e.path, e.family) for e in (*moved, *added)}
    summary: dict[str, Any] = {
        "job-id": job_id,
        "regions-split": len(plans),
        "regions-created": len(planned_ids),
        "files-reassigned": len(moved),
        "files-cut": sum(len(u.entries) for p in plans for u in p.units),
        "files-written": len(written),
        "bytes-written": sum(w.info.size for w in written),
    }
    return commit(
        table.log,
        Commit(
            changes=[FileChange(remove=removed, add=[*moved, *added])],
            operation="split",
            summary=summary,
            update=lambda staged: _split_change(
                staged.meta, plans, meta.next_region_id, planned_ids, ours
            ),
        ),
    ).metadata


def _split_change(
    staged: TableMetadata,
    plans: Sequence[_RegionPlan],
    base_next: int,
    planned_ids: Sequence[str],
    ours: set[tuple[str, str]],
) -> dict[str, Any]:
    """The split applied to the version being committed (which may hold others' commits).

    Raises:
        JobConflictError: a parent region changed, or a concurrent load added a file across
            a split key.
    """
    current = {r.id: r for r in staged.regions}
    for p in plans:
        if current.get(p.parent.id) != p.parent:
            raise JobConflictError(
                f"table {staged.name}: region {p.parent.id} {_bounds(p.parent)} was split "
                "or merged by another job while this split ran; nothing was committed, "
                "run the split again"
            )
    ids = _renumber(base_next, staged, planned_ids)
    by_parent = {p.parent.id: p for p in plans}
    files = []
    for e in staged.files:
        owner = by_parent.get(e.region)
        if owner is not None:  # added to the parent by a concurrent load
            lo = _child_index(owner.keys, e.first_row)
            if lo != _child_index(owner.keys, e.last_row):
                raise JobConflictError(
                    f"table {staged.name}: a concurrent commit added {e.path} to region "
                    f"{owner.parent.id} across a split key while this split ran; nothing "
                    "was committed, run the split again"
                )
            e = dataclasses.replace(e, region=ids[owner.children[lo].id])
        elif (e.path, e.family) in ours and ids[e.region] != e.region:
            e = dataclasses.replace(e, region=ids[e.region])
        files.append(e)
    regions: list[Region] = []
    for r in staged.regions:
        owner = by_parent.get(r.id)
        if owner is None:
            regions.append(r)
        else:
            regions += [dataclasses.replace(c, id=ids[c.id]) for c in owner.children]
    check_regions(regions)
    return {
        "regions": tuple(regions),
        "next_region_id": staged.next_region_id + len(planned_ids),
        "files": tuple(files),
    }


def _before(committed: TableMetadata, created: int) -> TableMetadata:
    """``committed`` with the ``next_region_id`` it had before creating ``created`` ids."""
    return committed.evolve(next_region_id=committed.next_region_id - created)


# --------------------------------------------------------------------------------- merge

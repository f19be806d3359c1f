"""Region merge (see :mod:`cellstore.jobs.regions`)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

from cellstore.commit import Commit, FileChange, commit
from cellstore.core.metadata import TableMetadata
from cellstore.core.regions import Region, check_regions, region_id
from cellstore.errors import InvalidArgumentError, JobConflictError
from cellstore.handle import TableHandle
from cellstore.jobs.common import new_job_id

__all__ = ["merge", "merge_small"]

#: Store files a split rewrites concurrently (pyarrow releases the GIL).
from cellstore.jobs.regions._common import (
    MergeReport,
    RegionMerge,
    _bounds,
    _latest,
    _region,
    region_sizes,
)
from cellstore.jobs.regions.splitting import (
    _before,
    _renumber,
)


def merge(
    table: TableHandle,
    *,
    regions: Sequence[str],
    dry_run: bool = False,
) -> MergeReport:
    """Merge adjacent regions of ``table`` (its newest version) into one.

    Contract: the new region spans all of ``regions``; their files are re-assigned to it
    (same paths and sequence numbers, nothing rewritten), so every read returns what it
    returned before. One commit.

    Args:
        table: The table (refreshed first, moved to the committed version after).
        regions: Ids of two or more regions that together form one contiguous key range,
            in any order.
        dry_run: Plan only: report the merge, commit nothing.

    Returns:
        A :class:`MergeReport` with one merge.

    Raises:
        InvalidArgumentError: fewer than two regions, an unknown or repeated id, regions
            that are not adjacent, or a pinned handle.
        JobConflictError: a concurrent job split or merged one of the regions; nothing
            was committed.
    """
    started = time.perf_counter()
    meta = _latest(table, "merge")
    ids = list(regions) if not isinstance(regions, str) else [regions]
    if len(ids) < 2:
        raise InvalidArgumentError("merge needs at least two regions")
    if len(set(ids)) != len(ids):
        raise InvalidArgumentError(f"merge: a region is given twice ({', '.join(ids)})")
    chosen = [_region(meta, rid) for rid in ids]
    position = {r.id: i for i, r in enumerate(meta.regions)}
    chosen.sort(key=lambda r: position[r.id])
    idx = [position[r.id] for r in chosen]
    if idx != list(range(idx[0], idx[0] + len(idx))):
        raise InvalidArgumentError(
            f"table {meta.name}: regions {', '.join(r.id for r in chosen)} are not adjacent "
            "(only neighbouring regions can be merged)"
        )
    return _merge_groups(table, meta, [tuple(chosen)], dry_run=dry_run, started=started)


def merge_small(
    table: TableHandle,
    *,
    max_bytes: int,
    dry_run: bool = False,
) -> MergeReport:
    """Merge runs of adjacent regions whose files together stay within ``max_bytes``.

    Walks the regions in key order and grows a run while the run's total size plus the
    next region's stays ``<= max_bytes`` (HBase's normalizer merges small neighbours the
    same way, two at a time); every run of two or more regions becomes one region, all in
    one commit. A table whose neighbours are all too big commits nothing. Empty regions
    count 0 bytes.

    Args:
        table: The table (refreshed first, moved to the committed version after).
        max_bytes: Most bytes of store files a merged region may hold.
        dry_run: Plan only.

    Returns:
        A :class:`MergeReport` (``version`` None when nothing was merged).

    Raises:
        InvalidArgumentError: ``max_bytes`` negative, or a pinned handle.
        JobConflictError: a concurrent job split or merged one of the regions.
    """
    started = time.perf_counter()
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise InvalidArgumentError(f"max_bytes must be a non-negative integer, not {max_bytes!r}")
    meta = _latest(table, "merge")
    sizes = region_sizes(meta)
    runs: list[list[Region]] = []
    run: list[Region] = []
    run_bytes = 0
    for r in meta.regions:
        if run and run_bytes + sizes[r.id] <= max_bytes:
            run.append(r)
            run_bytes += sizes[r.id]
            continue
        if len(run) > 1:
            runs.append(run)
        run, run_bytes = [r], sizes[r.id]
    if len(run) > 1:
        runs.append(run)
    return _merge_groups(table, meta, [tuple(g) for g in runs], dry_run=dry_run, started=started)


def _merge_groups(
    table: TableHandle,
    meta: TableMetadata,
    groups: Sequence[tuple[Region, ...]],
    *,
    dry_run: bool,
    started: float,
) -> MergeReport:
    job_id = new_job_id("merge")
    base_next = meta.next_region_id
    new_regions = [
        Region(region_id(base_next + i), g[0].start, g[-1].end) for i, g in enumerate(groups)
    ]
    target = {r.id: new.id for g, new in zip(groups, new_regions, strict=True) for r in g}
    removed = [f for f in meta.files if f.region in target]
    moved = [dataclasses.replace(f, region=target[f.region]) for f in removed]

    def report(version: int | None, ids: Mapping[str, str]) -> MergeReport:
        merges = []
        for g, new in zip(groups, new_regions, strict=True):
            mine = [f for f in removed if target[f.region] == new.id]
            merges.append(
                RegionMerge(
                    merged=tuple(r.id for r in g),
                    region=ids.get(new.id, new.id),
                    start=new.start,
                    end=new.end,
                    files_reassigned=len(mine),
                    bytes=sum(f.size for f in mine),
                )
            )
        return MergeReport(
            table=meta.name,
            job_id=job_id,
            version=version,
            merges=tuple(merges),
            dry_run=dry_run,
            seconds=time.perf_counter() - started,
        )

    if dry_run or not groups:
        return report(None, {})
    planned_ids = [r.id for r in new_regions]
    ours = {(e.path, e.family) for e in moved}
    merged_ids = {r.id: r for g in groups for r in g}
    first_of = {g[0].id: (g, new) for g, new in zip(groups, new_regions, strict=True)}

    def change(staged: TableMetadata) -> dict[str, Any]:
        current = {r.id: r for r in staged.regions}
        for rid, r in merged_ids.items():
            if current.get(rid) != r:
                raise JobConflictError(
                    f"table {staged.name}: region {rid} {_bounds(r)} was split or merged by "
                    "another job while this merge ran; nothing was committed, run the merge "
                    "again"
                )
        ids = _renumber(base_next, staged, planned_ids)
        files = []
        for e in staged.files:
            if e.region in target:  # added to a merged region by a concurrent load
                e = dataclasses.replace(e, region=ids[target[e.region]])
            elif (e.path, e.family) in ours and ids[e.region] != e.region:
                e = dataclasses.replace(e, region=ids[e.region])
            files.append(e)
        regions: list[Region] = []
        for r in staged.regions:
            if r.id in first_of:
                _, new = first_of[r.id]
                regions.append(dataclasses.replace(new, id=ids[new.id]))
            elif r.id not in merged_ids:
                regions.append(r)
        check_regions(regions)
        return {
            "regions": tuple(regions),
            "next_region_id": staged.next_region_id + len(planned_ids),
            "files": tuple(files),
        }

    committed = commit(
        table.log,
        Commit(
            changes=[FileChange(remove=removed, add=moved)],
            operation="merge",
            summary={
                "job-id": job_id,
                "regions-merged": sum(len(g) for g in groups),
                "regions-created": len(groups),
                "files-reassigned": len(moved),
            },
            update=lambda staged: change(staged.meta),
        ),
    ).metadata
    table.refresh()
    ids = _renumber(base_next, _before(committed, len(planned_ids)), planned_ids)
    from cellstore.jobs.index.local import after_regions_change

    after_regions_change(table, list(ids.values()))  # local indexes
    return report(committed.version, ids)

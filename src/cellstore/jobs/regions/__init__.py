"""Region split and merge: change how a table is cut into regions without losing a cell.

Invariant kept by both jobs: every live file entry's rows lie inside its region (R2.3;
``verify`` checks it), and cells keep the sequence number they were loaded with (R3.2).

**Split** of a region ``R`` at keys ``k1 < ... < kn`` replaces ``R`` by ``n + 1`` child
regions with fresh ids. Per family:

- a file of ``R`` whose rows all fall into one child is *re-assigned* to it: same path,
  same ``seq``, only the entry's region changes, nothing is rewritten;
- a file spanning a key is *cut*: its cells are rewritten into one file per child it meets
  (R14.4's bottom/top halves), each keeping the original's ``seq``, written with the
  family's settings to ``data/<child id>/<family>/<job id>-f<k>.parquet``. Each piece is
  read with row-group pruning (:meth:`~cellstore.storefiles.StoreFileReader.read`), so a
  cut holds one piece (plus up to two row groups) in memory, never the whole file at once
  (the storefiles writer takes a whole table, so a piece is not streamed further);
- files of one load share a ``seq``; readers break exact key ties between them by path
  (docs/format.md section 3.1), and a cut piece gets a new path. So when a group of
  equal-``seq`` files of ``R`` overlap in rows and one of them must be cut, the whole group
  is merged per child into one piece (exact duplicates resolved as the reader does: the
  file whose path sorts last wins, R3.3); that piece is held in memory while written.
  Results of every read are unchanged.

Without explicit keys the split point is the row nearest the middle of the region's cells
(all families counted): row-group statistics narrow the search to the few row groups that
can hold the median cell, and only their ``row`` column is read, dictionary-encoded.

**Merge** of adjacent regions replaces them by one region spanning them all; every file is
re-assigned (no rewrite: a path belongs to exactly one region, so nothing is duplicated).

Both commit once through :func:`~cellstore.jobs.common.replace_files`. The commit re-checks
on the newest version that the regions still exist with the same bounds
(:class:`~cellstore.errors.JobConflictError` otherwise) and moves files that a concurrent
load added to a split or merged region after the job planned: into the merged region, or
into the child that holds all their rows (a file spanning a new split key fails the commit
with JobConflictError: run the split again). Loads that commit after the split get
:class:`~cellstore.errors.RegionsChangedError` and the bulk loader re-routes them. New
region ids are taken from the newest version's ``next-region-id`` (ids are never reused).
"""

from __future__ import annotations

from cellstore.jobs.regions._common import (
    DEFAULT_MAX_WORKERS,
    MergeReport,
    RegionMerge,
    RegionSplit,
    SplitReport,
    region_sizes,
)
from cellstore.jobs.regions.merging import merge, merge_small
from cellstore.jobs.regions.splitting import split, split_point

__all__ = [
    "DEFAULT_MAX_WORKERS",
    "MergeReport",
    "RegionMerge",
    "RegionSplit",
    "SplitReport",
    "merge",
    "merge_small",
    "region_sizes",
    "split",
    "split_point",
]

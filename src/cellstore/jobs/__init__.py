"""Batch jobs that keep a table healthy.

Compaction, TTL purge, region split and merge, snapshots, export and copy, HFile export for
HBase's bulk load, vacuum, metadata expiry, verify and secondary indexes.

Each job is a plain function taking a :class:`~cellstore.handle.TableHandle` (a
:class:`~cellstore.warehouse.Table` is one; jobs never import the facade) and keyword-only
options, and returning a typed report; a job with many options also takes them as one
frozen object (:class:`CompactionOptions`, :class:`MaintainOptions`, :class:`IndexOptions`)
whose fields the keywords override. Each commits at most once, only if its inputs are
still live (through :func:`cellstore.commit.commit`, the one commit path), so it is safe to
run while loads are happening.
"""

from __future__ import annotations

from cellstore.jobs.common import new_job_id
from cellstore.jobs.compact import CompactionOptions, CompactionReport, compact
from cellstore.jobs.expire import ExpireReport, expire, rewrite_manifests
from cellstore.jobs.export import CopyReport, ExportReport, copy_table, export
from cellstore.jobs.hfile_export import (
    ExportedHFile,
    HFileExportOptions,
    HFileExportReport,
    export_hfiles,
)
from cellstore.jobs.index import (
    Index,
    IndexBuildReport,
    IndexDefinition,
    IndexOptions,
    IndexVerifyReport,
    build_index,
    create_index,
    drop_index,
    list_indexes,
    open_index,
    verify_index,
)
from cellstore.jobs.maintain import MaintainOptions, MaintainReport, maintain
from cellstore.jobs.purge import purge_ttl
from cellstore.jobs.regions import (
    MergeReport,
    RegionMerge,
    RegionSplit,
    SplitReport,
    merge,
    merge_small,
    region_sizes,
    split,
    split_point,
)
from cellstore.jobs.snapshots import (
    CloneReport,
    RestoreReport,
    SnapshotInfo,
    clone,
    delete_snapshot,
    list_snapshots,
    restore,
    snapshot,
)
from cellstore.jobs.vacuum import VacuumReport, vacuum
from cellstore.jobs.verify import VerifyProblem, VerifyReport, verify

__all__ = [
    "CompactionOptions",
    "CompactionReport",
    "MaintainOptions",
    "MaintainReport",
    "compact",
    "maintain",
    "purge_ttl",
    "CloneReport",
    "CopyReport",
    "ExpireReport",
    "ExportReport",
    "RestoreReport",
    "SnapshotInfo",
    "VacuumReport",
    "VerifyProblem",
    "VerifyReport",
    "clone",
    "copy_table",
    "delete_snapshot",
    "expire",
    "export",
    "export_hfiles",
    "ExportedHFile",
    "HFileExportOptions",
    "HFileExportReport",
    "list_snapshots",
    "restore",
    "snapshot",
    "vacuum",
    "verify",
    "MergeReport",
    "RegionMerge",
    "RegionSplit",
    "SplitReport",
    "merge",
    "merge_small",
    "new_job_id",
    "region_sizes",
    "rewrite_manifests",
    "split",
    "split_point",
    "Index",
    "IndexBuildReport",
    "IndexDefinition",
    "IndexOptions",
    "IndexVerifyReport",
    "build_index",
    "create_index",
    "drop_index",
    "list_indexes",
    "open_index",
    "verify_index",
]

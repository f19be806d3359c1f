"""Batch jobs that keep a table healthy: compaction, TTL purge, region split and merge,
snapshots, export and copy, vacuum, verify and secondary indexes.

Each job is a plain function taking a :class:`~cellstore.warehouse.Table` (and keyword-only
options) and returning a typed report; each commits at most once, only if its inputs are
still live (:mod:`cellstore.jobs.common`), so it is safe to run while loads are happening.
"""

from __future__ import annotations

from cellstore.jobs.common import Replacement, new_job_id, replace_files
from cellstore.jobs.compact import CompactionReport, compact
from cellstore.jobs.purge import purge_ttl

__all__ = [
    "CompactionReport",
    "Replacement",
    "compact",
    "new_job_id",
    "purge_ttl",
    "replace_files",
]

"""What every batch job shares: job ids.

Jobs write their store files through :mod:`cellstore.storefiles` (``write_rolled``) and
commit once through :func:`cellstore.commit.commit`: the commit removes the job's input
entries and adds its outputs, and only if every input entry is still live in the newest
version (same path, region and family). A load that lands while the job runs is kept (its
files are not inputs); a job whose inputs were changed underneath it (another compaction,
a split) fails with :class:`~cellstore.errors.JobConflictError` (or, for compaction, skips
that store) and leaves only unreferenced files, which vacuum removes. Jobs are idempotent:
re-running one on an already-healthy table commits nothing.
"""

from __future__ import annotations

import uuid

from cellstore.commit import now_ms

__all__ = ["new_job_id"]


def new_job_id(kind: str) -> str:
    """A fresh, unique id for one run of job ``kind`` (sortable by time), e.g. ``compact-...``."""
    return f"{kind}-{now_ms():013d}-{uuid.uuid4().hex[:8]}"

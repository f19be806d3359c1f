"""What every batch job shares: job ids and options with keyword overrides.

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

import dataclasses
import uuid
from collections.abc import Mapping
from typing import Any, TypeVar

from cellstore.commit import now_ms

__all__ = ["new_job_id", "with_overrides"]


def new_job_id(kind: str) -> str:
    """A fresh, unique id for one run of job ``kind`` (sortable by time), e.g. ``compact-...``."""
    return f"{kind}-{now_ms():013d}-{uuid.uuid4().hex[:8]}"


Options = TypeVar("Options")


def with_overrides(
    kind: type[Options], options: Options | None, overrides: Mapping[str, Any]
) -> Options:
    """``options`` (default: ``kind()``) with the keyword ``overrides`` replacing fields.

    The pattern of every job with many options: ``job(table, options=None, /,
    **overrides)``, so ``compact(table, major=True)`` and
    ``compact(table, CompactionOptions(major=True))`` mean the same.

    Raises:
        TypeError: an override that names no field of ``kind``.
    """
    base = options if options is not None else kind()
    if not overrides:
        return base
    unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(kind)})  # type: ignore[arg-type]
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {', '.join(unknown)}")
    return dataclasses.replace(base, **overrides)  # type: ignore[type-var]

"""What every batch job shares: job ids, options with keyword overrides, the retention check.

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
from typing import Any, Final, TypeVar

from cellstore.commit import now_ms
from cellstore.errors import InvalidArgumentError

__all__ = [
    "DEFAULT_RETENTION_MS",
    "MIN_RETENTION_MS",
    "check_retention",
    "new_job_id",
    "with_overrides",
]

#: Default retention: 7 days, as Delta Lake's VACUUM.
DEFAULT_RETENTION_MS: Final = 7 * 24 * 3600 * 1000
#: Shortest retention accepted unless ``enforce_retention=False``: a load or job that takes
#: longer than the retention period could otherwise lose files it has written but not yet
#: committed, and a reader the version it reads.
MIN_RETENTION_MS: Final = 3600 * 1000


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


def check_retention(retention_ms: int, *, enforce: bool = True) -> None:
    """Refuse a retention period a deleting job must not run with.

    The one retention check of the jobs that delete what is older than a retention
    (``vacuum``'s files, ``expire``'s metadata versions), so both refuse the same periods
    with the same message.

    Args:
        retention_ms: The retention period.
        enforce: Refuse a period shorter than :data:`MIN_RETENTION_MS` (an hour); False
            only when no load, job or reader can be running (CLI: ``--no-retention-check``).

    Raises:
        InvalidArgumentError: a negative period, or one under an hour while ``enforce``.
    """
    if retention_ms < 0:
        raise InvalidArgumentError(f"retention must be >= 0 ms, got {retention_ms}")
    if enforce and retention_ms < MIN_RETENTION_MS:
        raise InvalidArgumentError(
            f"retention {retention_ms} ms is shorter than {MIN_RETENTION_MS} ms (1 hour): a "
            "load, job or reader still running could lose files or versions it still needs; "
            "pass enforce_retention=False (CLI: --no-retention-check) if none can be running"
        )

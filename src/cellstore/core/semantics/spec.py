"""The read a semantics pass applies: :class:`ReadSpec`."""

from __future__ import annotations

from dataclasses import dataclass

from cellstore.core.cells import LATEST_TIMESTAMP
from cellstore.core.semantics.arrays import _INT64_MIN
from cellstore.core.semantics.compaction import CompactionSpec
from cellstore.errors import InvalidArgumentError


@dataclass(frozen=True, kw_only=True)
class ReadSpec:
    """What one read (a Get or a Scan) wants from one family.

    Attributes:
        now_ms: "Now" in epoch milliseconds, taken once per read, for TTL expiry (R8.1).
        max_versions: The read's max versions (``readVersions``); None means HBase's default
            of 1 (R6.1), for raw reads too. Normal reads are further capped by the family's
            ``max_versions``; raw reads are not (R10.2).
        time_range: ``[min, max)`` in ms (R7.1); None means all time. ``(0,
            LATEST_TIMESTAMP)`` is also "all time", exactly as HBase's ``TimeRange``.
        raw: A raw read returns puts and delete markers without applying markers (R10).
        qualifiers: Explicitly requested columns of this family (R11.1); None (or an empty
            set, as in HBase's ``getTrackers``) means the whole family.
        max_results_per_family: ``Scan#setMaxResultsPerColumnFamily``: at most this many
            cells per row of this family (R12.7); None means no limit.
        row_offset_per_family: ``Scan#setRowOffsetPerColumnFamily``: skip this many cells at
            the start of each row of this family (R12.7).
        compaction: Not a read but a compaction (R13): the pass returns what the
            compaction writes, puts and markers (see :mod:`.compaction`); the other read
            options must keep their defaults.

    Raises:
        InvalidArgumentError: on a raw read naming columns (R10.4), ``max_versions < 1``, a
            time range with ``min < 0`` or ``max < min`` (R7.1), a negative limit/offset, or
            a count that is not an integer.
    """

    now_ms: int
    max_versions: int | None = None
    time_range: tuple[int, int] | None = None
    raw: bool = False
    qualifiers: frozenset[bytes] | None = None
    max_results_per_family: int | None = None
    row_offset_per_family: int = 0
    compaction: CompactionSpec | None = None

    def __post_init__(self) -> None:
        for name in ("now_ms", "max_versions", "max_results_per_family", "row_offset_per_family"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise InvalidArgumentError(f"{name} must be an integer, not {value!r}")
        if not _INT64_MIN <= self.now_ms <= LATEST_TIMESTAMP:
            raise InvalidArgumentError(f"now_ms {self.now_ms} is outside the int64 range")
        if self.qualifiers is not None:
            quals = frozenset(self.qualifiers)
            if not all(isinstance(q, bytes) for q in quals):
                raise InvalidArgumentError("qualifiers must be bytes")
            object.__setattr__(self, "qualifiers", quals or None)
        if self.raw and self.qualifiers is not None:
            raise InvalidArgumentError("Cannot specify any column for a raw scan (R10.4)")
        if self.max_versions is not None and self.max_versions < 1:
            raise InvalidArgumentError(f"max_versions must be >= 1, got {self.max_versions}")
        if self.time_range is not None:
            lo, hi = self.time_range
            if lo < 0 or hi < lo:
                raise InvalidArgumentError(
                    f"time range must satisfy 0 <= min <= max, got [{lo}, {hi})"
                )
            object.__setattr__(self, "time_range", (int(lo), int(hi)))
        if self.compaction is not None and (
            self.raw
            or self.qualifiers is not None
            or not self.all_time
            or self.max_results_per_family is not None
            or self.row_offset_per_family
        ):
            raise InvalidArgumentError("a compaction reads all cells of its files")
        if self.max_results_per_family is not None and self.max_results_per_family < 0:
            raise InvalidArgumentError(
                f"max_results_per_family must be >= 0, got {self.max_results_per_family}"
            )
        if self.row_offset_per_family < 0:
            raise InvalidArgumentError(
                f"row_offset_per_family must be >= 0, got {self.row_offset_per_family}"
            )

    @property
    def all_time(self) -> bool:
        """Whether the time range is "all time" (HBase ``TimeRange#isAllTime``, R7.1)."""
        return self.time_range is None or self.time_range == (0, LATEST_TIMESTAMP)

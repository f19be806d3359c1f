"""HBase's minor-compaction file selection (``ExploringCompactionPolicy``), as a pure function.

HBase's default store engine picks the files of a periodic minor compaction with
``ExploringCompactionPolicy`` (on top of ``RatioBasedCompactionPolicy`` /
``SortedCompactionPolicy``). Over a store's files, oldest first, with their sizes:

1. the store *might be stuck* when it holds at least ``blocking_files`` files
   (``hbase.hstore.blockingStoreFiles``);
2. leading (oldest) files larger than ``max_size`` (``hbase.hstore.compaction.max.size``,
   off-peak: ``...max.size.offpeak``) are skipped;
3. every contiguous run of ``min_files``..``max_files`` candidates is considered; a run is
   admissible when its total is at most ``max_size`` and it is *in ratio*: every file is at
   most ``ratio`` times the sum of the others (``hbase.hstore.compaction.ratio`` 1.2, off-peak
   ``...ratio.offpeak`` 5.0) -- runs totalling less than ``min_size``
   (``hbase.hstore.compaction.min.size``) need not be in ratio;
4. the best admissible run takes the most files, then the smallest total; when the store
   might be stuck, a later run replaces the best only if its files-per-byte is over 5%
   better, and with no admissible run the smallest run is taken;
5. a selection of fewer than ``min_files`` files is no selection.

:func:`select_files` returns the chosen run as indexes into the given sizes; the caller maps
them back to files. Settings read from table properties with HBase's names
(:meth:`SelectionPolicy.from_properties`). Cases from HBase's ``TestDefaultCompactSelection``
are replayed in ``tests/test_compaction_selection.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final

from cellstore.errors import InvalidArgumentError

__all__ = ["PROPERTY_NAMES", "Selection", "SelectionPolicy", "explore", "select_files"]

#: HBase's ``hbase.hstore.compaction.min.size`` default (the memstore flush size).
DEFAULT_MIN_SIZE: Final = 128 << 20

#: Table property (HBase configuration name) of each :class:`SelectionPolicy` field.
PROPERTY_NAMES: Final[Mapping[str, str]] = {
    "ratio": "hbase.hstore.compaction.ratio",
    "off_peak_ratio": "hbase.hstore.compaction.ratio.offpeak",
    "min_files": "hbase.hstore.compaction.min",
    "max_files": "hbase.hstore.compaction.max",
    "min_size": "hbase.hstore.compaction.min.size",
    "max_size": "hbase.hstore.compaction.max.size",
    "off_peak_max_size": "hbase.hstore.compaction.max.size.offpeak",
    "blocking_files": "hbase.hstore.blockingStoreFiles",
}

#: Older name of ``hbase.hstore.compaction.min``, honoured when the new one is absent.
_COMPACTION_THRESHOLD: Final = "hbase.hstore.compactionThreshold"
#: ``isBetterSelection``: a stuck store replaces its best run only if this much better.
_REPLACE_IF_BETTER_BY: Final = 1.05


@dataclass(frozen=True, kw_only=True)
class SelectionPolicy:
    """Settings of HBase's exploring selection (HBase's defaults).

    Attributes:
        ratio: ``hbase.hstore.compaction.ratio``: a file joins a run only if it is at most
            this times the sum of the run's other files.
        off_peak_ratio: ``hbase.hstore.compaction.ratio.offpeak``, used off-peak.
        min_files: ``hbase.hstore.compaction.min``: fewest files of a selection.
        max_files: ``hbase.hstore.compaction.max``: most files of a selection.
        min_size: ``hbase.hstore.compaction.min.size``: runs smaller than this in total
            are admissible whatever the ratio.
        max_size: ``hbase.hstore.compaction.max.size``: larger files are skipped and
            larger runs refused; None is unlimited (HBase's ``Long.MAX_VALUE``).
        off_peak_max_size: ``hbase.hstore.compaction.max.size.offpeak``; None means
            ``max_size``.
        blocking_files: ``hbase.hstore.blockingStoreFiles``: a store with this many files
            might be stuck, and then compacts its cheapest run if nothing is in ratio.
    """

    ratio: float = 1.2
    off_peak_ratio: float = 5.0
    min_files: int = 3
    max_files: int = 10
    min_size: int = DEFAULT_MIN_SIZE
    max_size: int | None = None
    off_peak_max_size: int | None = None
    blocking_files: int = 16

    def __post_init__(self) -> None:
        if not (self.ratio > 0 and self.off_peak_ratio > 0):
            raise InvalidArgumentError(
                f"compaction ratios must be > 0, got {self.ratio} and {self.off_peak_ratio}"
            )
        if self.min_files < 2 or self.max_files < self.min_files:
            raise InvalidArgumentError(
                "need 2 <= min_files <= max_files, got "
                f"min_files={self.min_files}, max_files={self.max_files}"
            )
        if self.min_size < 0 or self.blocking_files < 1:
            raise InvalidArgumentError("min_size must be >= 0 and blocking_files >= 1")
        for name in ("max_size", "off_peak_max_size"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise InvalidArgumentError(f"{name} must be >= 0, got {value}")

    @classmethod
    def from_properties(cls, properties: Mapping[str, str], **overrides: Any) -> SelectionPolicy:
        """The policy a table's properties configure (HBase names), then ``overrides``.

        Args:
            properties: Table properties; keys of :data:`PROPERTY_NAMES` (and HBase's older
                ``hbase.hstore.compactionThreshold`` for ``min_files``) are read.
            overrides: Field values that win over the properties (None values are ignored).

        Raises:
            InvalidArgumentError: a property that does not parse, or invalid settings.
        """
        values: dict[str, Any] = {}
        types = {f.name: f.type for f in fields(cls)}
        for name, key in PROPERTY_NAMES.items():
            raw = properties.get(key)
            if raw is None and name == "min_files":
                raw = properties.get(_COMPACTION_THRESHOLD)
            if raw is None:
                continue
            try:
                values[name] = float(raw) if "float" in str(types[name]) else int(raw)
            except ValueError:
                raise InvalidArgumentError(
                    f"table property {key}={raw!r} is not a number"
                ) from None
        values.update({k: v for k, v in overrides.items() if v is not None})
        unknown = sorted(set(values) - set(types))
        if unknown:
            raise InvalidArgumentError(f"unknown selection setting(s): {', '.join(unknown)}")
        return cls(**values)

    def max_compact_size(self, *, off_peak: bool) -> int | None:
        """The size limit in force (None: unlimited)."""
        if off_peak and self.off_peak_max_size is not None:
            return self.off_peak_max_size
        return self.max_size


@dataclass(frozen=True)
class Selection:
    """A chosen run of a store's files (indexes into the sizes given, oldest first).

    Attributes:
        start: Index of the first (oldest) file chosen.
        stop: One past the last file chosen; ``start == stop`` when nothing is chosen.
        stuck: Whether the store had at least ``blocking_files`` files.
        off_peak: Whether the off-peak ratio and size limit were used.
        skipped_large: How many oldest files were skipped as larger than ``max_size``.
    """

    start: int
    stop: int
    stuck: bool = False
    off_peak: bool = False
    skipped_large: int = 0

    @property
    def indexes(self) -> range:
        """The chosen files' indexes."""
        return range(self.start, self.stop)

    def __len__(self) -> int:
        return self.stop - self.start

    def __bool__(self) -> bool:
        return self.stop > self.start


def _in_ratio(sizes: Sequence[int], ratio: float) -> bool:
    """Every file is at most ``ratio`` times the sum of the others (HBase's filesInRatio)."""
    if len(sizes) < 2:
        return True
    total = sum(sizes)
    return all(s <= (total - s) * ratio for s in sizes)


def explore(
    sizes: Sequence[int],
    *,
    policy: SelectionPolicy,
    off_peak: bool = False,
    might_be_stuck: bool = False,
) -> tuple[int, int]:
    """HBase's ``ExploringCompactionPolicy.applyCompactionPolicy`` over candidate sizes.

    Args:
        sizes: Candidate file sizes, oldest first.
        policy: The settings.
        off_peak: Use the off-peak ratio and size limit.
        might_be_stuck: The store might be stuck (see :class:`SelectionPolicy`).

    Returns:
        ``(start, stop)`` of the best run (``start == stop``: none). The number of
        candidates is small (a store's files), so the quadratic walk is cheap.
    """
    ratio = policy.off_peak_ratio if off_peak else policy.ratio
    limit = policy.max_compact_size(off_peak=off_peak)
    best: tuple[int, int] = (0, 0)
    best_size = 0
    smallest: tuple[int, int] = (0, 0)
    smallest_size: int | None = None
    n = len(sizes)
    for start in range(n):
        for end in range(start + policy.min_files, n + 1):
            count = end - start
            if count > policy.max_files:
                break
            run = sizes[start:end]
            size = sum(run)
            if might_be_stuck and (smallest_size is None or size < smallest_size):
                smallest, smallest_size = (start, end), size
            if limit is not None and size > limit:
                continue
            if size >= policy.min_size and not _in_ratio(run, ratio):
                continue
            best_count = best[1] - best[0]
            if might_be_stuck and best_size > 0 and size > 0:
                better = (best_count / best_size) * _REPLACE_IF_BETTER_BY < count / size
            else:
                better = count > best_count or (count == best_count and size < best_size)
            if better:
                best, best_size = (start, end), size
    if best[1] == best[0] and might_be_stuck:
        return smallest
    return best


def select_files(
    sizes: Sequence[int], *, policy: SelectionPolicy | None = None, off_peak: bool = False
) -> Selection:
    """HBase's minor selection (``SortedCompactionPolicy.selectCompaction``, not forced major).

    Args:
        sizes: Sizes of the store's files, oldest (lowest sequence number) first; none of
            them is being compacted.
        policy: The settings (default: HBase's defaults).
        off_peak: Inside the off-peak hours (HBase's ``hbase.offpeak.start.hour`` /
            ``end.hour``): use the off-peak ratio and size limit.

    Returns:
        The chosen contiguous run (empty when fewer than ``min_files`` qualify).
    """
    policy = policy or SelectionPolicy()
    stuck = len(sizes) >= policy.blocking_files
    limit = policy.max_compact_size(off_peak=off_peak)
    skip = 0
    if limit is not None:
        while skip < len(sizes) and sizes[skip] > limit:
            skip += 1
    start, stop = explore(sizes[skip:], policy=policy, off_peak=off_peak, might_be_stuck=stuck)
    if stop - start < policy.min_files:
        start = stop = 0
    return Selection(
        start=skip + start if stop > start else 0,
        stop=skip + stop if stop > start else 0,
        stuck=stuck,
        off_peak=off_peak,
        skipped_large=skip,
    )

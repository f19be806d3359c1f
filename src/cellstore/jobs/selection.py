"""Which files of a store a compaction takes: HBase's minor selections, and ``files=``.

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

Over a store's :class:`~cellstore.core.metadata.FileEntry` list, oldest first,
:func:`select_exploring` applies :func:`select_files` to the store's loads and
:func:`select_minor` is the ratio walk of ``compact(ratio=...)``; both take or leave the
files of one load (one sequence number) together. :func:`selected_stores` groups the files
a ``files=[...]`` compaction names by store, and :func:`check_order` refuses a choice whose
output would reorder equal keys (R3.2). :mod:`cellstore.jobs.compact` plans with them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final

from cellstore.commit import entry_key
from cellstore.core.metadata import FileEntry, TableMetadata
from cellstore.errors import InvalidArgumentError
from cellstore.storefiles.columns import COLUMN_FILE_SUFFIX

__all__ = [
    "PROPERTY_NAMES",
    "Selection",
    "SelectionPolicy",
    "check_order",
    "explore",
    "select_exploring",
    "select_files",
    "select_minor",
    "selected_stores",
    "writes",
]

#: HBase's ``hbase.hstore.compaction.min``: fewest files a minor compaction takes.
DEFAULT_MIN_FILES: Final = 3
#: HBase's ``hbase.hstore.compaction.max``: most files a minor compaction takes.
DEFAULT_MAX_FILES: Final = 10
#: HBase's ``hbase.hstore.compaction.ratio``.
DEFAULT_RATIO: Final = 1.2
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


# --------------------------------------------------------------------- a store's files
def _seq_groups(files: Sequence[FileEntry]) -> list[list[FileEntry]]:
    """Files grouped by sequence number, oldest first (one load's files stay together)."""
    groups: list[list[FileEntry]] = []
    for f in files:
        if groups and groups[-1][0].seq == f.seq:
            groups[-1].append(f)
        else:
            groups.append([f])
    return groups


def select_minor(
    files: Sequence[FileEntry],
    *,
    min_files: int = DEFAULT_MIN_FILES,
    max_files: int = DEFAULT_MAX_FILES,
    ratio: float = DEFAULT_RATIO,
) -> list[FileEntry]:
    """HBase's ratio-based minor selection over a store's files (oldest first).

    Walking from the oldest file, a file is skipped while it is larger than ``ratio`` times
    the total size of the newer files (big, old files are left for major compactions);
    the rest, newest files, are taken, at most ``max_files`` of them (the oldest of those
    are dropped when there are more). Files of one load (same sequence number) are taken
    or left together, so the selection is a contiguous run in sequence order. Returns an
    empty list when fewer than ``min_files`` would be taken.
    """
    groups = _seq_groups(files)
    sizes = [sum(f.size for f in g) for g in groups]
    start = 0
    while start < len(groups):
        newer = sum(sizes[start + 1 :])
        if sizes[start] <= ratio * newer:
            break
        start += 1
    chosen = groups[start:]
    while sum(_file_count(g) for g in chosen) > max_files and len(chosen) > 1:
        chosen = chosen[1:]
    picked = [f for g in chosen for f in g]
    return picked if _file_count(picked) >= max(min_files, 2) else []


def _file_count(files: Sequence[FileEntry]) -> int:
    """Files as selection counts them: a column file and its companion count once."""
    return len(writes(files))


def writes(files: Sequence[FileEntry]) -> list[list[FileEntry]]:
    """``files`` grouped by the file the cell layout would have written for them.

    The one write's ``<stem>-c.parquet`` (a column file) and ``<stem>.parquet`` (its
    companion cell file) stand for the one file the same write makes in the cell layout
    (docs/format.md 14.2): compactions count them once and drop them together, so a
    column-layout table compacts as its cells twin does. Every other file is its own
    group. Groups keep the order of their first file.
    """
    suffix = f"{COLUMN_FILE_SUFFIX}.parquet"
    by_path = {f.path: f for f in files}
    partner = {}
    for f in files:
        if f.path.endswith(suffix):
            companion = f.path.removesuffix(suffix) + ".parquet"
            if companion in by_path:
                partner[companion] = f.path
                partner[f.path] = companion
    out: list[list[FileEntry]] = []
    placed: set[str] = set()
    for f in files:
        if f.path in placed:
            continue
        group = [f] + ([by_path[partner[f.path]]] if f.path in partner else [])
        placed.update(g.path for g in group)
        out.append(group)
    return out


def select_exploring(
    files: Sequence[FileEntry], *, policy: SelectionPolicy, off_peak: bool = False
) -> tuple[list[FileEntry], dict[str, Any]]:
    """HBase's exploring minor selection (:func:`select_files`) over a store's files.

    The candidates are the store's loads, oldest first: the files of one load (one
    sequence number) count as one candidate of their total size and are taken or left
    together, as HBase sees one flushed or bulk-loaded file per store. The selection is a
    contiguous run in sequence order, so equal-key ties keep resolving as before (R3.2).

    Args:
        files: The store's files, oldest first (``TableMetadata.files_of``).
        policy: The selection settings.
        off_peak: Use the off-peak ratio and size limit.

    Returns:
        The chosen files (empty when nothing qualifies) and a JSON-able description
        (``policy``, ``files``, ``stuck``, ``off-peak``, ``skipped-large``).
    """
    groups = _seq_groups(files)
    sel = select_files([sum(f.size for f in g) for g in groups], policy=policy, off_peak=off_peak)
    picked = [f for g in groups[sel.start : sel.stop] for f in g]
    info = {
        "policy": "exploring",
        "files": [f.path for f in picked],
        "stuck": sel.stuck,
        "off-peak": sel.off_peak,
        "skipped-large": sel.skipped_large,
    }
    return picked, info


def selected_stores(
    meta: TableMetadata, paths: Iterable[str]
) -> dict[tuple[str, str], list[FileEntry]]:
    """The live files named by ``paths``, grouped by store, each group oldest first.

    Raises:
        InvalidArgumentError: no path given, or a path that is not a live file (with the
            closest live path as a suggestion).
    """
    wanted = [paths] if isinstance(paths, str) else list(dict.fromkeys(paths))
    if not wanted:
        raise InvalidArgumentError("files: name at least one store file (a path of Table.files)")
    live = {f.path: f for f in meta.files}
    for path in wanted:
        if path not in live:
            close = difflib.get_close_matches(path, list(live), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InvalidArgumentError(
                f"{path!r} is not a live store file of table {meta.name} at version "
                f"{meta.version} (paths as Table.files lists them){hint}"
            )
    stores: dict[tuple[str, str], list[FileEntry]] = {}
    for path in wanted:
        f = live[path]
        stores.setdefault((f.region, f.family), []).append(f)
    for group in stores.values():
        group.sort(key=lambda f: (f.seq, f.path))
    return stores


def check_order(store_files: Sequence[FileEntry], chosen: Sequence[FileEntry]) -> None:
    """Refuse a selection whose output would reorder equal keys against a file left out.

    The output takes the newest input's sequence number (``S``). A file ``F`` left out
    keeps its rank against the output's cells only if it is newer than ``S``, or older
    than every chosen file it shares rows with (R3.2). Files whose row ranges do not meet
    cannot hold equal keys and never conflict.

    Raises:
        InvalidArgumentError: naming the file left out and the chosen file it would swap
            places with.
    """
    top = max(f.seq for f in chosen)
    keys = {entry_key(f) for f in chosen}
    for other in store_files:
        if entry_key(other) in keys or other.seq > top:
            continue
        for f in chosen:
            if other.last_row < f.first_row or f.last_row < other.first_row:
                continue
            if other.seq < top and (other.seq, other.path) < (f.seq, f.path):
                continue
            raise InvalidArgumentError(
                f"cannot compact {f.path!r} without {other.path!r}: they share rows, and "
                f"the output takes sequence number {top}, which would rank {f.path!r}'s "
                f"cells above {other.path!r}'s at equal keys (R3.2); add {other.path!r} "
                "to the selection or leave out the files older than it"
            )

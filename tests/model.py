"""A literal, cell-by-cell reference model of HBase's read path (the oracle for core.semantics).

Written from docs/hbase-semantics.md and the shape of HBase's classes, NOT from the
vectorized engine: a scanner walks the merged cells of one row in order and asks a matcher
(NormalUserScanQueryMatcher / RawScanQueryMatcher) what to do with each cell; the matcher
consults a delete tracker (ScanDeleteTracker) and a column tracker (ScanWildcardColumnTracker
or ExplicitColumnTracker); the scanner then includes, skips or seeks (next column / next
row) exactly as the match code says, including HBase's special case that a "next column" seek
from the empty qualifier only moves past the current key (HBASE-18471) so that family markers
are never skipped.

Everything is plain Python over small lists; speed does not matter here.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

PUT, DELETE, DELETE_FAMILY_VERSION, DELETE_COLUMN, DELETE_FAMILY = 4, 8, 10, 12, 14
LATEST_TIMESTAMP = 2**63 - 1


@dataclass(frozen=True)
class Cell:
    row: bytes
    qualifier: bytes
    ts: int
    type: int
    value: bytes = b""
    seq: int = 0

    @property
    def is_delete(self) -> bool:
        return self.type != PUT

    def out(self) -> tuple[bytes, bytes, int, int, bytes]:
        return (self.row, self.qualifier, self.ts, self.type, self.value)


#: The sequence id of a file bulk-loaded with assign.sequenceNumbers=false (R14.5).
UNASSIGNED_SEQ = -1


def bulk_load_seq(*, next_seq: int, assign: bool) -> int:
    """R14.5: the sequence id a bulk-loaded file reads with: the load's own, or -1."""
    return next_seq if assign else UNASSIGNED_SEQ


def compacted_seq(input_seqs: Iterable[int]) -> int:
    """R3.1: a compaction's output file has the highest max sequence id of its inputs."""
    return max(input_seqs)


def cell_key(c: Cell) -> tuple[bytes, bytes, int, int]:
    """R2.1 without the sequence id: row asc, qualifier asc, ts desc, type desc."""
    return (c.row, c.qualifier, -c.ts, -c.type)


def merge(runs: Sequence[Sequence[Cell]], seqs: Sequence[int]) -> list[Cell]:
    """R3.2: merge runs; equal keys by seq descending; equal seq -> later-listed run first.

    Inside a run the file order of equal keys is kept (Python's sort is stable).
    """
    numbered = []
    for position, (run, seq) in enumerate(zip(runs, seqs, strict=True)):
        for offset, c in enumerate(run):
            numbered.append((cell_key(c), -seq, -position, offset, replace(c, seq=seq)))
    numbered.sort(key=lambda t: t[:4])
    return [t[4] for t in numbered]


# ------------------------------------------------------------------------------------------
# TimeRange (COM io/TimeRange.java)


class TimeRange:
    def __init__(self, bounds: tuple[int, int] | None):
        self.min, self.max = bounds if bounds is not None else (0, LATEST_TIMESTAMP)
        self.all_time = self.min == 0 and self.max == LATEST_TIMESTAMP

    def compare(self, ts: int) -> int:
        """-1: older than the range, 0: inside, 1: newer than the range."""
        if self.all_time:
            return 0
        if ts < self.min:
            return -1
        return 1 if ts >= self.max else 0

    def within(self, ts: int) -> bool:
        return self.all_time or self.min <= ts < self.max

    def within_or_after(self, ts: int) -> bool:
        return self.all_time or ts >= self.min


# ------------------------------------------------------------------------------------------
# Match codes


class Code(enum.Enum):
    INCLUDE = "include"
    SKIP = "skip"
    SEEK_NEXT_COL = "seek_next_col"
    SEEK_NEXT_ROW = "seek_next_row"
    INCLUDE_AND_SEEK_NEXT_COL = "include_and_seek_next_col"
    INCLUDE_AND_SEEK_NEXT_ROW = "include_and_seek_next_row"


INCLUDES = (Code.INCLUDE, Code.INCLUDE_AND_SEEK_NEXT_COL, Code.INCLUDE_AND_SEEK_NEXT_ROW)


# ------------------------------------------------------------------------------------------
# Delete tracker (R5; ScanDeleteTracker)


class Deleted(enum.Enum):
    NOT_DELETED = 0
    FAMILY_DELETED = 1
    FAMILY_VERSION_DELETED = 2
    COLUMN_DELETED = 3
    VERSION_DELETED = 4


class DeleteTracker:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.family_stamp: int | None = None
        self.family_version_stamps: set[int] = set()
        # The single held column-level marker (R5.4).
        self.held: Cell | None = None

    def is_empty(self) -> bool:
        return self.held is None and self.family_stamp is None and not self.family_version_stamps

    def add(self, marker: Cell) -> None:
        # R5.2: markers at or below the family stamp are not recorded.
        if self.family_stamp is not None and marker.ts <= self.family_stamp:
            return
        if marker.type == DELETE_FAMILY:  # R5.1
            self.family_stamp = marker.ts
            return
        if marker.type == DELETE_FAMILY_VERSION:  # R5.3
            self.family_version_stamps.add(marker.ts)
            return
        # R5.4: a less general marker of the same column does not replace the held one.
        if (
            self.held is not None
            and marker.type < self.held.type
            and marker.qualifier == self.held.qualifier
        ):
            return
        self.held = marker

    def is_deleted(self, put: Cell) -> Deleted:
        if self.family_stamp is not None and put.ts <= self.family_stamp:
            return Deleted.FAMILY_DELETED
        if put.ts in self.family_version_stamps:
            return Deleted.FAMILY_VERSION_DELETED
        if self.held is not None:
            if put.qualifier == self.held.qualifier:
                if self.held.type == DELETE_COLUMN:  # R5.5
                    return Deleted.COLUMN_DELETED
                if put.ts == self.held.ts:  # R5.6
                    return Deleted.VERSION_DELETED
                assert put.ts < self.held.ts
                self.held = None  # a put with another ts clears a held Delete
            else:
                assert put.qualifier > self.held.qualifier
                self.held = None  # next column
        return Deleted.NOT_DELETED


# ------------------------------------------------------------------------------------------
# Column trackers (R6, R8, R11)


def is_expired(ts: int, oldest_unexpired: int | None) -> bool:
    """R8.1: expired iff ts < now - ttl (strict)."""
    return oldest_unexpired is not None and ts < oldest_unexpired


class WildcardTracker:
    """ScanWildcardColumnTracker: every column is wanted."""

    def __init__(self, min_versions: int, max_versions: int, oldest: int | None):
        self.min_versions = min_versions
        self.max_versions = max_versions
        self.oldest = oldest
        self.reset()

    def reset(self) -> None:
        self.column: bytes | None = None
        self.count = 0
        self.last_included: tuple[int, int] | None = None

    def hint(self) -> bytes | None:
        return None

    def done(self) -> bool:
        return False

    def is_done(self, ts: int) -> bool:
        return self.min_versions <= 0 and is_expired(ts, self.oldest)

    def check_column(self, cell: Cell) -> Code:
        return Code.INCLUDE

    def check_versions(self, cell: Cell) -> Code:
        if self.column is None or cell.qualifier != self.column:
            assert self.column is None or cell.qualifier > self.column
            self.column = cell.qualifier
            self.count = 0
            self.last_included = None
        elif self.last_included == (cell.ts, cell.type):  # R3.3 duplicate
            return Code.SKIP
        if not cell.is_delete:  # markers are not versions (raw reads)
            self.count += 1
        if self.count > self.max_versions:
            return Code.SEEK_NEXT_COL
        if self.count <= self.min_versions or not is_expired(cell.ts, self.oldest):
            self.last_included = (cell.ts, cell.type)
            return Code.INCLUDE
        return Code.SEEK_NEXT_COL

    def next_row_or_next_column(self, cell: Cell) -> Code:
        return Code.SEEK_NEXT_COL


class ExplicitTracker:
    """ExplicitColumnTracker: only the requested qualifiers, walked in sorted order."""

    def __init__(
        self, columns: Iterable[bytes], min_versions: int, max_versions: int, oldest: int | None
    ):
        self.columns = sorted(columns)
        self.min_versions = min_versions
        self.max_versions = max_versions
        self.oldest = oldest
        self.reset()

    def reset(self) -> None:
        self.index = 0
        self.counts = [0] * len(self.columns)
        self.last_ts: int | None = None

    def current(self) -> bytes | None:
        return self.columns[self.index] if self.index < len(self.columns) else None

    def hint(self) -> bytes | None:
        return self.current()

    def done(self) -> bool:
        return self.index >= len(self.columns)

    def is_done(self, ts: int) -> bool:
        return self.min_versions <= 0 and is_expired(ts, self.oldest)

    def check_column(self, cell: Cell) -> Code:
        assert not cell.is_delete
        while True:
            wanted = self.current()
            if wanted is None:
                return Code.SEEK_NEXT_ROW
            if cell.qualifier == wanted:
                return Code.INCLUDE
            self.last_ts = None
            if cell.qualifier < wanted:
                return Code.SEEK_NEXT_COL
            self.index += 1  # passed a requested column that has no more cells

    def check_versions(self, cell: Cell) -> Code:
        if self.last_ts == cell.ts:  # R3.3 duplicate (only puts get here)
            return Code.SKIP
        self.counts[self.index] += 1
        count = self.counts[self.index]
        expired = is_expired(cell.ts, self.oldest)
        if count >= self.max_versions or (count >= self.min_versions and expired):  # R8.5
            self.index += 1
            self.last_ts = None
            if self.done():
                return Code.INCLUDE_AND_SEEK_NEXT_ROW
            return Code.INCLUDE_AND_SEEK_NEXT_COL
        self.last_ts = cell.ts
        return Code.INCLUDE

    def done_with_column(self, cell: Cell) -> None:
        while (wanted := self.current()) is not None:
            self.last_ts = None
            if cell.qualifier >= wanted:
                self.index += 1
                if cell.qualifier > wanted:
                    continue
            return

    def next_row_or_next_column(self, cell: Cell) -> Code:
        self.done_with_column(cell)
        return Code.SEEK_NEXT_ROW if self.current() is None else Code.SEEK_NEXT_COL


# ------------------------------------------------------------------------------------------
# Matcher (R4.1) and scanner


class Matcher:
    def __init__(
        self,
        *,
        raw: bool,
        tracker: WildcardTracker | ExplicitTracker,
        time_range: TimeRange,
        keep_deleted_cells: str,
    ):
        self.raw = raw
        self.columns = tracker
        self.deletes = DeleteTracker()
        self.tr = time_range
        self.see_past_delete_markers = keep_deleted_cells != "false"
        self.sticky_next_row = False
        self.cell_filter: Callable[[Cell], bool] | None = None
        self.after_filter = 0
        self.filter_column: tuple[bytes, bytes] | None = None
        self.filter_count = 0

    def new_row(self) -> None:
        self.columns.reset()
        self.deletes.reset()
        self.sticky_next_row = False

    def pre_check(self, cell: Cell) -> Code | None:
        if self.sticky_next_row:
            return Code.SEEK_NEXT_ROW
        if self.columns.done():  # step 1
            self.sticky_next_row = True
            return Code.SEEK_NEXT_ROW
        if self.columns.is_done(cell.ts):  # step 2: MIN_VERSIONS = 0 and expired
            return self.columns.next_row_or_next_column(cell)
        return None

    def match(self, cell: Cell) -> Code:
        code = self.pre_check(cell)
        if code is not None:
            return code
        if not self.raw:
            if cell.is_delete:  # step 4 (R7.3 / R9.2 decide which markers count)
                if self.see_past_delete_markers:
                    applies = self.tr.within(cell.ts)
                else:
                    applies = self.tr.within_or_after(cell.ts)
                if applies:
                    self.deletes.add(cell)
                return Code.SKIP
            if not self.deletes.is_empty():  # step 5
                deleted = self.deletes.is_deleted(cell)
                if deleted in (Deleted.FAMILY_DELETED, Deleted.COLUMN_DELETED):
                    return self.columns.next_row_or_next_column(cell)
                if deleted is not Deleted.NOT_DELETED:
                    return Code.SKIP
        return self.match_column(cell)

    def match_column(self, cell: Cell) -> Code:
        cmp = self.tr.compare(cell.ts)  # step 6
        if cmp > 0:
            return Code.SKIP
        if cmp < 0:
            return self.columns.next_row_or_next_column(cell)
        code = self.columns.check_column(cell)  # step 7
        if code is not Code.INCLUDE:
            return code
        return self.columns.check_versions(cell)  # step 8


def seek_next_column(cells: Sequence[Cell], i: int, hint: bytes | None) -> int:
    """Index of the cell a "next column" seek from cells[i] lands on (within one row)."""
    here = cells[i]
    j = i + 1
    if here.qualifier == b"":
        # HBASE-18471: from the empty qualifier only move past this key, so DeleteFamily
        # markers further down that column are still seen.
        while j < len(cells) and cell_key(cells[j]) == cell_key(here):
            j += 1
        return j
    if hint is not None:
        while j < len(cells) and cells[j].qualifier < hint:
            j += 1
        return j
    while j < len(cells) and cells[j].qualifier == here.qualifier:
        j += 1
    return j


def read(
    merged: Sequence[Cell],
    *,
    max_versions: int,
    min_versions: int,
    ttl_seconds: int | None,
    keep_deleted_cells: str,
    now_ms: int,
    read_versions: int | None = None,
    time_range: tuple[int, int] | None = None,
    raw: bool = False,
    qualifiers: frozenset[bytes] | None = None,
    limit_per_row: int | None = None,
    offset_per_row: int = 0,
    cell_filter: Callable[[Cell], bool] | None = None,
    family: str | None = None,
    family_time_ranges: Mapping[str, tuple[int, int]] | None = None,
) -> list[tuple[bytes, bytes, int, int, bytes]]:
    """Cells HBase returns for one read of one family, as (row, qualifier, ts, type, value).

    ``cell_filter`` plays a cell filter (True = INCLUDE, False = SKIP) merged as
    UserScanQueryMatcher#mergeFilterResponse does (R12.8). ``family_time_ranges`` plays
    ``Query#setColumnFamilyTimeRange``: as in the UserScanQueryMatcher constructor, the
    matcher of ``family`` takes that family's range if it has one, else ``time_range``
    (R7.1); everything else (markers, versions, raw) then uses that one range.
    """
    if family_time_ranges and family is not None and family in family_time_ranges:
        time_range = family_time_ranges[family]
    if qualifiers is not None and not qualifiers:
        qualifiers = None
    if raw and qualifiers is not None:
        raise ValueError("Cannot specify any column for a raw scan")
    versions = read_versions if read_versions is not None else 1
    if raw:
        oldest: int | None = 0
        version_limit = versions  # R10.2: not capped by the family
    else:
        oldest = now_ms - ttl_seconds * 1000 if ttl_seconds is not None else None
        version_limit = min(versions, max_versions)  # R6.1
    after_filter = version_limit
    if cell_filter is not None:  # ScanQueryMatcher#getTrackers: maxVersionToCheck
        version_limit = 2**31 - 1 if raw else max_versions
    tracker: WildcardTracker | ExplicitTracker
    if qualifiers is None:
        tracker = WildcardTracker(min_versions, version_limit, oldest)
    else:
        tracker = ExplicitTracker(qualifiers, min_versions, version_limit, oldest)
    matcher = Matcher(
        raw=raw,
        tracker=tracker,
        time_range=TimeRange(time_range),
        keep_deleted_cells=keep_deleted_cells,
    )
    matcher.cell_filter = cell_filter
    matcher.after_filter = after_filter
    out: list[tuple[bytes, bytes, int, int, bytes]] = []
    start = 0
    while start < len(merged):
        end = start
        while end < len(merged) and merged[end].row == merged[start].row:
            end += 1
        out.extend(_scan_row(merged[start:end], matcher, limit_per_row, offset_per_row))
        start = end
    return out


def _merge_filter(matcher: Matcher, cell: Cell, code: Code) -> Code:
    """UserScanQueryMatcher#mergeFilterResponse for a filter answering INCLUDE or SKIP."""
    if not matcher.cell_filter(cell):
        return {
            Code.INCLUDE: Code.SKIP,
            Code.INCLUDE_AND_SEEK_NEXT_COL: Code.SEEK_NEXT_COL,
            Code.INCLUDE_AND_SEEK_NEXT_ROW: Code.SEEK_NEXT_ROW,
        }[code]
    if matcher.filter_column != (cell.row, cell.qualifier):
        matcher.filter_column = (cell.row, cell.qualifier)
        matcher.filter_count = 0
    matcher.filter_count += 1
    if matcher.filter_count > matcher.after_filter:
        code = Code.SEEK_NEXT_ROW if code is Code.INCLUDE_AND_SEEK_NEXT_ROW else Code.SEEK_NEXT_COL
    if code in (Code.INCLUDE_AND_SEEK_NEXT_COL, Code.SEEK_NEXT_COL):
        done = getattr(matcher.columns, "done_with_column", None)
        if done is not None:
            done(cell)
    return code


def _scan_row(
    cells: Sequence[Cell], matcher: Matcher, limit: int | None, offset: int
) -> list[tuple[bytes, bytes, int, int, bytes]]:
    """StoreScanner#next for one row."""
    matcher.new_row()
    out = []
    count_per_row = 0
    i = 0
    while i < len(cells):
        cell = cells[i]
        code = matcher.match(cell)
        if code in INCLUDES and matcher.cell_filter is not None:
            code = _merge_filter(matcher, cell, code)
        if code in INCLUDES:
            count_per_row += 1
            if limit is not None and count_per_row > limit + offset:  # R12.7
                break
            if count_per_row > offset:
                out.append(cell.out())
        if code in (Code.INCLUDE, Code.SKIP):
            i += 1
        elif code in (Code.SEEK_NEXT_COL, Code.INCLUDE_AND_SEEK_NEXT_COL):
            i = seek_next_column(cells, i, matcher.columns.hint())
        else:
            break
    return out


# ------------------------------------------------------------------------------------------
# Compactions (R13; CompactionScanQueryMatcher and its Minor/Major subclasses)


class CompactionMatcher:
    """MinorCompactionScanQueryMatcher (retain deletes) or MajorCompactionScanQueryMatcher
    (drop deletes), literally: a wildcard tracker over the family's VERSIONS and
    MIN_VERSIONS, the compaction's delete tracking (trackDelete), tryDropDelete, and the
    redundant-marker elision of retain-deletes compactions (R13.7)."""

    def __init__(
        self,
        *,
        drop_deletes: bool,
        max_versions: int,
        min_versions: int,
        oldest: int | None,
        keep_deleted_cells: str,
        earliest_put_ts: int,
        now_ms: int,
        time_to_purge_deletes: int = 0,
        elide_redundant: bool = True,
    ):
        self.drop_deletes = drop_deletes
        self.columns = WildcardTracker(min_versions, max_versions, oldest)
        self.deletes = DeleteTracker()
        self.oldest = oldest
        self.kdc = keep_deleted_cells
        self.earliest_put_ts = earliest_put_ts
        self.now = now_ms
        self.ttp = time_to_purge_deletes
        self.elide = elide_redundant

    def new_row(self) -> None:
        self.columns.reset()
        self.deletes.reset()

    def _track(self, cell: Cell) -> None:
        if self.kdc == "false" or (self.kdc == "ttl" and is_expired(cell.ts, self.oldest)):
            self.deletes.add(cell)

    def _redundant(self, cell: Cell) -> bool:
        """ScanDeleteTracker#isRedundantDelete: covered by a tracked DeleteFamily, or (column
        markers) by a tracked DeleteColumn of the same column."""
        d = self.deletes
        if d.family_stamp is not None and cell.ts <= d.family_stamp:
            return True
        held = d.held
        return (
            cell.type in (DELETE_COLUMN, DELETE)
            and held is not None
            and held.type == DELETE_COLUMN
            and held.qualifier == cell.qualifier
            and cell.ts <= held.ts
        )

    def _try_drop_delete(self, cell: Cell) -> Code | None:
        if self.ttp > 0 and self.now - cell.ts <= self.ttp:
            return Code.INCLUDE
        if self.kdc == "true" or (self.kdc == "ttl" and not is_expired(cell.ts, self.oldest)):
            if cell.ts < self.earliest_put_ts:
                return self.columns.next_row_or_next_column(cell)
            return None
        return Code.SKIP

    def match(self, cell: Cell) -> Code:
        if self.columns.is_done(cell.ts):  # preCheck: MIN_VERSIONS = 0 and expired
            return self.columns.next_row_or_next_column(cell)
        if cell.is_delete:
            if not self.drop_deletes:
                if self.elide and self._tracked_kind(cell) and self._redundant(cell):
                    return Code.SKIP
                self._track(cell)
                return Code.INCLUDE
            self._track(cell)
            code = self._try_drop_delete(cell)
            if code is not None:
                return code
        elif not self.deletes.is_empty():
            deleted = self.deletes.is_deleted(cell)
            if deleted in (Deleted.FAMILY_DELETED, Deleted.COLUMN_DELETED):
                return self.columns.next_row_or_next_column(cell)
            if deleted is not Deleted.NOT_DELETED:
                return Code.SKIP
        return self.columns.check_versions(cell)

    def _tracked_kind(self, cell: Cell) -> bool:
        return self.kdc == "false" or (self.kdc == "ttl" and is_expired(cell.ts, self.oldest))


def compact(
    merged: Sequence[Cell],
    *,
    drop_deletes: bool,
    max_versions: int,
    min_versions: int,
    ttl_seconds: int | None,
    keep_deleted_cells: str,
    now_ms: int,
    time_to_purge_deletes: int = 0,
) -> list[Cell]:
    """The cells a compaction of ``merged`` (one family's merged files) writes (R13).

    ``earliest_put_ts`` is the smallest Put timestamp among the inputs (EARLIEST_PUT_TS of
    the compacted files). Scanning and seeking are the read path's (``_scan_row`` shape).
    """
    oldest = now_ms - ttl_seconds * 1000 if ttl_seconds is not None else None
    puts = [c.ts for c in merged if not c.is_delete]
    earliest = min(puts) if puts else LATEST_TIMESTAMP
    matcher = CompactionMatcher(
        drop_deletes=drop_deletes,
        max_versions=max_versions,
        min_versions=min_versions,
        oldest=oldest,
        keep_deleted_cells=keep_deleted_cells,
        earliest_put_ts=earliest,
        now_ms=now_ms,
        time_to_purge_deletes=time_to_purge_deletes,
    )
    out: list[Cell] = []
    start = 0
    while start < len(merged):
        end = start
        while end < len(merged) and merged[end].row == merged[start].row:
            end += 1
        cells = merged[start:end]
        matcher.new_row()
        i = 0
        while i < len(cells):
            code = matcher.match(cells[i])
            if code is Code.INCLUDE:
                # Equal-key markers from two files are both included by a retain-deletes
                # compaction; a store file keeps one (raw reads collapse them anyway, R10.2).
                if not (out and cell_key(out[-1]) == cell_key(cells[i])):
                    out.append(cells[i])
                i += 1
            elif code is Code.SKIP:
                i += 1
            elif code is Code.SEEK_NEXT_COL:
                i = seek_next_column(cells, i, None)
            else:
                raise AssertionError(code)
        start = end
    return out


# ------------------------------------------------------------------------ Phoenix salt
def java_salt(key: bytes, buckets: int) -> int:
    """Phoenix ``SaltingUtil.getSaltingByte``, literally: int32 arithmetic, signed bytes.

    The salt bucket of a logical key (the key without its salt byte), the oracle for
    ``cellstore.core.rowkey.salt_bytes`` and everything that salts keys.
    """
    h = 1
    for b in key:
        h = (31 * h + (b - 256 if b >= 128 else b)) & 0xFFFFFFFF
    if h >= 2**31:
        h -= 2**32
    rem = abs(h) % buckets
    rem = -rem if h < 0 else rem  # Java's % takes the dividend's sign
    return abs(rem)


def salted(key: bytes, buckets: int) -> bytes:
    """``key`` as a salted table stores it: its Phoenix salt byte, then the key."""
    return bytes([java_salt(key, buckets)]) + key

"""HBase's read semantics over sorted cells, vectorized (hbase-semantics.md sections 3-12).

Two pure functions make up the engine:

* :func:`merge_runs` merges the cell tables of several store files of one family into one
  table in cell order, tagging each cell with its file's sequence number (R3.1, R3.2).
* :func:`resolve` applies one read to the merged cells: equal-key resolution (R3.3), delete
  markers (R5), versions (R6), time range (R7), TTL and MIN_VERSIONS (R8),
  KEEP_DELETED_CELLS (R9), raw reads (R10), column selection (R11) and the per-family
  limit/offset (R12.7).

HBase decides cell by cell, walking a row in cell order with a delete tracker and a column
tracker (``ScanQueryMatcher``). Here every decision is a whole-array pass over the sorted
cells: boundaries come from comparing neighbours, per-row and per-column state becomes a
segmented reduction (max of marker timestamps, a set of marker keys), and "skip the rest of
the column" becomes a segmented running count. There are no per-cell Python loops. The
test suite checks this engine against a literal cell-by-cell model of HBase's trackers
(``tests/model.py``).

Why whole-row/whole-column reductions agree with HBase's order-dependent walk (each point
is checked by the property tests):

* Markers only ever mask cells that sort after them (R2.2): a DeleteFamily/
  DeleteFamilyVersion (empty qualifier) precedes every cell it can mask, and so does a
  DeleteColumn/Delete within its column. So "the set of markers seen so far" can be replaced
  by "the set of markers of the row / column".
* R5.2 (markers at or below the family stamp are ignored) never changes a result: every put
  such a marker could mask is already masked by the stamp.
* R5.4/R5.6 (one held column marker; a Delete after a DeleteColumn of the same column is
  ignored; a put with another timestamp clears a held Delete): a held Delete@T can only
  mask puts at T, which directly follow it, and a DeleteColumn masks a superset of what a
  later Delete of its column could, so the single held marker behaves exactly like "some
  applicable DeleteColumn of the column has ts >= put.ts, or some applicable Delete of the
  column has ts == put.ts".
* Every "skip the rest of the column" in HBase (masked by DeleteFamily/DeleteColumn, older
  than the time range, expired, past the version limit) is issued for a cell all of whose
  successors in the column would be rejected for the same reason, so it is the same as
  rejecting those successors one by one. HBase never skips markers of the empty-qualifier
  column this way (``ScanQueryMatcher#getKeyForNextColumn``, HBASE-18471), so family markers
  always apply.

Precondition: DeleteFamily and DeleteFamilyVersion markers carry an empty qualifier, as every
HBase writer produces them (R1.3). :func:`resolve` raises for markers that do not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import CELL_SCHEMA, LATEST_TIMESTAMP, SORT_KEYS, CellType
from cellstore.core.family import Family, KeepDeletedCells
from cellstore.errors import InvalidArgumentError

__all__ = [
    "MERGED_SCHEMA",
    "ReadSpec",
    "merge_runs",
    "resolve",
]

#: Schema of :func:`merge_runs`' output: the cell columns plus the run's sequence number.
MERGED_SCHEMA: Final = CELL_SCHEMA.append(pa.field("seq", pa.int64(), nullable=False))

_CELL_COLUMNS: Final = tuple(CELL_SCHEMA.names)
_PUT: Final = int(CellType.PUT)
_DELETE: Final = int(CellType.DELETE)
_DELETE_FAMILY_VERSION: Final = int(CellType.DELETE_FAMILY_VERSION)
_DELETE_COLUMN: Final = int(CellType.DELETE_COLUMN)
_DELETE_FAMILY: Final = int(CellType.DELETE_FAMILY)
_INT64_MIN: Final = -(2**63)

_BoolArray = np.ndarray  # numpy bool arrays (aliases keep signatures readable)
_IntArray = np.ndarray


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


# --------------------------------------------------------------------------------------------
# merge


def merge_runs(runs: Sequence[pa.Table], seqs: Sequence[int]) -> pa.Table:
    """Merge the cell tables of several store files of one family into cell order.

    Equal keys (row, qualifier, ts, type) are ordered by descending sequence number, so the
    cell of the newest file comes first (R3.2); between runs with the same sequence number
    the run listed later counts as newer (as HBase's scanner order does); within one run the
    file order is kept. Duplicates are kept: :func:`resolve` drops them (R3.3).

    Args:
        runs: Tables with the columns of :data:`~cellstore.core.cells.CELL_SCHEMA` (extra
            columns are dropped), each already in cell order.
        seqs: The sequence number of each run (same length as ``runs``).

    Returns:
        A table with schema :data:`MERGED_SCHEMA`, in cell order. Runs whose row ranges do
        not overlap are concatenated without sorting.

    Raises:
        InvalidArgumentError: if ``runs`` and ``seqs`` differ in length or a run lacks a
            cell column.
    """
    if len(runs) != len(seqs):
        raise InvalidArgumentError(f"got {len(runs)} runs but {len(seqs)} sequence numbers")
    tagged = [_with_seq(_cell_columns(run), int(seq)) for run, seq in zip(runs, seqs, strict=True)]
    tagged = [t for t in tagged if t.num_rows]
    if not tagged:
        return MERGED_SCHEMA.empty_table()
    if len(tagged) == 1:
        return tagged[0]
    disjoint = _disjoint_in_row_order(tagged)
    if disjoint is not None:
        return pa.concat_tables(disjoint)
    # Later-listed runs first, so that the stable sort puts them first among equal
    # (key, seq); the order inside each run is kept.
    merged = pa.concat_tables(tagged[::-1])
    order = pc.sort_indices(merged, sort_keys=[*SORT_KEYS, ("seq", "descending")])
    return merged.take(order)


def _cell_columns(run: pa.Table) -> pa.Table:
    """The five cell columns of ``run``, cast to :data:`CELL_SCHEMA`."""
    missing = [name for name in _CELL_COLUMNS if name not in run.column_names]
    if missing:
        raise InvalidArgumentError(f"cell table lacks column(s) {', '.join(missing)}")
    cells = run.select(list(_CELL_COLUMNS))
    return cells if cells.schema.equals(CELL_SCHEMA) else cells.cast(CELL_SCHEMA)


def _with_seq(cells: pa.Table, seq: int) -> pa.Table:
    seq_col = pa.array(np.full(cells.num_rows, seq, dtype=np.int64), pa.int64())
    return pa.Table.from_arrays([*cells.columns, seq_col], schema=MERGED_SCHEMA)


def _disjoint_in_row_order(tables: list[pa.Table]) -> list[pa.Table] | None:
    """``tables`` ordered by row range if no two share a row, else None."""
    bounds = [(t.column("row")[0].as_py(), t.column("row")[-1].as_py(), t) for t in tables]
    bounds.sort(key=lambda b: (b[0], b[1]))
    for (_, last, _), (first, _, _) in pairwise(bounds):
        if not last < first:
            return None
    return [t for _, _, t in bounds]


# --------------------------------------------------------------------------------------------
# resolve


@dataclass
class _Cells:
    """Per-cell numpy arrays of the first-of-equal-key cells (R3.3), in cell order.

    Attributes:
        ts: Timestamps.
        typ: Type codes.
        col_start: True where a column (row, qualifier) starts.
        row_start: True where a row starts; computed only when needed.
        src: Positions in the input table, or None when no cell was dropped.
    """

    ts: _IntArray
    typ: _IntArray
    col_start: _BoolArray
    row_start: _BoolArray | None
    src: _IntArray | None

    def restrict(self, mask: _BoolArray) -> _BoolArray:
        """``mask`` (one flag per input cell) restricted to these cells."""
        return mask if self.src is None else mask[self.src]

    def family_markers(self) -> _BoolArray:
        """Where the DeleteFamily and DeleteFamilyVersion markers are."""
        result: _BoolArray = (self.typ == _DELETE_FAMILY) | (self.typ == _DELETE_FAMILY_VERSION)
        return result


def resolve(cells: pa.Table, *, family: Family, spec: ReadSpec) -> pa.Table:
    """The cells HBase returns for one read of one family (hbase-semantics R3-R12).

    Args:
        cells: Output of :func:`merge_runs`: one family's cells in cell order, equal keys
            ordered newest run first. Only the order matters here: the ``seq`` column may
            be absent.
        family: The family's settings (versions, min versions, TTL, keep-deleted-cells).
        spec: The read.

    Returns:
        The returned cells with schema :data:`~cellstore.core.cells.CELL_SCHEMA`, in cell
        order. Normal reads return only puts; raw reads return puts and markers (R10.1).

    Raises:
        InvalidArgumentError: if a DeleteFamily or DeleteFamilyVersion marker has a
            non-empty qualifier (HBase never writes one; see the module docstring).

    Runtime: a handful of vectorized passes over the cells. Reads without delete markers,
    TTL, time range and column list take a fast path that only finds column starts.
    """
    table = _cell_columns(cells)
    n = table.num_rows
    if n == 0:
        return CELL_SCHEMA.empty_table()
    walk, row_eq = _first_of_equal_keys(table)
    if walk.row_start is None and _needs_rows(walk, spec):
        walk.row_start = walk.restrict(_starts(row_eq, n))
    if spec.raw:
        include = _raw_include(walk, family, spec)
    else:
        requested = None
        if spec.qualifiers is not None:
            value_set = pa.array(sorted(spec.qualifiers), pa.binary())
            in_set = pc.is_in(table.column("qualifier"), value_set=value_set)
            requested = walk.restrict(_to_bool(in_set))
        _check_family_markers(table, walk)
        include = _normal_include(walk, family, spec, requested)
    if spec.max_results_per_family is not None or spec.row_offset_per_family:
        include = _row_window(include, walk, spec)
    if walk.src is not None:  # back to positions in the input table
        keep = np.zeros(n, dtype=bool)
        keep[walk.src[include]] = True
        include = keep
    if include.all():
        return table
    return table.filter(pa.array(include, pa.bool_()))  # cheaper than take() for binary


def _first_of_equal_keys(table: pa.Table) -> tuple[_Cells, pa.ChunkedArray | pa.Array]:
    """Find column starts and drop every cell whose key equals its predecessor's (R3.3).

    HBase's column trackers drop a cell whose (ts, type) equals the previously included
    cell of the column, and every other outcome (masked, out of range, past the limit,
    column skipped) is the same for equal keys, so "first of equal keys wins" holds in
    normal and raw reads alike. ``ExplicitColumnTracker`` compares ts only, but it only ever
    sees puts, so ts equality there is key equality too.

    Returns:
        The deduplicated cells and the row-equality of neighbours (length n - 1, Arrow).
    """
    n = table.num_rows
    rows = table.column("row")
    quals = table.column("qualifier")
    row_eq = pc.equal(rows.slice(1), rows.slice(0, n - 1))
    col_eq = pc.and_(row_eq, pc.equal(quals.slice(1), quals.slice(0, n - 1)))
    col_start = _starts(col_eq, n)
    ts = _to_numpy(table.column("ts"), np.int64)
    typ = _to_numpy(table.column("type"), np.int8)
    dup = ~col_start
    dup[1:] &= ts[1:] == ts[:-1]
    dup[1:] &= typ[1:] == typ[:-1]
    if not dup.any():
        return _Cells(ts=ts, typ=typ, col_start=col_start, row_start=None, src=None), row_eq
    keep = np.flatnonzero(~dup)
    row_start = _starts(row_eq, n)[keep]
    cells = _Cells(
        ts=ts[keep], typ=typ[keep], col_start=col_start[keep], row_start=row_start, src=keep
    )
    return cells, row_eq


def _needs_rows(walk: _Cells, spec: ReadSpec) -> bool:
    """Whether row boundaries are needed (family markers or a per-row window)."""
    if spec.max_results_per_family is not None or spec.row_offset_per_family:
        return True
    return not spec.raw and bool(walk.family_markers().any())


def _oldest_unexpired(family: Family, spec: ReadSpec) -> int | None:
    """Smallest unexpired ts (R8.1), or None when nothing can expire.

    Raw reads use 0 (``StoreScanner``: ``oldestUnexpiredTS = scan.isRaw() ? 0 : now - ttl``),
    so they ignore the TTL for every timestamp a client can write (R10.3).
    """
    if spec.raw:
        return 0
    ttl_ms = family.ttl_ms
    if ttl_ms is None:
        return None
    oldest = spec.now_ms - ttl_ms
    return oldest if oldest > _INT64_MIN else None


def _normal_include(
    walk: _Cells, family: Family, spec: ReadSpec, requested: _BoolArray | None
) -> _BoolArray:
    """Which cells a normal (non-raw) read returns (R4.1 steps 2-8)."""
    ts, typ = walk.ts, walk.typ
    is_put = typ == _PUT
    all_puts = bool(is_put.all())
    oldest = _oldest_unexpired(family, spec)
    expired = ts < oldest if oldest is not None else None
    if expired is not None and not expired.any():
        expired = None
    min_versions = family.min_versions

    # Step 2 (R8.3, R5.11): with MIN_VERSIONS = 0 every expired cell, marker or put, is
    # skipped before anything else looks at it.
    alive: _BoolArray | None = None
    if expired is not None and min_versions == 0:
        alive = ~expired
        expired = None
    candidate = is_put if alive is None else is_put & alive
    every_cell_counts = all_puts and alive is None  # no cell rejected before counting

    # Steps 4-5: markers are remembered, puts are checked against them (R5).
    if not all_puts:
        masked = _masked_puts(walk, alive, family, spec)
        if masked is not None:
            candidate = candidate & ~masked

    # Step 6: time range (R7.2); a put older than the range ends its column, which is the
    # same as rejecting each older put.
    if not spec.all_time:
        assert spec.time_range is not None
        lo, hi = spec.time_range
        candidate = candidate & (ts >= lo) & (ts < hi)
        every_cell_counts = False

    # Step 7: column selection (R11.1).
    if requested is not None:
        candidate = candidate & requested
        every_cell_counts = False

    # Step 8: versions (R6) with TTL and MIN_VERSIONS (R8.4, R8.5).
    limit = min(spec.max_versions or 1, family.max_versions)
    if limit == 1 and expired is None and every_cell_counts:
        return walk.col_start.copy()  # fast path: the newest cell of each column
    count = _count_in_segments(candidate, walk.col_start)
    include: _BoolArray = candidate & (count <= limit)
    if expired is not None:
        if requested is not None:
            # ExplicitColumnTracker#checkVersions: once count >= MIN_VERSIONS, the first
            # expired version is still returned and then ends the column (R8.5 quirk).
            ends = candidate & (count >= min_versions) & expired
            include &= ~_seen_before(ends, walk.col_start)
        else:
            # ScanWildcardColumnTracker#checkVersion: the 1st..m-th versions are returned
            # even if expired; an expired later one ends the column (R8.4).
            include &= (count <= min_versions) | ~expired
    return include


def _masked_puts(
    walk: _Cells, alive: _BoolArray | None, family: Family, spec: ReadSpec
) -> _BoolArray | None:
    """Puts masked by an applicable delete marker (R5), or None if no marker applies.

    Applicable markers (R7.3, R9.2): with KEEP_DELETED_CELLS=FALSE those with
    ts >= range.min (inside or newer than the range); with TRUE/TTL only those inside the
    range; with an all-time range, all. Expired markers are already out via ``alive``.
    """
    ts, typ = walk.ts, walk.typ
    applicable = typ != _PUT
    if alive is not None:
        applicable &= alive
    if not spec.all_time:
        assert spec.time_range is not None
        lo, hi = spec.time_range
        applicable &= ts >= lo
        if family.keep_deleted_cells is not KeepDeletedCells.FALSE:
            applicable &= ts < hi
    markers = np.flatnonzero(applicable)
    if markers.size == 0:
        return None
    kinds = typ[markers]
    masked = np.zeros(ts.size, dtype=bool)

    family_markers = markers[kinds == _DELETE_FAMILY]
    version_markers = markers[kinds == _DELETE_FAMILY_VERSION]
    if family_markers.size or version_markers.size:
        assert walk.row_start is not None
        row_id = np.cumsum(walk.row_start, dtype=np.int64) - 1
        if family_markers.size:  # R5.1: ts <= the row's newest DeleteFamily
            masked |= _at_or_below_group_max(ts, row_id, family_markers)
        if version_markers.size:  # R5.3: same row and exactly the same ts
            masked |= _same_group_and_ts(ts, row_id, version_markers)

    column_markers = markers[kinds == _DELETE_COLUMN]
    if column_markers.size:  # R5.5: ts <= the column's newest DeleteColumn
        col_id = np.cumsum(walk.col_start, dtype=np.int64) - 1
        masked |= _at_or_below_group_max(ts, col_id, column_markers)

    delete_markers = markers[kinds == _DELETE]
    if delete_markers.size:  # R5.6: same column and exactly the same ts
        ts_start = walk.col_start.copy()
        ts_start[1:] |= ts[1:] != ts[:-1]
        ts_group = np.cumsum(ts_start, dtype=np.int64) - 1
        hit = np.zeros(int(ts_group[-1]) + 1, dtype=bool)
        hit[ts_group[delete_markers]] = True
        masked |= hit[ts_group]
    return masked


def _at_or_below_group_max(ts: _IntArray, group: _IntArray, markers: _IntArray) -> _BoolArray:
    """Cells whose group holds one of ``markers`` with a ts >= the cell's ts."""
    n_groups = int(group[-1]) + 1
    stamp = np.full(n_groups, _INT64_MIN, dtype=np.int64)
    np.maximum.at(stamp, group[markers], ts[markers])
    has = np.zeros(n_groups, dtype=bool)
    has[group[markers]] = True
    result: _BoolArray = has[group] & (ts <= stamp[group])
    return result


def _same_group_and_ts(ts: _IntArray, group: _IntArray, markers: _IntArray) -> _BoolArray:
    """Cells whose (group, ts) equals that of one of ``markers``."""
    stamps = np.unique(ts[markers])
    pos = np.minimum(np.searchsorted(stamps, ts), stamps.size - 1)
    hit = stamps[pos] == ts
    candidates = np.flatnonzero(hit)
    keys = group[candidates] * stamps.size + pos[candidates]
    marker_keys = group[markers] * stamps.size + np.searchsorted(stamps, ts[markers])
    result = np.zeros(ts.size, dtype=bool)
    result[candidates] = np.isin(keys, marker_keys)
    return result


def _raw_include(walk: _Cells, family: Family, spec: ReadSpec) -> _BoolArray:
    """Which cells a raw read returns (R10).

    Markers are returned, never applied. The time range applies to markers too; a put
    counts as a version, a marker does not, and every cell after the (limit+1)-th put of a
    column is cut (``ScanWildcardColumnTracker#checkVersion``, R10.2).
    """
    ts, typ = walk.ts, walk.typ
    oldest = _oldest_unexpired(family, spec)
    assert oldest is not None
    expired: _BoolArray | None = ts < oldest
    if expired is not None and not expired.any():
        expired = None
    candidate = np.ones(ts.size, dtype=bool)
    if expired is not None and family.min_versions == 0:  # preCheck, as in normal reads
        candidate = ~expired
        expired = None
    if not spec.all_time:
        assert spec.time_range is not None
        lo, hi = spec.time_range
        candidate &= (ts >= lo) & (ts < hi)
    count = _count_in_segments(candidate & (typ == _PUT), walk.col_start)
    include = candidate & (count <= (spec.max_versions or 1))
    if expired is not None:
        include &= (count <= family.min_versions) | ~expired
    return include


def _row_window(include: _BoolArray, walk: _Cells, spec: ReadSpec) -> _BoolArray:
    """Keep the (offset, offset + limit] returned cells of each row (R12.7)."""
    assert walk.row_start is not None
    rank = _count_in_segments(include, walk.row_start)
    include = include & (rank > spec.row_offset_per_family)
    if spec.max_results_per_family is not None:
        include &= rank <= spec.row_offset_per_family + spec.max_results_per_family
    return include


def _check_family_markers(table: pa.Table, walk: _Cells) -> None:
    """Raise if a DeleteFamily/DeleteFamilyVersion marker has a non-empty qualifier.

    Only normal reads need the check: raw reads return markers without applying them.
    """
    family_markers = np.flatnonzero(walk.family_markers())
    if family_markers.size == 0:
        return
    if walk.src is not None:
        family_markers = walk.src[family_markers]
    quals = table.column("qualifier").take(pa.array(family_markers, pa.int64()))
    lengths = _to_numpy(pc.binary_length(quals), np.int64)
    bad = np.flatnonzero(lengths != 0)
    if bad.size:
        i = int(family_markers[bad[0]])
        cell_type = CellType(int(table.column("type")[i].as_py())).hbase_name
        raise InvalidArgumentError(
            f"{cell_type} marker with non-empty qualifier "
            f"{table.column('qualifier')[i].as_py()!r} in row "
            f"{table.column('row')[i].as_py()!r}: family markers must have an empty "
            "qualifier (hbase-semantics R1.3)"
        )


# --------------------------------------------------------------------------------------------
# segmented array helpers


def _count_in_segments(flag: _BoolArray, start: _BoolArray) -> _IntArray:
    """Running count of ``flag`` within segments that begin where ``start`` is true.

    ``result[i]`` = number of true flags in ``[segment start, i]`` (inclusive).
    ``start[0]`` must be true. One cumulative sum over all cells, minus the sum before each
    segment's start, carried forward with a running maximum (the cumulative sum never
    decreases, so the latest segment start always holds the largest base).
    """
    dtype = np.int32 if flag.size < 2**31 else np.int64
    running: _IntArray = np.cumsum(flag, dtype=dtype)
    base = running - flag.view(np.int8)
    base *= start
    np.maximum.accumulate(base, out=base)
    running -= base
    return running


def _seen_before(flag: _BoolArray, start: _BoolArray) -> _BoolArray:
    """True where an earlier cell of the same segment has ``flag`` set."""
    result: _BoolArray = (_count_in_segments(flag, start) - flag) > 0
    return result


def _starts(equal_to_previous: pa.ChunkedArray | pa.Array, n: int) -> _BoolArray:
    """Segment starts from "element i+1 equals element i" (length n - 1)."""
    start = np.ones(n, dtype=bool)
    if n > 1:
        start[1:] = ~_to_bool(equal_to_previous)
    return start


def _to_bool(arr: pa.ChunkedArray | pa.Array) -> _BoolArray:
    result: _BoolArray = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=bool)
    return result


def _to_numpy(arr: pa.ChunkedArray | pa.Array, dtype: type[np.generic]) -> _IntArray:
    result: _IntArray = np.asarray(arr.to_numpy(), dtype=dtype)
    return result

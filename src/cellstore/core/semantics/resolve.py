"""HBase's read semantics over merged cells: :func:`resolve`."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import CELL_SCHEMA, CellType, count_in_segments
from cellstore.core.family import Family, KeepDeletedCells
from cellstore.core.semantics.arrays import (
    _DELETE,
    _DELETE_COLUMN,
    _DELETE_FAMILY,
    _DELETE_FAMILY_VERSION,
    _INT64_MIN,
    _PUT,
    _BoolArray,
    _cell_columns,
    _IntArray,
    _neighbour_equal,
    _seen_before,
    _starts,
    _to_bool,
    _to_numpy,
    masked_by_group_max,
    same_group_and_ts,
)
from cellstore.core.semantics.compaction import compaction_include
from cellstore.core.semantics.sortkey import _MergePlan
from cellstore.core.semantics.spec import ReadSpec
from cellstore.errors import InvalidArgumentError


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
    if table.num_rows == 0:
        return CELL_SCHEMA.empty_table()
    include = _include_mask(_TableKeys(table), family, spec)
    if include.all():
        return table
    return table.filter(pa.array(include, pa.bool_()))  # cheaper than take() for binary


class _Keys:
    """The cell keys :func:`_include_mask` works on, in cell order.

    Attributes:
        n: Number of cells.
        row_eq: Length ``n - 1``: cell ``i + 1`` has the row of cell ``i``.
        col_eq: Length ``n - 1``: cell ``i + 1`` has the row and qualifier of cell ``i``.
        ts: Timestamps.
        typ: Type codes.
    """

    n: int
    row_eq: _BoolArray
    col_eq: _BoolArray
    typ: _IntArray

    @property
    def ts(self) -> _IntArray:
        """Timestamps (built when first asked for: the common read never needs them)."""
        raise NotImplementedError

    def qualifier_in(self, qualifiers: frozenset[bytes]) -> _BoolArray:
        """Per cell: whether its qualifier is one of ``qualifiers``."""
        raise NotImplementedError

    def qualifier_lengths(self, positions: _IntArray) -> _IntArray:
        """The qualifier lengths of the cells at ``positions``."""
        raise NotImplementedError

    def describe(self, position: int) -> tuple[bytes, bytes, int]:
        """Row, qualifier and type code of the cell at ``position`` (for error messages)."""
        raise NotImplementedError


class _TableKeys(_Keys):
    """The keys of a table in cell order (``row``/``qualifier`` plain or dictionary)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self.n = table.num_rows
        self.row_eq = _neighbour_equal(table.column("row"))
        col_eq = _neighbour_equal(table.column("qualifier"))
        self.col_eq = np.logical_and(self.row_eq, col_eq, out=col_eq)
        self.typ = _to_numpy(table.column("type"), np.int8)

    @functools.cached_property
    def ts(self) -> _IntArray:
        return _to_numpy(self.table.column("ts"), np.int64)

    def qualifier_in(self, qualifiers: frozenset[bytes]) -> _BoolArray:
        value_set = pa.array(sorted(qualifiers), pa.binary())
        parts = []
        for chunk in self.table.column("qualifier").chunks:
            if pa.types.is_dictionary(chunk.type):
                in_dict = _to_bool(pc.is_in(chunk.dictionary, value_set=value_set))
                parts.append(in_dict[_to_numpy(chunk.indices, np.int64)])
            else:
                parts.append(_to_bool(pc.is_in(chunk, value_set=value_set)))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)

    def qualifier_lengths(self, positions: _IntArray) -> _IntArray:
        quals = self.table.column("qualifier").take(pa.array(positions, pa.int64()))
        return _to_numpy(pc.binary_length(quals.cast(pa.binary())), np.int64)

    def describe(self, position: int) -> tuple[bytes, bytes, int]:
        t = self.table
        return (
            t.column("row")[position].as_py(),
            t.column("qualifier")[position].as_py(),
            int(t.column("type")[position].as_py()),
        )


class _MergedKeys(_Keys):
    """The keys of merged runs, in merged order, from a :class:`_MergePlan`'s codes."""

    def __init__(self, plan: _MergePlan) -> None:
        assert plan.order is not None and plan.rows is not None
        assert plan.qualifiers is not None and plan.ts is not None and plan.typ is not None
        self.plan = plan
        order = plan.order
        self.n = order.size
        self.row_eq, self.col_eq = plan.neighbours_equal()
        self._ts: _IntArray = plan.ts[order]
        self.typ = plan.typ[order]

    @property
    def ts(self) -> _IntArray:
        return self._ts

    def qualifier_in(self, qualifiers: frozenset[bytes]) -> _BoolArray:
        assert self.plan.qualifiers is not None and self.plan.order is not None
        value_set = pa.array(sorted(qualifiers), pa.binary())
        result: _BoolArray = self.plan.qualifiers.candidates_in(value_set)[self.plan.order]
        return result

    def qualifier_lengths(self, positions: _IntArray) -> _IntArray:
        assert self.plan.qualifiers is not None and self.plan.order is not None
        quals = self.plan.qualifiers.values_at(self.plan.order[positions])
        return _to_numpy(pc.binary_length(quals), np.int64)

    def describe(self, position: int) -> tuple[bytes, bytes, int]:
        assert self.plan.order is not None
        cell = self.plan.gather(self.plan.order[position : position + 1])
        return (
            cell.column("row")[0].as_py(),
            cell.column("qualifier")[0].as_py(),
            int(cell.column("type")[0].as_py()),
        )


def _include_mask(keys: _Keys, family: Family, spec: ReadSpec) -> _BoolArray:
    """Per cell (in key order): whether the read returns it (R3-R12)."""
    n = keys.n
    walk = _first_of_equal_keys(keys)
    if walk.row_start is None and _needs_rows(walk, spec):
        walk.row_start = walk.restrict(_starts(keys.row_eq))
    if spec.compaction is not None:
        if walk.row_start is None:
            walk.row_start = walk.restrict(_starts(keys.row_eq))
        include = compaction_include(
            ts=walk.ts,
            typ=walk.typ,
            col_start=walk.col_start,
            row_start=walk.row_start,
            empty_qualifier=walk.restrict(keys.qualifier_in(frozenset({b""}))),
            family=family,
            spec=spec.compaction,
        )
    elif spec.raw:
        include = _raw_include(walk, family, spec)
    else:
        requested = None
        if spec.qualifiers is not None:
            requested = walk.restrict(keys.qualifier_in(spec.qualifiers))
        _check_family_markers(keys, walk)
        include = _normal_include(walk, family, spec, requested)
    if spec.max_results_per_family is not None or spec.row_offset_per_family:
        include = _row_window(include, walk, spec)
    if walk.src is not None:  # back to positions in the input
        keep = np.zeros(n, dtype=bool)
        keep[walk.src[include]] = True
        include = keep
    return include


def _first_of_equal_keys(keys: _Keys) -> _Cells:
    """Find column starts and drop every cell whose key equals its predecessor's (R3.3).

    HBase's column trackers drop a cell whose (ts, type) equals the previously included
    cell of the column, and every other outcome (masked, out of range, past the limit,
    column skipped) is the same for equal keys, so "first of equal keys wins" holds in
    normal and raw reads alike. ``ExplicitColumnTracker`` compares ts only, but it only ever
    sees puts, so ts equality there is key equality too.
    """
    col_start = _starts(keys.col_eq)
    ts, typ = keys.ts, keys.typ
    dup = ~col_start
    dup[1:] &= ts[1:] == ts[:-1]
    dup[1:] &= typ[1:] == typ[:-1]
    if not dup.any():
        return _Cells(ts=ts, typ=typ, col_start=col_start, row_start=None, src=None)
    keep = np.flatnonzero(~dup)
    row_start = _starts(keys.row_eq)[keep]
    return _Cells(
        ts=ts[keep], typ=typ[keep], col_start=col_start[keep], row_start=row_start, src=keep
    )


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
    count = count_in_segments(candidate, walk.col_start)
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
            masked |= masked_by_group_max(ts, row_id, family_markers)
        if version_markers.size:  # R5.3: same row and exactly the same ts
            masked |= same_group_and_ts(ts, row_id, version_markers)

    column_markers = markers[kinds == _DELETE_COLUMN]
    if column_markers.size:  # R5.5: ts <= the column's newest DeleteColumn
        col_id = np.cumsum(walk.col_start, dtype=np.int64) - 1
        masked |= masked_by_group_max(ts, col_id, column_markers)

    delete_markers = markers[kinds == _DELETE]
    if delete_markers.size:  # R5.6: same column and exactly the same ts
        ts_start = walk.col_start.copy()
        ts_start[1:] |= ts[1:] != ts[:-1]
        ts_group = np.cumsum(ts_start, dtype=np.int64) - 1
        hit = np.zeros(int(ts_group[-1]) + 1, dtype=bool)
        hit[ts_group[delete_markers]] = True
        masked |= hit[ts_group]
    return masked


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
    count = count_in_segments(candidate & (typ == _PUT), walk.col_start)
    include = candidate & (count <= (spec.max_versions or 1))
    if expired is not None:
        include &= (count <= family.min_versions) | ~expired
    return include


def _row_window(include: _BoolArray, walk: _Cells, spec: ReadSpec) -> _BoolArray:
    """Keep the (offset, offset + limit] returned cells of each row (R12.7)."""
    assert walk.row_start is not None
    rank = count_in_segments(include, walk.row_start)
    include = include & (rank > spec.row_offset_per_family)
    if spec.max_results_per_family is not None:
        include &= rank <= spec.row_offset_per_family + spec.max_results_per_family
    return include


def _check_family_markers(keys: _Keys, walk: _Cells) -> None:
    """Raise if a DeleteFamily/DeleteFamilyVersion marker has a non-empty qualifier.

    Only normal reads need the check: raw reads return markers without applying them.
    """
    family_markers = np.flatnonzero(walk.family_markers())
    if family_markers.size == 0:
        return
    if walk.src is not None:
        family_markers = walk.src[family_markers]
    bad = np.flatnonzero(keys.qualifier_lengths(family_markers) != 0)
    if bad.size:
        row, qualifier, code = keys.describe(int(family_markers[bad[0]]))
        raise InvalidArgumentError(
            f"{CellType(code).hbase_name} marker with non-empty qualifier {qualifier!r} in "
            f"row {row!r}: family markers must have an empty qualifier (hbase-semantics R1.3)"
        )

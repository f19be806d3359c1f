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
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import CELL_SCHEMA, LATEST_TIMESTAMP, CellType, count_in_segments
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
#: Columns that may arrive dictionary-encoded (see :func:`merge_resolve`).
_CODED_COLUMNS: Final = frozenset({"row", "qualifier"})
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

    Runtime: overlapping runs are merged by one stable integer sort of a packed fixed-width
    key (see :func:`_plan_merge`), never by comparing binary row keys cell by cell.
    """
    if len(runs) != len(seqs):
        raise InvalidArgumentError(f"got {len(runs)} runs but {len(seqs)} sequence numbers")
    plan = _plan_merge([_cell_columns(run) for run in runs], [int(s) for s in seqs])
    if plan is None:
        return MERGED_SCHEMA.empty_table()
    if plan.order is None:
        tagged = [_with_seq(t, s) for t, s in zip(plan.runs, plan.seqs, strict=True)]
        return tagged[0] if len(tagged) == 1 else pa.concat_tables(tagged)
    cells = plan.gather(plan.order)
    seq = np.repeat(np.array(plan.seqs, dtype=np.int64), [t.num_rows for t in plan.runs])
    seq_col = pa.array(seq[plan.order], pa.int64())
    return pa.Table.from_arrays([*cells.columns, seq_col], schema=MERGED_SCHEMA)


def merge_resolve(
    runs: Sequence[pa.Table], seqs: Sequence[int], *, family: Family, spec: ReadSpec
) -> pa.Table:
    """``resolve(merge_runs(runs, seqs), family=family, spec=spec)``, computed faster.

    The merge order and the semantics are computed on the key columns only; then only the
    returned cells are gathered, so the merged table of all cells is never built. The
    ``row`` and ``qualifier`` columns of ``runs`` may be dictionary-encoded (as Parquet
    reads them with ``read_dictionary``); the result always has plain binary columns.

    Args:
        runs: Tables with the cell columns, each in cell order.
        seqs: The sequence number of each run.
        family: The family's settings.
        spec: The read.

    Returns:
        Exactly what ``resolve(merge_runs(runs, seqs), ...)`` returns (schema
        :data:`~cellstore.core.cells.CELL_SCHEMA`, cell order).

    Raises:
        InvalidArgumentError: as :func:`merge_runs` and :func:`resolve` do.
    """
    if len(runs) != len(seqs):
        raise InvalidArgumentError(f"got {len(runs)} runs but {len(seqs)} sequence numbers")
    cells, live_seqs = [], []
    for run, seq in zip(runs, seqs, strict=True):
        run_cells = _cell_columns(run, keep_dictionaries=True)
        if run_cells.num_rows:
            cells.append(run_cells)
            live_seqs.append(int(seq))
    if len({tuple(c.schema.types) for c in cells}) > 1:  # mixed encodings: decode all
        cells = [c.cast(CELL_SCHEMA) for c in cells]
    plan = _plan_merge(cells, live_seqs)
    if plan is None:
        return CELL_SCHEMA.empty_table()
    newest_only = _newest_put_per_column(family, spec)
    if plan.order is None:
        table = plan.runs[0] if len(plan.runs) == 1 else pa.concat_tables(plan.runs)
        keys = _TableKeys(table)
        if newest_only and bool((keys.typ == _PUT).all()):
            include = _starts(keys.col_eq)
        else:
            include = _include_mask(keys, family, spec)
        if not include.all():
            table = table.filter(pa.array(include, pa.bool_()))
        return _decoded(table)
    assert plan.typ is not None
    if newest_only and bool((plan.typ == _PUT).all()):
        include = _starts(plan.neighbours_equal()[1])
    else:
        include = _include_mask(_MergedKeys(plan), family, spec)
    return plan.gather(plan.order[include])


def _newest_put_per_column(family: Family, spec: ReadSpec) -> bool:
    """Whether, when every cell is a Put, the read returns the first cell of each column.

    That is :func:`_normal_include`'s fast path seen from the outside: a normal read of
    one version, of all columns and all time, without TTL (nothing can expire) and without
    a per-row window. Duplicate keys never start a column, so dropping them (R3.3) does
    not change the first cells. Then only the column starts are needed: no timestamps,
    types or masks in merged order.
    """
    return (
        not spec.raw
        and spec.qualifiers is None
        and spec.all_time
        and family.ttl_ms is None
        and min(spec.max_versions or 1, family.max_versions) == 1
        and spec.max_results_per_family is None
        and not spec.row_offset_per_family
    )


def _cell_columns(run: pa.Table, *, keep_dictionaries: bool = False) -> pa.Table:
    """The five cell columns of ``run``, cast to :data:`CELL_SCHEMA`.

    With ``keep_dictionaries``, dictionary-encoded binary ``row``/``qualifier`` columns are
    kept as they are (every other column is still cast).
    """
    missing = [name for name in _CELL_COLUMNS if name not in run.column_names]
    if missing:
        raise InvalidArgumentError(f"cell table lacks column(s) {', '.join(missing)}")
    cells = run.select(list(_CELL_COLUMNS))
    target = CELL_SCHEMA
    if keep_dictionaries:
        target = pa.schema(
            [
                pa.field(f.name, cells.schema.field(f.name).type, nullable=False)
                if f.name in _CODED_COLUMNS
                and _is_binary_dictionary(cells.schema.field(f.name).type)
                else f
                for f in CELL_SCHEMA
            ]
        )
    if cells.schema.types == target.types:  # only nullability or metadata differ
        return pa.Table.from_arrays(cells.columns, schema=target)
    return cells.cast(target)


def _is_binary_dictionary(typ: pa.DataType) -> bool:
    return bool(pa.types.is_dictionary(typ) and typ.value_type == pa.binary())


def _decoded(cells: pa.Table) -> pa.Table:
    """``cells`` with dictionary-encoded columns decoded (schema :data:`CELL_SCHEMA`)."""
    return cells if cells.schema.equals(CELL_SCHEMA) else cells.cast(CELL_SCHEMA)


def _with_seq(cells: pa.Table, seq: int) -> pa.Table:
    seq_col = pa.array(np.full(cells.num_rows, seq, dtype=np.int64), pa.int64())
    return pa.Table.from_arrays([*cells.columns, seq_col], schema=MERGED_SCHEMA)


@dataclass
class _KeyColumn:
    """A binary key column (row or qualifier) of concatenated runs, as integers.

    Attributes:
        codes: Per cell, an unsigned integer below ``2**bits`` that orders and equates
            exactly like the cell's binary value.
        bits: Bits the codes need.
        candidates: Binary values; cell ``i``'s value is ``candidates[index[i]]``.
        index: Per cell, the position of its value in ``candidates``.
        fixed: ``candidates`` as a numpy ``S`` array, when they all have one length.
    """

    codes: _IntArray
    bits: int
    candidates: pa.Array
    index: _IntArray
    fixed: np.ndarray | None = None

    def values_at(self, positions: _IntArray) -> pa.Array:
        """The binary values of the cells at ``positions``.

        When all candidates have one length (``fixed`` holds them as a numpy ``S``
        array), the bytes are gathered by numpy and the offsets are a range.
        """
        index = self.index[positions]
        width = self.fixed.dtype.itemsize if self.fixed is not None else 0
        if self.fixed is None or index.size * width >= 2**31:
            return self.candidates.take(pa.array(index))
        data = self.fixed[index]
        offsets = np.arange(0, (index.size + 1) * width, width, dtype=np.int32)
        return pa.Array.from_buffers(
            pa.binary(), index.size, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )

    def candidates_in(self, value_set: pa.Array) -> _BoolArray:
        """Per cell: whether its value is in ``value_set``."""
        in_set = _to_bool(pc.is_in(self.candidates, value_set=value_set))
        result: _BoolArray = in_set[self.index]
        return result


@dataclass
class _MergePlan:
    """How to merge runs (see :func:`_plan_merge`).

    Attributes:
        runs: The non-empty runs, in concatenation order.
        seqs: Their sequence numbers.
        order: Positions in the concatenated runs, in cell order; None when the
            concatenation already is in cell order.
        rows: Row codes of the concatenated cells (only when ``order`` is set).
        qualifiers: Qualifier codes of the concatenated cells (only when ``order`` is set).
        ts: Timestamps of the concatenated cells (only when ``order`` is set).
        typ: Type codes of the concatenated cells (only when ``order`` is set).
        key: The packed sort key, when it fit in one word (only when ``order`` is set).
    """

    runs: list[pa.Table]
    seqs: list[int]
    order: _IntArray | None = None
    rows: _KeyColumn | None = None
    qualifiers: _KeyColumn | None = None
    ts: _IntArray | None = None
    typ: _IntArray | None = None
    key: _SortKey | None = None

    def neighbours_equal(self) -> tuple[_BoolArray, _BoolArray]:
        """``(row_eq, col_eq)`` of neighbouring cells in merged order."""
        if self.key is not None:
            return self.key.neighbours_equal()
        assert self.order is not None and self.rows is not None and self.qualifiers is not None
        rows = self.rows.codes[self.order]
        quals = self.qualifiers.codes[self.order]
        row_eq: _BoolArray = rows[1:] == rows[:-1]
        return row_eq, row_eq & (quals[1:] == quals[:-1])

    def gather(self, positions: _IntArray) -> pa.Table:
        """The concatenated cells at ``positions``, as a :data:`CELL_SCHEMA` table.

        Rows and qualifiers come from their codes (a gather from the distinct values), the
        value column is taken from the runs.
        """
        assert self.rows is not None and self.qualifiers is not None
        assert self.ts is not None and self.typ is not None
        index = pa.array(positions, pa.int64())
        rows = self.rows.values_at(positions)
        quals = self.qualifiers.values_at(positions)
        value_parts = [t.column("value") for t in self.runs]
        values = pa.chunked_array([c for part in value_parts for c in part.chunks], pa.binary())
        return pa.Table.from_arrays(
            [
                rows,
                quals,
                pa.array(self.ts[positions], pa.int64()),
                pa.array(self.typ[positions], pa.int8()),
                values.take(index),
            ],
            schema=CELL_SCHEMA,
        )


def _plan_merge(runs: list[pa.Table], seqs: list[int]) -> _MergePlan | None:
    """Plan the merge of sorted runs into cell order; None when there is no cell.

    A single run, or runs whose row ranges do not overlap, are concatenated (in row order).
    Otherwise the runs are concatenated newest first (descending sequence number; the run
    listed later first among equal ones) and sorted by a stable sort on a fixed-width key:
    an integer code of the row, one of the qualifier (both exact: equal codes for equal
    values, ordered like the bytes; see :class:`_KeyColumn`), the timestamp (descending)
    and the type (descending), packed into as few unsigned words as they fit in. Codes are
    computed for the distinct values only (a run's row column changes value once per row;
    dictionary-encoded columns bring their distinct values along) and gathered per cell.
    The stable sort keeps equal keys in concatenation order, which is exactly "newest
    sequence number first, within a run in file order" (R3.2).
    """
    live = [(t, s, i) for i, (t, s) in enumerate(zip(runs, seqs, strict=True)) if t.num_rows]
    if not live:
        return None
    if len(live) == 1:
        return _MergePlan([live[0][0]], [live[0][1]])
    disjoint = _disjoint_in_row_order([(t, s) for t, s, _ in live])
    if disjoint is not None:
        return _MergePlan([t for t, _ in disjoint], [s for _, s in disjoint])
    live.sort(key=lambda e: (-e[1], -e[2]))
    tables = [t for t, _, _ in live]
    rows = _key_column([c for t in tables for c in t.column("row").chunks], hashed=False)
    quals = _key_column([c for t in tables for c in t.column("qualifier").chunks], hashed=True)
    ts = np.concatenate([_to_numpy(t.column("ts"), np.int64) for t in tables])
    typ = np.concatenate([_to_numpy(t.column("type"), np.int8) for t in tables])
    fields = [
        _Field(rows.codes, 0, rows.bits),
        _Field(quals.codes, 0, quals.bits),
        _descending(ts),
        _descending(typ),
    ]
    order, key = _stable_sort(fields, ts.size)
    return _MergePlan(tables, [s for _, s, _ in live], order, rows, quals, ts, typ, key)


def _disjoint_in_row_order(
    runs: list[tuple[pa.Table, int]],
) -> list[tuple[pa.Table, int]] | None:
    """``runs`` ordered by row range if no two share a row, else None."""
    bounds = [(t.column("row")[0].as_py(), t.column("row")[-1].as_py(), t, s) for t, s in runs]
    bounds.sort(key=lambda b: (b[0], b[1]))
    for (_, last, _, _), (first, _, _, _) in pairwise(bounds):
        if not last < first:
            return None
    return [(t, s) for _, _, t, s in bounds]


def _key_column(chunks: list[pa.Array], *, hashed: bool) -> _KeyColumn:
    """The :class:`_KeyColumn` of a binary column given as chunks.

    Each chunk contributes candidate values and, per cell, the index of its value among
    them: a dictionary chunk its dictionary and indices; a plain chunk its values where they
    change (``hashed=False``, right for sorted rows) or its hash-dictionary (``hashed=True``,
    right for qualifiers, which repeat across rows). Only the candidates are turned into
    integer codes (:func:`_candidate_codes`); cells get theirs by one gather.
    """
    candidates: list[pa.Array] = []
    local: list[_IntArray] = []
    for chunk in chunks:
        if len(chunk) == 0:
            continue
        if pa.types.is_dictionary(chunk.type):
            values, index = chunk.dictionary, _to_numpy(chunk.indices, np.int32)
            low, high = int(index.min()), int(index.max())
            if high - low + 1 < len(values):  # a slice of a row group: drop unused values
                values = values.slice(low, high - low + 1)
                index = index - low
        elif hashed:
            encoded = pc.dictionary_encode(chunk)
            values, index = encoded.dictionary, _to_numpy(encoded.indices, np.int32)
        else:
            starts = _starts(_neighbour_equal_plain(chunk))
            values = chunk.filter(pa.array(starts, pa.bool_()))
            index = np.cumsum(starts, dtype=np.int32) - 1
        candidates.append(values if values.type == pa.binary() else values.cast(pa.binary()))
        local.append(index)
    values = pa.concat_arrays(candidates)
    dtype = np.int32 if len(values) < 2**31 else np.int64
    cell_index = np.empty(sum(ix.size for ix in local), dtype=dtype)
    pos = offset = 0
    for cand, index in zip(candidates, local, strict=True):
        np.add(index, offset, out=cell_index[pos : pos + index.size], casting="unsafe")
        pos += index.size
        offset += len(cand)
    codes, bits, exact = _candidate_codes(values)
    return _KeyColumn(codes[cell_index], bits, values, cell_index, exact)


def _candidate_codes(values: pa.Array) -> tuple[_IntArray, int, np.ndarray | None]:
    """Unsigned integer codes that order and equate exactly like binary ``values``.

    The keys are made fixed-width (:func:`_fixed_width_keys`); when, after the bytes all
    keys share at the start, at most 8 bytes remain, those bytes read as a big-endian
    integer are the code (no sort needed; dense ranks of those integers instead when that
    saves a byte of sort key). Otherwise the code is the dense rank of the value
    (:func:`_rank_values`).

    Returns:
        The codes (one per value), the bits they need, and the values as a numpy ``S``
        array when they all have one length (for :meth:`_KeyColumn.values_at`), else None.
    """
    fixed = _fixed_width_keys(values)
    exact = fixed.keys if fixed is not None and fixed.exact else None
    if fixed is not None:
        direct = _integer_keys(fixed, values)
        if direct is not None:
            numbers, bits = direct
            if bits > len(values).bit_length() + 8:  # ranks would save a byte of sort key
                numbers = _dense_rank_integers(numbers)
                bits = int(numbers.max(initial=0)).bit_length()
            return _narrowest(numbers, bits), bits, exact
    rank, _ = _rank_values(values, fixed.keys if fixed is not None else None)
    bits = int(rank.max(initial=0)).bit_length()
    return _narrowest(rank, bits), bits, exact


def _dense_rank_integers(numbers: _IntArray) -> _IntArray:
    """Dense ranks of unsigned integers (equal numbers, equal ranks)."""
    order = np.argsort(numbers, kind="stable")  # timsort: merges presorted runs fast
    ordered = numbers[order]
    dtype = np.int32 if numbers.size < 2**31 else np.int64
    dense = np.zeros(numbers.size, dtype=dtype)
    np.cumsum(ordered[1:] != ordered[:-1], dtype=dtype, out=dense[1:])
    rank = np.empty(numbers.size, dtype=dtype)
    rank[order] = dense
    return rank


def _narrowest(codes: _IntArray, bits: int) -> _IntArray:
    """Non-negative ``codes`` below ``2**bits`` in the narrowest unsigned dtype."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if bits <= np.iinfo(dtype).bits:
            result: _IntArray = codes.astype(dtype, copy=False)
            return result
    return codes.astype(np.uint64, copy=False)


def _integer_keys(fixed: _FixedKeys, values: pa.Array) -> tuple[_IntArray, int] | None:
    """The keys as ``uint64`` integers minus their minimum, if at most 8 bytes vary.

    Keys are read in place as big-endian 64-bit words at byte offsets 0, 8, ... and
    ``size - 8`` (overlapping the last one); OR-ing each word's XOR with the first key's
    tells which bytes vary. When the varying bytes all lie in the last 8, that last word,
    masked to them, is the integer. Keys shorter than 8 bytes are copied right-aligned
    into 8 (leading zeros keep the order).
    """
    keys = fixed.keys
    m, size = keys.size, keys.dtype.itemsize
    if m == 0:
        return np.zeros(0, dtype=np.uint64), 0
    buffer = keys
    if size < 8:
        padded = np.zeros(m, dtype=np.dtype((np.void, 8)))
        view = np.dtype({"names": ["k"], "formats": [f"V{size}"], "offsets": [8 - size],
                         "itemsize": 8})
        padded.view(view)["k"] = keys.view(np.dtype((np.void, size)))
        buffer, size = padded, 8
    first = size
    for offset in sorted({*range(0, size - 8, 8), size - 8}):
        word = _word_view(buffer, offset, size)
        varying = int(np.bitwise_or.reduce(word ^ word[0]))
        if varying:
            first = min(first, offset + (64 - varying.bit_length()) // 8)
    if first == size:
        return np.zeros(m, dtype=np.uint64), 0
    rest = size - first
    if rest > 8:
        return None
    numbers: _IntArray = _word_view(buffer, size - 8, size).astype(np.uint64)
    if rest < 8:
        numbers &= np.uint64((1 << (8 * rest)) - 1)
    numbers -= numbers.min()
    return numbers, int(numbers.max()).bit_length()


def _word_view(keys: np.ndarray, offset: int, size: int) -> _IntArray:
    """Big-endian 64-bit words at byte ``offset`` of each ``size``-byte item (no copy)."""
    word: _IntArray = np.ndarray(
        shape=(keys.size,), dtype=">u8", buffer=keys, offset=offset, strides=(size,)
    )
    return word


#: Largest fixed-width key buffer (bytes) :func:`_fixed_width_keys` builds before callers
#: fall back to Arrow's comparison sort.
_MAX_FIXED_WIDTH_BYTES: Final = 1 << 30


def _rank_values(values: pa.Array, keys: np.ndarray | None) -> tuple[_IntArray, _IntArray]:
    """Dense ranks of binary ``values`` and the position of one value of each rank.

    Binary keys are compared as unsigned bytes, a proper prefix first (HBase's comparator,
    Arrow's binary order). With fixed-width ``keys`` (see :func:`_fixed_width_keys`) the
    sort is numpy's stable sort, which merges presorted stretches (concatenated
    dictionaries of sorted files) cheaply; otherwise Arrow sorts the binary values.

    Returns:
        ``(rank, firsts)``: ``rank[i]`` is the number of distinct values below
        ``values[i]``; ``firsts[r]`` is a position whose value has rank ``r``.
    """
    m = len(values)
    if keys is not None:
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        new = ordered[1:] != ordered[:-1]
    else:
        order = _to_numpy(pc.sort_indices(values), np.int64)
        ordered_arr = values.take(pa.array(order, pa.int64()))
        new = ~_neighbour_equal_plain(ordered_arr)
    dtype = np.int32 if m < 2**31 else np.int64
    dense = np.zeros(m, dtype=dtype)
    np.cumsum(new, dtype=dtype, out=dense[1:])
    rank = np.empty(m, dtype=dtype)
    rank[order] = dense
    first = np.ones(m, dtype=bool)
    first[1:] = new
    firsts: _IntArray = order[first]
    return rank, firsts


@dataclass
class _FixedKeys:
    """Binary values as fixed-width numpy ``S`` keys (see :func:`_fixed_width_keys`).

    Attributes:
        keys: One ``S<width + suffix>`` item per value.
        width: The longest value's length; shorter values are zero-padded to it.
        suffix: Bytes of big-endian length appended after the padding (0, 2 or 4).
        exact: The keys are the values themselves (all of one length, no padding).
    """

    keys: np.ndarray
    width: int
    suffix: int
    exact: bool = False

    def key(self, value: bytes) -> bytes:
        """The key of one value."""
        padded = value + bytes(self.width - len(value))
        return padded + len(value).to_bytes(self.suffix, "big") if self.suffix else padded


def _fixed_width_keys(values: pa.Array) -> _FixedKeys | None:
    """``values`` as fixed-width keys whose order is the binary order, or None.

    Each key is zero-padded to the longest length ``w``: padding keeps the order of keys
    that differ within the shorter one's length, and a shorter key that is a prefix of a
    longer one still sorts first unless the longer one only adds zero bytes. So when some
    key ends in a zero byte, the big-endian length is appended as a tie-breaker. numpy
    compares ``S`` items of equal width as unsigned bytes. When every value has the same
    length and none ends in a zero byte, the keys are the Arrow data buffer itself. None
    when the padded keys would exceed :data:`_MAX_FIXED_WIDTH_BYTES` (one huge key among
    many small ones).
    """
    m = len(values)
    offsets_buf, data_buf = values.buffers()[1], values.buffers()[2]
    if m == 0 or offsets_buf is None or data_buf is None:
        return _FixedKeys(np.zeros(m, dtype="S1"), 0, 0)
    offsets = np.frombuffer(offsets_buf, dtype=np.int32, count=m + 1, offset=4 * values.offset)
    lengths = np.diff(offsets)
    width, shortest = int(lengths.max()), int(lengths.min())
    if width == 0:
        return _FixedKeys(np.zeros(m, dtype="S1"), 0, 0)
    data = np.frombuffer(data_buf, dtype=np.uint8)
    if shortest == width:  # every last byte, by a strided view
        start = int(offsets[0])
        last = data[start + width - 1 : start + m * width : width]
    else:
        last = data[offsets[1:][lengths > 0] - 1]
    zero_ending = bool((last == 0).any())
    if not zero_ending and shortest == width:
        keys = np.frombuffer(data_buf, dtype=f"S{width}", count=m, offset=int(offsets[0]))
        return _FixedKeys(keys, width, 0, exact=True)
    suffix = 0 if not zero_ending else (2 if width < 1 << 16 else 4)
    if (width + suffix) * m > _MAX_FIXED_WIDTH_BYTES:
        return None
    parts = [values, pc.binary_repeat(pa.scalar(b"\x00"), pa.array(width - lengths))]
    if suffix:
        length_bytes = lengths.astype(">u2" if suffix == 2 else ">u4").tobytes()
        fixed = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(suffix), m, [None, pa.py_buffer(length_bytes)]
        )
        parts.append(fixed.cast(pa.binary()))
    joined = pc.binary_join_element_wise(*parts, b"")
    joined_data = joined.buffers()[2]
    assert joined_data is not None
    keys = np.frombuffer(joined_data, dtype=f"S{width + suffix}", count=m)
    return _FixedKeys(keys, width, suffix)


@dataclass
class _Field:
    """One field of the packed sort key: ``base - values`` (descending) or ``values - base``.

    Attributes:
        values: Integer values, one per cell.
        base: For a descending field the maximum, else 0 (``values`` are then >= 0 codes).
        bits: Bits the field needs (0: all values are equal, the field is left out).
        descending: Whether larger values sort first.
    """

    values: _IntArray
    base: int
    bits: int
    descending: bool = False

    def unsigned(self, dtype: type[np.unsignedinteger[Any]]) -> _IntArray:
        """The field's value per cell as ``dtype`` (exact, the field must fit)."""
        if not self.descending:
            return self.values.astype(dtype, copy=False)
        # base - v, computed modulo 2**64 on the two's-complement bits, is exact as the
        # true difference lies in [0, 2**bits); so is its truncation to a narrower dtype.
        wide = self.values.astype(np.int64, copy=False).view(np.uint64)
        if dtype is np.uint64:
            result: _IntArray = np.subtract(np.uint64(self.base % (1 << 64)), wide)
            return result
        narrow = wide.astype(dtype)
        return np.subtract(dtype(self.base % (1 << np.iinfo(dtype).bits)), narrow, out=narrow)


def _descending(values: _IntArray) -> _Field:
    high, low = int(values.max()), int(values.min())
    return _Field(values, high, (high - low).bit_length(), descending=True)


@dataclass
class _SortKey:
    """The sort key of merged cells when it fits in one machine word.

    Attributes:
        ordered: The key of each cell, in merged order.
        row_shift: Right shift that leaves only the row field.
        column_shift: Right shift that leaves only the row and qualifier fields.
    """

    ordered: _IntArray
    row_shift: int
    column_shift: int

    def neighbours_equal(self) -> tuple[_BoolArray, _BoolArray]:
        """``(row_eq, col_eq)`` of neighbouring merged cells."""
        differ = self.ordered[1:] ^ self.ordered[:-1]
        width = self.ordered.dtype.itemsize * 8

        def below(shift: int) -> _BoolArray:
            if shift >= width:  # nothing above the shift: all equal
                return np.ones(differ.size, dtype=bool)
            result: _BoolArray = differ < self.ordered.dtype.type(1 << shift)
            return result

        return below(self.row_shift), below(self.column_shift)


def _stable_sort(fields: list[_Field], n: int) -> tuple[_IntArray, _SortKey | None]:
    """Stable sort order of ``n`` cells by ``fields`` (row, qualifier, ts, type).

    Fields are packed into as few words as they fit in whole (the smallest of uint32 and
    uint64 for one word), then sorted by one stable argsort or, when more than 64 bits are
    needed, a lexsort of the words. numpy's stable sort of 32/64-bit integers is a timsort,
    which finds the runs' presorted stretches and merges them: about n log k work for k
    overlapping runs, not n log n.

    Returns:
        The order, and the packed key in merged order when it fit in one word.
    """
    total = sum(f.bits for f in fields)
    if total == 0:
        return np.arange(n, dtype=np.int64), None
    if total <= 64:
        dtype: type[np.unsignedinteger[Any]] = np.uint32 if total <= 32 else np.uint64
        key = np.zeros(n, dtype=dtype)
        for f in fields:
            if f.bits:
                key <<= dtype(f.bits)
                key |= f.unsigned(dtype)
        order: _IntArray = np.argsort(key, kind="stable")
        below_row = total - fields[0].bits
        below_column = below_row - fields[1].bits
        return order, _SortKey(key[order], below_row, below_column)
    words: list[_IntArray] = []
    word: _IntArray | None = None
    used = 0
    for f in fields:
        if not f.bits:
            continue
        if word is None or used + f.bits > 64:
            if word is not None:
                words.append(word)
            word, used = f.unsigned(np.uint64).copy(), f.bits
        else:
            word <<= np.uint64(f.bits)
            word |= f.unsigned(np.uint64)
            used += f.bits
    assert word is not None
    words.append(word)
    return np.lexsort(words[::-1]), None


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
    ts: _IntArray
    typ: _IntArray

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
        self.col_eq = self.row_eq & _neighbour_equal(table.column("qualifier"))
        self.ts = _to_numpy(table.column("ts"), np.int64)
        self.typ = _to_numpy(table.column("type"), np.int8)

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
        self.ts = plan.ts[order]
        self.typ = plan.typ[order]

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
    if spec.raw:
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


# --------------------------------------------------------------------------------------------
# segmented array helpers


def _seen_before(flag: _BoolArray, start: _BoolArray) -> _BoolArray:
    """True where an earlier cell of the same segment has ``flag`` set."""
    result: _BoolArray = (count_in_segments(flag, start) - flag) > 0
    return result


def _starts(equal_to_previous: _BoolArray) -> _BoolArray:
    """Segment starts (length n) from "element i+1 equals element i" (length n - 1)."""
    start = np.ones(equal_to_previous.size + 1, dtype=bool)
    np.logical_not(equal_to_previous, out=start[1:])
    return start


def _neighbour_equal(col: pa.ChunkedArray) -> _BoolArray:
    """Length ``n - 1``: element ``i + 1`` of ``col`` equals element ``i``.

    Chunks may be plain binary or dictionary-encoded. Inside a dictionary chunk whose
    values are distinct (Parquet dictionaries are), equal values are equal indices; other
    dictionary chunks are decoded. Across chunk borders the two neighbouring values are
    compared directly.
    """
    n = len(col)
    out = np.empty(max(n - 1, 0), dtype=bool)
    pos = 0
    last: object = None
    for chunk in col.chunks:
        m = len(chunk)
        if m == 0:
            continue
        if pos:
            out[pos - 1] = chunk[0].as_py() == last
        if m > 1:
            out[pos : pos + m - 1] = _chunk_neighbour_equal(chunk)
        last = chunk[m - 1].as_py()
        pos += m
    return out


def _chunk_neighbour_equal(chunk: pa.Array) -> _BoolArray:
    """:func:`_neighbour_equal` of one chunk of at least two elements."""
    if pa.types.is_dictionary(chunk.type):
        if _distinct(chunk.dictionary):
            index = _to_numpy(chunk.indices, np.int64)
            result: _BoolArray = index[1:] == index[:-1]
            return result
        chunk = chunk.dictionary_decode()
    return _neighbour_equal_plain(chunk)


def _neighbour_equal_plain(arr: pa.Array) -> _BoolArray:
    """Length ``n - 1`` neighbour equality of a plain (non-dictionary) array."""
    m = len(arr)
    if m < 2:
        return np.zeros(0, dtype=bool)
    return _to_bool(pc.equal(arr.slice(1), arr.slice(0, m - 1)))


def _distinct(values: pa.Array) -> bool:
    """Whether no value repeats (cheap when they are sorted, as row dictionaries are)."""
    m = len(values)
    if m < 2 or pc.all(pc.less(values.slice(0, m - 1), values.slice(1))).as_py():
        return True
    return bool(pc.count_distinct(values).as_py() == m)


def _to_bool(arr: pa.ChunkedArray | pa.Array) -> _BoolArray:
    result: _BoolArray = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=bool)
    return result


def _to_numpy(arr: pa.ChunkedArray | pa.Array, dtype: type[np.generic]) -> _IntArray:
    result: _IntArray = np.asarray(arr.to_numpy(), dtype=dtype)
    return result

"""Cells: type codes, the one sort order, and vectorized helpers over Arrow cell tables.

This module defines, once, the two things every other part of cellstore must agree on:

* the on-disk type codes (:class:`CellType`), which are HBase's ``KeyValue.Type`` codes
  (hbase-semantics R1.2). **They are written to store files; never change them.**
* the cell order (:data:`SORT_KEYS`): row ascending (unsigned bytes), qualifier ascending,
  timestamp descending, type descending (R2.1). Within one store file the family is fixed by
  the directory; when cells of several families travel together the family sorts before the
  row's qualifiers (R2.3), see :data:`SORT_KEYS_WITH_FAMILY`; HBase's own order with the
  family inside the row is :data:`SORT_KEYS_HBASE`. Every sort of cells in the package
  takes its keys from :func:`cell_sort_keys` / :func:`sort_indices`.

Everything here is pure: no I/O, and no per-cell Python loops.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import Final, Literal, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "CELL_SCHEMA",
    "RESULT_CELL_SCHEMA",
    "DELETE_TYPES",
    "LATEST_TIMESTAMP",
    "MAX_ROW_LENGTH",
    "SORT_KEYS",
    "SORT_KEYS_HBASE",
    "SORT_KEYS_WITH_FAMILY",
    "TYPE_NAMES",
    "FamilyOrder",
    "cell_sort_keys",
    "parse_type_names",
    "scale_to_millis",
    "CellType",
    "count_in_segments",
    "equal_key_runs",
    "first_unsorted_index",
    "normalize_type_name",
    "run_starts",
    "segment_starts",
    "sort_indices",
]


class CellType(IntEnum):
    """Cell type codes, identical to HBase's ``KeyValue.Type`` (R1.2).

    WARNING: these numbers are stored in every store file. Never renumber them.
    """

    PUT = 4
    DELETE = 8
    DELETE_FAMILY_VERSION = 10
    DELETE_COLUMN = 12
    DELETE_FAMILY = 14

    @property
    def is_delete(self) -> bool:
        """Whether this is one of the four delete-marker kinds."""
        return self is not CellType.PUT

    @property
    def hbase_name(self) -> str:
        """The name HBase prints for this type (``Put``, ``DeleteColumn``, ...)."""
        return _HBASE_NAMES[self]

    @classmethod
    def parse(cls, value: int | str) -> CellType:
        """Parse a type code or name (``4``, ``"Put"``, ``"DELETE_COLUMN"``, ``"deletecolumn"``).

        Raises:
            ValueError: if the value names no cell type.
        """
        if isinstance(value, str):
            try:
                return TYPE_NAMES[normalize_type_name(value)]
            except KeyError:
                raise ValueError(f"unknown cell type {value!r}") from None
        return cls(int(value))


_HBASE_NAMES: Final = {
    CellType.PUT: "Put",
    CellType.DELETE: "Delete",
    CellType.DELETE_FAMILY_VERSION: "DeleteFamilyVersion",
    CellType.DELETE_COLUMN: "DeleteColumn",
    CellType.DELETE_FAMILY: "DeleteFamily",
}


def normalize_type_name(name: str) -> str:
    """The lookup key of a type name in :data:`TYPE_NAMES` (lower case, no '_' or '-')."""
    return name.strip().replace("_", "").replace("-", "").lower()


#: Every accepted spelling of a type, normalized: HBase names, enum names, and codes.
TYPE_NAMES: Final[dict[str, CellType]] = {
    **{normalize_type_name(name): t for t, name in _HBASE_NAMES.items()},
    **{normalize_type_name(t.name): t for t in CellType},
    **{str(int(t)): t for t in CellType},
}


def parse_type_names(text: pa.Array) -> pa.Array:
    """Vectorized :meth:`CellType.parse` of strings: every accepted spelling to its code.

    Args:
        text: Strings (names like ``Put``, ``DELETE_COLUMN``, ``delete-family`` or codes
            like ``"12"``).

    Returns:
        ``int8`` codes; null where ``text`` is null or empty, or names no cell type (a
        caller tells the two apart with ``text.is_valid()``).
    """
    norm = pc.utf8_lower(pc.utf8_trim_whitespace(text.cast(pa.string())))
    norm = pc.replace_substring(pc.replace_substring(norm, "-", ""), "_", "")
    norm = pc.if_else(pc.equal(norm, ""), None, norm)
    idx = pc.index_in(norm, value_set=_TYPE_NAME_KEYS)
    return pc.take(_TYPE_NAME_CODES, idx)


_TYPE_NAME_KEYS: Final = pa.array(list(TYPE_NAMES), pa.string())
_TYPE_NAME_CODES: Final = pa.array([int(t) for t in TYPE_NAMES.values()], pa.int8())

#: Milliseconds per unit (``s``, ``ms``) and units per millisecond (``us``, ``ns``).
UNIT_MS: Final = {"s": 1000, "ms": 1}
UNIT_DIV: Final = {"us": 1000, "ns": 1_000_000}


def scale_to_millis(values: np.ndarray, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """Integer times in ``unit`` (``s``, ``ms``, ``us``, ``ns``) as int64 milliseconds.

    Sub-millisecond units round down (floor); coarser units are multiplied with an
    overflow check, so no value wraps around.

    Returns:
        ``(millis, out_of_range)``: the converted values (0 where out of range) and the
        mask of values whose milliseconds do not fit a signed 64-bit long.

    Raises:
        ValueError: an unknown unit.
    """
    x = np.asarray(values, dtype=np.int64)
    if unit in UNIT_DIV:
        return np.floor_divide(x, UNIT_DIV[unit]), np.zeros(x.size, dtype=bool)
    if unit not in UNIT_MS:
        raise ValueError(f"unknown time unit {unit!r} (expected s, ms, us or ns)")
    factor = UNIT_MS[unit]
    over = np.abs(x) > (2**63 - 1) // factor
    return np.where(over, 0, x) * factor, over


#: The delete-marker type codes.
DELETE_TYPES: Final = frozenset(t for t in CellType if t.is_delete)

#: ``HConstants.LATEST_TIMESTAMP``: "no timestamp given" (R1.5).
LATEST_TIMESTAMP: Final = 2**63 - 1

#: Longest row key HBase accepts (``HConstants.MAX_ROW_LENGTH``, R16.1).
MAX_ROW_LENGTH: Final = 32767

#: Arrow schema of the cells in one store file (the family is the file's directory).
CELL_SCHEMA: Final = pa.schema(
    [
        pa.field("row", pa.binary(), nullable=False),
        pa.field("qualifier", pa.binary(), nullable=False),
        pa.field("ts", pa.int64(), nullable=False),
        pa.field("type", pa.int8(), nullable=False),
        pa.field("value", pa.binary(), nullable=False),
    ]
)

#: The cells with their family (the scan results' ``cells`` shape, HBase result order):
#: :data:`CELL_SCHEMA` with ``family`` after ``row``.
RESULT_CELL_SCHEMA: Final = CELL_SCHEMA.insert(1, pa.field("family", pa.string(), nullable=False))

#: The cell order of one family (R2.1), as pyarrow sort keys. Defined here and only here.
SORT_KEYS: Final[tuple[tuple[str, str], ...]] = (
    ("row", "ascending"),
    ("qualifier", "ascending"),
    ("ts", "descending"),
    ("type", "descending"),
)

#: The cell order when cells of several families travel together (family before row, so
#: that each family's cells form one contiguous, ordered run).
SORT_KEYS_WITH_FAMILY: Final[tuple[tuple[str, str], ...]] = (("family", "ascending"), *SORT_KEYS)

#: HBase's full cell order (R2.1, ``CellComparatorImpl``): row, family, qualifier, ts
#: descending, type descending; the order of an HFile's cells and of a region's results
#: inside a row (R2.3).
SORT_KEYS_HBASE: Final[tuple[tuple[str, str], ...]] = (
    SORT_KEYS[0],
    ("family", "ascending"),
    *SORT_KEYS[1:],
)

#: Where the family sorts: not at all (cells of one family), ``first`` (before the row,
#: :data:`SORT_KEYS_WITH_FAMILY`) or ``in-row`` (after the row, :data:`SORT_KEYS_HBASE`).
FamilyOrder: TypeAlias = Literal["none", "first", "in-row"]

_FAMILY_ORDERS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "none": SORT_KEYS,
    "first": SORT_KEYS_WITH_FAMILY,
    "in-row": SORT_KEYS_HBASE,
}


def cell_sort_keys(
    *, family: FamilyOrder = "none", ties: Sequence[tuple[str, str]] = ()
) -> list[tuple[str, str]]:
    """The cell order (R2.1) as pyarrow sort keys, then ``ties`` among equal keys.

    Every sort of cells goes through this function (or :func:`sort_indices`), so that the
    order is defined once.

    >>> cell_sort_keys(family="in-row", ties=[("seq", "descending")])[1:3]
    [('family', 'ascending'), ('qualifier', 'ascending')]

    Args:
        family: Where the family sorts (:data:`FamilyOrder`).
        ties: Further ``(column, "ascending" | "descending")`` keys that order cells of
            exactly equal keys (a sequence id, a file rank, a position).
    """
    return [*_FAMILY_ORDERS[family], *ties]


def sort_indices(
    cells: pa.Table,
    *,
    with_family: bool = False,
    family: FamilyOrder = "none",
    ties: Sequence[tuple[str, str]] = (),
) -> pa.Array:
    """Indices that put ``cells`` in cell order (R2.1); the sort is stable.

    Binary columns compare as unsigned bytes with a proper prefix first, as HBase's
    comparator does. Stability means that among exactly equal keys the input order is kept.

    Args:
        cells: A table with at least the columns of :data:`SORT_KEYS` (and ``family`` when
            the family sorts).
        with_family: Sort by family first (``family="first"``, kept for existing callers).
        family: Where the family sorts (:data:`FamilyOrder`).
        ties: Further keys among exactly equal cell keys (:func:`cell_sort_keys`).

    Returns:
        An ``uint64`` array of row indices.
    """
    keys = cell_sort_keys(family="first" if with_family else family, ties=ties)
    return pc.sort_indices(cells, sort_keys=keys)


def run_starts(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Indices where a run of equal values starts (always includes 0 when non-empty).

    On a sorted row column these are the first cells of each row.
    """
    same = _same_as_previous(col)
    if len(same):
        same[0] = False
    return np.flatnonzero(~same)


def _same_as_previous(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Boolean mask: element i equals element i-1 (element 0 is False)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    n = len(arr)
    out = np.zeros(n, dtype=bool)
    if n > 1:
        eq = pc.equal(arr.slice(1), arr.slice(0, n - 1))
        out[1:] = eq.to_numpy(zero_copy_only=False)
    return out


def segment_starts(*columns: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Where a new segment of equal ``columns`` values starts, as a boolean mask.

    ``segment_starts(rows)`` marks each row's first cell, ``segment_starts(rows, families,
    qualifiers)`` each column's first cell (element 0 is always a start).
    """
    n = len(columns[0])
    same = np.ones(n, dtype=bool)
    for col in columns:
        same &= _same_as_previous(col)
    if n:
        same[0] = False
    result: np.ndarray = ~same
    return result


def count_in_segments(flag: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Running count of ``flag`` within segments that begin where ``start`` is true.

    ``result[i]`` is the number of true flags in ``[segment start, i]``, inclusive;
    ``start[0]`` must be true. One cumulative sum, minus the sum before each segment's
    start carried forward with a running maximum (the cumulative sum never decreases, so
    the latest segment start always holds the largest base).
    """
    dtype = np.int32 if flag.size < 2**31 else np.int64
    running: np.ndarray = np.cumsum(flag, dtype=dtype)
    base = running - flag.view(np.int8)
    base *= start
    np.maximum.accumulate(base, out=base)
    running -= base
    return running


def equal_key_runs(cells: pa.Table, *, with_family: bool = False) -> np.ndarray:
    """Mark cells whose full key equals the previous cell's key.

    ``cells`` must already be in cell order. The key is (row, qualifier, ts, type), plus the
    family when ``with_family`` is true (R1.1: the value is not part of the key).

    Returns:
        A boolean numpy array: True where cell i has the same key as cell i-1.
    """
    names = [k for k, _ in (SORT_KEYS_WITH_FAMILY if with_family else SORT_KEYS)]
    mask = np.ones(cells.num_rows, dtype=bool)
    if cells.num_rows:
        mask[0] = False
    for name in names:
        mask &= _same_as_previous(cells.column(name))
    return mask


def first_unsorted_index(cells: pa.Table, *, strict: bool = True) -> int | None:
    """Index of the first cell that is out of cell order relative to its predecessor.

    Args:
        cells: Cells of one family.
        strict: Also report a cell whose key equals its predecessor's (store files hold
            unique keys).

    Returns:
        The index ``i`` (>= 1) of the first cell not after cell ``i - 1``, or None when the
        cells are in order.
    """
    n = cells.num_rows
    if n < 2:
        return None

    def pair(name: str) -> tuple[pa.Array, pa.Array]:
        chunked = cells.column(name)
        col = chunked.chunk(0) if chunked.num_chunks == 1 else chunked.combine_chunks()
        return col.slice(0, n - 1), col.slice(1)

    prev_row, row = pair("row")
    prev_q, q = pair("qualifier")
    prev_ts, ts = pair("ts")
    prev_t, t = pair("type")

    def np_bool(a: pa.Array) -> np.ndarray:
        return np.asarray(a.to_numpy(zero_copy_only=False), dtype=bool)

    row_gt = np_bool(pc.greater(row, prev_row))
    row_eq = np_bool(pc.equal(row, prev_row))
    q_gt = np_bool(pc.greater(q, prev_q))
    q_eq = np_bool(pc.equal(q, prev_q))
    ts_lt = np_bool(pc.less(ts, prev_ts))
    ts_eq = np_bool(pc.equal(ts, prev_ts))
    t_lt = np_bool(pc.less(t, prev_t))
    t_eq = np_bool(pc.equal(t, prev_t))
    after = row_gt | (row_eq & (q_gt | (q_eq & (ts_lt | (ts_eq & t_lt)))))
    if not strict:
        after |= row_eq & q_eq & ts_eq & t_eq
    bad = np.flatnonzero(~after)
    return int(bad[0]) + 1 if bad.size else None

"""Shared pieces of the semantics engine: cell-table columns and segmented array passes."""

from __future__ import annotations

from typing import Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import CELL_SCHEMA, CellType, count_in_segments
from cellstore.errors import InvalidArgumentError

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


def pool_empty(n: int, dtype: type[np.generic] | np.dtype) -> np.ndarray:
    """An uninitialised numpy array of ``n`` elements in Arrow's memory pool.

    For the per-cell arrays of a read: Arrow's allocator keeps freed pages for the next
    array, where large numpy arrays come from (and go back to) the operating system, so
    every chunk of a scan would fault fresh, zeroed pages in (more so in Dask workers,
    which set ``MALLOC_TRIM_THRESHOLD_`` low). The array keeps its buffer alive.
    """
    typ = np.dtype(dtype)
    buffer = pa.allocate_buffer(max(n, 1) * typ.itemsize)
    return np.frombuffer(buffer, typ)[:n]


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


def _seen_before(flag: _BoolArray, start: _BoolArray) -> _BoolArray:
    """True where an earlier cell of the same segment has ``flag`` set."""
    result: _BoolArray = (count_in_segments(flag, start) - flag) > 0
    return result


def _starts(equal_to_previous: _BoolArray) -> _BoolArray:
    """Segment starts (length n) from "element i+1 equals element i" (length n - 1)."""
    start = pool_empty(equal_to_previous.size + 1, np.bool_)
    start[0] = True
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
    out = pool_empty(max(n - 1, 0), np.bool_)
    pos = 0
    last: object = None
    for chunk in col.chunks:
        m = len(chunk)
        if m == 0:
            continue
        if pos:
            out[pos - 1] = chunk[0].as_py() == last
        if m > 1:
            _chunk_neighbour_equal(chunk, out[pos : pos + m - 1])
        last = chunk[m - 1].as_py()
        pos += m
    return out


def _chunk_neighbour_equal(chunk: pa.Array, out: _BoolArray) -> None:
    """:func:`_neighbour_equal` of one chunk of at least two elements, written to ``out``."""
    if pa.types.is_dictionary(chunk.type):
        if _distinct(chunk.dictionary) and not chunk.indices.null_count:
            index = chunk.indices.to_numpy()  # no copy, no widening
            np.equal(index[1:], index[:-1], out=out)
            return
        chunk = chunk.dictionary_decode()
    out[:] = _neighbour_equal_plain(chunk)


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


def masked_by_group_max(ts: _IntArray, group: _IntArray, markers: _IntArray) -> _BoolArray:
    """Cells whose group holds one of ``markers`` with a ts >= the cell's ts.

    The DeleteFamily (R5.1) and DeleteColumn (R5.5) rule over segments: ``group`` numbers
    each cell's row (or column) segment, ascending; ``markers`` are indices of the marker
    cells that apply.
    """
    result: _BoolArray = np.zeros(ts.size, dtype=bool)
    if markers.size == 0:
        return result
    n_groups = int(group[-1]) + 1
    stamp = np.full(n_groups, _INT64_MIN, dtype=np.int64)
    np.maximum.at(stamp, group[markers], ts[markers])
    has = np.zeros(n_groups, dtype=bool)
    has[group[markers]] = True
    result = has[group] & (ts <= stamp[group])
    return result


def same_group_and_ts(ts: _IntArray, group: _IntArray, markers: _IntArray) -> _BoolArray:
    """Cells whose (group, ts) equals that of one of ``markers``.

    The DeleteFamilyVersion (R5.3) and Delete (R5.6) rule over segments.
    """
    result: _BoolArray = np.zeros(ts.size, dtype=bool)
    if markers.size == 0:
        return result
    stamps = np.unique(ts[markers])
    pos = np.minimum(np.searchsorted(stamps, ts), stamps.size - 1)
    candidates = np.flatnonzero(stamps[pos] == ts)
    keys = group[candidates] * stamps.size + pos[candidates]
    marker_keys = group[markers] * stamps.size + np.searchsorted(stamps, ts[markers])
    result[candidates] = np.isin(keys, marker_keys)
    return result

"""From data cells to index rows and index cells, and reading a set of rows, vectorized.

An *index rows* table has one row per index row: ``key`` (the index row key), ``row`` (the
data row key), ``ts`` (the index row's timestamp) and one binary column per covered column
(named ``family:qualifier``, null where the data row has no value). Both sides of an index
are brought to this shape: the data (what the index should hold, :func:`index_rows`) and
the index table (what it holds, :func:`stored_rows`), so builds and verify compare them
with joins instead of loops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import MAX_ROW_LENGTH, CellType, segment_starts
from cellstore.core.codecs import decode_values
from cellstore.core.keys import split_column
from cellstore.core.rowkey import RowKeySpec
from cellstore.jobs.index.definition import MARKER_QUALIFIER, IndexDefinition
from cellstore.jobs.index.expr import Column, KeyRef, env_key, evaluate
from cellstore.jobs.index.keys import IndexType, decode_keys, encode_parts, index_keys
from cellstore.reader import RESULT_SCHEMA
from cellstore.reader.tables import get_row, scan_table

if TYPE_CHECKING:
    from cellstore.handle import TableHandle

__all__ = [
    "POINT_READS",
    "Pivot",
    "RowStats",
    "cells_of",
    "empty_rows",
    "in_watched_columns",
    "index_rows",
    "pivot",
    "read_rows",
    "stored_rows",
]

#: Up to this many rows, :func:`read_rows` reads row by row (Bloom filters and row-group
#: statistics skip the rest); beyond it, one scan over the rows' key span.
POINT_READS: Final = 64

_CELL_SCHEMA: Final = pa.schema(
    [
        ("row", pa.binary()),
        ("family", pa.string()),
        ("qualifier", pa.binary()),
        ("ts", pa.int64()),
        ("type", pa.int8()),
        ("value", pa.binary()),
    ]
)


@dataclass(frozen=True)
class Pivot:
    """Cells (one version per column) turned into one entry per row.

    Attributes:
        rows: The distinct row keys, in the order of the cells.
        newest: Per row, the largest timestamp among its cells.
        values: Per requested column, the row's value (null where absent).
        stamps: Per requested column, the value's timestamp (-1 where absent).
    """

    rows: pa.Array
    newest: np.ndarray
    values: tuple[pa.Array, ...]
    stamps: tuple[np.ndarray, ...]


def pivot(cells: pa.Table, columns: Sequence[tuple[str, bytes]]) -> Pivot:
    """One entry per row of ``cells`` (in result order), with ``columns``' newest values.

    Args:
        cells: Scan results (``row, family, qualifier, ts, type, value``), each row's cells
            together and newest first within a column.
        columns: ``(family, qualifier)`` pairs to take out.
    """
    n = cells.num_rows
    if n == 0:
        return Pivot(
            pa.array([], pa.binary()),
            np.zeros(0, dtype=np.int64),
            tuple(pa.array([], pa.binary()) for _ in columns),
            tuple(np.zeros(0, dtype=np.int64) for _ in columns),
        )
    rows = cells.column("row")
    starts = np.flatnonzero(segment_starts(rows))
    row_id = np.cumsum(segment_starts(rows)) - 1
    ts = np.asarray(cells.column("ts").to_numpy(), dtype=np.int64)
    newest = np.maximum.reduceat(ts, starts)
    families = cells.column("family")
    qualifiers = cells.column("qualifier")
    raw_values = cells.column("value")
    n_rows = len(starts)
    values: list[pa.Array] = []
    stamps: list[np.ndarray] = []
    for fam, qual in columns:
        hit = pc.and_(pc.equal(families, fam), pc.equal(qualifiers, pa.scalar(qual, pa.binary())))
        where = np.flatnonzero(np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool))
        rid = row_id[where]
        first = np.ones(len(where), dtype=bool)
        first[1:] = rid[1:] != rid[:-1]  # the newest version of the column in each row
        where, rid = where[first], rid[first]
        index = np.full(n_rows, -1, dtype=np.int64)
        index[rid] = np.arange(len(where))
        taken = raw_values.take(pa.array(where, pa.int64())).combine_chunks()
        values.append(taken.take(pa.array(index, mask=index < 0)))
        stamp = np.full(n_rows, -1, dtype=np.int64)
        stamp[rid] = ts[where]
        stamps.append(stamp)
    unique = rows.take(pa.array(starts, pa.int64())).combine_chunks()
    return Pivot(unique, newest, tuple(values), tuple(stamps))


@dataclass(frozen=True)
class RowStats:
    """What :func:`index_rows` made of the data rows it was given.

    Attributes:
        rows: Data rows seen.
        indexed: Rows that got an index row.
        missing: Rows without a value for some column part (not indexed, as in a sparse
            index).
        unindexable: Rows whose value does not decode with its codec or row-key field, or
            whose index row key would exceed the maximum row length.
    """

    rows: int = 0
    indexed: int = 0
    missing: int = 0
    unindexable: int = 0

    def __add__(self, other: RowStats) -> RowStats:
        return RowStats(
            self.rows + other.rows,
            self.indexed + other.indexed,
            self.missing + other.missing,
            self.unindexable + other.unindexable,
        )


def _covered_fields(definition: IndexDefinition) -> list[pa.Field]:
    return [pa.field(c, pa.binary()) for c in definition.covered]


def empty_rows(definition: IndexDefinition) -> pa.Table:
    """An index rows table with no rows."""
    fixed = [("key", pa.binary()), ("row", pa.binary()), ("ts", pa.int64())]
    schema = pa.schema([*fixed, *_covered_fields(definition)])
    return schema.empty_table()


def key_decoder(spec: RowKeySpec | None) -> RowKeySpec | None:
    """The spec that decodes salt-free data rows (as scans return them)."""
    return None if spec is None else replace(spec, salt_buckets=None)


def _typed_parts(
    definition: IndexDefinition, types: Sequence[IndexType], piv: Pivot, spec: RowKeySpec | None
) -> tuple[list[pa.Array], np.ndarray]:
    """Typed part values per row, and the mask of rows lacking a column part."""
    n = len(piv.rows)
    absent = np.zeros(n, dtype=bool)
    decoded = None
    typed: list[pa.Array] = []
    columns = list(definition.watched_columns)
    key_types = definition.key_types(spec)

    def column(ref: Column) -> pa.Array:
        nonlocal absent
        raw = piv.values[columns.index(ref.column)]
        absent |= np.asarray(pc.is_null(raw).to_numpy(zero_copy_only=False), dtype=bool)
        return decode_values(raw, ref.codec, field=ref.column, errors="null")

    def key(name: str) -> pa.Array:
        nonlocal decoded
        if decoded is None:
            decoder = key_decoder(spec)
            assert decoder is not None  # part_types() checked the spec
            decoded = decoder.decode(piv.rows, errors="null")
        out: pa.Array = decoded.column(name).combine_chunks().cast(key_types[name].arrow_type)
        return out

    for part, typ in zip(definition.parts, types, strict=True):
        if part.kind == "column":
            typed.append(column(part.columns[0]))
        elif part.kind == "key":
            typed.append(key(part.source).cast(typ.arrow_type))
        else:
            assert part.tree is not None
            inputs = {env_key(c): column(c) for c in part.columns}
            inputs |= {env_key(KeyRef(f)): key(f) for f in part.key_fields}
            typed.append(evaluate(part.tree, inputs, key_types, n))
    return typed, absent


def index_rows(
    cells: pa.Table,
    definition: IndexDefinition,
    types: Sequence[IndexType],
    spec: RowKeySpec | None,
) -> tuple[pa.Table, RowStats]:
    """The index rows that data ``cells`` call for (one per data row with a value).

    The index row's timestamp is the newest timestamp among the row's cells given (the
    watched columns, or the whole row for a key-only index), so every cell of an index row
    carries one timestamp and rebuilding from the same data writes the same cells.

    Args:
        cells: Normal-read scan results (one version per column) holding the watched
            columns (:attr:`IndexDefinition.watched_columns`), or the whole rows for a
            key-only index.
        definition: The index.
        types: :meth:`IndexDefinition.part_types`.
        spec: The data table's row-key spec (for key parts).

    Returns:
        The index rows table (see the module docs) and counts.
    """
    columns = [split_column(c) for c in definition.watched_columns]
    piv = pivot(cells, columns)
    n = len(piv.rows)
    if n == 0:
        return empty_rows(definition), RowStats()
    typed, absent = _typed_parts(definition, types, piv, spec)
    keys = index_keys(encode_parts(types, typed), piv.rows)
    too_long = pc.fill_null(pc.greater(pc.binary_length(keys), MAX_ROW_LENGTH), False)
    ok = np.asarray(pc.is_valid(keys).to_numpy(zero_copy_only=False), dtype=bool)
    ok &= ~np.asarray(too_long.to_numpy(zero_copy_only=False), dtype=bool)
    names = list(definition.watched_columns)
    covered_values = [piv.values[names.index(c)] for c in definition.covered]
    mask = pa.array(ok)
    table = pa.table(
        [keys, piv.rows, pa.array(piv.newest, pa.int64()), *covered_values],
        schema=empty_rows(definition).schema,
    ).filter(mask)
    indexed = int(ok.sum())
    missing = int(absent.sum())
    stats = RowStats(rows=n, indexed=indexed, missing=missing, unindexable=n - indexed - missing)
    return table, stats


def cells_of(
    rows: pa.Table, definition: IndexDefinition, *, ts: pa.Array | None = None
) -> pa.Table:
    """The index cells (Puts) of index rows: the marker cell, then the covered cells.

    Args:
        rows: An index rows table.
        definition: The index.
        ts: Timestamps to write instead of ``rows["ts"]``.

    Returns:
        Cells in the ``load_cells`` layout (``row, family, qualifier, ts, type, value``).
    """
    keys = rows.column("key").combine_chunks()
    stamps = (ts if ts is not None else rows.column("ts")).cast(pa.int64())
    if isinstance(stamps, pa.ChunkedArray):
        stamps = stamps.combine_chunks()
    n = rows.num_rows
    family = definition.family
    parts = [_cells(keys, family, MARKER_QUALIFIER, stamps, pa.array([b""] * n, pa.binary()))]
    for name in definition.covered:
        values = rows.column(name).combine_chunks()
        has = pc.is_valid(values)
        parts.append(
            _cells(
                keys.filter(has),
                family,
                _covered_qualifier(name),
                stamps.filter(has),
                values.filter(has),
            )
        )
    return pa.concat_tables(parts)


def _covered_qualifier(name: str) -> bytes:
    """The index qualifier of a covered column: its ``family:qualifier`` name as bytes."""
    fam, qual = split_column(name)
    return fam.encode("utf-8") + b":" + qual


def in_watched_columns(cells: pa.Table, definition: IndexDefinition) -> pa.ChunkedArray:
    """Per cell, whether it is in one of ``definition``'s watched columns."""
    columns = [split_column(c) for c in definition.watched_columns]
    names = pa.array([f.encode("utf-8") + b"\x00" + q for f, q in columns], pa.binary())
    keys = pc.binary_join_element_wise(
        cells.column("family").cast(pa.binary()), cells.column("qualifier"), b"\x00"
    )
    mask: pa.ChunkedArray = pc.is_in(keys, value_set=names)
    return mask


def marker_cells(
    keys: pa.Array, family: str, qualifier: bytes, stamps: pa.Array, kind: CellType
) -> pa.Table:
    """Delete markers of type ``kind`` on ``keys`` (``qualifier`` empty for family markers)."""
    table = _cells(keys, family, qualifier, stamps, pa.array([b""] * len(keys), pa.binary()))
    return table.set_column(4, "type", pa.array(np.full(len(keys), int(kind), dtype=np.int8)))


def _cells(
    keys: pa.Array, family: str, qualifier: bytes, stamps: pa.Array, values: pa.Array
) -> pa.Table:
    n = len(keys)
    return pa.table(
        [
            keys,
            pa.array([family] * n, pa.string()) if n else pa.array([], pa.string()),
            pa.array([qualifier] * n, pa.binary()) if n else pa.array([], pa.binary()),
            stamps,
            pa.array(np.full(n, int(CellType.PUT), dtype=np.int8)),
            values,
        ],
        schema=_CELL_SCHEMA,
    )


def stored_rows(
    cells: pa.Table, definition: IndexDefinition, types: Sequence[IndexType]
) -> tuple[pa.Table, pa.Array, np.ndarray]:
    """What the index table holds: its cells (one version per column) as index rows.

    Returns:
        ``(rows, newest, marked)``: the index rows table (``ts`` is the marker's timestamp,
        -1 for a row without a visible marker), the newest timestamp of every index row's
        cells (for delete markers that hide the whole row), and the mask of rows whose
        marker cell is visible. Rows whose key does not parse have a null ``row``.
    """
    qualifiers = [(definition.family, MARKER_QUALIFIER)] + [
        (definition.family, _covered_qualifier(c)) for c in definition.covered
    ]
    piv = pivot(cells, qualifiers)
    decoded = decode_keys(types, piv.rows)
    marked = np.asarray(pc.is_valid(piv.values[0]).to_numpy(zero_copy_only=False), dtype=bool)
    table = pa.table(
        [piv.rows, decoded.rows, pa.array(piv.stamps[0], pa.int64()), *piv.values[1:]],
        schema=empty_rows(definition).schema,
    )
    return table, pa.array(piv.newest, pa.int64()), marked


# ----------------------------------------------------------------------------- reading
def read_rows(
    table: TableHandle,
    rows: pa.Array,
    *,
    columns: Sequence[str] | None = None,
    families: Sequence[str] | None = None,
    raw: bool = False,
    max_versions: int | None = None,
) -> pa.Table:
    """The cells of the given rows (salt-free keys), in key order.

    Up to :data:`POINT_READS` rows are read one by one (``get``, or a one-row scan for raw
    reads); more rows are read by one scan over their key span, keeping only those rows
    (so the cost is that of the span: sorted, clustered keys read little).

    Args:
        table: The table.
        rows: Sorted, distinct row keys.
        columns: ``family:qualifier`` (or bare family) names to read; None for all.
        families: Whole families to read.
        raw: A raw read (delete markers and masked cells as stored).
        max_versions: Versions per column.
    """
    n = len(rows)
    if n == 0:
        return RESULT_SCHEMA.empty_table()
    keys: list[bytes] = rows.to_pylist() if n <= POINT_READS else []
    parts: list[pa.Table] = []
    if keys:
        for key in keys:
            if raw:
                scan = scan_table(
                    table,
                    start_row=key,
                    stop_row=key + b"\x00",
                    families=families,
                    raw=True,
                    max_versions=max_versions,
                )
                parts.extend(scan.to_batches())
            else:
                parts.append(
                    get_row(
                        table, key, columns=columns, families=families, max_versions=max_versions
                    )
                )
    else:
        first, last = rows[0].as_py(), rows[n - 1].as_py()
        scan = scan_table(
            table,
            start_row=first,
            stop_row=last + b"\x00",
            columns=None if raw else columns,
            families=families,
            raw=raw,
            max_versions=max_versions,
        )
        for batch in scan.to_batches():
            parts.append(batch.filter(pc.is_in(batch.column("row"), value_set=rows)))
    parts = [p.select(RESULT_SCHEMA.names) for p in parts if p.num_rows]
    if not parts:
        return RESULT_SCHEMA.empty_table()
    return pa.concat_tables(parts).cast(RESULT_SCHEMA)

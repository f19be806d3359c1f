"""Records to cells, vectorized: encode, flag bad records, route, sort, explode, write.

A load works on *encoded records* first: one Arrow row per good input record with its
binary row key (salt byte included), timestamp (ms), operation type code, and per cell
mapping its encoded qualifier (when taken from a column) and value (null = no cell).
Records are routed to regions and sorted by row key — an n-record sort instead of an
(n x columns)-cell sort — and only then exploded into the cells of each family:

* **fast path** (every record a Put, the family's qualifiers literal and distinct, row keys
  unique in the region): the cells of a row come out in qualifier order by construction,
  so exploding is one gather per column;
* **general path** (delete markers, qualifiers from columns, repeated row keys): the
  exploded cells are sorted in cell order (R2.1) with a stable sort, and among exactly
  equal keys the one given last wins (later record, later mapping).

Nothing here loops over records or cells in Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import (
    CELL_SCHEMA,
    LATEST_TIMESTAMP,
    MAX_ROW_LENGTH,
    UNIT_DIV,
    UNIT_MS,
    CellType,
    parse_type_names,
    scale_to_millis,
)
from cellstore.core.codecs import (
    Problems,
    binary_from_parts,
    binary_parts,
    encode_values,
    to_integers,
)
from cellstore.core.family import Family
from cellstore.errors import InvalidArgumentError
from cellstore.loader.direct import WrittenFile, dedupe_sorted
from cellstore.loader.mapping import KeyColumn, LoadMapping
from cellstore.storefiles import write_rolled
from cellstore.storefiles.columns import NO_LAYOUTS, Layouts
from cellstore.storefiles.rolling import (
    BulkLoadFile,
    FileFormat,
    HFileFormat,
    ParquetFormat,
    ResultT,
)

if TYPE_CHECKING:
    from cellstore.core.rowkey import RowKeySpec

__all__ = [
    "BoundMapping",
    "EncodedRecords",
    "encode_records",
    "encode_row_keys",
    "explode_family",
    "region_cells",
    "route_rows",
    "write_region",
    "write_region_hfiles",
]

_TS_FORMATS: Final = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d")


@dataclass(frozen=True, kw_only=True)
class BoundMapping:
    """A mapping resolved against a table (frozen, picklable).

    Attributes:
        mapping: The mapping.
        key: The row-key builder: a column, or the row-key spec (the mapping's or the
            table's).
        salt_buckets: The table's salt buckets; a :class:`KeyColumn` key gets the Phoenix
            salt byte prefixed when set (a spec adds its own).
        families: Mapped family names, in table order.
    """

    mapping: LoadMapping
    key: KeyColumn | RowKeySpec
    salt_buckets: int | None
    families: tuple[str, ...]

    def mappings_of(self, family: str) -> tuple[int, ...]:
        """Indices of the cell mappings that write ``family``."""
        return tuple(i for i, c in enumerate(self.mapping.cells) if c.family == family)


@dataclass(frozen=True)
class EncodedRecords:
    """Result of :func:`encode_records` on one batch.

    Attributes:
        records: The good records: ``row`` (binary), ``ts`` (int64 ms), ``type`` (int8),
            and ``q<j>`` / ``v<j>`` binary columns for cell mapping ``j`` (qualifier from a
            column; value, null = no cell).
        bad: Boolean mask over the batch of the records that are bad.
        reasons: ``"<field>: <reason>"`` per batch record, null for good ones.
    """

    records: pa.Table
    bad: np.ndarray
    reasons: pa.Array


def _cells_at(records: pa.Table, idx: pa.Array, qualifier: pa.Array, value: pa.Array) -> pa.Table:
    """Cells of the records at ``idx``: their row, ts and type, with these qualifiers, values."""
    return pa.table(
        {
            "row": records.column("row").take(idx),
            "qualifier": qualifier,
            "ts": records.column("ts").take(idx),
            "type": records.column("type").take(idx),
            "value": value,
        }
    )


def _mapped(records: pa.Table, name: str, mapped: bool) -> tuple[pa.Array | None, np.ndarray]:
    """Column ``name`` when the mapping fills it (else None) and where it holds a value."""
    if not mapped:
        return None, np.ones(records.num_rows, dtype=bool)
    col = records.column(name).combine_chunks()
    return col, _np_bool(col.is_valid())


def _np_bool(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


def _binary(arr: pa.Array) -> pa.Array:
    """``arr`` as ``binary`` (large binary values from large string inputs are cast back)."""
    return arr if arr.type == pa.binary() else arr.cast(pa.binary())


def _reason(mask: np.ndarray, text: str) -> pa.Array:
    return pc.if_else(pa.array(mask), pa.scalar(text), pa.scalar(None, pa.string()))


def _column(batch: pa.Table, name: str) -> pa.Array:
    col = batch.column(name).combine_chunks()
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    return col


def prefix_salt(keys: pa.Array, buckets: int) -> pa.Array:
    """Prefix every (non-null) key with its Phoenix salt byte (vectorized)."""
    from cellstore.core.rowkey.hashing import salt_bytes

    salts = salt_bytes(keys, buckets)
    filled = keys.fill_null(b"") if keys.null_count else keys
    offsets, data = binary_parts(filled.cast(pa.binary()))
    new_data = np.insert(data, offsets[:-1], salts)
    new_offsets = offsets + np.arange(len(offsets), dtype=np.int64)
    valid = None if not keys.null_count else _np_bool(keys.is_valid())
    return binary_from_parts(new_offsets, new_data, valid)


def _row_keys(batch: pa.Table, bound: BoundMapping) -> tuple[pa.Array, list[pa.Array]]:
    key = bound.key
    reasons: list[pa.Array] = []
    if isinstance(key, KeyColumn):
        col = _column(batch, key.column)
        enc = encode_values(col, key.codec, field=key.column, errors="mask")
        rows, bad = enc.values, enc.bad
        reasons.append(enc.reasons)
        null = ~_np_bool(rows.is_valid()) & ~bad
        reasons.append(_reason(null, f"{key.column}: row key is null"))
        if bound.salt_buckets is not None:
            rows = prefix_salt(rows, bound.salt_buckets)
    else:
        enc = key.encode(batch, errors="mask")
        rows = enc.values
        reasons.append(enc.reasons)
        null = ~_np_bool(rows.is_valid()) & ~np.asarray(enc.bad, dtype=bool)
        reasons.append(_reason(null, "row key: a key field is null"))
    lengths = pc.binary_length(rows).to_numpy(zero_copy_only=False)
    lengths = np.nan_to_num(np.asarray(lengths, dtype=np.float64), nan=-1).astype(np.int64)
    prefix = 1 if (isinstance(key, KeyColumn) and bound.salt_buckets is not None) else 0
    name = key.column if isinstance(key, KeyColumn) else "row key"
    reasons.append(_reason(lengths == prefix, f"{name}: row key is empty"))
    reasons.append(
        _reason(lengths > MAX_ROW_LENGTH, f"{name}: row key is longer than {MAX_ROW_LENGTH} bytes")
    )
    return rows.cast(pa.binary()), reasons


def encode_row_keys(batch: pa.Table, bound: BoundMapping) -> tuple[pa.Array, np.ndarray]:
    """The row keys of a batch's records as a load builds them, and which are bad.

    Only the key columns are needed (``cellstore advise`` reads just those). Bad keys
    (null field, value that does not fit its encoding, empty, too long) are null.

    Returns:
        The binary keys (salt byte included) and the boolean mask of bad records.
    """
    rows, reasons = _row_keys(batch, bound)
    combined = pc.coalesce(*reasons) if reasons else pa.nulls(batch.num_rows, pa.string())
    bad = _np_bool(combined.is_valid())
    return rows, bad


def _timestamps(batch: pa.Table, mapping: LoadMapping, now: int) -> tuple[pa.Array, list[pa.Array]]:
    n = batch.num_rows
    name = mapping.timestamp_column
    if name is None:
        return pa.array(np.full(n, now, dtype=np.int64)), []
    col = _column(batch, name)
    unit = mapping.timestamp_unit
    t = col.type
    reasons: list[pa.Array] = []
    if pa.types.is_timestamp(t):
        # In the column's own unit, then scaled with overflow checks: a safe cast to ms
        # fails on sub-millisecond values, and an unsafe one wraps around.
        ms = _scale(col.cast(pa.int64()), t.unit, name, reasons)
    elif pa.types.is_date(t):
        ms = col.cast(pa.date64()).cast(pa.int64())
    elif (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_string(t)
        or (pa.types.is_large_string(t) or pa.types.is_null(t))
    ):
        ms = _numeric_or_text_ts(col, unit, name, reasons)
    else:
        raise InvalidArgumentError(
            f"timestamp column {name!r} has type {t}; expected integers ({unit}), floats, "
            "timestamps or ISO-8601 text"
        )
    valid = _np_bool(ms.is_valid())
    already = np.zeros(n, dtype=bool)
    for r in reasons:
        already |= _np_bool(r.is_valid())
    reasons.append(_reason(~valid & ~already, f"{name}: timestamp is null or not a time"))
    values = np.asarray(ms.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    reasons.append(_reason(valid & (values < 0), f"{name}: timestamp is negative"))
    values = np.where(values == LATEST_TIMESTAMP, now, values)  # R1.5: "no timestamp"
    return pa.array(values, pa.int64()), reasons


def _numeric_or_text_ts(col: pa.Array, unit: str, name: str, reasons: list[pa.Array]) -> pa.Array:
    n = len(col)
    t = col.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        text = pc.utf8_trim_whitespace(col)
        digits = _np_bool(pc.match_substring_regex(text, r"^[+-]?[0-9]+$"))
        numeric = pc.if_else(pa.array(digits), text, None)
        ints = _int64s(numeric, name, reasons) if digits.any() else pa.nulls(n, pa.int64())
        out = _scale(ints, unit, name, reasons)
        other = ~digits & _np_bool(text.is_valid())
        if other.any():
            parsed = _parse_text_times(pc.if_else(pa.array(other), text, None))
            out = pc.coalesce(out, parsed)
        return out
    if pa.types.is_null(t):
        return pa.nulls(n, pa.int64())
    if pa.types.is_floating(t):
        x = np.asarray(col.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.float64)
        factor = UNIT_MS.get(unit, 1) / UNIT_DIV.get(unit, 1)
        with np.errstate(invalid="ignore", over="ignore"):
            scaled = np.floor(x * factor)
            ok = np.isfinite(scaled) & (np.abs(scaled) < 2.0**63)
        valid = _np_bool(col.is_valid())
        reasons.append(_reason(valid & ~ok, f"{name}: timestamp is not a finite number"))
        return pa.array(np.where(ok, scaled, 0).astype(np.int64), mask=~(valid & ok))
    return _scale(_int64s(col, name, reasons), unit, name, reasons)


def _int64s(col: pa.Array, name: str, reasons: list[pa.Array]) -> pa.Array:
    """Integers or digit strings as int64; values beyond int64 are bad ("out of range")."""
    problems = Problems(len(col))
    ints = to_integers(col, bits=64, signed=True, field=name, problems=problems)
    over = problems.bad
    reasons.append(_reason(over, f"{name}: timestamp out of range"))
    return pa.array(ints, pa.int64(), mask=~_np_bool(col.is_valid()) | over)


def _scale(ints: pa.Array, unit: str, name: str, reasons: list[pa.Array]) -> pa.Array:
    if unit == "ms":
        return ints
    x = np.asarray(ints.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    millis, over = scale_to_millis(x, unit)
    valid = _np_bool(ints.is_valid())
    reasons.append(_reason(valid & over, f"{name}: timestamp out of range"))
    return pa.array(millis, pa.int64(), mask=~valid | over)


def _parse_text_times(text: pa.Array) -> pa.Array:
    try:
        return pc.cast(text, pa.timestamp("ms")).cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    parsed = [
        pc.strptime(text, format=f, unit="ms", error_is_null=True).cast(pa.int64())
        for f in _TS_FORMATS
    ]
    return pc.coalesce(*parsed)


def _operations(batch: pa.Table, mapping: LoadMapping) -> tuple[pa.Array, list[pa.Array]]:
    n = batch.num_rows
    name = mapping.operation_column
    if name is None:
        return pa.array(np.full(n, int(CellType.PUT), dtype=np.int8)), []
    col = _column(batch, name)
    t = col.type
    if pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t):
        text = col.cast(pa.string())
    elif pa.types.is_null(col.type):
        text = pa.nulls(n, pa.string())
    else:
        raise InvalidArgumentError(f"operation column {name!r} has type {col.type}")
    codes = parse_type_names(text)
    present = pc.and_(text.is_valid(), pc.not_equal(pc.utf8_trim_whitespace(text), ""))
    unknown = _np_bool(present.fill_null(False)) & ~_np_bool(codes.is_valid())
    reason = _reason(
        unknown,
        f"{name}: unknown operation (expected Put, Delete, DeleteColumn, DeleteFamily or "
        "DeleteFamilyVersion)",
    )
    return codes.fill_null(int(CellType.PUT)), [reason]


def encode_records(batch: pa.Table, bound: BoundMapping, *, now: int) -> EncodedRecords:
    """Encode one batch of input records and flag the bad ones (vectorized).

    A record is bad when its row key cannot be built (null key field, value that does not
    fit the key's encoding, empty or longer than 32767 bytes), its timestamp is null,
    negative or not a time, its operation is unknown, or a Put's value does not fit its
    codec. Nulls in value or qualifier columns are not errors: they are no cell.

    Returns:
        The good records and, over the whole batch, the bad mask and reasons.
    """
    mapping = bound.mapping
    rows, reasons = _row_keys(batch, bound)
    ts, ts_reasons = _timestamps(batch, mapping, now)
    types, op_reasons = _operations(batch, mapping)
    reasons += ts_reasons + op_reasons
    is_put = types.to_numpy(zero_copy_only=False) == int(CellType.PUT)
    columns: dict[str, pa.Array] = {"row": rows, "ts": ts, "type": types}
    for j, cm in enumerate(mapping.cells):
        if cm.qualifier_column is not None:
            q = encode_values(
                _column(batch, cm.qualifier_column),
                cm.qualifier_codec,
                field=cm.qualifier_column,
                errors="mask",
            )
            reasons.append(q.reasons)
            columns[f"q{j}"] = _binary(q.values)
        if cm.value is not None:
            v = encode_values(_column(batch, cm.value), cm.codec, field=cm.value, errors="mask")
            if v.bad.any():
                reasons.append(pc.if_else(pa.array(is_put), v.reasons, None))
            columns[f"v{j}"] = _binary(v.values)
    n = batch.num_rows
    combined = pc.coalesce(*reasons).cast(pa.string()) if reasons else pa.nulls(n, pa.string())
    bad = _np_bool(combined.is_valid())
    table = pa.table(columns)
    if bad.any():
        table = table.filter(pa.array(~bad))
    return EncodedRecords(table, bad, combined)


# ----------------------------------------------------------------------------- routing
def route_rows(rows: pa.Array | pa.ChunkedArray, split_keys: Sequence[bytes]) -> np.ndarray:
    """Region number of every row key (unsorted), by a vectorized binary search.

    ``ceil(log2(len(split_keys) + 1))`` rounds, each one element-wise comparison of every
    row with its current candidate split key. A row equal to a split key belongs to the
    region starting there.

    Returns:
        int32 numpy array with values in ``0 .. len(split_keys)``.
    """
    arr = rows.combine_chunks() if isinstance(rows, pa.ChunkedArray) else rows
    n, k = len(arr), len(split_keys)
    if k == 0 or n == 0:
        return np.zeros(n, dtype=np.int32)
    splits = pa.array(list(split_keys), pa.binary())
    lo = np.zeros(n, dtype=np.int64)  # answer in [lo, hi]
    hi = np.full(n, k, dtype=np.int64)
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) // 2  # candidate: is row >= splits[mid]? then region >= mid + 1
        ge = _np_bool(pc.greater_equal(arr, pc.take(splits, pa.array(np.minimum(mid, k - 1)))))
        lo = np.where(active & ge, mid + 1, lo)
        hi = np.where(active & ~ge, mid, hi)
    return lo.astype(np.int32)


# ----------------------------------------------------------------------------- explode
def sort_records(records: pa.Table) -> tuple[pa.Table, bool]:
    """Records sorted by row key (stable), and whether every row key is unique."""
    if records.num_rows <= 1:
        return records, True
    order = pc.sort_indices(records, sort_keys=[("row", "ascending")])
    ordered = records.take(order)
    row = ordered.column("row").combine_chunks()
    n = len(row)
    dup = bool(pc.any(pc.equal(row.slice(1), row.slice(0, n - 1))).as_py())
    return ordered, not dup


def _fast_path_ok(bound: BoundMapping, family: str, unique_rows: bool) -> bool:
    if not unique_rows or bound.mapping.operation_column is not None:
        return False
    js = bound.mappings_of(family)
    quals = [bound.mapping.cells[j].qualifier for j in js]
    return all(q is not None for q in quals) and len(set(quals)) == len(quals)


def _repeat(value: bytes, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, pa.binary()), n)


def explode_family(
    records: pa.Table, bound: BoundMapping, family: str, *, unique_rows: bool
) -> tuple[pa.Table, int]:
    """The cells of one family from row-sorted records, in cell order with unique keys.

    Args:
        records: Encoded records sorted by row key (:func:`sort_records`).
        bound: The mapping.
        family: The family.
        unique_rows: Whether the records' row keys are unique (enables the fast path).

    Returns:
        The cells (``CELL_SCHEMA`` columns) and the number of duplicate-key cells dropped.
    """
    js = bound.mappings_of(family)
    cells_map = bound.mapping.cells
    n = records.num_rows
    if _fast_path_ok(bound, family, unique_rows):
        order = sorted(js, key=lambda j: cells_map[j].qualifier or b"")
        m = len(order)
        present = np.ones((n, m), dtype=bool)
        values: list[pa.Array] = []
        for c, j in enumerate(order):
            col = f"v{j}"
            if col in records.column_names:
                v = records.column(col).combine_chunks()
                present[:, c] = _np_bool(v.is_valid())
                values.append(v)
            else:
                values.append(_repeat(b"", n))
        keep = np.flatnonzero(present.ravel())
        rec = keep // m
        which = keep % m
        quals = pa.array([cells_map[j].qualifier for j in order], pa.binary())
        stacked = pa.concat_arrays([v.cast(pa.binary()) for v in values]) if m > 1 else values[0]
        rec_idx = pa.array(rec)
        cells = _cells_at(
            records, rec_idx, quals.take(pa.array(which)), stacked.take(pa.array(which * n + rec))
        )
        return cells.cast(CELL_SCHEMA), 0
    types = records.column("type").combine_chunks().to_numpy(zero_copy_only=False)
    is_put = types == int(CellType.PUT)
    col_marker = (types == int(CellType.DELETE)) | (types == int(CellType.DELETE_COLUMN))
    fam_marker = (types == int(CellType.DELETE_FAMILY)) | (
        types == int(CellType.DELETE_FAMILY_VERSION)
    )
    pieces: list[pa.Table] = []
    if fam_marker.any():
        idx = pa.array(np.flatnonzero(fam_marker))
        k = len(idx)
        pieces.append(_cells_at(records, idx, _repeat(b"", k), _repeat(b"", k)))
    for j in js:
        cm = cells_map[j]
        qual, has_q = _mapped(records, f"q{j}", cm.qualifier_column is not None)
        val, has_v = _mapped(records, f"v{j}", cm.value is not None)
        take = (is_put & has_v & has_q) | (col_marker & has_q)
        if not take.any():
            continue
        idx = pa.array(np.flatnonzero(take))
        k = len(idx)
        q = qual.take(idx) if qual is not None else _repeat(cm.qualifier or b"", k)
        if val is not None:
            value = pc.if_else(pa.array(is_put[take]), val.take(idx).cast(pa.binary()), b"")
        else:
            value = _repeat(b"", k)
        pieces.append(_cells_at(records, idx, q.cast(pa.binary()), value))
    if not pieces:
        return CELL_SCHEMA.empty_table(), 0
    cells = pa.concat_tables([p.cast(CELL_SCHEMA) for p in pieces])
    from cellstore.core.cells import sort_indices

    ordered = cells.take(sort_indices(cells))
    return dedupe_sorted(ordered, with_family=False)


# ------------------------------------------------------------------------------- write
def write_region(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    *,
    records: pa.Table,
    bound: BoundMapping,
    families: Sequence[Family],
    region_id: str,
    name: str,
    seq: int,
    load_id: str,
    max_file_bytes: int,
    row_group_cells: int,
    layouts: Layouts = NO_LAYOUTS,
) -> tuple[list[WrittenFile], int]:
    """Sort one region's encoded records, explode each family and write its store files.

    Files are ``data/<region>/<family>/<name>-<k>.parquet``, rolled at ``max_file_bytes``
    (uncompressed cell bytes) on row boundaries; a (region, family) that ``layouts`` puts
    in the column layout also gets the column file ``<name>-<k>-c.parquet``.

    Returns:
        The written files and the number of duplicate-key cells dropped.
    """
    fmt = ParquetFormat(seq=seq, load_id=load_id, row_group_cells=row_group_cells, layouts=layouts)
    cells = region_cells(records, bound=bound, families=families)
    return _roll_families(fs, table_path, cells, region_id, name, fmt, max_file_bytes)


def region_cells(
    records: pa.Table, *, bound: BoundMapping, families: Sequence[Family]
) -> Iterator[tuple[Family, pa.Table, int]]:
    """Sort one region's encoded records and yield each mapped family's cells.

    Yields:
        ``(family, cells in cell order with unique keys, duplicate cells dropped)`` for
        every family of ``families`` the mapping fills (families without cells skipped).
    """
    ordered, unique = sort_records(records)
    for fam in families:
        if fam.name not in bound.families:
            continue
        cells, d = explode_family(ordered, bound, fam.name, unique_rows=unique)
        if cells.num_rows:
            yield fam, cells, d


def write_region_hfiles(
    fs: fsspec.AbstractFileSystem,
    root: str,
    *,
    records: pa.Table,
    bound: BoundMapping,
    families: Sequence[Family],
    region_id: str,
    format: HFileFormat,
    max_file_bytes: int,
    max_files: int,
) -> tuple[list[BulkLoadFile], int]:
    """Like :func:`write_region`, but as bulk-load HFiles ``<root>/<family>/<hex>``.

    Each family's cells are rolled at ``max_file_bytes`` on row boundaries into at most
    ``max_files`` files (the same roll loop, :func:`write_rolled`, in HFile format).

    Returns:
        The written HFiles and the number of duplicate-key cells dropped.
    """
    cells = region_cells(records, bound=bound, families=families)
    return _roll_families(fs, root, cells, region_id, region_id, format, max_file_bytes, max_files)


def _roll_families(
    fs: fsspec.AbstractFileSystem,
    root: str,
    families_cells: Iterable[tuple[Family, pa.Table, int]],
    region_id: str,
    stem: str,
    fmt: FileFormat[ResultT],
    max_file_bytes: int,
    max_files: int | None = None,
) -> tuple[list[ResultT], int]:
    """Each family's cells (as :func:`region_cells` yields them) rolled into ``fmt`` files.

    Returns:
        The files written and the number of duplicate-key cells dropped.
    """
    written: list[ResultT] = []
    dropped = 0
    for fam, cells, d in families_cells:
        dropped += d
        written += write_rolled(
            fs,
            root,
            cells,
            region=region_id,
            family=fam,
            stem=stem,
            max_file_bytes=max_file_bytes,
            format=fmt,
            max_files=max_files,
        )
    return written, dropped


def bad_record_rows(batch: pa.Table, bad: np.ndarray) -> list[dict[str, Any]]:
    """The bad records of a batch as JSON-ready dicts (error path: only bad records)."""
    if not bad.any():
        return []
    picked = batch.filter(pa.array(bad))
    # Text readers may let bytes that are not UTF-8 into string columns (pyarrow's JSON
    # reader does): read those as binary so a bad record is reported, never a decode crash.
    columns = [_as_binary(c) for c in picked.columns]
    rows: list[dict[str, Any]] = pa.table(columns, names=picked.column_names).to_pylist()
    return [{k: _jsonable(v) for k, v in r.items()} for r in rows]


def _as_binary(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A string column viewed as binary (no UTF-8 check); other columns unchanged."""
    if pa.types.is_string(column.type):
        target = pa.binary()
    elif pa.types.is_large_string(column.type):
        target = pa.large_binary()
    else:
        return column
    return pa.chunked_array([chunk.view(target) for chunk in column.chunks], target)


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"hex": value.hex()}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)

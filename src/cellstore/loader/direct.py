"""The raw write primitive: validate cells, route to regions, sort, write, commit once.

``Table.load_cells`` is this module; the loader and the jobs build on the same pieces:
:func:`normalize_cells` (validation and coercion, vectorized), :func:`write_cells` (route,
sort, write one store file per region and family, no commit) and :func:`commit_files`
(one manifest commit that adds the files with the next sequence number).

Nothing becomes visible before the commit; a failure before it leaves only unreferenced
files, which vacuum removes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Literal

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.commit import Commit, FileChange, Staged, commit, file_entry, now_ms
from cellstore.core.cells import (
    CELL_SCHEMA,
    LATEST_TIMESTAMP,
    MAX_ROW_LENGTH,
    CellType,
    equal_key_runs,
    parse_type_names,
    run_starts,
    scale_to_millis,
    sort_indices,
)
from cellstore.core.codecs import binary_from_parts, binary_parts
from cellstore.core.metadata import UNASSIGNED_SEQ, FileEntry, TableMetadata
from cellstore.core.regions import sorted_region_bounds
from cellstore.core.rowkey import RowKeySpec, salt_bytes
from cellstore.errors import BadCellError, InvalidArgumentError
from cellstore.loader.settings import new_load_id
from cellstore.manifest import TableLog
from cellstore.storefiles import DEFAULT_ROW_GROUP_CELLS, NO_ROLL, write_rolled
from cellstore.storefiles.columns import NO_LAYOUTS, Layouts
from cellstore.storefiles.rolling import ParquetFormat
from cellstore.storefiles.writer import WrittenFile

__all__ = [
    "KeyKind",
    "WrittenFile",
    "commit_files",
    "new_load_id",
    "normalize_cells",
    "now_ms",
    "salt_rows",
    "write_cells",
]


def _bad(msg: str, mask: pa.Array | np.ndarray, field: str) -> BadCellError:
    arr = mask if isinstance(mask, np.ndarray) else mask.to_numpy(zero_copy_only=False)
    idx = int(np.flatnonzero(np.asarray(arr, dtype=bool))[0])
    return BadCellError(f"record {idx}, field {field!r}: {msg}", record=idx, field=field)


def _not_type(field: str, type_: pa.DataType, expected: str) -> BadCellError:
    return BadCellError(f"field {field!r}: column type {type_} is not {expected}", field=field)


def _any(mask: pa.Array | pa.ChunkedArray) -> bool:
    return bool(pc.any(mask).as_py())


def _to_binary(col: pa.ChunkedArray, field: str) -> pa.Array:
    arr = col.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_large_binary(arr.type) or pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.binary() if pa.types.is_large_binary(arr.type) else pa.string())
    if pa.types.is_string(arr.type) or pa.types.is_string_view(arr.type):
        return arr.cast(pa.string()).view(pa.binary())
    if pa.types.is_binary(arr.type) or pa.types.is_fixed_size_binary(arr.type):
        return arr.cast(pa.binary())
    if pa.types.is_binary_view(arr.type):
        return arr.cast(pa.binary())
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), pa.binary())
    raise _not_type(field, arr.type, "bytes or str")


def _to_types(col: pa.ChunkedArray) -> pa.Array:
    arr = col.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_integer(arr.type):
        codes = arr.cast(pa.int64())
    elif pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        codes = parse_type_names(arr).cast(pa.int64())
        unknown = pc.and_(pc.is_null(codes), pc.is_valid(arr))
        if _any(unknown):
            i = int(np.flatnonzero(unknown.to_numpy(zero_copy_only=False))[0])
            raise BadCellError(
                f"record {i}, field 'type': unknown cell type {arr[i].as_py()!r}",
                record=i,
                field="type",
            )
    else:
        raise _not_type("type", arr.type, "an integer code or a name")
    if _any(pc.is_null(codes)):
        raise _bad("type is null", pc.is_null(codes), "type")
    valid = pc.is_in(codes, value_set=pa.array([int(t) for t in CellType], pa.int64()))
    mask = pc.invert(valid)
    if _any(mask):
        i = int(np.flatnonzero(mask.to_numpy(zero_copy_only=False))[0])
        raise BadCellError(
            f"record {i}, field 'type': unknown cell type code {codes[i].as_py()} "
            "(expected 4, 8, 10, 12 or 14)",
            record=i,
            field="type",
        )
    return codes.cast(pa.int8())


def _to_ts(col: pa.ChunkedArray, now: int) -> pa.Array:
    arr = col.combine_chunks()
    if pa.types.is_timestamp(arr.type):
        # In the column's own unit, then scaled with an overflow check (a safe cast to ms
        # fails on sub-millisecond values; an unsafe one wraps around).
        raw = arr.cast(pa.int64())
        millis, over = scale_to_millis(
            raw.fill_null(0).to_numpy(zero_copy_only=False), arr.type.unit
        )
        if over.any():
            raise _bad("timestamp does not fit a signed 64-bit long", over, "ts")
        arr = pa.array(millis, pa.int64(), mask=~raw.is_valid().to_numpy(zero_copy_only=False))
    elif pa.types.is_integer(arr.type):
        if arr.type == pa.uint64():
            too_big = pc.greater(arr, pa.scalar(LATEST_TIMESTAMP, pa.uint64()))
            if _any(too_big):
                raise _bad("timestamp does not fit a signed 64-bit long", too_big, "ts")
        arr = arr.cast(pa.int64())
    else:
        raise _not_type("ts", arr.type, "an integer (milliseconds) or a timestamp")
    if _any(pc.is_null(arr)):
        raise _bad("timestamp is null", pc.is_null(arr), "ts")
    if _any(pc.less(arr, 0)):
        raise _bad("timestamp is negative (HBase requires ts >= 0)", pc.less(arr, 0), "ts")
    # R1.5 / R14.2: LATEST_TIMESTAMP means "no timestamp given": the write time replaces it.
    latest = pc.equal(arr, LATEST_TIMESTAMP)
    return pc.if_else(latest, now, arr)


#: What pyarrow raises for a pandas object column it cannot convert (a Python int past
#: 64 bits raises OverflowError; a value of the wrong kind ArrowTypeError/ArrowInvalid).
_CONVERSION_ERRORS = (
    OverflowError,
    pa.ArrowInvalid,
    pa.ArrowTypeError,
    pa.ArrowNotImplementedError,
)


def _from_pandas(frame: Any) -> pa.Table:
    """A pandas DataFrame as an Arrow table; a value pyarrow cannot convert is a BadCellError.

    The failing column and record are found only after the whole frame failed: each column
    is converted on its own, then the shortest failing prefix of the failing column is
    found by bisection (a logarithmic number of vectorized conversions).

    Raises:
        BadCellError: naming the first record and field that do not convert (a timestamp
            past 64 bits is "does not fit a signed 64-bit long", as for other out-of-range
            timestamps).
    """
    try:
        return pa.Table.from_pandas(frame, preserve_index=False)
    except _CONVERSION_ERRORS as whole:
        error: Exception = whole
    for name in frame.columns:
        column = frame[name]
        try:
            pa.array(column, from_pandas=True)
            continue
        except _CONVERSION_ERRORS as e:
            error = e
        lo, hi = 0, len(column) - 1  # the prefix [: hi + 1] fails; find the shortest
        while lo < hi:
            mid = (lo + hi) // 2
            try:
                pa.array(column.iloc[: mid + 1], from_pandas=True)
                lo = mid + 1
            except _CONVERSION_ERRORS as e:
                hi, error = mid, e
        field = str(name)
        shown = repr(column.iloc[hi])[:80]
        if field == "ts" and isinstance(error, OverflowError):
            why = f"timestamp {shown} does not fit a signed 64-bit long"
        else:
            why = f"value {shown} cannot be converted ({type(error).__name__}: {error})"
        raise BadCellError(f"record {hi}, field {field!r}: {why}", record=hi, field=field)
    raise BadCellError(f"cells cannot be converted from pandas: {error}")  # not one column


def _as_arrow(data: Any) -> pa.Table:
    """Cells given as a pyarrow Table or RecordBatch, or a pandas DataFrame, as a Table.

    Raises:
        BadCellError: another type, a pandas value that does not convert, a missing
            ``row``, ``family`` or ``qualifier`` column, or an unexpected column.
    """
    if isinstance(data, pa.RecordBatch):
        table = pa.Table.from_batches([data])
    elif isinstance(data, pa.Table):
        table = data
    else:
        import pandas as pd

        if not isinstance(data, pd.DataFrame):
            raise BadCellError(
                f"cells must be a pyarrow Table or a pandas DataFrame, not {type(data).__name__}"
            )
        table = _from_pandas(data)
    for required in ("row", "family", "qualifier"):
        if required not in table.column_names:
            raise BadCellError(f"missing column {required!r}", field=required)
    extra = set(table.column_names) - {"row", "family", "qualifier", "ts", "type", "value"}
    if extra:
        raise BadCellError(
            f"unexpected column(s) {sorted(extra)}; expected row, family, qualifier, ts, "
            "type, value",
            field=sorted(extra)[0],
        )
    return table


def _rows(table: pa.Table) -> pa.Array:
    """The ``row`` column as binary: not null, not empty, at most HBase's 32767 bytes."""
    row = _to_binary(table.column("row"), "row")
    if _any(pc.is_null(row)):
        raise _bad("row key is null", pc.is_null(row), "row")
    lengths = pc.binary_length(row)
    if _any(pc.equal(lengths, 0)):
        raise _bad("row key is empty (HBase rejects empty rows)", pc.equal(lengths, 0), "row")
    too_long = pc.greater(lengths, MAX_ROW_LENGTH)
    if _any(too_long):
        raise _bad(f"row key is longer than {MAX_ROW_LENGTH} bytes", too_long, "row")
    return row


def _families(table: pa.Table, metadata: TableMetadata) -> pa.Array:
    """The ``family`` column as str, every value a family of the table."""
    fam = table.column("family").combine_chunks()
    if pa.types.is_dictionary(fam.type):
        fam = fam.dictionary_decode()
    if pa.types.is_binary(fam.type) or pa.types.is_large_binary(fam.type):
        try:
            fam = fam.cast(pa.string())
        except pa.ArrowInvalid as e:
            raise BadCellError(f"field 'family': not valid UTF-8 ({e})", field="family") from e
    if not (pa.types.is_string(fam.type) or pa.types.is_large_string(fam.type)):
        raise _not_type("family", fam.type, "str")
    fam = fam.cast(pa.string())
    if _any(pc.is_null(fam)):
        raise _bad("family is null", pc.is_null(fam), "family")
    known = pa.array(list(metadata.family_names), pa.string())
    unknown = pc.invert(pc.is_in(fam, value_set=known))
    if _any(unknown):
        i = int(np.flatnonzero(unknown.to_numpy(zero_copy_only=False))[0])
        raise BadCellError(
            f"record {i}, field 'family': unknown family {fam[i].as_py()!r} "
            f"(table {metadata.name} has {', '.join(metadata.family_names)})",
            record=i,
            field="family",
        )
    return fam


def _qualifiers(table: pa.Table) -> pa.Array:
    """The ``qualifier`` column as binary, not null."""
    qual = _to_binary(table.column("qualifier"), "qualifier")
    if _any(pc.is_null(qual)):
        raise _bad(
            "qualifier is null (use b'' for the empty qualifier)", pc.is_null(qual), "qualifier"
        )
    return qual


def _check_family_markers(qual: pa.Array, types: pa.Array) -> None:
    """Refuse a qualifier on a family-wide delete marker (R1.3)."""
    family_marker = pc.is_in(
        types,
        value_set=pa.array(
            [int(CellType.DELETE_FAMILY), int(CellType.DELETE_FAMILY_VERSION)], pa.int8()
        ),
    )
    bad_q = pc.and_(family_marker, pc.greater(pc.binary_length(qual), 0))
    if _any(bad_q):
        raise _bad(
            "DeleteFamily and DeleteFamilyVersion markers apply to the whole family and "
            "must have an empty qualifier (R1.3)",
            bad_q,
            "qualifier",
        )


def _values(table: pa.Table, types: pa.Array) -> pa.Array:
    """The ``value`` column as binary: set on every Put, empty on every delete marker."""
    is_put = pc.equal(types, int(CellType.PUT))
    if "value" not in table.column_names:
        if _any(is_put):
            raise BadCellError("missing column 'value' (Puts need a value)", field="value")
        return pa.array([b""] * table.num_rows, pa.binary())
    value = _to_binary(table.column("value"), "value")
    null_put = pc.and_(is_put, pc.is_null(value))
    if _any(null_put):
        raise _bad("value of a Put is null", null_put, "value")
    marker_value = pc.and_(
        pc.invert(is_put), pc.fill_null(pc.greater(pc.binary_length(value), 0), False)
    )
    if _any(marker_value):
        raise _bad("delete markers carry no value", marker_value, "value")
    return pc.fill_null(value, b"")


def normalize_cells(
    data: Any,
    *,
    metadata: TableMetadata,
    now: int,
) -> pa.Table:
    """Validate input cells and coerce them to ``family, row, qualifier, ts, type, value``.

    Accepts a pyarrow Table or RecordBatch, or a pandas DataFrame, with columns ``row``,
    ``family``, ``qualifier``, ``type`` (code or HBase name, optional: default Put),
    ``ts`` (int64 milliseconds or an Arrow timestamp, optional: default the write time) and
    ``value`` (optional for delete markers). ``row``, ``qualifier`` and ``value`` may be
    bytes or str (UTF-8). A ``ts`` equal to LATEST_TIMESTAMP gets the write time (R1.5).

    Raises:
        BadCellError: naming the first bad record and field: missing column, null row,
            empty or oversized row (R16.1), unknown family, negative, null or out-of-range
            timestamp (also a pandas object column's int past 64 bits), a pandas value
            that does not convert to Arrow,
            unknown type, null qualifier, non-empty qualifier on a DeleteFamily or
            DeleteFamilyVersion marker, null value on a Put, value on a delete marker.
    """
    table = _as_arrow(data)
    n = table.num_rows
    row = _rows(table)
    fam = _families(table, metadata)
    qual = _qualifiers(table)
    if "type" in table.column_names:
        types = _to_types(table.column("type"))
    else:
        types = pa.array(np.full(n, int(CellType.PUT), dtype=np.int8))
    if "ts" in table.column_names:
        ts = _to_ts(table.column("ts"), now)
    else:
        ts = pa.array(np.full(n, now, dtype=np.int64))
    _check_family_markers(qual, types)
    value = _values(table, types)
    return pa.table(
        {"family": fam, "row": row, "qualifier": qual, "ts": ts, "type": types, "value": value}
    )


#: How ``load_cells`` reads the row keys of a salted table: ``logical`` keys (as ``get`` and
#: ``scan`` take them) get their salt byte; ``physical`` keys carry it and are verified.
#: None (the default) is ``logical``, refusing a call whose every key already carries its
#: salt byte (what :meth:`~cellstore.core.rowkey.RowKeySpec.encode` returns).
KeyKind = Literal["logical", "physical"]


def _split_salt(offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    """Each key's first byte and the rest of it (keys of at least one byte)."""
    first = data[offsets[:-1]]
    keep = np.ones(len(data), dtype=bool)
    keep[offsets[:-1]] = False
    rest = binary_from_parts(offsets - np.arange(len(offsets), dtype=np.int64), data[keep])
    return first, rest


def _refuse_physical_looking(
    offsets: np.ndarray, data: np.ndarray, buckets: int, row_key: RowKeySpec | None
) -> None:
    """Refuse logical keys of which every one already starts with its own salt byte.

    That is what :meth:`RowKeySpec.encode` returns on a salted spec: salting such keys
    again would store rows that no ``get`` or ``scan`` finds. With a row-key spec, a key
    counts only if the rest of it also decodes with the spec. Cheap exits first: any key
    shorter than two bytes or with a first byte of ``buckets`` or more.
    """
    lengths = np.diff(offsets)
    if len(lengths) == 0 or (lengths < 2).any():
        return
    first = data[offsets[:-1]]
    if (first >= buckets).any():
        return
    first, rest = _split_salt(offsets, data)
    if not (first == salt_bytes(rest, buckets)).all():
        return
    if row_key is not None:
        try:
            replace(row_key, salt_buckets=None).decode(rest)
        except BadCellError:  # some key is not the spec's key behind a salt byte
            return
    raise BadCellError(
        f"record 0, field 'row': every row key already starts with its own salt byte "
        f"(record 0's: bucket {int(first[0])} of {buckets}), as RowKeySpec.encode returns "
        "keys; load_cells takes logical keys by default and would salt them again, storing "
        "rows no get or scan finds. Pass keys='physical' to load these keys as they are, "
        "or keys='logical' if they are logical keys that only look salted",
        record=0,
        field="row",
    )


def salt_rows(
    cells: pa.Table,
    buckets: int | None,
    *,
    keys: KeyKind | None = None,
    row_key: RowKeySpec | None = None,
) -> pa.Table:
    """Normalized cells with row keys as a salted table stores them (vectorized).

    On a salted table (``buckets`` set) every stored row key starts with its Phoenix salt
    byte, a hash of the rest of the key (Apache Phoenix ``SaltingUtil``): ``get`` and
    ``scan`` compute it from the logical key, so a cell stored under any other first byte
    could never be read back.

    Args:
        cells: Output of :func:`normalize_cells` (a binary ``row`` column).
        buckets: The table's salt bucket count, or None (unsalted: the cells are returned
            unchanged, and ``keys`` must not be ``physical``).
        keys: ``logical``: keys without the salt byte, which is computed and prefixed.
            ``physical``: keys that already start with their salt byte; each is verified.
            None (default): ``logical``, but a call whose every key already starts with
            its own salt byte (and, with ``row_key``, is the spec's key behind it) is
            refused: those are keys as :meth:`RowKeySpec.encode` returns them.
        row_key: The table's row-key spec, if any (sharpens the check of ``keys=None``).

    Raises:
        BadCellError: naming the first record whose physical key has a wrong salt byte
            or nothing after it, or whose logical key is too long once salted; or, with
            ``keys=None``, record 0 when every key already carries its salt byte (the
            message names ``keys='physical'``).
        InvalidArgumentError: ``keys`` is not None, ``logical`` or ``physical``, or
            ``physical`` on an unsalted table.
    """
    if keys not in (None, "logical", "physical"):
        raise InvalidArgumentError(f"keys must be 'logical' or 'physical', not {keys!r}")
    if buckets is None:
        if keys == "physical":
            raise InvalidArgumentError("keys='physical' is for salted tables; this one is not")
        return cells
    rows = cells.column("row").combine_chunks()
    offsets, data = binary_parts(rows)
    data = data[: offsets[-1]]
    if keys is None:
        _refuse_physical_looking(offsets, data, buckets, row_key)
    if keys != "physical":
        too_long = pc.greater_equal(pc.binary_length(rows), MAX_ROW_LENGTH)
        if _any(too_long):
            raise _bad(
                f"row key is longer than {MAX_ROW_LENGTH - 1} bytes (on a salted table the "
                "salt byte takes one of HBase's 32767)",
                too_long,
                "row",
            )
        new_data = np.insert(data, offsets[:-1], salt_bytes(rows, buckets))
        new_offsets = offsets + np.arange(len(offsets), dtype=np.int64)
        salted = binary_from_parts(new_offsets, new_data).cast(pa.binary())
        return cells.set_column(cells.schema.get_field_index("row"), "row", salted)
    lengths = np.diff(offsets)
    if (lengths < 2).any():
        raise _bad(
            "a physical row key of a salted table is the salt byte followed by a non-empty key",
            lengths < 2,
            "row",
        )
    stored, rest = _split_salt(offsets, data)
    expected = salt_bytes(rest, buckets)
    wrong = stored != expected
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        raise BadCellError(
            f"record {i}, field 'row': salt byte {int(stored[i])} is wrong for this key "
            f"(its salt is {int(expected[i])} of {buckets} buckets); pass logical keys "
            "(the default) to have the salt computed",
            record=i,
            field="row",
        )
    return cells


def dedupe_sorted(cells: pa.Table, *, with_family: bool) -> tuple[pa.Table, int]:
    """Drop all but the last of each run of equal keys in stably sorted cells.

    Among cells with the same (family, row, qualifier, ts, type) the one given last in the
    input wins, like successive Puts of one cell.
    """
    same_as_prev = equal_key_runs(cells, with_family=with_family)
    if not same_as_prev.any():
        return cells, 0
    # Keep cell i unless cell i + 1 has the same key (the last of each run survives).
    keep = np.ones(cells.num_rows, dtype=bool)
    keep[:-1] = ~same_as_prev[1:]
    return cells.filter(pa.array(keep)), int((~keep).sum())


def write_cells(
    fs: fsspec.AbstractFileSystem,
    table_path: str,
    metadata: TableMetadata,
    cells: pa.Table,
    *,
    load_id: str,
    seq: int,
    row_group_cells: int = DEFAULT_ROW_GROUP_CELLS,
    max_workers: int = 4,
    layouts: Layouts = NO_LAYOUTS,
) -> tuple[list[WrittenFile], int]:
    """Sort normalized cells, route them to regions and write one file per region/family.

    A (region, family) that ``layouts`` puts in the column layout gets a column file and
    a cell file for the rest (either may be absent).

    Args:
        fs: Filesystem.
        table_path: The table directory.
        metadata: The table version whose regions route the cells.
        cells: Output of :func:`normalize_cells`.
        load_id: Id of this write (part of every file name).
        seq: Provisional sequence number for the footers.
        row_group_cells: Cells per Parquet row group.
        max_workers: Files written concurrently (pyarrow releases the GIL).
        layouts: The (region, family) pairs written in the column layout (default none).

    Returns:
        The written files and the number of duplicate-key cells dropped.
    """
    ordered = cells.take(sort_indices(cells, with_family=True))
    ordered, dropped = dedupe_sorted(ordered, with_family=True)
    fam = ordered.column("family").combine_chunks()
    jobs: list[tuple[str, str, pa.Table]] = []
    fam_bounds = _run_bounds(fam)
    split_keys = metadata.split_keys
    for start, end in fam_bounds:
        family = fam[start].as_py()
        part = ordered.slice(start, end - start)
        bounds = sorted_region_bounds(part.column("row"), split_keys)
        for i, region in enumerate(metadata.regions):
            lo, hi = bounds[i], bounds[i + 1]
            if hi > lo:
                jobs.append((region.id, family, part.slice(lo, hi - lo)))

    fmt = ParquetFormat(seq=seq, load_id=load_id, row_group_cells=row_group_cells, layouts=layouts)

    def write_one(job: tuple[str, str, pa.Table]) -> list[WrittenFile]:
        region_id, family, part = job
        return write_rolled(
            fs,
            table_path,
            part.select(CELL_SCHEMA.names),
            region=region_id,
            family=metadata.family(family),
            stem=load_id,
            max_file_bytes=NO_ROLL,
            format=fmt,
        )

    if len(jobs) <= 1:
        per_job = [write_one(j) for j in jobs]
    else:
        with ThreadPoolExecutor(max_workers=min(max_workers, len(jobs))) as pool:
            per_job = list(pool.map(write_one, jobs))
    return [w for files in per_job for w in files], dropped


def _run_bounds(col: pa.Array) -> list[tuple[int, int]]:
    starts = run_starts(col).tolist()
    return list(zip(starts, [*starts[1:], len(col)], strict=True))


def commit_files(
    log: TableLog,
    base: TableMetadata,
    written: Sequence[WrittenFile],
    *,
    load_id: str,
    operation: str = "load",
    summary: dict[str, Any] | None = None,
    timestamp_ms: int | None = None,
    update: Callable[[Staged], Mapping[str, Any]] | None = None,
    assign_seq_id: bool = True,
) -> tuple[TableMetadata, bool]:
    """Add written files to the table in one commit, with the next sequence number.

    With ``assign_seq_id=False`` (HBase's ``hbase.mapreduce.bulkload.assign.sequenceNumbers
    =false``, R14.5) the files get no sequence number: their entries record
    :data:`~cellstore.core.metadata.UNASSIGNED_SEQ`, so their cells lose every equal-key
    tie to cells of any file with one (R3.1, R3.2), and ``next_seq`` does not advance.

    On a conflicting concurrent commit the change is re-applied to the newer version: the
    files keep their place as long as their regions still exist with the same bounds and
    their families still exist; otherwise the commit fails and nothing becomes visible.
    A load id that the newer version already records is not applied again. ``update``
    (``Commit.update``) changes further fields of the new version, e.g. its properties.

    Returns:
        The committed metadata and whether the load id had already been applied.

    Raises:
        RegionsChangedError: if a file's region was split or merged since ``base``.
        CommitConflictError: if a family was dropped underneath the load.
    """
    adds: Sequence[FileEntry | WrittenFile] = written
    if not assign_seq_id:
        adds = [file_entry(w, seq=UNASSIGNED_SEQ, load_id=load_id) for w in written]
        summary = {**(summary or {}), "seq-assigned": False}
    result = commit(
        log,
        Commit(
            operation=operation,
            changes=[FileChange(add=adds)],
            load_id=load_id,
            new_seq=assign_seq_id,
            base=base,
            summary={"load-id": load_id, **(summary or {})},
            timestamp_ms=timestamp_ms,
            update=update,
        ),
    )
    return result.metadata, result.applied_before

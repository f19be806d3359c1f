"""Cells to HFile bytes, vectorized: input normalization, HBase order, the NONE cell layout.

* :func:`prepare_cells` turns a pyarrow Table / RecordBatch / pandas DataFrame with
  cellstore's cell columns into large-binary columns in HBase's order
  (``CellComparatorImpl``: row, family, qualifier ascending; timestamp, type descending),
  sorting only when the input is not already in order (stable, so duplicates keep their
  input order), and flags each cell that repeats its predecessor's key;
* :func:`serialize_cells` lays every cell out as ``KeyValue`` + extras, exactly the bytes
  of a NONE data block (``NoneEncoder.write``): ``u32 keyLen, u32 valueLen, key, value
  [, u16 tagsLen, tags] [, memstoreTS VLong]``, all cells in one buffer, built by Arrow's
  element-wise binary join (no per-cell Python).

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.core.cells import sort_indices
from cellstore.errors import BadCellError, InvalidArgumentError
from cellstore.storefiles.hfile.kernels import order_flags, scatter_cells
from cellstore.storefiles.hfile.serialize import vlong_bytes
from cellstore.storefiles.hfile.threads import ordered_map

__all__ = [
    "CellBytes",
    "PreparedCells",
    "UnorderedCellsError",
    "as_table",
    "binary_parts",
    "check_tags",
    "concat_cells",
    "describe_key",
    "prepare_cells",
    "serialize_cells",
    "slice_cells",
    "tail_cells",
]

#: ``KeyValue.Type`` codes a writer accepts (Put, Delete, DeleteFamilyVersion,
#: DeleteColumn, DeleteFamily).
VALID_TYPES: Final = (4, 8, 10, 12, 14)
_VALID_TYPE: Final = np.isin(np.arange(256), VALID_TYPES)
_MAX_ROW: Final = 32767
_MAX_FAMILY: Final = 127
_LB: Final = pa.large_binary()
#: Fewest cells :func:`serialize_cells` lays out per thread.
_CELLS_PER_THREAD: Final = 1 << 16


class UnorderedCellsError(InvalidArgumentError):
    """Cells are not in HBase's order where they must be (``sort=False``, the writer)."""


@dataclass(frozen=True, slots=True)
class PreparedCells:
    """Cells in HBase order with large-binary columns.

    Attributes:
        row: Row keys.
        family: Families.
        qualifier: Qualifiers.
        ts: Timestamps (int64).
        type: Type codes (uint8).
        value: Values.
        seq_id: Memstore timestamps (int64).
        tags: Serialized tags per cell (``u16 len, u8 type, bytes`` records), or empty.
        has_tags: Whether any cell has tags.
        family_const: The family of every cell when all cells share one, else None.
        dup: ``dup[i]`` is True when cell ``i`` has the same key as cell ``i - 1``.
        row_changed: ``row_changed[i]`` is True when cell ``i`` starts a new row.
    """

    row: pa.LargeBinaryArray
    family: pa.LargeBinaryArray
    qualifier: pa.LargeBinaryArray
    ts: npt.NDArray[np.int64]
    type: npt.NDArray[np.uint8]
    value: pa.LargeBinaryArray
    seq_id: npt.NDArray[np.int64]
    tags: pa.LargeBinaryArray
    has_tags: bool
    family_const: bytes | None
    dup: npt.NDArray[np.bool_]
    row_changed: npt.NDArray[np.bool_]

    def __len__(self) -> int:
        return len(self.ts)


def _column(table: pa.Table, name: str) -> pa.Array:
    col = table.column(name)
    if isinstance(col, pa.ChunkedArray):
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col


def _as_binary(table: pa.Table, name: str, n: int, default: bytes | None) -> pa.LargeBinaryArray:
    if name not in table.column_names:
        if default is None:
            raise BadCellError(f"cells have no {name!r} column", field=name)
        return _const_binary(default, n)
    arr = _column(table, name)
    if arr.null_count:
        bad = int(np.nonzero(arr.is_null().to_numpy(zero_copy_only=False))[0][0])
        raise BadCellError(f"cell {bad}: {name} is null", record=bad, field=name)
    try:
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            return arr.cast(pa.large_string()).cast(_LB)
        return arr.cast(_LB)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise BadCellError(
            f"cells' {name!r} column of type {arr.type} cannot be used as bytes: {e}", field=name
        ) from e


def _as_int64(table: pa.Table, name: str, *, null: int | None = None) -> npt.NDArray[np.int64]:
    """Column ``name`` as int64 values.

    A missing column, a null (unless ``null`` fills it) or a value that does not cast to
    int64 is refused with :class:`BadCellError` naming the field.
    """
    if name not in table.column_names:
        raise BadCellError(f"cells have no {name!r} column", field=name)
    arr = _column(table, name)
    if arr.null_count and null is None:
        bad = int(np.nonzero(arr.is_null().to_numpy(zero_copy_only=False))[0][0])
        raise BadCellError(f"cell {bad}: {name} is null", record=bad, field=name)
    try:
        ints = arr.cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise BadCellError(
            f"cells' {name!r} column of type {arr.type} cannot be used as int64: {e}",
            field=name,
        ) from e
    if null is not None:
        ints = ints.fill_null(null)
    return np.asarray(ints.to_numpy(zero_copy_only=False), dtype=np.int64)


def _const_binary(value: bytes, n: int) -> pa.LargeBinaryArray:
    """``n`` copies of ``value`` as a large-binary array, built from buffers."""
    offsets = np.arange(n + 1, dtype=np.int64) * len(value)
    return pa.LargeBinaryArray.from_buffers(
        _LB, n, [None, pa.py_buffer(offsets), pa.py_buffer(value * n)]
    )


def binary_parts(
    arr: pa.Array,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(data, starts, lengths) of a large-binary array's values, without copying."""
    bufs = arr.buffers()
    offs = np.frombuffer(bufs[1], np.int64, count=len(arr) + 1, offset=arr.offset * 8)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return data, offs[:-1], np.diff(offs)


def _data_offsets(arr: pa.Array) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """(data, n + 1 offsets) of a large-binary array, without copying."""
    bufs = arr.buffers()
    offs = np.frombuffer(bufs[1], np.int64, count=len(arr) + 1, offset=arr.offset * 8)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return data, offs


def _order_flags(
    row: pa.Array,
    family: pa.Array,
    qualifier: pa.Array,
    ts: npt.NDArray[np.int64],
    typ: npt.NDArray[np.uint8],
) -> tuple[int, npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """(first cell out of order or -1, duplicate-of-previous flags, row-changed flags)."""
    first_bad, dup, row_changed = order_flags(
        _data_offsets(row),
        _data_offsets(family),
        _data_offsets(qualifier),
        np.ascontiguousarray(ts, dtype=np.int64),
        np.ascontiguousarray(typ, dtype=np.uint8),
    )
    return int(first_bad), dup, row_changed


def describe_key(row: bytes, family: bytes, qualifier: bytes, ts: int, typ: int) -> str:
    """A cell key as HBase's shell shows it (``row/family:qualifier/ts/type``)."""
    return f"{row!r}/{family!r}:{qualifier!r}/{ts}/{typ}"


def as_table(cells: Any) -> pa.Table:
    """A pyarrow Table of ``cells`` (Table, RecordBatch or pandas DataFrame)."""
    if isinstance(cells, pa.RecordBatch):
        return pa.Table.from_batches([cells])
    if isinstance(cells, pa.Table):
        return cells
    try:
        return pa.Table.from_pandas(cells, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        raise BadCellError(f"cells cannot be read as an Arrow table: {e}") from e


def prepare_cells(cells: Any, *, family: bytes | None = None, sort: bool = True) -> PreparedCells:
    """Normalize ``cells`` and put them in HBase's order.

    Args:
        cells: A pyarrow Table or RecordBatch, or a pandas DataFrame, with columns ``row``,
            ``qualifier``, ``ts``, ``type``, ``value`` and optionally ``family``,
            ``seq_id`` and ``tags`` (binary or string columns; string is UTF-8 encoded).
        family: The family for every cell when there is no ``family`` column.
        sort: Sort cells that are not in order (stable); when False, such input is refused.

    Returns:
        The prepared cells.

    Raises:
        BadCellError: A column is missing or null, a type code is not one of HBase's, or a
            row or family is longer than HBase allows.
        UnorderedCellsError: ``sort`` is False and the cells are not in HBase's order (the
            message names the first cell that sorts before its predecessor).
    """
    table = as_table(cells)
    n = table.num_rows
    row = _as_binary(table, "row", n, None)
    fam = _as_binary(table, "family", n, family)
    qual = _as_binary(table, "qualifier", n, None)
    value = _as_binary(table, "value", n, None)
    tags = _as_binary(table, "tags", n, b"")
    ts = _as_int64(table, "ts")
    typ = _as_int64(table, "type")
    bad_type = (typ < 0) | (typ > 255)
    bad_type |= ~_VALID_TYPE[typ.astype(np.uint8)]
    if bad_type.any():
        i = int(np.nonzero(bad_type)[0][0])
        raise BadCellError(
            f"cell {i}: type {typ[i]} is not an HBase cell type", record=i, field="type"
        )
    typ8 = typ.astype(np.uint8)
    if "seq_id" in table.column_names:
        seq = _as_int64(table, "seq_id", null=0)
    else:
        seq = np.zeros(n, np.int64)
    for name, arr, limit in (("row", row, _MAX_ROW), ("family", fam, _MAX_FAMILY)):
        lens = pc.binary_length(arr).to_numpy(zero_copy_only=False)
        if n and int(lens.max()) > limit:
            i = int(np.argmax(lens))
            raise BadCellError(
                f"cell {i}: {name} is {lens[i]} bytes, HBase allows {limit}", record=i, field=name
            )
    first_bad, dup, row_changed = _order_flags(row, fam, qual, ts, typ8)
    if first_bad >= 0 and not sort:
        i = first_bad

        def key(j: int) -> str:
            return describe_key(
                row[j].as_py(), fam[j].as_py(), qual[j].as_py(), int(ts[j]), int(typ8[j])
            )

        raise UnorderedCellsError(
            f"cells are not in HBase order: cell {i} ({key(i)}) sorts before cell {i - 1} "
            f"({key(i - 1)})"
        )
    if first_bad >= 0:
        t = pa.table({"row": row, "family": fam, "qualifier": qual, "ts": ts, "type": typ8})
        idx = sort_indices(t, family="in-row")
        row, fam, qual, value, tags = (a.take(idx) for a in (row, fam, qual, value, tags))
        order = idx.to_numpy()
        ts, typ8, seq = ts[order], typ8[order], seq[order]
        _, dup, row_changed = _order_flags(row, fam, qual, ts, typ8)
    has_tags = (
        bool(n) and "tags" in table.column_names and bool(pc.max(pc.binary_length(tags)).as_py())
    )
    family_const: bytes | None = family if "family" not in table.column_names else None
    if family_const is None and n and bool(pc.all(pc.equal(fam, fam[0])).as_py()):
        family_const = fam[0].as_py()
    return PreparedCells(
        row, fam, qual, ts, typ8, value, seq, tags, has_tags, family_const, dup, row_changed
    )


def slice_cells(cells: PreparedCells, start: int, stop: int) -> PreparedCells:
    """Cells ``start:stop`` as views (no copy)."""
    n = stop - start
    return PreparedCells(
        cells.row.slice(start, n),
        cells.family.slice(start, n),
        cells.qualifier.slice(start, n),
        cells.ts[start:stop],
        cells.type[start:stop],
        cells.value.slice(start, n),
        cells.seq_id[start:stop],
        cells.tags.slice(start, n),
        cells.has_tags,
        cells.family_const,
        cells.dup[start:stop],
        cells.row_changed[start:stop],
    )


def tail_cells(cells: PreparedCells, start: int) -> PreparedCells:
    """An owned copy of cells ``start:`` (it does not keep the whole input alive)."""

    def cut(arr: pa.LargeBinaryArray) -> pa.LargeBinaryArray:
        return pa.concat_arrays([arr.slice(start)])

    return PreparedCells(
        cut(cells.row),
        cut(cells.family),
        cut(cells.qualifier),
        cells.ts[start:].copy(),
        cells.type[start:].copy(),
        cut(cells.value),
        cells.seq_id[start:].copy(),
        cut(cells.tags),
        cells.has_tags,
        cells.family_const,
        cells.dup[start:].copy(),
        cells.row_changed[start:].copy(),
    )


def concat_cells(a: PreparedCells, b: PreparedCells) -> PreparedCells:
    """Cells ``a`` then ``b``, both in order; ``b``'s flags already relative to ``a``'s end."""
    if not len(a):
        return b
    if not len(b):
        return a

    def cat(x: pa.LargeBinaryArray, y: pa.LargeBinaryArray) -> pa.LargeBinaryArray:
        return pa.concat_arrays([x, y])

    fam = a.family_const if a.family_const == b.family_const else None
    return PreparedCells(
        cat(a.row, b.row),
        cat(a.family, b.family),
        cat(a.qualifier, b.qualifier),
        np.concatenate([a.ts, b.ts]),
        np.concatenate([a.type, b.type]),
        cat(a.value, b.value),
        np.concatenate([a.seq_id, b.seq_id]),
        cat(a.tags, b.tags),
        a.has_tags or b.has_tags,
        fam,
        np.concatenate([a.dup, b.dup]),
        np.concatenate([a.row_changed, b.row_changed]),
    )


@dataclass(frozen=True, slots=True)
class CellBytes:
    """All cells serialized in NONE layout.

    Attributes:
        data: The concatenated cells.
        offsets: Start of each cell plus the total (n + 1 values).
        key_len: Each cell's key length.
        value_len: Each cell's value length.
        mvcc: Each cell's memstore VLong bytes (None without memstore timestamps).
    """

    data: npt.NDArray[np.uint8]
    offsets: npt.NDArray[np.int64]
    key_len: npt.NDArray[np.int64]
    value_len: npt.NDArray[np.int64]
    mvcc_sizes: npt.NDArray[np.int64] | None
    mvcc_data: bytes | None

    def key(self, i: int) -> bytes:
        """The flat key of cell ``i``."""
        start = int(self.offsets[i]) + 8
        return self.data[start : start + int(self.key_len[i])].tobytes()


def _lengths(arr: pa.Array) -> npt.NDArray[np.int64]:
    return np.asarray(pc.binary_length(arr).to_numpy(zero_copy_only=False), dtype=np.int64)


def check_tags(cells: PreparedCells, *, include_tags: bool) -> npt.NDArray[np.int64]:
    """Each cell's tags length, after checking the tags can be written.

    Raises:
        BadCellError: Tags are present but ``include_tags`` is False, or a cell's tags are
            longer than 65535 bytes.
    """
    n = len(cells)
    tlen = _lengths(cells.tags)
    if not include_tags and n and tlen.any():
        i = int(np.nonzero(tlen)[0][0])
        raise BadCellError(f"cell {i} has tags but include_tags is False", record=i, field="tags")
    if n and int(tlen.max(initial=0)) > 65535:
        i = int(np.argmax(tlen))
        raise BadCellError(f"cell {i}: tags longer than 65535 bytes", record=i, field="tags")
    return tlen


def serialize_cells(
    cells: PreparedCells, *, include_tags: bool, include_mvcc: bool, threads: int = 1
) -> CellBytes:
    """Lay out every cell as in a NONE data block (``NoneEncoder.write``).

    Args:
        cells: Prepared cells.
        include_tags: Write ``u16 tagsLen`` + tags after each value.
        include_mvcc: Write the memstore timestamp VLong after each cell.
        threads: Lay out ranges of at least :data:`_CELLS_PER_THREAD` cells on up to
            this many threads (the same bytes).

    Returns:
        The serialized cells.

    Raises:
        BadCellError: Tags are present but ``include_tags`` is False, or a cell's tags are
            longer than 65535 bytes.
    """
    n = len(cells)
    tlen = check_tags(cells, include_tags=include_tags)
    row, fam, qual, value = (
        binary_parts(a) for a in (cells.row, cells.family, cells.qualifier, cells.value)
    )
    vlen = value[2]
    klen = 12 + row[2] + fam[2] + qual[2]
    size = 8 + klen + vlen
    if include_tags:
        size += 2 + tlen
    mvcc_sizes: npt.NDArray[np.int64] | None = None
    mvcc_data: bytes | None = None
    mvcc_parts = (np.zeros(0, np.uint8), np.zeros(n, np.int64), np.zeros(n, np.int64))
    if include_mvcc:
        mvcc_sizes, mvcc_data = vlong_bytes(cells.seq_id)
        size += mvcc_sizes
        mstarts = np.zeros(n, np.int64)
        if n > 1:
            np.cumsum(mvcc_sizes[:-1], out=mstarts[1:])
        mvcc_parts = (np.frombuffer(mvcc_data, np.uint8), mstarts, mvcc_sizes)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(size, out=offsets[1:])
    data = np.empty(int(offsets[n]), np.uint8)
    fields = (
        row,
        fam,
        qual,
        value,
        binary_parts(cells.tags),
        mvcc_parts,
        np.ascontiguousarray(cells.ts, dtype=np.int64),
        np.ascontiguousarray(cells.type, dtype=np.uint8),
        offsets,
        include_tags,
        include_mvcc,
        data,
    )
    # The kernel releases the GIL: big batches are laid out in ranges on threads.
    parts = max(1, min(threads, n // _CELLS_PER_THREAD))
    cuts = [n * k // parts for k in range(parts + 1)]
    for _ in ordered_map(
        lambda r: scatter_cells(*fields, *r), pairwise(cuts), threads=parts, ahead=parts
    ):
        pass
    return CellBytes(data, offsets, klen, vlen, mvcc_sizes, mvcc_data)

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
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from cellstore.errors import BadCellError
from cellstore.storefiles.hfile.serialize import vlong_bytes

__all__ = ["CellBytes", "PreparedCells", "prepare_cells", "serialize_cells"]

#: ``KeyValue.Type`` codes a writer accepts (Put, Delete, DeleteFamilyVersion,
#: DeleteColumn, DeleteFamily).
VALID_TYPES: Final = (4, 8, 10, 12, 14)
_MAX_ROW: Final = 32767
_MAX_FAMILY: Final = 127
_LB: Final = pa.large_binary()


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
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return arr


def _as_binary(table: pa.Table, name: str, n: int, default: bytes | None) -> pa.LargeBinaryArray:
    if name not in table.column_names:
        if default is None:
            raise BadCellError(f"cells have no {name!r} column", field=name)
        return _const_binary(default, n)
    arr = _column(table, name)
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        arr = arr.cast(pa.large_string()).cast(_LB)
    else:
        arr = arr.cast(_LB)
    if arr.null_count:
        bad = int(np.nonzero(arr.is_null().to_numpy(zero_copy_only=False))[0][0])
        raise BadCellError(f"cell {bad}: {name} is null", record=bad, field=name)
    return arr


def _const_binary(value: bytes, n: int) -> pa.LargeBinaryArray:
    """``n`` copies of ``value`` as a large-binary array, built from buffers."""
    offsets = np.arange(n + 1, dtype=np.int64) * len(value)
    return pa.LargeBinaryArray.from_buffers(
        _LB, n, [None, pa.py_buffer(offsets), pa.py_buffer(value * n)]
    )


def _adjacent(arr: pa.Array) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """(next < prev, next == prev) for each adjacent pair."""
    a, b = arr.slice(1), arr.slice(0, len(arr) - 1)
    lt = pc.less(a, b).to_numpy(zero_copy_only=False)
    eq = pc.equal(a, b).to_numpy(zero_copy_only=False)
    return lt, eq


def _order_flags(
    row: pa.Array,
    family: pa.Array,
    qualifier: pa.Array,
    ts: npt.NDArray[np.int64],
    typ: npt.NDArray[np.uint8],
) -> tuple[bool, npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """(in order?, duplicate-of-previous flags, row-changed flags) for cells."""
    n = len(ts)
    dup = np.zeros(n, np.bool_)
    row_changed = np.ones(n, np.bool_)
    if n < 2:
        return True, dup, row_changed
    r_lt, r_eq = _adjacent(row)
    f_lt, f_eq = _adjacent(family)
    q_lt, q_eq = _adjacent(qualifier)
    t_gt = ts[1:] > ts[:-1]
    t_eq = ts[1:] == ts[:-1]
    y_gt = typ[1:] > typ[:-1]
    y_eq = typ[1:] == typ[:-1]
    bad = r_lt | (r_eq & (f_lt | (f_eq & (q_lt | (q_eq & (t_gt | (t_eq & y_gt)))))))
    dup[1:] = r_eq & f_eq & q_eq & t_eq & y_eq
    row_changed[1:] = ~r_eq
    return not bool(bad.any()), dup, row_changed


def prepare_cells(cells: Any, *, family: bytes | None = None) -> PreparedCells:
    """Normalize ``cells`` and put them in HBase's order.

    Args:
        cells: A pyarrow Table or RecordBatch, or a pandas DataFrame, with columns ``row``,
            ``qualifier``, ``ts``, ``type``, ``value`` and optionally ``family``,
            ``seq_id`` and ``tags`` (binary or string columns; string is UTF-8 encoded).
        family: The family for every cell when there is no ``family`` column.

    Returns:
        The prepared cells.

    Raises:
        BadCellError: A column is missing or null, a type code is not one of HBase's, or a
            row or family is longer than HBase allows.
    """
    if isinstance(cells, pa.RecordBatch):
        table = pa.Table.from_batches([cells])
    elif isinstance(cells, pa.Table):
        table = cells
    else:
        table = pa.Table.from_pandas(cells, preserve_index=False)
    n = table.num_rows
    row = _as_binary(table, "row", n, None)
    fam = _as_binary(table, "family", n, family)
    qual = _as_binary(table, "qualifier", n, None)
    value = _as_binary(table, "value", n, None)
    tags = _as_binary(table, "tags", n, b"")
    for name in ("ts", "type"):
        if name not in table.column_names:
            raise BadCellError(f"cells have no {name!r} column", field=name)
    ts = np.asarray(_column(table, "ts").cast(pa.int64()).to_numpy(zero_copy_only=False))
    typ = np.asarray(_column(table, "type").cast(pa.int64()).to_numpy(zero_copy_only=False))
    bad_type = ~np.isin(typ, VALID_TYPES)
    if bad_type.any():
        i = int(np.nonzero(bad_type)[0][0])
        raise BadCellError(
            f"cell {i}: type {typ[i]} is not an HBase cell type", record=i, field="type"
        )
    typ8 = typ.astype(np.uint8)
    if "seq_id" in table.column_names:
        seq = np.asarray(
            _column(table, "seq_id").cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        )
    else:
        seq = np.zeros(n, np.int64)
    for name, arr, limit in (("row", row, _MAX_ROW), ("family", fam, _MAX_FAMILY)):
        lens = pc.binary_length(arr).to_numpy(zero_copy_only=False)
        if n and int(lens.max()) > limit:
            i = int(np.argmax(lens))
            raise BadCellError(
                f"cell {i}: {name} is {lens[i]} bytes, HBase allows {limit}", record=i, field=name
            )
    ordered, dup, row_changed = _order_flags(row, fam, qual, ts, typ8)
    if not ordered:
        t = pa.table({"r": row, "f": fam, "q": qual, "t": ts, "y": typ8})
        idx = pc.sort_indices(
            t,
            sort_keys=[
                ("r", "ascending"),
                ("f", "ascending"),
                ("q", "ascending"),
                ("t", "descending"),
                ("y", "descending"),
            ],
        )
        row, fam, qual, value, tags = (a.take(idx) for a in (row, fam, qual, value, tags))
        order = idx.to_numpy()
        ts, typ8, seq = ts[order], typ8[order], seq[order]
        _, dup, row_changed = _order_flags(row, fam, qual, ts, typ8)
    has_tags = bool(n) and "tags" in table.column_names and bool(
        pc.max(pc.binary_length(tags)).as_py()
    )
    family_const: bytes | None = family if "family" not in table.column_names else None
    if family_const is None and n and bool(pc.all(pc.equal(fam, fam[0])).as_py()):
        family_const = fam[0].as_py()
    return PreparedCells(
        row, fam, qual, ts, typ8, value, seq, tags, has_tags, family_const, dup, row_changed
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


def _fixed(mat: npt.NDArray[np.uint8]) -> pa.LargeBinaryArray:
    n, w = mat.shape
    offsets = np.arange(n + 1, dtype=np.int64) * w
    return pa.LargeBinaryArray.from_buffers(
        _LB, n, [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(mat))]
    )


def _varying(sizes: npt.NDArray[np.int64], data: bytes) -> pa.LargeBinaryArray:
    offsets = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return pa.LargeBinaryArray.from_buffers(
        _LB, len(sizes), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def _lengths(arr: pa.Array) -> npt.NDArray[np.int64]:
    return np.asarray(pc.binary_length(arr).to_numpy(zero_copy_only=False), dtype=np.int64)


def _as_matrix(part: pa.Array | pa.Scalar, n: int) -> npt.NDArray[np.uint8] | None:
    """``part`` as an ``(n, width)`` byte matrix when all its values have one width."""
    if isinstance(part, pa.Scalar):
        value = part.as_py()
        return np.broadcast_to(np.frombuffer(value, np.uint8), (n, len(value)))
    if part.null_count:
        return None
    bufs = part.buffers()
    offsets = np.frombuffer(bufs[1], np.int64, count=n + 1, offset=part.offset * 8)
    width = int(offsets[1] - offsets[0])
    if int(offsets[-1] - offsets[0]) != n * width or not bool(
        np.all(np.diff(offsets) == width)
    ):
        return None
    if width == 0:
        return np.zeros((n, 0), np.uint8)
    data = np.frombuffer(bufs[2], np.uint8, count=n * width, offset=int(offsets[0]))
    return data.reshape(n, width)


def _merge_fixed(
    parts: list[pa.Array | pa.Scalar], n: int
) -> list[pa.Array | pa.Scalar | npt.NDArray[np.uint8]]:
    """Merge runs of fixed-width parts into single byte matrices (one strided copy each).

    The element-wise join then has fewer, wider parts; with every part fixed-width there
    is nothing left to join.
    """
    out: list[pa.Array | pa.Scalar | npt.NDArray[np.uint8]] = []
    run: list[npt.NDArray[np.uint8]] = []
    for part in parts:
        mat = _as_matrix(part, n) if n else None
        if mat is not None:
            run.append(mat)
            continue
        if run:
            out.append(_pack(run, n))
            run = []
        out.append(part)
    if run:
        out.append(_pack(run, n))
    return out


def _pack(mats: list[npt.NDArray[np.uint8]], n: int) -> npt.NDArray[np.uint8]:
    """Side-by-side ``(n, w)`` matrices as one ``(n, sum(w))`` matrix.

    Each matrix is copied as ``n`` fixed-size items into a strided view of the output,
    not byte by byte.
    """
    mats = [m for m in mats if m.shape[1]]
    widths = [m.shape[1] for m in mats]
    total = sum(widths)
    if len(mats) == 1:
        return np.ascontiguousarray(mats[0])
    out = np.empty(n * total, np.uint8)
    at = 0
    for mat, w in zip(mats, widths, strict=True):
        dst = np.ndarray((n,), dtype=f"V{w}", buffer=out, offset=at, strides=(total,))
        if mat.strides[0] == 0:  # a broadcast constant
            dst[...] = np.ascontiguousarray(mat[:1]).view(f"V{w}")[0, 0]
        else:
            np.copyto(dst, np.ascontiguousarray(mat).view(f"V{w}").reshape(n))
        at += w
    return out.reshape(n, total)


def serialize_cells(cells: PreparedCells, *, include_tags: bool, include_mvcc: bool) -> CellBytes:
    """Lay out every cell as in a NONE data block (``NoneEncoder.write``).

    Args:
        cells: Prepared cells.
        include_tags: Write ``u16 tagsLen`` + tags after each value.
        include_mvcc: Write the memstore timestamp VLong after each cell.

    Returns:
        The serialized cells.

    Raises:
        BadCellError: Tags are present but ``include_tags`` is False, or a cell's tags are
            longer than 65535 bytes.
    """
    n = len(cells)
    rlen = _lengths(cells.row)
    flen = _lengths(cells.family)
    qlen = _lengths(cells.qualifier)
    vlen = _lengths(cells.value)
    tlen = _lengths(cells.tags)
    if not include_tags and n and tlen.any():
        i = int(np.nonzero(tlen)[0][0])
        raise BadCellError(f"cell {i} has tags but include_tags is False", record=i, field="tags")
    if n and int(tlen.max(initial=0)) > 65535:
        i = int(np.argmax(tlen))
        raise BadCellError(f"cell {i}: tags longer than 65535 bytes", record=i, field="tags")
    klen = 12 + rlen + flen + qlen
    head = np.empty((n, 10), np.uint8)
    head[:, 0:4] = klen.astype(">u4").view(np.uint8).reshape(n, 4)
    head[:, 4:8] = vlen.astype(">u4").view(np.uint8).reshape(n, 4)
    head[:, 8:10] = rlen.astype(">u2").view(np.uint8).reshape(n, 2)
    fam_part: pa.Array | pa.Scalar
    if cells.family_const is not None:
        fam_part = pa.scalar(bytes((len(cells.family_const),)) + cells.family_const, _LB)
    else:
        fam_part = pc.binary_join_element_wise(
            _fixed(flen.astype(np.uint8).reshape(n, 1)), cells.family, pa.scalar(b"", _LB)
        )
    tstype = np.empty((n, 9), np.uint8)
    tstype[:, 0:8] = cells.ts.astype(">i8").view(np.uint8).reshape(n, 8)
    tstype[:, 8] = cells.type
    parts: list[pa.Array | pa.Scalar] = [
        _fixed(head),
        cells.row,
        fam_part,
        cells.qualifier,
        _fixed(tstype),
        cells.value,
    ]
    if include_tags and cells.has_tags:
        parts.append(_fixed(tlen.astype(">u2").view(np.uint8).reshape(n, 2)))
        parts.append(cells.tags)
    elif include_tags:
        parts.append(pa.scalar(b"\x00\x00", _LB))
    mvcc_sizes: npt.NDArray[np.int64] | None = None
    mvcc_data: bytes | None = None
    if include_mvcc:
        mvcc_sizes, mvcc_data = vlong_bytes(cells.seq_id)
        if n and not cells.seq_id.any():
            parts.append(pa.scalar(b"\x00", _LB))
        else:
            parts.append(_varying(mvcc_sizes, mvcc_data))
    if n == 0:
        return CellBytes(
            np.zeros(0, np.uint8), np.zeros(1, np.int64), klen, vlen, mvcc_sizes, mvcc_data
        )
    merged = _merge_fixed(parts, n)
    if len(merged) == 1 and isinstance(merged[0], np.ndarray):
        width = merged[0].shape[1]
        data = np.ascontiguousarray(merged[0]).reshape(-1)
        return CellBytes(
            data, np.arange(n + 1, dtype=np.int64) * width, klen, vlen, mvcc_sizes, mvcc_data
        )
    joined = pc.binary_join_element_wise(
        *(_fixed(m) if isinstance(m, np.ndarray) else m for m in merged), pa.scalar(b"", _LB)
    )
    bufs = joined.buffers()
    offsets = np.frombuffer(bufs[1], np.int64, count=n + 1, offset=joined.offset * 8)
    data = np.frombuffer(bufs[2], np.uint8)
    return CellBytes(data, offsets, klen, vlen, mvcc_sizes, mvcc_data)

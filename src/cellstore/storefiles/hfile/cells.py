"""Vectorized decoding of NONE-encoded HFile data blocks into Arrow cell tables.

Source: hbase-common ``KeyValue.java`` (cell layout), ``io/encoding/NoneEncoder.java`` and
``HFileReaderImpl.HFileScannerImpl.readKeyValueLen`` / ``readMvccVersion``. A cell is::

    u32 keyLength | u32 valueLength | key | value
    [u16 tagsLength | tags]        iff FileInfo has hfile.MAX_TAGS_LEN
    [memstoreTS as Hadoop VLong]   iff FileInfo KEY_VALUE_VERSION == 1
                                   (exactly one byte when MAX_MEMSTORE_TS_KEY == 0)

Each cell's offset follows from the previous cell's lengths, a sequential dependency:
:func:`walk_cells` runs it as a compiled loop (:mod:`.kernels`) over all blocks of a batch,
which sit in one buffer with known starts. Fields are then gathered with offset
arithmetic into Arrow binary arrays (one ``take`` per column).

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from cellstore.core.cells import RESULT_CELL_SCHEMA
from cellstore.errors import CorruptFileError
from cellstore.storefiles.hfile.kernels import BAD_KEY, decode_cells_dictionary, walk_none
from cellstore.storefiles.hfile.varint import vlongs_at

__all__ = [
    "HFILE_CELL_SCHEMA",
    "PAD",
    "CellLayout",
    "CellFlags",
    "cells_schema",
    "cells_to_table",
    "empty_cells",
    "walk_cells",
]

#: The cell columns of :func:`cells_to_table` (as the scan results' ``cells`` shape).
HFILE_CELL_SCHEMA: Final = RESULT_CELL_SCHEMA
_SEQ_ID: Final = pa.field("seq_id", pa.int64(), nullable=False)
_TAGS: Final = pa.field("tags", pa.binary(), nullable=False)
_I8: Final = np.arange(8, dtype=np.int64)


@dataclass(frozen=True)
class CellFlags:
    """What follows each cell's value, from the FileInfo.

    Attributes:
        tags: Cells carry ``u16 tagsLength | tags`` (``hfile.MAX_TAGS_LEN`` present).
        mvcc: Cells end with a memstore timestamp VLong (``KEY_VALUE_VERSION == 1``).
        mvcc_one_byte: The VLong is taken as one byte (``MAX_MEMSTORE_TS_KEY == 0``).
    """

    tags: bool = False
    mvcc: bool = False
    mvcc_one_byte: bool = False


@dataclass(frozen=True)
class CellLayout:
    """Where each cell of a buffer starts, in file order, and which block holds it.

    Attributes:
        starts: Offset of each cell in the buffer.
        counts: Cells per walked block.
    """

    starts: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]

    @property
    def blocks(self) -> npt.NDArray[np.int64]:
        """Index (into the walked block list) of the block holding each cell."""
        return np.repeat(np.arange(len(self.counts), dtype=np.int64), self.counts)


#: Bytes of zero padding a caller may append to a buffer so short fields near its end can
#: be gathered through fixed-width windows (:func:`_rows_at`).
PAD: Final = 64


def _at(buf: npt.NDArray[np.uint8], pos: npt.NDArray[np.int64], dtype: str) -> npt.NDArray[Any]:
    """The ``dtype`` item starting at each byte offset ``pos`` of ``buf``.

    ``buf`` is viewed as one (unaligned, overlapping) item per byte offset, so the gather
    copies one item per position instead of building an index per byte. The caller
    guarantees ``pos + itemsize <= len(buf)``.
    """
    size = np.dtype(dtype).itemsize
    items = np.ndarray(shape=(len(buf) - size + 1,), dtype=dtype, buffer=buf, strides=(1,))
    return items[pos]


def _rows_at(
    buf: npt.NDArray[np.uint8], pos: npt.NDArray[np.int64], width: int
) -> npt.NDArray[np.uint8]:
    """``buf[pos[i] : pos[i] + width]`` for every ``i``, as an ``(*pos.shape, width)`` array."""
    return _at(buf, pos, f"V{width}").view(np.uint8).reshape(*pos.shape, width)


def _field(rows: npt.NDArray[np.uint8], offset: int, dtype: str) -> npt.NDArray[Any]:
    """Column ``dtype`` at byte ``offset`` of each row of a contiguous ``(n, width)`` array."""
    if rows.shape[0] == 0:
        return np.empty(0, dtype=dtype)
    return np.ndarray(
        shape=(rows.shape[0],), dtype=dtype, buffer=rows, offset=offset, strides=(rows.shape[1],)
    )


def _be16(buf: npt.NDArray[np.uint8], pos: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return _at(buf, pos, ">u2").astype(np.int64)


def walk_cells(
    buf: npt.NDArray[np.uint8],
    block_starts: npt.NDArray[np.int64],
    block_ends: npt.NDArray[np.int64],
    *,
    flags: CellFlags,
    where: str = "HFile",
    block_offsets: npt.NDArray[np.int64] | None = None,
) -> CellLayout:
    """Find every cell of many NONE blocks.

    Each cell's offset follows from the previous cell's lengths, so this is a compiled
    sequential walk (:func:`cellstore.storefiles.hfile.kernels.walk_none`, a few ns per
    cell) rather than numpy.

    Args:
        buf: Decompressed payloads, each block's cells in ``[start, end)``.
        block_starts: Start of each block's cells in ``buf`` (any order).
        block_ends: End of each block's cells in ``buf``.
        flags: The file's per-cell extras.
        where: The file, for error messages.
        block_offsets: File offsets of the blocks, for error messages.

    Returns:
        Cell starts in buffer order within each block, grouped by block in the given
        order.

    Raises:
        CorruptFileError: if a cell's lengths overrun its block (naming the block).
    """
    starts, counts, bad, code, at = walk_none(
        np.ascontiguousarray(buf, dtype=np.uint8),
        np.ascontiguousarray(block_starts, dtype=np.int64),
        np.ascontiguousarray(block_ends, dtype=np.int64),
        flags.tags,
        flags.mvcc,
        flags.mvcc_one_byte,
    )
    if bad >= 0:
        b = int(bad)
        block = (
            f"data block at offset {int(block_offsets[b])}"
            if block_offsets is not None
            else f"data block #{b}"
        )
        fault = _cell_fault(buf, int(at), int(block_starts[b]), int(block_ends[b]), int(code))
        raise CorruptFileError(f"{where}: {fault.format(block=block)}")
    return CellLayout(starts=starts, counts=counts)


def _cell_fault(buf: npt.NDArray[np.uint8], pos: int, start: int, end: int, code: int) -> str:
    """What is wrong with the cell at ``buf[pos]`` of the block ``[start, end)``.

    A template naming the block as ``{block}``; only bytes inside the block are read.
    """
    at = f"cell at byte {pos - start} of the block"
    if code != BAD_KEY or not start <= pos <= end - 8:
        return f"a cell overruns the {{block}} ({at})"
    klen = int.from_bytes(bytes(buf[pos : pos + 4]), "big")
    if klen < 12:
        return f"{{block}}: a cell's key length {klen} is shorter than a KeyValue key ({at})"
    rlen = int.from_bytes(bytes(buf[pos + 8 : pos + 10]), "big")
    if 12 + rlen > klen:
        return f"{{block}}: a cell's row length {rlen} overruns its {klen}-byte key ({at})"
    flen = int(buf[pos + 10 + rlen])
    return f"{{block}}: a cell's family length {flen} overruns its {klen}-byte key ({at})"


def _take_bytes(
    buf: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]
) -> pa.Array:
    """One binary array of ``buf[starts[i] : starts[i] + lengths[i]]`` per cell.

    ``starts`` must be non-decreasing with ``starts[i] + lengths[i] <= starts[i + 1]``
    (fields of cells in buffer order). Fixed-width fields are one numpy row gather; varying
    ones are an Arrow ``take`` of every other element of a zero-copy binary array over
    ``buf`` whose offsets alternate field start / field end (the gaps between fields are
    the elements not taken).
    """
    n = len(starts)
    if n == 0:
        return pa.array([], pa.binary())
    widest = int(lengths.max())
    if widest == int(lengths.min()) and widest <= PAD and int(starts.max()) + widest <= len(buf):
        # Fixed width (common for families, row keys, qualifiers): one row gather.
        data = _rows_at(buf, starts, widest).reshape(-1) if widest else np.empty(0, np.uint8)
        if n * widest < 2**31:
            offsets = np.arange(0, (n + 1) * widest, max(widest, 1), dtype=np.int32)[: n + 1]
            if widest == 0:
                offsets = np.zeros(n + 1, dtype=np.int32)
            return pa.Array.from_buffers(
                pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
            )
        offsets64 = np.arange(n + 1, dtype=np.int64) * widest
        return pa.Array.from_buffers(
            pa.large_binary(), n, [None, pa.py_buffer(offsets64), pa.py_buffer(data)]
        )
    if n > 1 and not bool(np.all(starts[1:] >= starts[:-1] + lengths[:-1])):
        # Not in buffer order (never for cells walked from blocks): gather byte indexes.
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        idx = np.repeat(starts - offsets[:-1], lengths) + np.arange(int(offsets[-1]))
        gathered = pa.Array.from_buffers(
            pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(buf[idx])]
        )
        return gathered.cast(pa.binary()) if int(offsets[-1]) < 2**31 else gathered
    small = len(buf) < 2**31
    pieces = np.empty(2 * n + 1, dtype=np.int32 if small else np.int64)
    pieces[0 : 2 * n : 2] = starts
    pieces[1 : 2 * n : 2] = starts + lengths
    pieces[2 * n] = len(buf)
    whole = pa.Array.from_buffers(
        pa.binary() if small else pa.large_binary(),
        2 * n,
        [None, pa.py_buffer(pieces), pa.py_buffer(buf)],
    )
    total = int(lengths.sum())
    if small and total >= 2**31:
        whole = whole.cast(pa.large_binary())
    taken = whole.take(pa.array(np.arange(0, 2 * n, 2, dtype=np.int32 if small else np.int64)))
    if total < 2**31 and taken.type != pa.binary():
        taken = taken.cast(pa.binary())
    return taken


#: Widest key gathered whole by the fixed-key path of :func:`cells_to_table`.
_MAX_FIXED_KEY: Final = 256


def _binary_of_rows(mat: npt.NDArray[np.uint8]) -> pa.Array:
    """A binary array with one element per row of the 2-D ``mat`` (all the same width)."""
    n, width = mat.shape
    data = np.ascontiguousarray(mat).reshape(-1)
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(width)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _fixed_key_columns(
    buf: npt.NDArray[np.uint8],
    kstart: npt.NDArray[np.int64],
    klen: npt.NDArray[np.int64],
    rlen: npt.NDArray[np.int64],
    want: set[str],
    cols: dict[str, pa.Array],
) -> bool:
    """Fill the key columns from one gather when every key has the same layout.

    Fixed-width row keys, family and qualifier (common) put every key field at the same
    offset, so one ``(n, keyLength)`` gather replaces five and the fields are column
    slices of it. Returns False (``cols`` untouched) when the layout varies.
    """
    n = len(kstart)
    if n == 0:
        return False
    width = int(klen[0])
    row_width = int(rlen[0])
    if not (
        12 <= width <= _MAX_FIXED_KEY
        and bool(np.all(klen == width))
        and bool(np.all(rlen == row_width))
    ):
        return False
    fam_at = 2 + row_width
    if fam_at + 1 + 9 > width:
        return False
    keys = _rows_at(buf, kstart, width)
    flen = keys[:, fam_at]
    fam_width = int(flen[0])
    qual_at = fam_at + 1 + fam_width
    if qual_at + 9 > width or not bool(np.all(flen == fam_width)):
        return False
    if "row" in want:
        cols["row"] = _binary_of_rows(keys[:, 2:fam_at])
    if "family" in want:
        cols["family"] = _binary_of_rows(keys[:, fam_at + 1 : qual_at])
    if "qualifier" in want:
        cols["qualifier"] = _binary_of_rows(keys[:, qual_at : width - 9])
    if "ts" in want or "type" in want:
        tail = np.ascontiguousarray(keys[:, width - 9 :])
        cols["ts"] = pa.array(_field(tail, 0, ">i8").astype(np.int64), pa.int64())
        cols["type"] = pa.array(_field(tail, 8, "i1").copy(), pa.int8())
    return True


def cells_schema(
    *, columns: list[str] | None = None, with_seq_id: bool = False, with_tags: bool = False
) -> pa.Schema:
    """The Arrow schema :func:`cells_to_table` produces for these options."""
    fields = list(HFILE_CELL_SCHEMA)
    if with_seq_id:
        fields.append(_SEQ_ID)
    if with_tags:
        fields.append(_TAGS)
    if columns is not None:
        by_name = {f.name: f for f in fields}
        fields = [by_name[c] for c in columns]
    return pa.schema(fields)


def empty_cells(
    *, columns: list[str] | None = None, with_seq_id: bool = False, with_tags: bool = False
) -> pa.Table:
    """An empty table of the cell schema."""
    return cells_schema(columns=columns, with_seq_id=with_seq_id, with_tags=with_tags).empty_table()


def cells_to_table(
    buf: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    *,
    flags: CellFlags,
    columns: list[str] | None = None,
    with_seq_id: bool = False,
    with_tags: bool = False,
    dictionary: bool = False,
) -> pa.Table:
    """Gather the fields of the cells starting at ``starts`` into an Arrow table.

    Args:
        buf: The buffer the cells live in (see :func:`walk_cells`).
        starts: Cell offsets in ``buf``, in the order of the output rows.
        flags: The file's per-cell extras.
        columns: Columns to build (default: all of the schema for these options).
        with_seq_id: Add ``seq_id`` (the memstore timestamp; 0 when the file has none).
        with_tags: Add ``tags`` (the raw tag records; empty when the file has none).
        dictionary: Return ``row`` and ``qualifier`` dictionary-encoded (int32 indices;
            see :func:`dictionary_keys`): what the merge of sorted runs works on, without
            building every cell's row and qualifier bytes.

    Returns:
        The cells, schema :func:`cells_schema` (with dictionary ``row`` and ``qualifier``
        when ``dictionary``).

    Raises:
        CorruptFileError: if a family name is not UTF-8.
    """
    schema = cells_schema(columns=columns, with_seq_id=with_seq_id, with_tags=with_tags)
    want = set(schema.names)
    n = len(starts)
    head = _rows_at(buf, starts, 10)  # klen, vlen, rowLength of every cell in one gather
    klen = _field(head, 0, ">u4").astype(np.int64)
    vlen = _field(head, 4, ">u4").astype(np.int64)
    rlen = _field(head, 8, ">u2").astype(np.int64)
    kstart = starts + 8
    kend = kstart + klen
    cols: dict[str, pa.Array] = {}
    if dictionary:
        return _dictionary_table(buf, starts, flags=flags, schema=schema)
    if not _fixed_key_columns(buf, kstart, klen, rlen, want, cols):
        fpos = kstart + 2 + rlen
        flen = buf[fpos].astype(np.int64)
        qpos = fpos + 1 + flen
        if n and bool(np.any(qpos + 9 > kend)):
            raise CorruptFileError("a cell's row or family length overruns its key")
        if "row" in want:
            cols["row"] = _take_bytes(buf, kstart + 2, rlen)
        if "family" in want:
            cols["family"] = _take_bytes(buf, fpos + 1, flen)
        if "qualifier" in want:
            cols["qualifier"] = _take_bytes(buf, qpos, kend - 9 - qpos)
        if "ts" in want or "type" in want:
            tail = _rows_at(buf, kend - 9, 9)  # timestamp and type in one gather
            cols["ts"] = pa.array(_field(tail, 0, ">i8").astype(np.int64), pa.int64())
            cols["type"] = pa.array(_field(tail, 8, "i1").copy(), pa.int8())
    if "family" in want:
        try:
            cols["family"] = cols["family"].cast(pa.string())
        except pa.ArrowInvalid as e:
            raise CorruptFileError(f"a family name is not UTF-8: {e}") from e
    if "value" in want:
        cols["value"] = _take_bytes(buf, kend, vlen)
    _add_extras(cols, buf, kend + vlen, flags=flags, want=want)
    return _table(cols, schema)


def _add_extras(
    cols: dict[str, pa.Array],
    buf: npt.NDArray[np.uint8],
    after: npt.NDArray[np.int64],
    *,
    flags: CellFlags,
    want: set[str],
) -> None:
    """Add the wanted ``tags`` and ``seq_id`` columns to ``cols``.

    ``after`` is where each cell's value ends; a file without tags or memstore timestamps
    gives empty tags and 0.
    """
    if "tags" not in want and "seq_id" not in want:
        return
    n = len(after)
    tpos = tlen = np.zeros(n, dtype=np.int64)
    if flags.tags:
        tlen = _be16(buf, after)
        tpos = after + 2
        after = tpos + tlen
    if "tags" in want:
        cols["tags"] = _take_bytes(buf, tpos, tlen)
    if "seq_id" in want:
        seq = vlongs_at(buf, after) if flags.mvcc and n else np.zeros(n, dtype=np.int64)
        cols["seq_id"] = pa.array(seq, pa.int64())


def _table(cols: dict[str, pa.Array], schema: pa.Schema) -> pa.Table:
    """The table of ``cols`` in ``schema``'s order (key columns may be dictionaries)."""
    fields = [
        pa.field(f.name, cols[f.name].type, f.nullable, f.metadata)
        if cols[f.name].type != f.type
        else f
        for f in schema
    ]
    return pa.Table.from_arrays([cols[f.name] for f in schema], schema=pa.schema(fields))


def _gather_bytes(
    buf: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]
) -> pa.Array:
    """``buf[starts[i] : starts[i] + lengths[i]]`` as a binary array, in any order of starts."""
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    idx = np.repeat(starts - offsets[:-1], lengths) + np.arange(int(offsets[-1]))
    out = pa.Array.from_buffers(
        pa.large_binary(), len(starts), [None, pa.py_buffer(offsets), pa.py_buffer(buf[idx])]
    )
    return out.cast(pa.binary())


def _dictionary_table(
    buf: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    *,
    flags: CellFlags,
    schema: pa.Schema,
) -> pa.Table:
    """:func:`cells_to_table` with ``row`` and ``qualifier`` as dictionary arrays.

    One compiled pass (:func:`~cellstore.storefiles.hfile.kernels.decode_cells_dictionary`)
    reads every cell's key and copies its value; only the distinct rows and qualifiers are
    then gathered as bytes.
    """
    bad, row_idx, row_first, q_idx, q_first, q_len, ts, typ, vlen, vend = decode_cells_dictionary(
        np.ascontiguousarray(buf, np.uint8), starts.astype(np.int64)
    )
    if bad >= 0:
        raise CorruptFileError("a cell's row or family length overruns its key")
    cols: dict[str, pa.Array] = {}
    names = set(schema.names)
    if "row" in names:
        rows = _take_bytes(buf, row_first, _be16(buf, row_first - 2))
        cols["row"] = pa.DictionaryArray.from_arrays(pa.array(row_idx, pa.int32()), rows)
    if "qualifier" in names:
        quals = _gather_bytes(buf, q_first, q_len)
        cols["qualifier"] = pa.DictionaryArray.from_arrays(pa.array(q_idx, pa.int32()), quals)
    if "family" in names:
        kstart = starts + 8
        fpos = kstart + 2 + _be16(buf, kstart)
        flen = buf[fpos].astype(np.int64)
        try:
            cols["family"] = _take_bytes(buf, fpos + 1, flen).cast(pa.string())
        except pa.ArrowInvalid as e:
            raise CorruptFileError(f"a family name is not UTF-8: {e}") from e
    cols["ts"] = pa.array(ts, pa.int64())
    cols["type"] = pa.array(typ, pa.int8())
    if "value" in names:
        cols["value"] = _take_bytes(buf, vend - vlen, vlen)
    _add_extras(cols, buf, vend, flags=flags, want=names)
    return _table(cols, schema)

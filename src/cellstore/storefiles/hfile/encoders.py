"""HBase data block encoders: the ENCODED_DATA ("DATABLKE") payload of one data block.

Each encoder reproduces HBase 2.x byte for byte (``hbase-common/.../io/encoding``):

* PREFIX: ``PrefixKeyDeltaEncoder.internalEncode`` / ``writeKeyExcludingCommon``;
* DIFF: ``DiffKeyDeltaEncoder.compressSingleKeyValue``;
* FAST_DIFF: ``FastDiffDeltaEncoder.compressSingleKeyValue``;
* ROW_INDEX_V1: ``RowIndexCodecV1`` / ``RowIndexEncoderV1.write`` and ``flush``.

Payload = ``i16 encodingId`` (``HFileBlockDefaultEncodingContext.prepareEncoding``), then
for PREFIX/DIFF/FAST_DIFF ``i32 unencodedDataSize`` (``BufferedDataBlockEncoder
.startBlockEncoding/endBlockEncoding``) and the encoded cells, each followed by
``BufferedDataBlockEncoder.afterEncodingKeyValue``'s extras (7-bit varint tags length and
the tags when the file has tags, Hadoop VLong memstore timestamp when it has them); for
ROW_INDEX_V1 the cells in NONE layout, ``i32 numRows``, ``i32 rowOffset[numRows]`` and
``i32 cellsDataSize``. Each block starts a fresh encoder state.

The per-cell step is a Python loop (each cell's encoding depends on the previous cell);
ROW_INDEX_V1 is vectorized.

"Flat key" below is a KeyValue key: ``u16 rowLen, row, u8 famLen, family, qualifier,
i64 ts, u8 type``. Pure: no I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from cellstore.storefiles.hfile.serialize import base128_bytes

__all__ = [
    "ENCODING_IDS",
    "BlockCells",
    "Encoding",
    "compressed_int",
    "encode_block",
]

Encoding = Literal["none", "prefix", "diff", "fast_diff", "row_index_v1"]

#: ``DataBlockEncoding`` ids.
ENCODING_IDS: Final[dict[str, int]] = {
    "none": 0,
    "prefix": 2,
    "diff": 3,
    "fast_diff": 4,
    "row_index_v1": 7,
}

#: Names as stored in FileInfo ``DATA_BLOCK_ENCODING``.
ENCODING_NAMES: Final[dict[str, bytes]] = {
    "prefix": b"PREFIX",
    "diff": b"DIFF",
    "fast_diff": b"FAST_DIFF",
    "row_index_v1": b"ROW_INDEX_V1",
}

# DiffKeyDeltaEncoder flags.
_D_SAME_KEY_LEN: Final = 1
_D_SAME_VAL_LEN: Final = 2
_D_SAME_TYPE: Final = 4
_D_TS_IS_DIFF: Final = 8
_D_TS_SHIFT: Final = 4
_D_TS_SIGN: Final = 0x80
# FastDiffDeltaEncoder flags.
_F_SAME_KEY_LEN: Final = 8
_F_SAME_VAL_LEN: Final = 16
_F_SAME_TYPE: Final = 32
_F_SAME_VALUE: Final = 64


def compressed_int(value: int) -> bytes:
    """``ByteBufferUtils.putCompressedInt``: 7-bit groups, least significant first."""
    return base128_bytes(value, bits=32)


@dataclass(frozen=True, slots=True)
class BlockCells:
    """The cells of one data block, as the encoders need them.

    Attributes:
        none_bytes: The block's cells in NONE layout (what a DATA block would hold).
        cell_offsets: Start of each cell in ``none_bytes`` plus the end (n + 1 values).
        keys: Each cell's flat key.
        values: Each cell's value.
        tags: Each cell's tags bytes, or None when the file has no tags.
        mvcc: Each cell's encoded memstore timestamp (Hadoop VLong), or None.
        new_row: Whether each cell starts a new row (the first cell always does).
    """

    none_bytes: bytes
    cell_offsets: npt.NDArray[np.int64]
    keys: Sequence[bytes]
    values: Sequence[bytes]
    tags: Sequence[bytes] | None
    mvcc: Sequence[bytes] | None
    new_row: npt.NDArray[np.bool_]


def _extras(cells: BlockCells, i: int) -> bytes:
    """``afterEncodingKeyValue``: tags (varint length + bytes) and memstore VLong."""
    out = b""
    if cells.tags is not None:
        t = cells.tags[i]
        out += compressed_int(len(t)) + t
    if cells.mvcc is not None:
        out += cells.mvcc[i]
    return out


def _split(key: bytes) -> tuple[int, int, int]:
    """(rowLen, famLen, qualifier start) of a flat key."""
    rlen = (key[0] << 8) | key[1]
    flen = key[2 + rlen]
    return rlen, flen, 3 + rlen + flen


def _common(a: bytes, b: bytes, n: int) -> int:
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _flat_common(cur: bytes, prev: bytes, *, with_ts_type: bool) -> int:
    """``PrivateCellUtil.findCommonPrefixInFlatKey(cur, prev, bypassFamilyCheck=true, ...)``."""
    if cur[0:2] != prev[0:2]:
        return _common(cur, prev, 2)
    rlen, flen, q0 = _split(cur)
    rc = _common(cur[2 : 2 + rlen], prev[2 : 2 + rlen], rlen)
    if rc != rlen:
        return 2 + rc
    common = 2 + rlen + 1 + flen
    _, _, pq0 = _split(prev)
    q1, q2 = cur[q0:-9], prev[pq0:-9]
    qc = _common(q1, q2, min(len(q1), len(q2)))
    common += qc
    if not with_ts_type or max(len(q1), len(q2)) != qc:
        return common
    tc = _common(cur[-9:-1], prev[-9:-1], 8)
    common += tc
    if tc != 8:
        return common
    if cur[-1] == prev[-1]:
        common += 1
    return common


def _encode_prefix(cells: BlockCells) -> bytes:
    """``PrefixKeyDeltaEncoder``: cint keyLen-common, cint valueLen, cint common, suffix, value."""
    out: list[bytes] = []
    prev: bytes | None = None
    for i, key in enumerate(cells.keys):
        value = cells.values[i]
        common = 0 if prev is None else _flat_common(key, prev, with_ts_type=True)
        out.append(compressed_int(len(key) - common))
        out.append(compressed_int(len(value)))
        out.append(compressed_int(common))
        out.append(key[common:])
        out.append(value)
        out.append(_extras(cells, i))
        prev = key
    return b"".join(out)


def _long_fits_in(value: int) -> int:
    """``ByteBufferUtils.longFitsIn``: bytes needed for a non-negative long (8 if negative)."""
    if value < 0:
        return 8
    return max(1, (value.bit_length() + 7) // 8)


def _java_long(value: int) -> int:
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def _row_and_qualifier(key: bytes, common: int) -> bytes:
    """Key bytes written by DIFF/FAST_DIFF: row rest + whole qualifier, or qualifier rest."""
    rlen, _flen, q0 = _split(key)
    if common < rlen + 2:
        return key[common : 2 + rlen] + key[q0:-9]
    return key[common:-9]


def _encode_diff(cells: BlockCells) -> bytes:
    """``DiffKeyDeltaEncoder.compressSingleKeyValue`` (first cell also writes the family)."""
    out: list[bytes] = []
    prev: bytes | None = None
    prev_vlen = 0
    for i, key in enumerate(cells.keys):
        value = cells.values[i]
        ts = struct.unpack_from(">q", key, len(key) - 9)[0]
        flag = 0
        common = 0
        if prev is None:
            t = ts
            if t < 0:
                flag |= _D_TS_SIGN
                t = _java_long(-t)
            fits = _long_fits_in(t)
            flag |= (fits - 1) << _D_TS_SHIFT
            rlen, flen, _ = _split(key)
            out.append(key[2 + rlen : 3 + rlen + flen])
            ts_out = t
        else:
            common = _flat_common(key, prev, with_ts_type=False)
            if len(key) == len(prev):
                flag |= _D_SAME_KEY_LEN
            if len(value) == prev_vlen:
                flag |= _D_SAME_VAL_LEN
            if key[-1] == prev[-1]:
                flag |= _D_SAME_TYPE
            prev_ts = struct.unpack_from(">q", prev, len(prev) - 9)[0]
            diff = _java_long(prev_ts - ts)
            t = ts
            neg_t = t < 0
            if neg_t:
                t = _java_long(-t)
            fits = _long_fits_in(t)
            neg_d = diff < 0
            if neg_d:
                diff = _java_long(-diff)
            dfits = _long_fits_in(diff)
            if dfits < fits:
                flag |= (dfits - 1) << _D_TS_SHIFT | _D_TS_IS_DIFF
                if neg_d:
                    flag |= _D_TS_SIGN
                ts_out, fits = diff, dfits
            else:
                flag |= (fits - 1) << _D_TS_SHIFT
                if neg_t:
                    flag |= _D_TS_SIGN
                ts_out = t
        out.append(bytes((flag,)))
        if not flag & _D_SAME_KEY_LEN:
            out.append(compressed_int(len(key)))
        if not flag & _D_SAME_VAL_LEN:
            out.append(compressed_int(len(value)))
        out.append(compressed_int(common))
        out.append(_row_and_qualifier(key, common))
        out.append((ts_out & ((1 << 64) - 1)).to_bytes(8, "little")[:fits])
        if not flag & _D_SAME_TYPE:
            out.append(key[-1:])
        out.append(value)
        out.append(_extras(cells, i))
        prev, prev_vlen = key, len(value)
    return b"".join(out)


def _encode_fast_diff(cells: BlockCells) -> bytes:
    """``FastDiffDeltaEncoder.compressSingleKeyValue``."""
    out: list[bytes] = []
    prev: bytes | None = None
    prev_value = b""
    for i, key in enumerate(cells.keys):
        value = cells.values[i]
        if prev is None:
            out.append(b"\x00")
            out.append(compressed_int(len(key)))
            out.append(compressed_int(len(value)))
            out.append(b"\x00")
            out.append(key)
            out.append(value)
        else:
            common = _flat_common(key, prev, with_ts_type=False)
            flag = 0
            if len(key) == len(prev):
                flag |= _F_SAME_KEY_LEN
            if len(value) == len(prev_value):
                flag |= _F_SAME_VAL_LEN
            if key[-1] == prev[-1]:
                flag |= _F_SAME_TYPE
            ts, pts = key[-9:-1], prev[-9:-1]
            tc = _common(ts, pts, 7)
            flag |= tc
            if value == prev_value:
                flag |= _F_SAME_VALUE
            out.append(bytes((flag,)))
            if not flag & _F_SAME_KEY_LEN:
                out.append(compressed_int(len(key)))
            if not flag & _F_SAME_VAL_LEN:
                out.append(compressed_int(len(value)))
            out.append(compressed_int(common))
            out.append(_row_and_qualifier(key, common))
            out.append(ts[tc:])
            if not flag & _F_SAME_TYPE:
                out.append(key[-1:])
            if not flag & _F_SAME_VALUE:
                out.append(value)
        out.append(_extras(cells, i))
        prev, prev_value = key, value
    return b"".join(out)


def _encode_row_index(cells: BlockCells) -> bytes:
    """``RowIndexEncoderV1``: NONE cells, then row count, row start offsets, cells size."""
    starts = cells.cell_offsets[:-1][cells.new_row] - cells.cell_offsets[0]
    size = int(cells.cell_offsets[-1] - cells.cell_offsets[0])
    return b"".join(
        (
            cells.none_bytes,
            struct.pack(">i", len(starts)),
            starts.astype(">i4").tobytes(),
            struct.pack(">i", size),
        )
    )


def encode_block(encoding: Encoding, cells: BlockCells) -> bytes:
    """The uncompressed ENCODED_DATA payload of one block.

    Args:
        encoding: ``prefix``, ``diff``, ``fast_diff`` or ``row_index_v1``.
        cells: The block's cells.

    Returns:
        ``i16 id`` followed by the encoder's output (see the module docstring).

    Raises:
        ValueError: For ``none`` or an unknown encoding.
    """
    head = struct.pack(">h", ENCODING_IDS[encoding])
    if encoding == "row_index_v1":
        return head + _encode_row_index(cells)
    unencoded = struct.pack(">i", len(cells.none_bytes))
    if encoding == "prefix":
        return head + unencoded + _encode_prefix(cells)
    if encoding == "diff":
        return head + unencoded + _encode_diff(cells)
    if encoding == "fast_diff":
        return head + unencoded + _encode_fast_diff(cells)
    raise ValueError(f"not a data block encoding to encode: {encoding!r}")

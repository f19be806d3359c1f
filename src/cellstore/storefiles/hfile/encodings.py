"""Data block encodings: ENCODED_DATA ("DATABLKE") payloads back to plain (NONE) cells.

Every decoder returns the block's cells in the NONE layout (``u32 klen | u32 vlen | key |
value | [u16 tagsLen | tags] | [memstoreTS VLong]``), which the vectorized NONE path of
:mod:`cellstore.storefiles.hfile.cells` then turns into Arrow columns. One function per
encoding, so encoders can sit beside them (the writer's are in
:mod:`cellstore.storefiles.hfile.encoders`).

Payload: ``i16 encodingId`` (``HFileBlockDefaultEncodingContext.prepareEncoding``), then

* PREFIX, DIFF, FAST_DIFF: ``i32 unencodedDataSize``
  (``BufferedDataBlockEncoder.startBlockEncoding``) and the encoded cells, each followed by
  ``cint tagsLength | tags`` (when the file has tags) and the memstore timestamp as a
  Hadoop VLong (when it has them) (``BufferedDataBlockEncoder.afterEncodingKeyValue`` and
  ``afterDecodingKeyValue``). "cint" is ``ByteBufferUtils.readCompressedInt``.
* ROW_INDEX_V1: plain cells, ``i32 numRows``, ``i32 rowOffsets[numRows]``, ``i32
  cellsDataSize`` (``RowIndexEncoderV1.write/flush``).

Sources (hbase-common ``io/encoding``), decoders derived from the *encoder* rules:

* ``PrefixKeyDeltaEncoder.internalEncode`` / ``decodeKeyValue``: ``cint(klen - common)
  cint(vlen) cint(common)``, key suffix, value; the key is the previous key's first
  ``common`` bytes plus the suffix.
* ``DiffKeyDeltaEncoder.compressSingleKeyValue`` / ``uncompressSingleKeyValue``: the block
  starts with ``u8 familyLength | family``; per cell a flag (1 same key length, 2 same
  value length, 4 same type, 8 timestamp is a diff, bits 4-6 timestamp bytes - 1, 128
  sign), ``[cint klen] [cint vlen] cint common``, then the rest of the row (family
  omitted) and qualifier, the timestamp (or the difference to the previous one) in
  little-endian ``ByteBufferUtils.putLong(out, v, n)`` bytes, ``[type]``, value.
* ``FastDiffDeltaEncoder.compressSingleKeyValue`` / ``uncompressSingleKeyValue``: flag bits
  0-2 = leading timestamp bytes shared with the previous cell, 8 same key length, 16 same
  value length, 32 same type, 64 same value; the first cell is ``flag, cint klen, cint vlen,
  cint 0, key, value``; later cells ``[cint klen] [cint vlen] cint common``, rest of row
  (family copied from the previous cell), qualifier suffix, timestamp suffix, ``[type]``,
  ``[value]``.

Each key depends on the previous one, so PREFIX/DIFF/FAST_DIFF decode in one compiled
sequential loop per block (:func:`cellstore.storefiles.hfile.kernels.decode_cells`).
Pure: no I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final

import numpy as np

from cellstore.errors import CorruptFileError, UnsupportedFormatError
from cellstore.storefiles.hfile import kernels
from cellstore.storefiles.hfile.cells import CellFlags
from cellstore.storefiles.hfile.limits import MAX_BLOCK_BYTES

__all__ = [
    "ENCODING_IDS",
    "decode_diff",
    "decode_encoded_array",
    "decode_encoded_block",
    "decode_fast_diff",
    "decode_prefix",
    "decode_row_index_v1",
]

#: ``DataBlockEncoding`` name -> id.
ENCODING_IDS: Final[dict[str, int]] = {
    "NONE": 0,
    "PREFIX": 2,
    "DIFF": 3,
    "FAST_DIFF": 4,
    "ROW_INDEX_V1": 7,
}
_NAMES: Final = {v: k for k, v in ENCODING_IDS.items()}
#: A uint8 numpy array.
_Bytes = np.ndarray[Any, np.dtype[np.uint8]]


def _run(encoding: int, data: _Bytes, size: int, flags: CellFlags) -> _Bytes:
    """One compiled decoder run (:func:`.kernels.decode_cells`); errors name the byte."""
    out, err, at = kernels.decode_cells(encoding, data, size, flags.tags, flags.mvcc)
    if err != kernels.OK:
        raise CorruptFileError(f"{kernels.ERROR_MESSAGES[int(err)]} (cell at byte {int(at)})")
    return out


def _decode(encoding: int, data: bytes, size: int, flags: CellFlags) -> bytes:
    """:func:`_run` over bytes, giving bytes."""
    return _run(encoding, np.frombuffer(data, np.uint8), size, flags).tobytes()


def decode_prefix(data: bytes, *, flags: CellFlags, size: int) -> bytes:
    """Decode PREFIX cells (``data`` after ``i32 unencodedDataSize``; ``size`` its value)."""
    return _decode(2, data, size, flags)


def decode_diff(data: bytes, *, flags: CellFlags, size: int) -> bytes:
    """Decode DIFF cells (``data`` after ``i32 unencodedDataSize``; ``size`` its value)."""
    return _decode(3, data, size, flags)


def decode_fast_diff(data: bytes, *, flags: CellFlags, size: int) -> bytes:
    """Decode FAST_DIFF cells (``data`` after ``i32 unencodedDataSize``; ``size`` its value)."""
    return _decode(4, data, size, flags)


def decode_row_index_v1(data: bytes, *, flags: CellFlags) -> bytes:
    """ROW_INDEX_V1: the plain cells before the row index (``data`` after the id)."""
    del flags
    if len(data) < 8:
        raise CorruptFileError("ROW_INDEX_V1 block too short")
    (size,) = struct.unpack_from(">i", data, len(data) - 4)
    if size < 0 or size + 8 > len(data):
        raise CorruptFileError(f"ROW_INDEX_V1 data size {size} overruns the block")
    (rows,) = struct.unpack_from(">i", data, size)
    if size + 4 + 4 * rows + 4 != len(data):
        raise CorruptFileError("ROW_INDEX_V1 row index does not fill the block")
    return data[:size]


_DECODERS: Final[dict[int, Callable[..., bytes]]] = {
    2: decode_prefix,
    3: decode_diff,
    4: decode_fast_diff,
}


def decode_encoded_block(
    payload: bytes, *, flags: CellFlags, where: str, max_bytes: int = MAX_BLOCK_BYTES
) -> bytes:
    """:func:`decode_encoded_array` as bytes (same arguments and errors)."""
    return decode_encoded_array(payload, flags=flags, where=where, max_bytes=max_bytes).tobytes()


def decode_encoded_array(
    payload: bytes, *, flags: CellFlags, where: str, max_bytes: int = MAX_BLOCK_BYTES
) -> _Bytes:
    """Decode one ENCODED_DATA payload into NONE-layout cells, as a uint8 array.

    The encoded cells are read in place (no copy of the payload) and the decoder's output
    array is returned as is, so a batch copies each block's cells once, into its buffer.

    The ``unencodedDataSize`` the block states is checked (0 to ``max_bytes``) before the
    decoder runs, and the decoder never writes past it: its output grows with what is
    decoded, so a forged size costs nothing.

    Args:
        payload: The block's uncompressed payload (``i16 encodingId`` first).
        flags: The file's per-cell extras.
        where: File and block, for error messages.
        max_bytes: Most bytes the block may decode to
            (:data:`~cellstore.storefiles.hfile.limits.MAX_BLOCK_BYTES`).

    Raises:
        UnsupportedFormatError: for an encoding id this reader does not know.
        CorruptFileError: if the payload is inconsistent (naming ``where``).
    """
    if len(payload) < 2:
        raise CorruptFileError(f"{where}: encoded block too short")
    (enc,) = struct.unpack_from(">h", payload, 0)
    try:
        if enc == 7:
            return np.frombuffer(decode_row_index_v1(payload[2:], flags=flags), np.uint8)
        if enc not in _DECODERS:
            name = _NAMES.get(enc, f"id {enc}")
            raise UnsupportedFormatError(f"{where}: data block encoding {name} is not supported")
        if len(payload) < 6:
            raise CorruptFileError("encoded block too short")
        (size,) = struct.unpack_from(">i", payload, 2)
        if not 0 <= size <= max_bytes:
            raise CorruptFileError(
                f"unencoded size {size} is outside 0..{max_bytes} (the block limit)"
            )
        out = _run(enc, np.frombuffer(payload, np.uint8, offset=6), size, flags)
    except CorruptFileError as e:
        raise CorruptFileError(f"{where}: {_NAMES.get(enc, enc)} block: {e}") from e
    if len(out) != size:
        raise CorruptFileError(
            f"{where}: {_NAMES[enc]} block decoded to {len(out)} bytes, header says {size}"
        )
    return out

"""Variable-length integers of HFiles: Hadoop VInt/VLong, protobuf varints, HBase cints.

* Hadoop ``WritableUtils.readVLong`` (index key lengths, FileInfo, memstore timestamps): a
  first byte ``b >= -112`` is the value; otherwise ``b`` gives the sign and the number of
  big-endian bytes that follow. :func:`vlongs_at` decodes the values of many VLongs at
  once, vectorized (their sizes: :func:`cellstore.storefiles.hfile.kernels.vlong_size`).
* Protobuf base-128 varints (trailer, FileInfo framing).
* ``ByteBufferUtils.readCompressedInt``: 7-bit little-endian groups, used by the data block
  encoders (see :mod:`cellstore.storefiles.hfile.encodings`).

Pure: no I/O. The write halves live in :mod:`cellstore.storefiles.hfile.serialize`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cellstore.errors import CorruptFileError

__all__ = [
    "read_cint",
    "read_pb_varint",
    "read_vlong",
    "vlongs_at",
]


def read_vlong(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode one Hadoop VLong (``WritableUtils.readVLong``) at ``buf[pos]``.

    Returns:
        ``(value, next_pos)``.

    Raises:
        CorruptFileError: if the buffer ends inside the number.
    """
    if pos >= len(buf):
        raise CorruptFileError(f"truncated Hadoop VLong at offset {pos}")
    first = buf[pos]
    b = first - 256 if first > 127 else first
    if b >= -112:
        return b, pos + 1
    negative = b < -120
    n = (-120 - b) if negative else (-112 - b)
    end = pos + 1 + n
    if end > len(buf):
        raise CorruptFileError(f"truncated Hadoop VLong at offset {pos}")
    value = int.from_bytes(bytes(buf[pos + 1 : end]), "big")
    return (~value if negative else value), end


def vlongs_at(buf: npt.NDArray[np.uint8], pos: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Values of the Hadoop VLongs starting at each of ``pos`` in ``buf``, vectorized.

    The caller guarantees every number lies inside ``buf``.
    """
    b = buf[pos].astype(np.int8).astype(np.int64)
    small = b >= -112
    negative = b < -120
    n = np.where(small, 0, np.where(negative, -120 - b, -112 - b))
    value = np.where(small, b, 0).astype(np.uint64)
    big = ~small
    if big.any():
        acc = np.zeros(len(pos), dtype=np.uint64)
        limit = len(buf) - 1
        for k in range(1, int(n.max()) + 1):
            take = n >= k
            byte = buf[np.minimum(pos + k, limit)].astype(np.uint64)
            acc = np.where(take, (acc << np.uint64(8)) | byte, acc)
        value = np.where(big, acc, value)
    signed = value.view(np.int64)
    return np.where(negative, ~signed, signed)


def read_pb_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode one protobuf base-128 varint at ``buf[pos]``.

    Returns:
        ``(value, next_pos)`` (the value as an unsigned 64-bit integer).

    Raises:
        CorruptFileError: if the buffer ends inside the varint or it is over 10 bytes.
    """
    value, pos = _read_base128(buf, pos, max_shift=63, what="protobuf varint")
    return value & 0xFFFF_FFFF_FFFF_FFFF, pos


def read_cint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode one ``ByteBufferUtils.readCompressedInt`` (7-bit groups, low group first).

    Returns:
        ``(value, next_pos)``.

    Raises:
        CorruptFileError: if the buffer ends inside the number.
    """
    return _read_base128(buf, pos, max_shift=35, what="compressed int")


def _read_base128(
    buf: bytes | memoryview, pos: int, *, max_shift: int, what: str
) -> tuple[int, int]:
    """7-bit groups, least significant first, the high bit set on all but the last.

    Raises:
        CorruptFileError: if the buffer ends inside the number, or a group would shift
            past ``max_shift`` bits.
    """
    value = 0
    shift = 0
    while True:
        if pos >= len(buf) or shift > max_shift:
            raise CorruptFileError(f"bad {what} at offset {pos}")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7

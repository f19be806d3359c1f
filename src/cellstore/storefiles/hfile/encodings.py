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

These decoders run one Python step per cell (each key depends on the previous one).
Pure: no I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

from cellstore.errors import CorruptFileError, UnsupportedFormatError
from cellstore.storefiles.hfile.cells import CellFlags
from cellstore.storefiles.hfile.varint import read_cint, read_vlong

__all__ = [
    "ENCODING_IDS",
    "decode_diff",
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
_I64: Final = 1 << 64


class _Stream:
    """A cursor over an encoded payload; every read checks bounds."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise CorruptFileError(f"encoded cell overruns the block at byte {self.pos}")
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def byte(self) -> int:
        if self.pos >= self.end:
            raise CorruptFileError("encoded block ends inside a cell")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def cint(self) -> int:
        value, self.pos = read_cint(self.buf, self.pos)
        return value


def _extras(s: _Stream, out: bytearray, flags: CellFlags) -> None:
    """Copy tags (cint length -> u16) and the memstore VLong after a decoded cell."""
    if flags.tags:
        n = s.cint()
        if n > 0xFFFF:
            raise CorruptFileError(f"tags length {n} does not fit a cell")
        out += n.to_bytes(2, "big")
        out += s.take(n)
    if flags.mvcc:
        start = s.pos
        _, s.pos = read_vlong(s.buf, s.pos)
        out += s.buf[start : s.pos]


def _put(out: bytearray, key: bytes, value: bytes) -> None:
    out += struct.pack(">ii", len(key), len(value))
    out += key
    out += value


def decode_prefix(data: bytes, *, flags: CellFlags) -> bytes:
    """Decode PREFIX cells (``data`` starts after ``i32 unencodedDataSize``)."""
    s = _Stream(data, 0)
    out = bytearray()
    prev = b""
    while s.pos < s.end:
        rest = s.cint()
        vlen = s.cint()
        common = s.cint()
        if common > len(prev):
            raise CorruptFileError(f"PREFIX common length {common} exceeds the previous key")
        key = prev[:common] + s.take(rest)
        _put(out, key, s.take(vlen))
        _extras(s, out, flags)
        prev = key
    return bytes(out)


def _rest_of_row(s: _Stream, prefix: bytes) -> tuple[bytes, int]:
    """The row part (``u16 len | row``) completed from ``prefix`` (shorter than it)."""
    common = len(prefix)
    if common < 2:
        head = prefix + s.take(2 - common)
        rlen = int.from_bytes(head, "big")
        return head + s.take(rlen), rlen
    rlen = int.from_bytes(prefix[:2], "big")
    return prefix + s.take(rlen + 2 - common), rlen


def _split_prev(prev: bytes) -> tuple[int, bytes]:
    rlen = int.from_bytes(prev[:2], "big")
    flen = prev[2 + rlen]
    return rlen, prev[2 + rlen : 3 + rlen + flen]


def decode_diff(data: bytes, *, flags: CellFlags) -> bytes:
    """Decode DIFF cells (``data`` starts after ``i32 unencodedDataSize``)."""
    s = _Stream(data, 0)
    out = bytearray()
    if s.end == 0:
        return b""
    flen = s.byte()
    family = bytes([flen]) + s.take(flen)
    prev = b""
    prev_ts = 0
    prev_type = 0
    klen = vlen = 0
    prev_rlen = -1
    first = True
    while s.pos < s.end:
        flag = s.byte()
        if not flag & 1 or first:
            klen = s.cint()
        if not flag & 2 or first:
            vlen = s.cint()
        common = s.cint()
        if common > len(prev):
            raise CorruptFileError(f"DIFF common length {common} exceeds the previous key")
        prefix = prev[:common]
        if first or common < prev_rlen + 2:
            row, rlen = _rest_of_row(s, prefix)
            head = row + family
            qual = s.take(klen - len(head) - 9)
        else:
            head, qual = prefix, s.take(klen - common - 9)
            rlen = prev_rlen
        nbytes = ((flag >> 4) & 7) + 1
        ts = int.from_bytes(s.take(nbytes), "little")
        if flag & 0x80:
            ts = -ts
        if flag & 8:
            ts = prev_ts - ts
        ts = (ts + (1 << 63)) % _I64 - (1 << 63)
        kind = prev_type if flag & 4 else s.byte()
        key = head + qual + struct.pack(">qB", ts, kind)
        _put(out, key, s.take(vlen))
        _extras(s, out, flags)
        prev, prev_ts, prev_type, prev_rlen, first = key, ts, kind, rlen, False
    return bytes(out)


def decode_fast_diff(data: bytes, *, flags: CellFlags) -> bytes:
    """Decode FAST_DIFF cells (``data`` starts after ``i32 unencodedDataSize``)."""
    s = _Stream(data, 0)
    out = bytearray()
    prev = b""
    prev_value = b""
    klen = vlen = 0
    first = True
    while s.pos < s.end:
        flag = s.byte()
        if not flag & 8 or first:
            klen = s.cint()
        if not flag & 16 or first:
            vlen = s.cint()
        common = s.cint()
        if first:
            key = s.take(klen)
            value = s.take(vlen)
        else:
            if common > len(prev) - 9:
                raise CorruptFileError(f"FAST_DIFF common length {common} exceeds the previous key")
            prefix = prev[:common]
            prev_rlen, family = _split_prev(prev)
            if common < prev_rlen + 2:
                row, _ = _rest_of_row(s, prefix)
                head = row + family
                qual = s.take(klen - len(head) - 9)
            else:
                head, qual = prefix, s.take(klen - common - 9)
            shared = flag & 7
            ts = prev[-9 : -9 + shared] + s.take(8 - shared)
            kind = prev[-1:] if flag & 32 else s.take(1)
            key = head + qual + ts + kind
            if flag & 64:
                if vlen != len(prev_value):
                    raise CorruptFileError("FAST_DIFF same-value flag with a new value length")
                value = prev_value
            else:
                value = s.take(vlen)
        if len(key) != klen:
            raise CorruptFileError(f"FAST_DIFF key of {len(key)} bytes, expected {klen}")
        _put(out, key, value)
        _extras(s, out, flags)
        prev, prev_value, first = key, value, False
    return bytes(out)


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


def decode_encoded_block(payload: bytes, *, flags: CellFlags, where: str) -> bytes:
    """Decode one ENCODED_DATA payload into NONE-layout cells.

    Raises:
        UnsupportedFormatError: for an encoding id this reader does not know.
        CorruptFileError: if the payload is inconsistent (naming ``where``).
    """
    if len(payload) < 2:
        raise CorruptFileError(f"{where}: encoded block too short")
    (enc,) = struct.unpack_from(">h", payload, 0)
    try:
        if enc == 7:
            return decode_row_index_v1(payload[2:], flags=flags)
        if enc not in _DECODERS:
            name = _NAMES.get(enc, f"id {enc}")
            raise UnsupportedFormatError(f"{where}: data block encoding {name} is not supported")
        if len(payload) < 6:
            raise CorruptFileError("encoded block too short")
        (size,) = struct.unpack_from(">i", payload, 2)
        out = _DECODERS[enc](payload[6:], flags=flags)
    except CorruptFileError as e:
        raise CorruptFileError(f"{where}: {_NAMES.get(enc, enc)} block: {e}") from e
    if len(out) != size:
        raise CorruptFileError(
            f"{where}: {_NAMES[enc]} block decoded to {len(out)} bytes, header says {size}"
        )
    return out

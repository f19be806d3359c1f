"""Reading Parquet split-block Bloom filters (the format's standard row Bloom filter).

pyarrow writes Parquet Bloom filters but offers no way to probe them, so this module reads
the ``BloomFilterHeader`` (Thrift compact protocol) and tests keys against the bitset as the
Parquet specification (``BloomFilter.md``) describes: xxHash64 (seed 0) of the plain-encoded
value, the upper 32 bits pick a 256-bit block, eight salted bits of the lower 32 bits must
all be set. Other Parquet readers (DuckDB, Spark) use the same filters.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import pyarrow as pa
import xxhash

from cellstore.errors import CorruptFileError
from cellstore.storefiles.hfile.varint import read_pb_varint

__all__ = ["SplitBlockBloomFilter", "parse_bloom_filter"]

_SALT: Final = np.array(
    [
        0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D,
        0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31,
    ],
    dtype=np.uint32,
)  # fmt: skip


class SplitBlockBloomFilter:
    """A Parquet split-block Bloom filter over binary values.

    Args:
        bitset: The filter's bitset (a multiple of 32 bytes).
    """

    def __init__(self, bitset: bytes) -> None:
        if not bitset or len(bitset) % 32:
            raise CorruptFileError(f"bloom filter bitset of {len(bitset)} bytes is malformed")
        self._words = np.frombuffer(bitset, dtype="<u4").reshape(-1, 8)

    @property
    def num_blocks(self) -> int:
        """Number of 256-bit blocks."""
        return int(self._words.shape[0])

    def might_contain(self, value: bytes) -> bool:
        """False only if ``value`` is certainly absent."""
        h = xxhash.xxh64_intdigest(value, seed=0)
        block = ((h >> 32) * self.num_blocks) >> 32
        key = np.uint32(h & 0xFFFFFFFF)
        with np.errstate(over="ignore"):
            bits = (key * _SALT) >> np.uint32(27)
        mask = (np.uint32(1) << bits).astype(np.uint32)
        return bool(np.all(self._words[block] & mask))

    def might_contain_all(self, values: pa.Array) -> np.ndarray:
        """:meth:`might_contain` of every value of a binary array without nulls, at once.

        Returns:
            A boolean array: False where the value is certainly absent.
        """
        from cellstore.storefiles.bloom_kernels import binary_buffers, probe_all

        offsets, data = binary_buffers(values)
        result: np.ndarray = probe_all(offsets, data, self._words)
        return result


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A Thrift compact-protocol varint: a protobuf base-128 varint (one decoder for both)."""
    try:
        return read_pb_varint(buf, pos)
    except CorruptFileError:
        raise CorruptFileError("bloom filter header is truncated") from None


def _read_struct(buf: bytes, pos: int) -> tuple[dict[int, int], int]:
    """Walk one Thrift compact-protocol struct starting at ``pos``.

    Returns its integer fields (zigzag-decoded, by field id) and the position after it.
    Nested structs are walked and dropped; BloomFilterHeader needs nothing more.
    """
    fields: dict[int, int] = {}
    field_id = 0
    while True:
        if pos >= len(buf):
            raise CorruptFileError("bloom filter header is truncated")
        byte = buf[pos]
        pos += 1
        if byte == 0:
            return fields, pos
        kind = byte & 0x0F
        delta = byte >> 4
        if delta:
            field_id += delta
        else:  # explicit zigzag field id
            raw, pos = _varint(buf, pos)
            field_id = (raw >> 1) ^ -(raw & 1)
        if kind in (5, 6):  # i32 / i64
            raw, pos = _varint(buf, pos)
            fields[field_id] = (raw >> 1) ^ -(raw & 1)
        elif kind == 12:  # struct
            _, pos = _read_struct(buf, pos)
        elif kind not in (1, 2):  # bool true/false carry no payload
            raise CorruptFileError(f"unexpected thrift type {kind} in bloom filter header")


def parse_bloom_filter(data: bytes) -> SplitBlockBloomFilter:
    """Parse ``BloomFilterHeader`` + bitset as stored at a column chunk's bloom offset.

    Raises:
        CorruptFileError: if the header is malformed or the bitset is truncated.
    """
    fields, pos = _read_struct(data, 0)
    num_bytes = fields.get(1)  # BloomFilterHeader.numBytes
    if num_bytes is None or num_bytes <= 0:
        raise CorruptFileError("bloom filter header has no size")
    bitset = data[pos : pos + num_bytes]
    if len(bitset) != num_bytes:
        raise CorruptFileError("bloom filter bitset is truncated")
    return SplitBlockBloomFilter(bitset)

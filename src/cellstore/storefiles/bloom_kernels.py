"""Numba kernels for probing Parquet split-block Bloom filters with many values at once.

:meth:`~cellstore.storefiles.bloom.SplitBlockBloomFilter.might_contain` probes one value
(xxHash64 in C, the block test in numpy); checking that a filter holds every row of a row
group (``verify``) probes hundreds of thousands, so the whole probe (xxHash64 with seed 0,
as ``BloomFilter.md`` specifies, then the block and salted-bit test) runs here in one
compiled loop over an Arrow binary array's offsets and data buffers.
"""

from __future__ import annotations

from typing import Any, Final

import numba
import numpy as np
import pyarrow as pa

__all__ = ["binary_buffers", "probe_all", "xxh64_all"]

_P1: Final = np.uint64(11400714785074694791)
_P2: Final = np.uint64(14029467366897019727)
_P3: Final = np.uint64(1609587929392839161)
_P4: Final = np.uint64(9650029242287828579)
_P5: Final = np.uint64(2870177450012600261)
_SALT: Final = np.array(
    [
        0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D,
        0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31,
    ],
    dtype=np.uint64,
)  # fmt: skip


def binary_buffers(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)`` of a binary array without nulls, as int64 and uint8 numpy arrays.

    ``offsets[i]:offsets[i + 1]`` is value ``i``'s bytes in ``data``.
    """
    offset_type: type[np.signedinteger[Any]]
    if pa.types.is_large_binary(values.type):
        offset_type = np.int64
    else:
        values = values.cast(pa.binary())
        offset_type = np.int32
    _, offsets_buf, data_buf = values.buffers()
    assert offsets_buf is not None
    offsets = np.frombuffer(offsets_buf, dtype=offset_type)
    offsets = offsets[values.offset : values.offset + len(values) + 1].astype(np.int64)
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    )
    return offsets, data


@numba.njit(cache=True, inline="always")
def _rotl(x: np.uint64, r: int) -> np.uint64:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@numba.njit(cache=True, inline="always")
def _read64(data: np.ndarray, p: int) -> np.uint64:
    v = np.uint64(0)
    for i in range(8):
        v |= np.uint64(data[p + i]) << np.uint64(8 * i)
    return v


@numba.njit(cache=True, inline="always")
def _round(acc: np.uint64, lane: np.uint64) -> np.uint64:
    acc = acc + lane * _P2
    acc = _rotl(acc, 31)
    return acc * _P1


@numba.njit(cache=True, nogil=True)
def _xxh64(data: np.ndarray, start: int, end: int) -> np.uint64:
    """xxHash64 with seed 0 of ``data[start:end]``."""
    n = end - start
    p = start
    if n >= 32:
        v1 = _P1 + _P2
        v2 = _P2
        v3 = np.uint64(0)
        v4 = np.uint64(0) - _P1
        limit = end - 32
        while p <= limit:
            v1 = _round(v1, _read64(data, p))
            v2 = _round(v2, _read64(data, p + 8))
            v3 = _round(v3, _read64(data, p + 16))
            v4 = _round(v4, _read64(data, p + 24))
            p += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        for v in (v1, v2, v3, v4):
            h ^= _round(np.uint64(0), v)
            h = h * _P1 + _P4
    else:
        h = _P5
    h += np.uint64(n)
    while p + 8 <= end:
        h ^= _round(np.uint64(0), _read64(data, p))
        h = _rotl(h, 27) * _P1 + _P4
        p += 8
    if p + 4 <= end:
        k = np.uint64(0)
        for i in range(4):
            k |= np.uint64(data[p + i]) << np.uint64(8 * i)
        h ^= k * _P1
        h = _rotl(h, 23) * _P2 + _P3
        p += 4
    while p < end:
        h ^= np.uint64(data[p]) * _P5
        h = _rotl(h, 11) * _P1
        p += 1
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    h ^= h >> np.uint64(32)
    return h


@numba.njit(cache=True, nogil=True)
def xxh64_all(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """xxHash64 (seed 0) of every value given by ``offsets``/``data``, as uint64."""
    n = len(offsets) - 1
    out = np.empty(n, np.uint64)
    for i in range(n):
        out[i] = _xxh64(data, offsets[i], offsets[i + 1])
    return out


@numba.njit(cache=True, nogil=True)
def probe_all(offsets: np.ndarray, data: np.ndarray, words: np.ndarray) -> np.ndarray:
    """Which values may be in the split-block filter ``words`` (blocks x 8 uint32).

    False only for a value that is certainly absent (the Parquet ``BloomFilter.md`` test).
    """
    n = len(offsets) - 1
    blocks = np.uint64(words.shape[0])
    out = np.empty(n, np.bool_)
    mask32 = np.uint64(0xFFFFFFFF)
    for i in range(n):
        h = _xxh64(data, offsets[i], offsets[i + 1])
        block = ((h >> np.uint64(32)) * blocks) >> np.uint64(32)
        key = h & mask32
        hit = True
        for j in range(8):
            bit = ((key * _SALT[j]) & mask32) >> np.uint64(27)
            if not (np.uint64(words[block, j]) >> bit) & np.uint64(1):
                hit = False
                break
        out[i] = hit
    return out

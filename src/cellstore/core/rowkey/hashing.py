"""Hashes over many byte strings at once: MD5 (RFC 1321) and Phoenix's salt byte.

Both work on the ``(offsets, data)`` form of an Arrow binary array (see
:func:`cellstore.core.codecs.binary_parts`), with numpy lanes across the values instead of
a Python loop over them.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
import pyarrow as pa

from cellstore.core.codecs import (
    ArrayLike,
    as_array,
    binary_parts,
    valid_mask,
)
from cellstore.core.regions import MAX_SALT_BUCKETS
from cellstore.errors import InvalidArgumentError

__all__ = ["md5_digests", "md5_parts", "salt_bytes", "salt_parts"]

_MASK32: Final = 0xFFFFFFFF
_SHIFTS: Final = (
    (7, 12, 17, 22) * 4 + (5, 9, 14, 20) * 4 + (4, 11, 16, 23) * 4 + (6, 10, 15, 21) * 4
)
_K: Final = tuple(np.uint32(int(abs(math.sin(i + 1)) * 2**32) & _MASK32) for i in range(64))
_WORD: Final = tuple(
    i if i < 16 else (5 * i + 1) % 16 if i < 32 else (3 * i + 5) % 16 if i < 48 else (7 * i) % 16
    for i in range(64)
)
_INIT: Final = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476)


def _md5_blocks(words: np.ndarray, blocks: int) -> np.ndarray:
    """MD5 state after ``blocks`` 64-byte blocks: ``words`` is ``(m, 16 * blocks)`` uint32.

    The 64 steps run on uint32 lanes (one per message), in place: uint32 arithmetic wraps
    modulo 2**32 as MD5 requires.
    """
    m = words.shape[0]
    columns = np.ascontiguousarray(words.T)  # one contiguous row per message word
    state = [np.full(m, v, dtype=np.uint32) for v in _INIT]
    f = np.empty(m, dtype=np.uint32)
    t = np.empty(m, dtype=np.uint32)
    for j in range(blocks):
        x = columns[16 * j : 16 * j + 16]
        a, b, c, d = (v.copy() for v in state)
        for i in range(64):
            if i < 16:  # F = (b & c) | (~b & d)
                np.bitwise_and(b, c, out=f)
                np.invert(b, out=t)
                t &= d
                f |= t
            elif i < 32:  # G = (d & b) | (~d & c)
                np.bitwise_and(d, b, out=f)
                np.invert(d, out=t)
                t &= c
                f |= t
            elif i < 48:  # H = b ^ c ^ d
                np.bitwise_xor(b, c, out=f)
                f ^= d
            else:  # I = c ^ (b | ~d)
                np.invert(d, out=t)
                t |= b
                np.bitwise_xor(c, t, out=f)
            f += a
            f += _K[i]
            f += x[_WORD[i]]
            shift = _SHIFTS[i]
            np.left_shift(f, np.uint32(shift), out=t)
            f >>= np.uint32(32 - shift)
            f |= t
            f += b
            # a <- d, d <- c, c <- b, b <- f; the old a's buffer becomes the next f.
            a, b, c, d, f = d, f, b, c, a
        for v, new in zip(state, (a, b, c, d), strict=True):
            v += new
    return np.stack(state, axis=1)


#: Messages hashed together: small enough for the uint32 lanes to stay in CPU cache.
_MD5_LANES: Final = 32768


def md5_parts(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """MD5 digests of the values ``data[offsets[i]:offsets[i + 1]]``, vectorized.

    Values are grouped by their number of 64-byte blocks after padding; each group runs the
    64 MD5 steps per block on uint32 lanes holding up to 32768 of the group's values.

    Returns:
        An ``(n, 16)`` uint8 matrix; row ``i`` equals ``hashlib.md5(value_i).digest()``.
    """
    n = len(offsets) - 1
    out = np.zeros((n, 16), dtype=np.uint8)
    if n == 0:
        return out
    lengths = np.diff(offsets)
    nblocks = (lengths + 8) // 64 + 1
    for blocks in np.unique(nblocks):
        group = np.flatnonzero(nblocks == blocks)
        for first in range(0, group.size, _MD5_LANES):
            rows = group[first : first + _MD5_LANES]
            out[rows] = _md5_padded(offsets, data, rows, int(blocks))
    return out


def _md5_padded(offsets: np.ndarray, data: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """Digests of the values ``rows``, each of which pads to ``k`` blocks."""
    m = rows.size
    starts = offsets[:-1][rows]
    lens = offsets[1:][rows] - starts
    buf = np.zeros((m, 64 * k), dtype=np.uint8)
    if lens.any():
        if np.all(lens == lens[0]) and np.all(np.diff(starts) == lens[0]):
            buf[:, : lens[0]] = data[starts[0] : starts[0] + m * int(lens[0])].reshape(m, -1)
        else:
            # byte j of message q comes from starts[q] + j and goes to q * 64k + j
            first = np.zeros(m, dtype=np.int64)
            np.cumsum(lens[:-1], out=first[1:])
            within = np.arange(int(lens.sum()), dtype=np.int64) - np.repeat(first, lens)
            dest = np.repeat(np.arange(m, dtype=np.int64) * (64 * k), lens) + within
            buf.reshape(-1)[dest] = data[np.repeat(starts, lens) + within]
    buf[np.arange(m), lens] = 0x80
    bit_lengths = (lens.astype(np.uint64) * np.uint64(8)).astype("<u8")
    buf[:, -8:] = bit_lengths.view(np.uint8).reshape(m, 8)
    state = _md5_blocks(buf.view("<u4"), k)
    digests: np.ndarray = state.astype("<u4").view(np.uint8).reshape(m, 16)
    return digests


def md5_digests(values: ArrayLike) -> np.ndarray:
    """MD5 digests of every value of a binary or string column (nulls hash as empty).

    Returns:
        An ``(n, 16)`` uint8 matrix of digests.
    """
    arr = as_array(values)
    if arr.null_count:
        arr = arr.fill_null(b"" if not pa.types.is_string(arr.type) else "")
    offsets, data = binary_parts(arr)
    return md5_parts(offsets, data)


def _check_buckets(buckets: int) -> None:
    if isinstance(buckets, bool) or not isinstance(buckets, int):
        raise InvalidArgumentError(f"salt_buckets must be an integer, not {buckets!r}")
    if not 1 <= buckets <= MAX_SALT_BUCKETS:
        raise InvalidArgumentError(
            f"salt_buckets must be between 1 and {MAX_SALT_BUCKETS}, got {buckets}"
        )


def _powers_of_31(count: int) -> np.ndarray:
    """``31**k mod 2**32`` for ``k`` in ``0 .. count - 1``, as uint64."""
    p = np.full(max(count, 1), 31, dtype=np.uint64)
    p[0] = 1
    # Doubling: p[k] = 31**k; each step multiplies a block by 31**len(block), mod 2**32.
    size = 1
    while size < count:
        step = int(p[size - 1]) * 31 & _MASK32
        upto = min(2 * size, count)
        p[size:upto] = (p[: upto - size] * np.uint64(step)) & np.uint64(_MASK32)
        size = upto
    return p[:count]


def salt_parts(offsets: np.ndarray, data: np.ndarray, buckets: int) -> np.ndarray:
    """Phoenix's salt byte of every value (``SaltingUtil.getSaltingByte``), vectorized.

    Java computes ``h = 1; for (byte b : key) h = 31 * h + b`` in 32-bit two's complement,
    with ``b`` a signed byte, then ``Math.abs(h % buckets)`` (``%`` takes the dividend's
    sign). Unrolled, ``h = 31**n + sum(b[j] * 31**(n - 1 - j)) mod 2**32``: one multiply
    per byte by a table of powers and a segmented sum (prefix sums mod ``2**64``, which
    ``2**32`` divides).

    Returns:
        uint8 numpy array of buckets ``0 .. buckets - 1``.

    Raises:
        InvalidArgumentError: if ``buckets`` is not in ``1 .. 256``.
    """
    _check_buckets(buckets)
    n = len(offsets) - 1
    lengths = np.diff(offsets)
    longest = int(lengths.max()) if n else 0
    powers = _powers_of_31(longest + 1).astype(np.uint32)
    # uint32 arithmetic wraps mod 2**32, exactly Java's int overflow; a signed byte b is
    # b mod 2**32 (int8 -> uint32 sign-extends).
    signed = data.view(np.int8).astype(np.uint32)
    sums = np.zeros(n, dtype=np.uint32)
    if n and np.all(lengths == lengths[0]):
        width = int(lengths[0])
        if width:
            terms = signed.reshape(n, width) * powers[width - 1 :: -1]
            terms.sum(axis=1, dtype=np.uint32, out=sums)
    elif data.size:
        # Exponent of each byte: its distance to the end of its key.
        exponent = np.repeat(offsets[1:] - 1, lengths) - np.arange(data.size, dtype=np.int64)
        terms = signed * powers[exponent]
        nonempty = lengths > 0
        sums[nonempty] = np.add.reduceat(terms, offsets[:-1][nonempty], dtype=np.uint32)
    h = sums + powers[lengths]
    h32 = h.view(np.int32).astype(np.int64)
    rem: np.ndarray = np.fmod(h32, np.int64(buckets))
    result: np.ndarray = np.abs(rem).astype(np.uint8)
    return result


def salt_bytes(keys: ArrayLike, buckets: int) -> np.ndarray:
    """Phoenix salt bucket of every key of a binary column (the key without its salt byte).

    Nulls get bucket 0.

    Returns:
        uint8 numpy array of buckets ``0 .. buckets - 1``.
    """
    arr = as_array(keys)
    valid = valid_mask(arr)
    if arr.null_count:
        arr = arr.fill_null(b"")
    offsets, data = binary_parts(arr)
    out = salt_parts(offsets, data, buckets)
    out[~valid] = 0
    return out

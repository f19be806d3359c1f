"""One gather from two arrays: a column's kept rows with some replaced, in one pass.

:func:`gather2` builds ``out[k]`` from an index per output position: ``i >= 0`` takes
``base[i]``, ``-1`` is null, ``i <= -2`` takes ``new[-2 - i]``. Patching a few values
into a column and dropping rows thereby cost one compiled pass over the column (Arrow's
``take`` and ``replace_with_mask`` on nullable columns are several times slower, and
two of them twice that). Fixed-width numbers and binary/string columns are gathered
compiled; any other type through Arrow's ``take``.
"""

from __future__ import annotations

from typing import Final

import numba
import numpy as np
import pyarrow as pa

from cellstore.core import pool
from cellstore.core.codecs import binary_from_parts, stored_parts

__all__ = [
    "NULL",
    "fixed_width",
    "gather2",
    "gather_numbers",
    "gather_put",
    "same_bytes",
    "words",
]

#: The index of a null output value.
NULL: Final = -1


def gather2(base: pa.Array, new: pa.Array | None, index: np.ndarray) -> pa.Array:
    """``out[k]``: ``base[index[k]]`` (``>= 0``), null (``-1``) or ``new[-2 - index[k]]``.

    ``new`` has ``base``'s type (None: no index is below -1).
    """
    index = np.ascontiguousarray(index, dtype=np.int64)
    other = new if new is not None else base[:0]
    t = base.type
    if fixed_width(t) and other.type == t:
        return _gather_fixed(base, other, index)
    if (pa.types.is_binary(t) or pa.types.is_string(t)) and other.type == t and len(base):
        return _gather_binary(base, other, index)
    both = pa.concat_arrays([base, other])
    at = np.where(index >= 0, index, len(base) - 2 - index)
    return both.take(pa.array(at, mask=index == NULL))


def gather_put(
    base: pa.Array,
    new: pa.Array | None,
    index: np.ndarray,
    put_at: np.ndarray,
    put_src: np.ndarray,
    gone_at: np.ndarray,
) -> pa.Array:
    """``base``'s rows ``index`` (all ``>= 0``), some put from ``new`` or nulled.

    ``out[put_at[m]]`` is ``new[put_src[m]]``, and ``out[gone_at[m]]`` null (after the
    puts; ``new`` None: nothing is put). It is what :func:`gather2` gives with those
    codes written into a copy of ``index``; for numbers and times of ``base``'s type, in
    one compiled pass without that copy.
    """
    t = base.type
    new = new if new is not None else base[:0]
    if not (fixed_width(t) and new.type == t):
        full = np.array(index, dtype=np.int64)
        full[put_at] = -2 - put_src
        full[gone_at] = NULL
        return gather2(base, new, full)
    a, b = words(base), words(new)
    a_bits, a_off, a_has = _bits(base)
    b_bits, b_off, b_has = _bits(new)
    out = pool.empty(len(index), a.dtype)
    valid = pool.empty(len(index), np.bool_)
    at, put, src, gone = _positions(index, put_at, put_src, gone_at)
    _put_kernel(a, a_bits, a_off, a_has, b, b_bits, b_off, b_has, at, put, src, gone, out, valid)
    return _of_words(t, out, valid)


def same_bytes(base: pa.Array, at: np.ndarray, raw: pa.Array, src: np.ndarray) -> bool:
    """Whether every ``base[at[k]]`` is valid and its bytes are ``raw[src[k]]``'s.

    ``base`` is a binary or string array, ``raw`` one without nulls (delta values as
    stored, or typed text). One compiled pass over the positions, no value copied: a rewrite
    of the same text (common: a load of whole records that changes one column) is told
    apart from a change without typing the delta's values.
    """
    if not len(at):
        return True
    a_off, a_data = stored_parts(base)
    b_off, b_data = stored_parts(raw)
    a_bits, a_bit0, a_has = _bits(base)
    return bool(
        _same_bytes(
            a_off,
            a_data,
            a_bits,
            a_bit0,
            a_has,
            np.ascontiguousarray(at, dtype=np.int64),
            b_off,
            b_data,
            np.ascontiguousarray(src, dtype=np.int64),
        )
    )


def gather_numbers(
    base: pa.Array,
    index: np.ndarray,
    put_at: np.ndarray,
    put_src: np.ndarray,
    gone_at: np.ndarray,
    raw: pa.Array,
    *,
    floats: bool,
) -> pa.Array | None:
    """A fixed-width column's rows ``index``, some replaced by big-endian delta values.

    ``out[k]`` is ``base[index[k]]``, except ``out[put_at[m]]``: the number whose
    big-endian bytes are ``raw[put_src[m]]`` (valid), and ``out[gone_at[m]]``: null. It
    is what :func:`gather2` gives with the values typed from ``raw`` first, in one
    compiled pass and without typing them. ``raw`` is binary without nulls; the values
    ``put_src`` names must have ``base``'s width: None when one differs, or (``floats``)
    when one is a NaN, whose payload the typed path decides. (Values ``put_src`` does
    not name are not looked at.)
    """
    width = base.type.bit_width // 8
    offsets, data = stored_parts(raw)
    if raw.null_count:
        return None
    a = words(base)
    a_bits, a_off, a_has = _bits(base)
    out = pool.empty(len(index), a.dtype)
    valid = pool.empty(len(index), np.bool_)
    at, put, src, gone = _positions(index, put_at, put_src, gone_at)
    if not _patch_words(
        a, a_bits, a_off, a_has, at, put, src, gone, offsets, data, width, floats, out, valid
    ):
        return None
    return _of_words(base.type, out, valid)


def _positions(*arrays: np.ndarray) -> list[np.ndarray]:
    """Position arrays as the compiled passes take them (contiguous int64)."""
    return [np.ascontiguousarray(a, dtype=np.int64) for a in arrays]


def _of_words(t: pa.DataType, out: np.ndarray, valid: np.ndarray) -> pa.Array:
    """A fixed-width array of type ``t``: values ``out``, ``valid`` where not null."""
    return _assemble(t, [pa.py_buffer(out)], valid)


def fixed_width(t: pa.DataType) -> bool:
    """Whether values of type ``t`` are numbers or times of 8 to 64 bits (gathered as words)."""
    return bool(
        (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t))
        and t.bit_width in (8, 16, 32, 64)
    )


def words(arr: pa.Array) -> np.ndarray:
    """A fixed-width array's values as unsigned integers of its width (zero copy)."""
    dtype = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[arr.type.bit_width]
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros(len(arr), dtype=dtype)
    return np.frombuffer(buf, dtype=dtype)[arr.offset : arr.offset + len(arr)]


def _bits(arr: pa.Array) -> tuple[np.ndarray, int, bool]:
    """A validity bitmap (bytes), its bit offset, and whether it exists."""
    buf = arr.buffers()[0]
    if buf is None or arr.null_count == 0:
        return np.zeros(1, dtype=np.uint8), 0, False
    return np.frombuffer(buf, dtype=np.uint8), arr.offset, True


def _gather_fixed(base: pa.Array, new: pa.Array, index: np.ndarray) -> pa.Array:
    a, b = words(base), words(new)
    a_bits, a_off, a_has = _bits(base)
    b_bits, b_off, b_has = _bits(new)
    out = pool.empty(len(index), a.dtype)
    if not a_has and not b_has and not (index == NULL).any():
        _fixed_dense(a, b, index, out)  # (no null in or out: no validity to carry)
        return pa.Array.from_buffers(base.type, len(index), [None, pa.py_buffer(out)])
    valid = pool.empty(len(index), np.bool_)
    _fixed_kernel(a, a_bits, a_off, a_has, b, b_bits, b_off, b_has, index, out, valid)
    return _assemble(base.type, [pa.py_buffer(out)], valid)


def _gather_binary(base: pa.Array, new: pa.Array, index: np.ndarray) -> pa.Array:
    if not len(new):
        new = pa.array([b""], base.type)  # (a buffer to point at; no index takes it)
    a_off, a_data = stored_parts(base)
    b_off, b_data = stored_parts(new)
    a_bits, a_bit0, a_has = _bits(base)
    b_bits, b_bit0, b_has = _bits(new)
    offsets = pool.empty(len(index) + 1, np.int64)
    valid = pool.empty(len(index), np.bool_)
    _binary_sizes(a_off, a_bits, a_bit0, a_has, b_off, b_bits, b_bit0, b_has, index, offsets, valid)
    data = pool.empty(int(offsets[-1]), np.uint8)
    _binary_copy(a_off, a_data, b_off, b_data, index, offsets, data)
    return binary_from_parts(offsets, data, valid, base.type)


def _assemble(t: pa.DataType, buffers: list[pa.Buffer], valid: np.ndarray) -> pa.Array:
    n = len(valid)
    bits = pool.empty((n + 7) // 8, np.uint8)
    nulls = _pack_valid(valid, bits)  # (compiled: the bitmap and its count in one pass)
    bitmap = pa.py_buffer(bits) if nulls else None
    return pa.Array.from_buffers(t, n, [bitmap, *buffers], null_count=nulls)


@numba.njit(cache=True, nogil=True)
def _pack_valid(valid: np.ndarray, bits: np.ndarray) -> int:
    """``valid`` packed into ``bits`` (Arrow's bit order); returns how many are False."""
    n = len(valid)
    flags = valid.view(np.uint8)
    full = n // 8
    for byte in range(full):  # (eight flags a byte, no branch)
        k = byte * 8
        bits[byte] = (
            flags[k]
            | (flags[k + 1] << 1)
            | (flags[k + 2] << 2)
            | (flags[k + 3] << 3)
            | (flags[k + 4] << 4)
            | (flags[k + 5] << 5)
            | (flags[k + 6] << 6)
            | (flags[k + 7] << 7)
        )
    if full < len(bits):
        last = 0
        for k in range(full * 8, n):
            last |= flags[k] << (k - full * 8)
        bits[full] = last
    ones = 0
    for k in range(n):
        ones += flags[k]
    return n - ones


@numba.njit(cache=True, nogil=True, inline="always")
def _bit(bits: np.ndarray, at: int) -> bool:
    return bool((bits[at >> 3] >> (at & 7)) & 1 == 1)


@numba.njit(cache=True, nogil=True)
def _fixed_kernel(
    a: np.ndarray,
    a_bits: np.ndarray,
    a_off: int,
    a_has: bool,
    b: np.ndarray,
    b_bits: np.ndarray,
    b_off: int,
    b_has: bool,
    index: np.ndarray,
    out: np.ndarray,
    valid: np.ndarray,
) -> None:
    for k in range(len(index)):
        i = index[k]
        if i >= 0:
            out[k] = a[i]
            valid[k] = (not a_has) or _bit(a_bits, a_off + i)
        elif i == -1:
            out[k] = 0
            valid[k] = False
        else:
            j = -2 - i
            out[k] = b[j]
            valid[k] = (not b_has) or _bit(b_bits, b_off + j)


@numba.njit(cache=True, nogil=True)
def _put_kernel(
    a: np.ndarray,
    a_bits: np.ndarray,
    a_off: int,
    a_has: bool,
    b: np.ndarray,
    b_bits: np.ndarray,
    b_off: int,
    b_has: bool,
    index: np.ndarray,
    put_at: np.ndarray,
    put_src: np.ndarray,
    gone_at: np.ndarray,
    out: np.ndarray,
    valid: np.ndarray,
) -> None:
    _take_rows(a, a_bits, a_off, a_has, index, out, valid)
    for m in range(len(put_at)):
        p = put_at[m]
        j = put_src[m]
        out[p] = b[j]
        valid[p] = (not b_has) or _bit(b_bits, b_off + j)
    _null_rows(gone_at, out, valid)


@numba.njit(cache=True, nogil=True, inline="always")
def _take_rows(
    a: np.ndarray,
    a_bits: np.ndarray,
    a_off: int,
    a_has: bool,
    index: np.ndarray,
    out: np.ndarray,
    valid: np.ndarray,
) -> None:
    for k in range(len(index)):  # (tight loops: the values, then the validity)
        out[k] = a[index[k]]
    if a_has:
        for k in range(len(index)):
            valid[k] = _bit(a_bits, a_off + index[k])
    else:
        valid[:] = True


@numba.njit(cache=True, nogil=True, inline="always")
def _null_rows(gone_at: np.ndarray, out: np.ndarray, valid: np.ndarray) -> None:
    for m in range(len(gone_at)):
        out[gone_at[m]] = 0
        valid[gone_at[m]] = False


@numba.njit(cache=True, nogil=True)
def _fixed_dense(a: np.ndarray, b: np.ndarray, index: np.ndarray, out: np.ndarray) -> None:
    for k in range(len(index)):
        i = index[k]
        out[k] = a[i] if i >= 0 else b[-2 - i]


@numba.njit(cache=True, nogil=True)
def _binary_sizes(
    a_off: np.ndarray,
    a_bits: np.ndarray,
    a_bit0: int,
    a_has: bool,
    b_off: np.ndarray,
    b_bits: np.ndarray,
    b_bit0: int,
    b_has: bool,
    index: np.ndarray,
    offsets: np.ndarray,
    valid: np.ndarray,
) -> None:
    offsets[0] = 0
    for k in range(len(index)):
        i = index[k]
        size = 0
        if i >= 0:
            ok = (not a_has) or _bit(a_bits, a_bit0 + i)
            if ok:
                size = a_off[i + 1] - a_off[i]
        elif i == -1:
            ok = False
        else:
            j = -2 - i
            ok = (not b_has) or _bit(b_bits, b_bit0 + j)
            if ok:
                size = b_off[j + 1] - b_off[j]
        valid[k] = ok
        offsets[k + 1] = offsets[k] + size


@numba.njit(cache=True, nogil=True)
def _binary_copy(
    a_off: np.ndarray,
    a_data: np.ndarray,
    b_off: np.ndarray,
    b_data: np.ndarray,
    index: np.ndarray,
    offsets: np.ndarray,
    data: np.ndarray,
) -> None:
    m = len(index)
    k = 0
    while k < m:
        i = index[k]
        if i >= 0 and offsets[k + 1] > offsets[k]:
            # a run of consecutive base values shown as they are: one block copy
            e = k + 1
            while (
                e < m
                and index[e] == index[e - 1] + 1
                and (offsets[e + 1] - offsets[e] == a_off[index[e] + 1] - a_off[index[e]])
            ):
                e += 1
            s, stop = a_off[i], a_off[index[e - 1] + 1]
            data[offsets[k] : offsets[k] + stop - s] = a_data[s:stop]
            k = e
            continue
        size = offsets[k + 1] - offsets[k]
        if size and i < -1:
            s = b_off[-2 - i]
            data[offsets[k] : offsets[k] + size] = b_data[s : s + size]
        k += 1


@numba.njit(cache=True, nogil=True)
def _same_bytes(
    a_off: np.ndarray,
    a_data: np.ndarray,
    a_bits: np.ndarray,
    a_bit0: int,
    a_has: bool,
    at: np.ndarray,
    b_off: np.ndarray,
    b_data: np.ndarray,
    src: np.ndarray,
) -> bool:
    for k in range(len(at)):
        i = at[k]
        j = src[k]
        if a_has and not _bit(a_bits, a_bit0 + i):
            return False
        s, e = a_off[i], a_off[i + 1]
        t = b_off[j]
        if b_off[j + 1] - t != e - s:
            return False
        for m in range(e - s):
            if a_data[s + m] != b_data[t + m]:
                return False
    return True


@numba.njit(cache=True, nogil=True)
def _patch_words(
    a: np.ndarray,
    a_bits: np.ndarray,
    a_off: int,
    a_has: bool,
    index: np.ndarray,
    put_at: np.ndarray,
    put_src: np.ndarray,
    gone_at: np.ndarray,
    offsets: np.ndarray,
    data: np.ndarray,
    width: int,
    floats: bool,
    out: np.ndarray,
    valid: np.ndarray,
) -> bool:
    # every delta value put of the base's width, no NaN among floats (as the typed path asks)
    top = np.uint64(1) << np.uint64(8 * width - 1)
    exp_bits = 11 if width == 8 else 8
    frac = (np.uint64(1) << np.uint64(8 * width - 1 - exp_bits)) - np.uint64(1)
    exponent = (top - np.uint64(1)) ^ frac
    for m in range(len(put_src)):
        j = put_src[m]
        s = offsets[j]
        if offsets[j + 1] - s != width:
            return False
        if floats:
            v = np.uint64(0)
            for b in range(width):
                v = (v << np.uint64(8)) | np.uint64(data[s + b])
            if (v & exponent) == exponent and (v & frac) != np.uint64(0):
                return False
    _take_rows(a, a_bits, a_off, a_has, index, out, valid)
    for m in range(len(put_at)):
        p = put_at[m]
        s = offsets[put_src[m]]
        v = np.uint64(0)
        for b in range(width):
            v = (v << np.uint64(8)) | np.uint64(data[s + b])
        out[p] = v
        valid[p] = True
    _null_rows(gone_at, out, valid)
    return True

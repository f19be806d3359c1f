"""Compiled (numba) kernels for the inherently sequential parts of the HFile format.

Each kernel is a loop where every step depends on the previous one, which numpy cannot
express without speculation: a NONE cell's offset follows from the previous cell's
lengths; a PREFIX/DIFF/FAST_DIFF key is a delta on the previous key; HBase's Murmur2 hash
runs over the bytes of one key. The kernels are small, typed by their callers (uint8
buffers, int64 offsets) and know nothing of files or errors: they return an error code
and the place, and the Python callers raise ``CorruptFileError`` with the file and block.

Compiled with ``@numba.njit(cache=True, nogil=True)``: the machine code is cached beside
this module in ``__pycache__`` (first import in a fresh environment compiles, later
processes load it), and the GIL is released so the reader's decode threads run in
parallel.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

import numba
import numpy as np
import numpy.typing as npt

__all__ = [
    "decode_cells",
    "murmur2_keys",
    "decode_cells_dictionary",
    "order_flags",
    "scatter_cells",
    "vlong_size",
    "walk_none",
]

_F = TypeVar("_F", bound=Callable[..., Any])


def _jit(fn: _F) -> _F:
    """``numba.njit(cache=True, nogil=True)``, keeping the function's signature for mypy."""
    return cast(_F, numba.njit(cache=True, nogil=True)(fn))


def _jit_inline(fn: _F) -> _F:
    """:func:`_jit` with ``inline="always"``: a step of a kernel split out for reading only.

    Numba inlines the function into its caller at the IR level, so the kernel compiles as
    if it were written in one piece (no call overhead on the per-cell path).
    """
    return cast(_F, numba.njit(cache=True, nogil=True, inline="always")(fn))


#: Argument types of the kernels' steps.
_U8 = npt.NDArray[np.uint8]
_I = np.int64

#: Error codes of the decoders (0: success).
OK: Final = 0
OVERRUN: Final = 1  # a read past the end of the input
BAD_COMMON: Final = 2  # a common-prefix length longer than the previous key
BAD_KEY: Final = 3  # a key length that does not fit its parts
BAD_TAGS: Final = 4  # a tags length over 65535
BAD_SIZE: Final = 5  # output larger than the block's unencodedDataSize
BAD_VALUE: Final = 6  # FAST_DIFF "same value" with a different value length


@_jit
def vlong_size(b: np.uint8) -> np.int64:
    """``WritableUtils.decodeVIntSize`` of a VLong's first byte."""
    v = np.int64(b)
    if v >= 128:
        v -= 256
    if v >= -112:
        return np.int64(1)
    if v < -120:
        return np.int64(-119 - v)
    return np.int64(-111 - v)


@_jit
def walk_none(
    buf: npt.NDArray[np.uint8],
    block_starts: npt.NDArray[np.int64],
    block_ends: npt.NDArray[np.int64],
    tags: bool,
    mvcc: bool,
    mvcc_one_byte: bool,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], np.int64, np.int64, np.int64]:
    """Cell starts of NONE blocks: ``u32 klen, u32 vlen, key, value [tags] [VLong]``.

    Every length is checked before the bytes it covers are read: a cell must fit its
    block, and its key must hold the row and family it states (``u16 rowLength | row |
    u8 familyLength | family | qualifier | i64 ts | u8 type``), so the column gathers that
    follow stay inside each cell.

    Returns:
        (cell starts grouped by block in the given order, cells per block, index of the
        first block with a bad cell or -1, the error code (:data:`OVERRUN` or
        :data:`BAD_KEY`), and that cell's position in the buffer).
    """
    nb = len(block_starts)
    total = np.int64(0)
    for b in range(nb):
        if block_ends[b] > block_starts[b]:
            total += block_ends[b] - block_starts[b]
    # A cell is at least 8 + 12 bytes (lengths, row length, family length, ts, type).
    starts = np.empty(total // 20 + nb, np.int64)
    counts = np.zeros(nb, np.int64)
    n = 0
    for b in range(nb):
        p = block_starts[b]
        e = block_ends[b]
        if p < 0 or e > len(buf):
            return starts[:n], counts, np.int64(b), np.int64(OVERRUN), p
        c = 0
        while p < e:
            if p + 8 > e:
                return starts[:n], counts, np.int64(b), np.int64(OVERRUN), p
            klen = (
                (np.int64(buf[p]) << 24)
                | (np.int64(buf[p + 1]) << 16)
                | (np.int64(buf[p + 2]) << 8)
                | np.int64(buf[p + 3])
            )
            vlen = (
                (np.int64(buf[p + 4]) << 24)
                | (np.int64(buf[p + 5]) << 16)
                | (np.int64(buf[p + 6]) << 8)
                | np.int64(buf[p + 7])
            )
            q = p + 8 + klen + vlen
            if q > e:
                return starts[:n], counts, np.int64(b), np.int64(OVERRUN), p
            if klen < 12:
                return starts[:n], counts, np.int64(b), np.int64(BAD_KEY), p
            rlen = (np.int64(buf[p + 8]) << 8) | np.int64(buf[p + 9])
            if 12 + rlen > klen:
                return starts[:n], counts, np.int64(b), np.int64(BAD_KEY), p
            if 12 + rlen + np.int64(buf[p + 10 + rlen]) > klen:
                return starts[:n], counts, np.int64(b), np.int64(BAD_KEY), p
            if tags:
                if q + 2 > e:
                    return starts[:n], counts, np.int64(b), np.int64(OVERRUN), p
                q += 2 + ((np.int64(buf[q]) << 8) | np.int64(buf[q + 1]))
            if mvcc:
                if q + 1 > e:
                    return starts[:n], counts, np.int64(b), np.int64(OVERRUN), p
                q += 1 if mvcc_one_byte else vlong_size(buf[q])
            if q > e or n >= len(starts):
                return starts[:n], counts, np.int64(b), np.int64(OVERRUN), p
            starts[n] = p
            n += 1
            c += 1
            p = q
        counts[b] = c
    return starts[:n], counts, np.int64(-1), np.int64(OK), np.int64(0)


@_jit
def _cint(data: npt.NDArray[np.uint8], pos: np.int64, end: np.int64) -> tuple[np.int64, np.int64]:
    """``ByteBufferUtils.readCompressedInt``: (value, next position), -1 past the end."""
    value = np.int64(0)
    shift = 0
    while True:
        if pos >= end or shift > 28:
            return np.int64(-1), pos
        b = np.int64(data[pos])
        pos += 1
        value |= (b & 0x7F) << shift
        if b & 0x80 == 0:
            return value, pos
        shift += 7


@_jit
def _put_u32(out: npt.NDArray[np.uint8], at: np.int64, v: np.int64) -> None:
    out[at] = (v >> 24) & 0xFF
    out[at + 1] = (v >> 16) & 0xFF
    out[at + 2] = (v >> 8) & 0xFF
    out[at + 3] = v & 0xFF


@_jit
def _extras(
    data: npt.NDArray[np.uint8],
    pos: np.int64,
    end: np.int64,
    out: npt.NDArray[np.uint8],
    o: np.int64,
    tags: bool,
    mvcc: bool,
) -> tuple[np.int64, np.int64, np.int64]:
    """Copy tags (cint length -> u16) and the memstore VLong: (pos, o, error)."""
    if tags:
        tl, pos = _cint(data, pos, end)
        if tl < 0:
            return pos, o, np.int64(OVERRUN)
        if tl > 0xFFFF:
            return pos, o, np.int64(BAD_TAGS)
        if pos + tl > end:
            return pos, o, np.int64(OVERRUN)
        if o + 2 + tl > len(out):
            return pos, o, np.int64(BAD_SIZE)
        out[o] = (tl >> 8) & 0xFF
        out[o + 1] = tl & 0xFF
        out[o + 2 : o + 2 + tl] = data[pos : pos + tl]
        o += 2 + tl
        pos += tl
    if mvcc:
        if pos >= end:
            return pos, o, np.int64(OVERRUN)
        size = vlong_size(data[pos])
        if pos + size > end:
            return pos, o, np.int64(OVERRUN)
        if o + size > len(out):
            return pos, o, np.int64(BAD_SIZE)
        out[o : o + size] = data[pos : pos + size]
        o += size
        pos += size
    return pos, o, np.int64(OK)


@_jit
def _decode_prefix(
    data: npt.NDArray[np.uint8], out: npt.NDArray[np.uint8], tags: bool, mvcc: bool
) -> tuple[np.int64, np.int64, np.int64]:
    """PREFIX cells to NONE layout in ``out``: (bytes written, error, input position)."""
    end = np.int64(len(data))
    pos = np.int64(0)
    o = np.int64(0)
    prev = np.int64(-1)  # start of the previous key in out
    prev_len = np.int64(0)
    while pos < end:
        at = pos
        rest, pos = _cint(data, pos, end)
        vlen, pos = _cint(data, pos, end)
        common, pos = _cint(data, pos, end)
        if rest < 0 or vlen < 0 or common < 0:
            return o, np.int64(OVERRUN), at
        if common > prev_len:
            return o, np.int64(BAD_COMMON), at
        klen = common + rest
        if pos + rest + vlen > end:
            return o, np.int64(OVERRUN), at
        if o + 8 + klen + vlen > len(out):
            return o, np.int64(BAD_SIZE), at
        _put_u32(out, o, klen)
        _put_u32(out, o + 4, vlen)
        k = o + 8
        out[k : k + common] = out[prev : prev + common]
        out[k + common : k + klen] = data[pos : pos + rest]
        pos += rest
        out[k + klen : k + klen + vlen] = data[pos : pos + vlen]
        pos += vlen
        o = k + klen + vlen
        pos, o, err = _extras(data, pos, end, out, o, tags, mvcc)
        if err != OK:
            return o, err, at
        prev, prev_len = k, klen
    return o, np.int64(OK), pos


@_jit_inline
def _diff_lengths(
    data: _U8, pos: _I, end: _I, flag: _I, fast: bool, first: bool, klen: _I, vlen: _I
) -> tuple[_I, _I, _I, _I, _I]:
    """A DIFF/FAST_DIFF cell's lengths: (klen, vlen, common, pos, error).

    The key and value lengths are new, or the previous cell's (passed in) when the flag
    says so; ``common`` is the length of the prefix shared with the previous key.
    """
    same_klen = (flag & 8) if fast else (flag & 1)
    same_vlen = (flag & 16) if fast else (flag & 2)
    if not same_klen or first:
        klen, pos = _cint(data, pos, end)
        if klen < 0:
            return klen, vlen, np.int64(0), pos, np.int64(OVERRUN)
    if not same_vlen or first:
        vlen, pos = _cint(data, pos, end)
        if vlen < 0:
            return klen, vlen, np.int64(0), pos, np.int64(OVERRUN)
    common, pos = _cint(data, pos, end)
    if common < 0:
        return klen, vlen, common, pos, np.int64(OVERRUN)
    return klen, vlen, common, pos, np.int64(OK)


@_jit_inline
def _diff_row_family(
    data: _U8,
    pos: _I,
    end: _I,
    out: _U8,
    k: _I,
    w: _I,
    klen: _I,
    prev: _I,
    prev_rlen: _I,
    fast: bool,
    fam_at: _I,
    fam_len: _I,
) -> tuple[_I, _I, _I]:
    """A new row: complete the row length and row, then the family: (pos, w, error).

    The family is the previous key's (FAST_DIFF) or the block's (DIFF, at ``fam_at``).
    """
    common = w - k
    if common < 2:
        need = 2 - common
        if pos + need > end:
            return pos, w, np.int64(OVERRUN)
        out[w : w + need] = data[pos : pos + need]
        pos += need
        w += need
    rlen = (np.int64(out[k]) << 8) | np.int64(out[k + 1])
    rest = k + 2 + rlen - w
    if rest < 0 or pos + rest > end or 2 + rlen + 10 > klen:
        return pos, w, np.int64(OVERRUN if pos + rest > end else BAD_KEY)
    out[w : w + rest] = data[pos : pos + rest]
    pos += rest
    w += rest
    if fast:
        pf = prev + 2 + prev_rlen  # family of the previous key
        flen = np.int64(out[pf]) + 1
        if (w - k) + flen + 9 > klen:
            return pos, w, np.int64(BAD_KEY)
        out[w : w + flen] = out[pf : pf + flen]
    else:
        flen = fam_len
        if (w - k) + flen + 9 > klen:
            return pos, w, np.int64(BAD_KEY)
        out[w : w + flen] = data[fam_at : fam_at + flen]
    return pos, w + flen, np.int64(OK)


@_jit_inline
def _diff_timestamp(
    data: _U8, pos: _I, end: _I, out: _U8, w: _I, flag: _I, fast: bool, first: bool, prev_ts: _I
) -> tuple[_I, _I]:
    """Write a key's 8-byte big-endian timestamp at ``w``: (pos, error).

    FAST_DIFF shares leading bytes with the previous key's timestamp (at ``prev_ts`` in
    ``out``); DIFF stores it, or its difference to the previous one, little-endian.
    """
    if fast:
        shared = flag & 7
        out[w : w + shared] = out[prev_ts : prev_ts + shared]
        rest = 8 - shared
        if pos + rest > end:
            return pos, np.int64(OVERRUN)
        out[w + shared : w + 8] = data[pos : pos + rest]
        return pos + rest, np.int64(OK)
    nbytes = ((flag >> 4) & 7) + 1
    if pos + nbytes > end:
        return pos, np.int64(OVERRUN)
    ts = np.uint64(0)
    for j in range(nbytes):
        ts |= np.uint64(data[pos + j]) << np.uint64(8 * j)
    pos += nbytes
    if flag & 0x80:
        ts = np.uint64(0) - ts
    if flag & 8:
        pts = np.uint64(0)
        if not first:
            for j in range(8):
                pts = (pts << np.uint64(8)) | np.uint64(out[prev_ts + j])
        ts = pts - ts
    for j in range(8):
        out[w + j] = np.uint8((ts >> np.uint64(56 - 8 * j)) & np.uint64(0xFF))
    return pos, np.int64(OK)


@_jit_inline
def _diff_type_value(
    data: _U8,
    pos: _I,
    end: _I,
    out: _U8,
    w: _I,
    flag: _I,
    fast: bool,
    first: bool,
    prev_type: _I,
    vlen: _I,
    prev_vat: _I,
    prev_vlen: _I,
) -> tuple[_I, _I]:
    """Write a cell's type byte at ``w`` and its value after it: (pos, error).

    The type may be the previous key's (at ``prev_type``); a FAST_DIFF value may be the
    previous cell's (at ``prev_vat``).
    """
    same_type = (flag & 32) if fast else (flag & 4)
    if same_type:
        out[w] = out[prev_type] if not first else 0
    else:
        if pos >= end:
            return pos, np.int64(OVERRUN)
        out[w] = data[pos]
        pos += 1
    w += 1
    if fast and (flag & 64) and not first:
        if vlen != prev_vlen:
            return pos, np.int64(BAD_VALUE)
        out[w : w + vlen] = out[prev_vat : prev_vat + vlen]
        return pos, np.int64(OK)
    if pos + vlen > end:
        return pos, np.int64(OVERRUN)
    out[w : w + vlen] = data[pos : pos + vlen]
    return pos + vlen, np.int64(OK)


@_jit_inline
def _diff_key_value(
    data: _U8,
    pos: _I,
    end: _I,
    out: _U8,
    k: _I,
    klen: _I,
    vlen: _I,
    common: _I,
    flag: _I,
    fast: bool,
    first: bool,
    prev: _I,
    prev_klen: _I,
    prev_vat: _I,
    prev_vlen: _I,
    fam_at: _I,
    fam_len: _I,
) -> tuple[_I, _I]:
    """Write a delta-encoded cell's key at ``k`` and its value: (pos, error).

    The key is the previous key's first ``common`` bytes, then (on a new row) the rest of
    the row and the family, the qualifier, the timestamp and the type.
    """
    limit = prev_klen - 9 if fast else prev_klen
    if common > limit:
        return pos, np.int64(BAD_COMMON)
    if common > klen - 9:
        return pos, np.int64(BAD_KEY)
    out[k : k + common] = out[prev : prev + common]
    prev_rlen = np.int64(-1)
    if not first:
        prev_rlen = (np.int64(out[prev]) << 8) | np.int64(out[prev + 1])
    w = k + common  # next key byte to write
    if first or common < prev_rlen + 2:
        pos, w, err = _diff_row_family(
            data, pos, end, out, k, w, klen, prev, prev_rlen, fast, fam_at, fam_len
        )
        if err != OK:
            return pos, err
    qual = k + klen - 9 - w
    if qual < 0 or pos + qual > end:
        return pos, np.int64(BAD_KEY if qual < 0 else OVERRUN)
    out[w : w + qual] = data[pos : pos + qual]
    pos += qual
    w += qual
    pos, err = _diff_timestamp(data, pos, end, out, w, flag, fast, first, prev + prev_klen - 9)
    if err != OK:
        return pos, err
    return _diff_type_value(
        data,
        pos,
        end,
        out,
        w + 8,
        flag,
        fast,
        first,
        prev + prev_klen - 1,
        vlen,
        prev_vat,
        prev_vlen,
    )


@_jit
def _decode_diff(
    data: npt.NDArray[np.uint8], out: npt.NDArray[np.uint8], tags: bool, mvcc: bool, fast: bool
) -> tuple[np.int64, np.int64, np.int64]:
    """DIFF (``fast=False``) or FAST_DIFF cells to NONE layout in ``out``.

    DIFF: the block starts with ``u8 familyLength, family``; flag bits 1 same key length,
    2 same value length, 4 same type, 8 timestamp is a difference, 4-6 timestamp bytes - 1,
    128 sign; the timestamp (or difference) is little-endian. FAST_DIFF: flag bits 0-2
    timestamp bytes shared with the previous key, 8 same key length, 16 same value length,
    32 same type, 64 same value; the first cell is written whole.

    Each cell: its lengths (:func:`_diff_lengths`), then its key and value
    (:func:`_diff_key_value`), then its tags and memstore timestamp (:func:`_extras`).

    Returns:
        (bytes written, error code, input position of the failing cell).
    """
    end = np.int64(len(data))
    pos = np.int64(0)
    o = np.int64(0)
    fam_at = np.int64(0)  # DIFF: the block's family (length byte + bytes) in data
    fam_len = np.int64(0)
    if not fast:
        if end == 0:
            return o, np.int64(OK), pos
        fam_len = np.int64(data[0]) + 1
        fam_at = np.int64(0)
        if fam_len > end:
            return o, np.int64(OVERRUN), pos
        pos = fam_len
    prev = np.int64(-1)  # previous key's start in out
    prev_klen = np.int64(0)
    prev_vat = np.int64(0)  # previous value's start in out
    prev_vlen = np.int64(0)
    klen = np.int64(0)
    vlen = np.int64(0)
    first = True
    while pos < end:
        at = pos
        flag = np.int64(data[pos])
        pos += 1
        klen, vlen, common, pos, err = _diff_lengths(data, pos, end, flag, fast, first, klen, vlen)
        if err != OK:
            return o, err, at
        if klen < 12 or o + 8 + klen + vlen > len(out):
            return o, np.int64(BAD_KEY if klen < 12 else BAD_SIZE), at
        _put_u32(out, o, klen)
        _put_u32(out, o + 4, vlen)
        k = o + 8
        if fast and first:
            if pos + klen + vlen > end:
                return o, np.int64(OVERRUN), at
            out[k : k + klen + vlen] = data[pos : pos + klen + vlen]
            pos += klen + vlen
        else:
            pos, err = _diff_key_value(
                data,
                pos,
                end,
                out,
                k,
                klen,
                vlen,
                common,
                flag,
                fast,
                first,
                prev,
                prev_klen,
                prev_vat,
                prev_vlen,
                fam_at,
                fam_len,
            )
            if err != OK:
                return o, err, at
        prev, prev_klen, prev_vat, prev_vlen = k, klen, k + klen, vlen
        o = k + klen + vlen
        pos, o, err = _extras(data, pos, end, out, o, tags, mvcc)
        if err != OK:
            return o, err, at
        first = False
    return o, np.int64(OK), pos


@_jit
def decode_cells(
    encoding: int, data: npt.NDArray[np.uint8], size: int, tags: bool, mvcc: bool
) -> tuple[npt.NDArray[np.uint8], np.int64, np.int64]:
    """Decode one block's PREFIX (2), DIFF (3) or FAST_DIFF (4) cells to NONE layout.

    Args:
        encoding: The encoding id.
        data: The encoded cells (after ``i16 id, i32 unencodedDataSize``).
        size: ``unencodedDataSize``: the NONE bytes expected.
        tags: Cells carry tags.
        mvcc: Cells carry a memstore VLong.

    Returns:
        (NONE-layout bytes, error code, input position of the failing cell); the output
        is shorter than ``size`` when the block decodes to fewer bytes, and output past
        ``size`` is refused (:data:`BAD_SIZE`).

    ``size`` comes from the file, so it is not allocated on trust: the first buffer holds
    ``size`` or 64 times the input plus 64 KiB, whichever is less (an honest block's
    stated size is a small multiple of its encoded bytes). A block that fills it is
    decoded again into a buffer four times larger, up to ``size``: memory follows what
    really decodes, at most four times over, and the work at most a third more.
    """
    limit = np.int64(max(size, 0))
    cap = min(limit, 64 * np.int64(len(data)) + (1 << 16))
    while True:
        out = np.empty(cap, np.uint8)
        if encoding == 2:
            n, err, at = _decode_prefix(data, out, tags, mvcc)
        else:
            n, err, at = _decode_diff(data, out, tags, mvcc, encoding == 4)
        if err != BAD_SIZE or cap >= limit:
            return out[:n], err, at
        cap = min(limit, 4 * cap)


@_jit
def murmur2_keys(
    data: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    seeds: npt.NDArray[np.uint32],
) -> npt.NDArray[np.uint32]:
    """HBase ``MurmurHash.hash`` (Murmur2, 32-bit) of each key with its seed.

    Arithmetic is in int64 masked to 32 bits (numba widens small integers).
    """
    m = np.int64(0x5BD1E995)
    mask = np.int64(0xFFFFFFFF)
    n = len(starts)
    out = np.empty(n, np.uint32)
    for i in range(n):
        p = starts[i]
        ln = lengths[i]
        h = (np.int64(seeds[i]) ^ ln) & mask
        nw = ln >> 2
        for w in range(nw):
            q = p + 4 * w
            k = (
                np.int64(data[q])
                | (np.int64(data[q + 1]) << 8)
                | (np.int64(data[q + 2]) << 16)
                | (np.int64(data[q + 3]) << 24)
            )
            k = (k * m) & mask
            k ^= k >> 24
            k = (k * m) & mask
            h = ((h * m) & mask) ^ k
        left = ln & 3
        t = p + (nw << 2)
        if left > 0:
            # Java sign-extends the tail bytes (byte -> int).
            if left >= 3:
                h ^= (np.int64(np.int8(data[t + 2])) << 16) & mask
            if left >= 2:
                h ^= (np.int64(np.int8(data[t + 1])) << 8) & mask
            h ^= np.int64(np.int8(data[t])) & mask
            h = (h * m) & mask
        h ^= h >> 13
        h = (h * m) & mask
        h ^= h >> 15
        out[i] = h
    return out


@_jit
def _put_bytes(
    out: npt.NDArray[np.uint8],
    o: np.int64,
    data: npt.NDArray[np.uint8],
    start: np.int64,
    length: np.int64,
) -> np.int64:
    for j in range(length):
        out[o + j] = data[start + j]
    return o + length


@_jit
def scatter_cells(
    row: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int64]],
    family: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int64]],
    qualifier: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int64]],
    value: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int64]],
    tags: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int64]],
    mvcc: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int64]],
    ts: npt.NDArray[np.int64],
    typ: npt.NDArray[np.uint8],
    offsets: npt.NDArray[np.int64],
    with_tags: bool,
    with_mvcc: bool,
) -> npt.NDArray[np.uint8]:
    """Lay cells out as a NONE block holds them (``NoneEncoder.write``), all in one buffer.

    Each binary field is ``(data, starts, lengths)``; ``offsets`` are the cells' start
    offsets plus the total (computed by the caller from the same lengths).
    """
    n = len(ts)
    out = np.empty(offsets[n], np.uint8)
    rd, rs, rl = row
    fd, fs, fl = family
    qd, qs, ql = qualifier
    vd, vs, vl = value
    td, tst, tl = tags
    md, ms, ml = mvcc
    for i in range(n):
        o = offsets[i]
        klen = 12 + rl[i] + fl[i] + ql[i]
        _put_u32(out, o, klen)
        _put_u32(out, o + 4, vl[i])
        out[o + 8] = (rl[i] >> 8) & 0xFF
        out[o + 9] = rl[i] & 0xFF
        o = _put_bytes(out, o + 10, rd, rs[i], rl[i])
        out[o] = fl[i]
        o = _put_bytes(out, o + 1, fd, fs[i], fl[i])
        o = _put_bytes(out, o, qd, qs[i], ql[i])
        t = ts[i]
        for j in range(8):
            out[o + j] = (t >> (56 - 8 * j)) & 0xFF
        out[o + 8] = typ[i]
        o = _put_bytes(out, o + 9, vd, vs[i], vl[i])
        if with_tags:
            out[o] = (tl[i] >> 8) & 0xFF
            out[o + 1] = tl[i] & 0xFF
            o = _put_bytes(out, o + 2, td, tst[i], tl[i])
        if with_mvcc:
            o = _put_bytes(out, o, md, ms[i], ml[i])
    return out


@_jit
def _compare(d: npt.NDArray[np.uint8], offs: npt.NDArray[np.int64], i: int) -> np.int64:
    """Unsigned lexicographic comparison of element ``i`` with element ``i - 1``: -1, 0, 1."""
    a, b = offs[i], offs[i - 1]
    la, lb = offs[i + 1] - a, a - b
    m = min(la, lb)
    for j in range(m):
        x, y = d[a + j], d[b + j]
        if x != y:
            return np.int64(-1) if x < y else np.int64(1)
    if la == lb:
        return np.int64(0)
    return np.int64(-1) if la < lb else np.int64(1)


@_jit
def order_flags(
    row: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]],
    family: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]],
    qualifier: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]],
    ts: npt.NDArray[np.int64],
    typ: npt.NDArray[np.uint8],
) -> tuple[np.int64, npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Each cell against its predecessor in HBase's order (``CellComparatorImpl``).

    Binary columns are ``(data, offsets)`` with ``n + 1`` offsets.

    Returns:
        (first cell that sorts before its predecessor or -1, same key as the predecessor,
        starts a new row).
    """
    n = len(ts)
    dup = np.zeros(n, np.bool_)
    row_changed = np.ones(n, np.bool_)
    first_bad = np.int64(-1)
    for i in range(1, n):
        c = _compare(row[0], row[1], i)
        if c == 0:
            row_changed[i] = False
            c = _compare(family[0], family[1], i)
            if c == 0:
                c = _compare(qualifier[0], qualifier[1], i)
                if c == 0:
                    # timestamp and type descending
                    if ts[i] != ts[i - 1]:
                        c = np.int64(-1) if ts[i] > ts[i - 1] else np.int64(1)
                    elif typ[i] != typ[i - 1]:
                        c = np.int64(-1) if typ[i] > typ[i - 1] else np.int64(1)
                    else:
                        dup[i] = True
        if c < 0 and first_bad < 0:
            first_bad = np.int64(i)
    return first_bad, dup, row_changed


@_jit
def _u32(buf: npt.NDArray[np.uint8], p: np.int64) -> np.int64:
    return (
        (np.int64(buf[p]) << 24)
        | (np.int64(buf[p + 1]) << 16)
        | (np.int64(buf[p + 2]) << 8)
        | np.int64(buf[p + 3])
    )


@_jit
def _same_bytes(buf: npt.NDArray[np.uint8], a: np.int64, b: np.int64, size: np.int64) -> bool:
    for k in range(size):  # noqa: SIM110 - compiled by numba, no generator
        if buf[a + k] != buf[b + k]:
            return False
    return True


@_jit
def _fnv(buf: npt.NDArray[np.uint8], pos: np.int64, size: np.int64) -> np.uint64:
    h = np.uint64(14695981039346656037)
    for j in range(size):
        h = (h ^ np.uint64(buf[pos + j])) * np.uint64(1099511628211)
    return h


@_jit
def _hash_qualifier(
    buf: npt.NDArray[np.uint8],
    qpos: np.int64,
    qlen: np.int64,
    table: npt.NDArray[np.int64],
    q_first: npt.NDArray[np.int64],
    qlens: npt.NDArray[np.int64],
    nq: np.int64,
) -> np.int64:
    """The number of the qualifier at ``qpos``; ``nq`` (and it is entered) when new."""
    mask = np.int64(len(table) - 1)
    slot = np.int64(_fnv(buf, qpos, qlen) & np.uint64(mask))
    while True:
        e = table[slot]
        if e < 0:
            table[slot] = nq
            q_first[nq] = qpos
            qlens[nq] = qlen
            return nq
        if qlens[e] == qlen and _same_bytes(buf, q_first[e], qpos, qlen):
            return np.int64(e)
        slot = (slot + 1) & mask


@_jit
def _rehash(
    buf: npt.NDArray[np.uint8],
    q_first: npt.NDArray[np.int64],
    qlens: npt.NDArray[np.int64],
    nq: np.int64,
    size: np.int64,
) -> npt.NDArray[np.int64]:
    """A hash table of ``size`` slots holding qualifiers ``0 .. nq - 1``."""
    table = np.full(size, -1, np.int64)
    mask = np.int64(size - 1)
    for e in range(nq):
        slot = np.int64(_fnv(buf, q_first[e], qlens[e]) & np.uint64(mask))
        while table[slot] >= 0:
            slot = (slot + 1) & mask
        table[slot] = e
    return table


@_jit
def decode_cells_dictionary(
    buf: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64]
) -> tuple[
    np.int64,
    npt.NDArray[np.int32],
    npt.NDArray[np.int64],
    npt.NDArray[np.int32],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int8],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
]:
    """Every field of NONE-format cells in one pass, rows and qualifiers as dictionaries.

    Cells are in key order, so a row's cells are adjacent: the row dictionary gets an entry
    where the row changes. Qualifiers repeat across rows: they are hash-encoded (FNV-1a,
    open addressing, compared byte for byte on a hit), in order of first occurrence.

    Returns:
        (index of the first cell whose row or family length overruns its key, or -1;
        row index per cell; start of each distinct row (its cell's row bytes, in
        ``buf``); qualifier index per cell; start and length of each distinct qualifier;
        timestamps;
        types; value lengths; end of each cell's value in ``buf``, where tags and the
        memstore timestamp follow). Values are gathered by the caller (an Arrow take
        copies them faster than a compiled byte loop).
    """
    n = len(starts)
    row_idx = np.empty(n, np.int32)
    row_first = np.empty(n, np.int64)
    q_idx = np.empty(n, np.int32)
    q_first = np.empty(n, np.int64)
    ts = np.empty(n, np.int64)
    typ = np.empty(n, np.int8)
    vlens = np.empty(n, np.int64)
    vend = np.empty(n, np.int64)
    qlens = np.empty(n, np.int64)
    table = np.full(64, -1, np.int64)  # slot -> distinct qualifier number
    nq = np.int64(0)
    last_q = np.int64(-1)
    nr = 0
    prev_row = np.int64(-1)
    prev_rlen = np.int64(-1)
    bad = np.int64(-1)
    for i in range(n):
        p = starts[i]
        klen = _u32(buf, p)
        vlen = _u32(buf, p + 4)
        k = p + 8
        rlen = (np.int64(buf[k]) << 8) | np.int64(buf[k + 1])
        rpos = k + 2
        fpos = rpos + rlen
        qpos = fpos + 1 + np.int64(buf[fpos]) if fpos < k + klen else k + klen
        kend = k + klen
        qlen = kend - 9 - qpos
        if qlen < 0:
            bad = np.int64(i)
            return (bad, row_idx, row_first, q_idx, q_first, qlens, ts, typ, vlens, vend)
        # row
        if prev_row < 0 or rlen != prev_rlen or not _same_bytes(buf, prev_row, rpos, rlen):
            row_first[nr] = rpos
            nr += 1
        row_idx[i] = nr - 1
        prev_row = rpos
        prev_rlen = rlen
        # qualifier: rows usually repeat the qualifiers of the previous row in the same
        # order, so the one after the previous cell's is tried before hashing.
        guess = last_q + 1 if last_q + 1 < nq else np.int64(0)
        if nq and qlens[guess] == qlen and _same_bytes(buf, q_first[guess], qpos, qlen):
            q_idx[i] = guess
            last_q = guess
        elif nq and qlens[0] == qlen and _same_bytes(buf, q_first[0], qpos, qlen):
            q_idx[i] = 0
            last_q = np.int64(0)
        else:
            last_q = _hash_qualifier(buf, qpos, qlen, table, q_first, qlens, nq)
            q_idx[i] = last_q
            if last_q == nq:
                nq += 1
                if nq * 2 > len(table):
                    table = _rehash(buf, q_first, qlens, nq, np.int64(len(table) * 4))
        # timestamp (big-endian i64) and type
        t = np.int64(0)
        for j in range(8):
            t = (t << 8) | np.int64(buf[kend - 9 + j])
        ts[i] = t
        b = np.int64(buf[kend - 1])
        typ[i] = np.int8(b - 256 if b >= 128 else b)
        vlens[i] = vlen
        vend[i] = kend + vlen
    return (bad, row_idx, row_first[:nr], q_idx, q_first[:nq], qlens[:nq], ts, typ, vlens, vend)

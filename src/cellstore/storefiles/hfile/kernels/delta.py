"""Decoding PREFIX, DIFF and FAST_DIFF cells to NONE layout (keys are deltas).

The helpers of :mod:`.base` are inlined into these kernels: numba's cache of a kernel
is keyed on its own file only, so a change there needs these caches dropped
(``__pycache__/*.nbi``, ``*.nbc``) to take effect.

Pure: no I/O.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cellstore.storefiles.hfile.kernels.base import (
    BAD_COMMON,
    BAD_KEY,
    BAD_SIZE,
    BAD_TAGS,
    BAD_VALUE,
    OK,
    OVERRUN,
    _cint,
    _copy,
    _inline,
    _jit,
    _put_u32,
    vlong_size,
)


@_inline
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
        _copy(out, o + 2, data, pos, tl)
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
        _copy(out, o, data, pos, size)
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
        _copy(out, k, out, prev, common)
        _copy(out, k + common, data, pos, rest)
        pos += rest
        _copy(out, k + klen, data, pos, vlen)
        pos += vlen
        o = k + klen + vlen
        pos, o, err = _extras(data, pos, end, out, o, tags, mvcc)
        if err != OK:
            return o, err, at
        prev, prev_len = k, klen
    return o, np.int64(OK), pos


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
        same_klen = (flag & 8) if fast else (flag & 1)
        same_vlen = (flag & 16) if fast else (flag & 2)
        if not same_klen or first:
            klen, pos = _cint(data, pos, end)
            if klen < 0:
                return o, np.int64(OVERRUN), at
        if not same_vlen or first:
            vlen, pos = _cint(data, pos, end)
            if vlen < 0:
                return o, np.int64(OVERRUN), at
        common, pos = _cint(data, pos, end)
        if common < 0:
            return o, np.int64(OVERRUN), at
        if klen < 12 or o + 8 + klen + vlen > len(out):
            return o, np.int64(BAD_KEY if klen < 12 else BAD_SIZE), at
        _put_u32(out, o, klen)
        _put_u32(out, o + 4, vlen)
        k = o + 8
        if fast and first:
            if pos + klen + vlen > end:
                return o, np.int64(OVERRUN), at
            _copy(out, k, data, pos, klen + vlen)
            pos += klen + vlen
        else:
            limit = prev_klen - 9 if fast else prev_klen
            if common > limit:
                return o, np.int64(BAD_COMMON), at
            if common > klen - 9:
                return o, np.int64(BAD_KEY), at
            _copy(out, k, out, prev, common)
            prev_rlen = np.int64(-1)
            if not first:
                prev_rlen = (np.int64(out[prev]) << 8) | np.int64(out[prev + 1])
            w = k + common  # next key byte to write
            if first or common < prev_rlen + 2:
                # New row: complete the row length and row, then the family.
                if common < 2:
                    need = 2 - common
                    if pos + need > end:
                        return o, np.int64(OVERRUN), at
                    _copy(out, w, data, pos, need)
                    pos += need
                    w += need
                rlen = (np.int64(out[k]) << 8) | np.int64(out[k + 1])
                rest = k + 2 + rlen - w
                if rest < 0 or pos + rest > end or 2 + rlen + 10 > klen:
                    return o, np.int64(OVERRUN if pos + rest > end else BAD_KEY), at
                _copy(out, w, data, pos, rest)
                pos += rest
                w += rest
                if fast:
                    pf = prev + 2 + prev_rlen  # family of the previous key
                    flen = np.int64(out[pf]) + 1
                    if (w - k) + flen + 9 > klen:
                        return o, np.int64(BAD_KEY), at
                    _copy(out, w, out, pf, flen)
                else:
                    flen = fam_len
                    if (w - k) + flen + 9 > klen:
                        return o, np.int64(BAD_KEY), at
                    _copy(out, w, data, fam_at, flen)
                w += flen
            qual = k + klen - 9 - w
            if qual < 0 or pos + qual > end:
                return o, np.int64(BAD_KEY if qual < 0 else OVERRUN), at
            _copy(out, w, data, pos, qual)
            pos += qual
            w += qual
            # Timestamp (8 bytes big-endian in the key) and type.
            if fast:
                shared = flag & 7
                _copy(out, w, out, prev + prev_klen - 9, shared)
                rest = 8 - shared
                if pos + rest > end:
                    return o, np.int64(OVERRUN), at
                _copy(out, w + shared, data, pos, rest)
                pos += rest
            else:
                nbytes = ((flag >> 4) & 7) + 1
                if pos + nbytes > end:
                    return o, np.int64(OVERRUN), at
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
                            pts = (pts << np.uint64(8)) | np.uint64(out[prev + prev_klen - 9 + j])
                    ts = pts - ts
                for j in range(8):
                    out[w + j] = np.uint8((ts >> np.uint64(56 - 8 * j)) & np.uint64(0xFF))
            w += 8
            same_type = (flag & 32) if fast else (flag & 4)
            if same_type:
                out[w] = out[prev + prev_klen - 1] if not first else 0
            else:
                if pos >= end:
                    return o, np.int64(OVERRUN), at
                out[w] = data[pos]
                pos += 1
            w += 1
            if fast and (flag & 64) and not first:
                if vlen != prev_vlen:
                    return o, np.int64(BAD_VALUE), at
                _copy(out, w, out, prev_vat, vlen)
            else:
                if pos + vlen > end:
                    return o, np.int64(OVERRUN), at
                _copy(out, w, data, pos, vlen)
                pos += vlen
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

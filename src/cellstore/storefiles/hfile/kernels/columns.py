"""PREFIX, DIFF and FAST_DIFF blocks decoded straight to cell columns, a batch at once.

:func:`decode_columns` runs the block decoders of :mod:`.delta` into one scratch block
(NONE layout, still in cache) and, in the same compiled pass, splits each cell into the
output columns: row, family, qualifier and value bytes with their offsets, timestamp,
type, tags and memstore timestamp. Compared with decoding every block to NONE layout in
a buffer of its own, concatenating them, walking the cells again and gathering each field
with numpy and Arrow, the cells are touched once, and rows and families (which repeat
from cell to cell in key order) are stored once per change.

Every cell is checked as :func:`.none.walk_none` checks NONE cells (the key holds the row
and family it states), and each block must decode to exactly the size its header states.
On any fault the kernel stops and says which block: the caller then decodes the batch
the block-by-block way, which names the fault precisely (or skips the block).

Pure: no I/O.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cellstore.storefiles.hfile.kernels.base import (
    BAD_KEY,
    BAD_SIZE,
    OK,
    _copy,
    _inline,
    _jit,
    _ts_type,
    vlong_size,
)
from cellstore.storefiles.hfile.kernels.delta import _decode_diff, _decode_prefix
from cellstore.storefiles.hfile.kernels.none import _u32

_I64 = npt.NDArray[np.int64]
_U8 = npt.NDArray[np.uint8]


@_inline
def _same(a: _U8, at: np.int64, b: _U8, bt: np.int64, n: np.int64) -> bool:
    """``a[at : at + n] == b[bt : bt + n]``, byte by byte."""
    for j in range(n):  # noqa: SIM110 - compiled by numba, no generator
        if a[at + j] != b[bt + j]:
            return False
    return True


@_inline
def _vlong(buf: _U8, p: np.int64) -> np.int64:
    """``WritableUtils.readVLong`` at ``buf[p]`` (the caller checked its size fits)."""
    v = np.int64(buf[p])
    if v >= 128:
        v -= 256
    if v >= -112:
        return v
    negative = v < -120
    n = (-120 - v) if negative else (-112 - v)
    acc = np.int64(0)
    for j in range(n):
        acc = (acc << 8) | np.int64(buf[p + 1 + j])
    return ~acc if negative else acc


@_jit
def decode_columns(
    encoding: int,
    data: _U8,
    bstarts: _I64,
    bends: _I64,
    sizes: _I64,
    caps: _I64,
    tags: bool,
    mvcc: bool,
    dictionary: bool,
) -> tuple[
    np.int64,
    np.int64,
    np.int64,
    _I64,
    tuple[_I64, _U8, npt.NDArray[np.int32]],
    tuple[_I64, _U8, npt.NDArray[np.int32]],
    tuple[_I64, _U8],
    tuple[_I64, npt.NDArray[np.int8]],
    tuple[_I64, _U8],
    tuple[_I64, _U8, _I64],
]:
    """Decode the encoded blocks ``data[bstarts[b]:bends[b]]`` into cell columns.

    Args:
        encoding: PREFIX (2), DIFF (3) or FAST_DIFF (4).
        data: The blocks' encoded cells (after ``i16 id, i32 unencodedDataSize``).
        bstarts: Start of each block's cells in ``data``.
        bends: End of each block's cells in ``data``.
        sizes: Each block's ``unencodedDataSize`` (checked to be in range by the caller).
        caps: Most NONE bytes each block may decode to here (its size, or less: a block
            that needs more is a fault, and the caller's block-by-block path retries it).
        tags: Cells carry tags.
        mvcc: Cells carry a memstore VLong.
        dictionary: Store each run of equal rows once (``row_idx`` per cell); otherwise
            every cell's row is stored.

    Returns:
        ``(error, failing block, cells, cells per block, rows, families, qualifiers,
        (ts, type), values, (tags offsets, tags bytes, seq ids))``: ``error`` is
        :data:`OK` or a fault code of the block ``failing block``. Rows and families are
        ``(offsets, bytes, index per cell)``; qualifiers and values ``(offsets, bytes)``
        (offsets have one more entry than items); tags and seq ids are empty without
        ``tags`` and ``mvcc``.
    """
    nb = len(bstarts)
    total = np.int64(0)
    widest = np.int64(0)
    for b in range(nb):
        total += caps[b]
        widest = max(widest, caps[b])
    ncap = total // 20 + nb + 1
    scratch = np.empty(widest, np.uint8)
    counts = np.zeros(nb, np.int64)
    r_off = np.zeros(ncap + 1, np.int64)
    r_bytes = np.empty(total, np.uint8)
    row_idx = np.empty(ncap, np.int32)
    f_off = np.zeros(ncap + 1, np.int64)
    f_bytes = np.empty(total, np.uint8)
    fam_idx = np.empty(ncap, np.int32)
    q_off = np.zeros(ncap + 1, np.int64)
    q_bytes = np.empty(total, np.uint8)
    ts = np.empty(ncap, np.int64)
    typ = np.empty(ncap, np.int8)
    v_off = np.zeros(ncap + 1, np.int64)
    v_bytes = np.empty(total, np.uint8)
    t_off = np.zeros(ncap + 1 if tags else 1, np.int64)
    t_bytes = np.empty(total if tags else 0, np.uint8)
    seq = np.empty(ncap if mvcc else 0, np.int64)
    n = np.int64(0)  # cells
    nr = np.int64(0)  # rows stored
    nf = np.int64(0)  # families stored
    err = np.int64(OK)
    bad = np.int64(-1)
    for b in range(nb):
        out = scratch[: caps[b]]
        src = data[bstarts[b] : bends[b]]
        if encoding == 2:
            used, err, _ = _decode_prefix(src, out, tags, mvcc)
        else:
            used, err, _ = _decode_diff(src, out, tags, mvcc, encoding == 4)
        if err == OK and used != sizes[b]:
            err = np.int64(BAD_SIZE)
        if err != OK:
            bad = np.int64(b)
            break
        p = np.int64(0)
        first = n
        while p < used:
            if n >= ncap:  # cannot happen: a cell takes 20 bytes or more
                err = np.int64(BAD_SIZE)
                break
            # Lengths were written by the decoder; the key's parts are checked here.
            klen = _u32(out, p)
            vlen = _u32(out, p + 4)
            k = p + 8
            kend = k + klen
            if klen < 12 or kend + vlen > used:
                err = np.int64(BAD_KEY)
                break
            rlen = (np.int64(out[k]) << 8) | np.int64(out[k + 1])
            fpos = k + 2 + rlen
            if fpos + 1 + 9 > kend:
                err = np.int64(BAD_KEY)
                break
            flen = np.int64(out[fpos])
            qpos = fpos + 1 + flen
            if qpos + 9 > kend:
                err = np.int64(BAD_KEY)
                break
            # rows and families: stored again only where they change (rows always
            # without ``dictionary``)
            last = r_off[nr - 1] if nr else np.int64(0)
            if (
                not dictionary
                or nr == 0
                or r_off[nr] - last != rlen
                or not _same(r_bytes, last, out, k + 2, rlen)
            ):
                _copy(r_bytes, r_off[nr], out, k + 2, rlen)
                r_off[nr + 1] = r_off[nr] + rlen
                nr += 1
            row_idx[n] = nr - 1
            known = f_off[nf] - f_off[nf - 1] if nf else np.int64(-1)  # last family's size
            if known != flen or not _same(f_bytes, f_off[nf - 1], out, fpos + 1, flen):
                _copy(f_bytes, f_off[nf], out, fpos + 1, flen)
                f_off[nf + 1] = f_off[nf] + flen
                nf += 1
            fam_idx[n] = nf - 1
            qlen = kend - 9 - qpos
            _copy(q_bytes, q_off[n], out, qpos, qlen)
            q_off[n + 1] = q_off[n] + qlen
            ts[n], typ[n] = _ts_type(out, kend)
            _copy(v_bytes, v_off[n], out, kend, vlen)
            v_off[n + 1] = v_off[n] + vlen
            p = kend + vlen
            if tags:
                tl = (np.int64(out[p]) << 8) | np.int64(out[p + 1])
                _copy(t_bytes, t_off[n], out, p + 2, tl)
                t_off[n + 1] = t_off[n] + tl
                p += 2 + tl
            if mvcc:
                seq[n] = _vlong(out, p)
                p += vlong_size(out[p])
            n += 1
        if err != OK:
            bad = np.int64(b)
            break
        counts[b] = n - first
    return (
        err,
        bad,
        n,
        counts,
        (r_off[: nr + 1], r_bytes[: r_off[nr]], row_idx[:n]),
        (f_off[: nf + 1], f_bytes[: f_off[nf]], fam_idx[:n]),
        (q_off[: n + 1], q_bytes[: q_off[n]]),
        (ts[:n], typ[:n]),
        (v_off[: n + 1], v_bytes[: v_off[n]]),
        (t_off[: n + 1] if tags else t_off, t_bytes[: t_off[n]] if tags else t_bytes, seq[:n]),
    )

"""Kernels over NONE-layout cells (``u32 klen, u32 vlen, key, value [tags] [VLong]``).

Reading: :func:`walk_none` finds each cell's start (its offset follows from the previous
cell's lengths); :func:`decode_cells_dictionary` reads every cell's key in one pass, with
``row`` and ``qualifier`` as dictionary arrays. Writing: :func:`scatter_cells` lays cells
out, :func:`order_flags` checks their order, :func:`murmur2_keys` hashes Bloom keys
(HBase's Murmur2).

The helpers of :mod:`.base` are inlined into these kernels (see :mod:`.delta` on
numba's cache).

Pure: no I/O.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cellstore.storefiles.hfile.kernels.base import (
    BAD_KEY,
    OK,
    OVERRUN,
    _copy,
    _inline,
    _jit,
    _put_u32,
    _ts_type,
    vlong_size,
)


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


@_inline
def _u32(buf: npt.NDArray[np.uint8], p: np.int64) -> np.int64:
    return (
        (np.int64(buf[p]) << 24)
        | (np.int64(buf[p + 1]) << 16)
        | (np.int64(buf[p + 2]) << 8)
        | np.int64(buf[p + 3])
    )


@_inline
def _same_bytes(buf: npt.NDArray[np.uint8], a: np.int64, b: np.int64, size: np.int64) -> bool:
    for k in range(size):  # noqa: SIM110 - compiled by numba, no generator
        if buf[a + k] != buf[b + k]:
            return False
    return True


@_inline
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
        ts[i], typ[i] = _ts_type(buf, kend)
        vlens[i] = vlen
        vend[i] = kend + vlen
    return (bad, row_idx, row_first[:nr], q_idx, q_first[:nq], qlens[:nq], ts, typ, vlens, vend)


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
    out: npt.NDArray[np.uint8],
    lo: int,
    hi: int,
) -> None:
    """Lay cells ``[lo, hi)`` out as a NONE block holds them (``NoneEncoder.write``) in ``out``.

    Each binary field is ``(data, starts, lengths)``; ``offsets`` are the cells' start
    offsets plus the total (computed by the caller from the same lengths), and ``out``
    holds ``offsets[-1]`` bytes. Cells of disjoint ranges go to disjoint bytes, so ranges
    can be laid out on several threads at once.
    """
    rd, rs, rl = row
    fd, fs, fl = family
    qd, qs, ql = qualifier
    vd, vs, vl = value
    td, tst, tl = tags
    md, ms, ml = mvcc
    for i in range(lo, hi):
        o = offsets[i]
        klen = 12 + rl[i] + fl[i] + ql[i]
        _put_u32(out, o, klen)
        _put_u32(out, o + 4, vl[i])
        out[o + 8] = (rl[i] >> 8) & 0xFF
        out[o + 9] = rl[i] & 0xFF
        _copy(out, o + 10, rd, rs[i], rl[i])
        o += 10 + rl[i]
        out[o] = fl[i]
        _copy(out, o + 1, fd, fs[i], fl[i])
        o += 1 + fl[i]
        _copy(out, o, qd, qs[i], ql[i])
        o += ql[i]
        t = ts[i]
        for j in range(8):
            out[o + j] = (t >> (56 - 8 * j)) & 0xFF
        out[o + 8] = typ[i]
        _copy(out, o + 9, vd, vs[i], vl[i])
        o += 9 + vl[i]
        if with_tags:
            out[o] = (tl[i] >> 8) & 0xFF
            out[o + 1] = tl[i] & 0xFF
            _copy(out, o + 2, td, tst[i], tl[i])
            o += 2 + tl[i]
        if with_mvcc:
            _copy(out, o, md, ms[i], ml[i])
            o += ml[i]


@_inline
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

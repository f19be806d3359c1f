"""An independent, slow, test-only HFile v3 parser: the oracle for the writer's tests.

Written from shared/hbase-hfile-format.md (not from the writer's code): trailer, block walk
with checksum verification, codecs, root/non-root indexes, FileInfo, NONE cells and the
PREFIX / DIFF / FAST_DIFF / ROW_INDEX_V1 decoders (HBase's ``uncompressSingleKeyValue``
logic, reconstructing each key from the previous one).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

import crc32c


def pb_varint(b: bytes, i: int) -> tuple[int, int]:
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 128:
            return r, i


def hadoop_vint(b: bytes, i: int) -> tuple[int, int]:
    f = b[i] - 256 if b[i] > 127 else b[i]
    if f >= -112:
        return f, i + 1
    n = (-112 - f) if f >= -120 else (-120 - f)
    v = int.from_bytes(b[i + 1 : i + 1 + n], "big")
    return (~v if f < -120 else v), i + 1 + n


def cint(b: bytes, i: int) -> tuple[int, int]:
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 128:
            return r, i


def decompress(codec: int, data: bytes, raw_len: int) -> bytes:
    import cramjam

    if codec == 2:
        return data
    if codec == 1:
        return zlib.decompress(data, 31)
    if codec == 6:
        return bytes(cramjam.zstd.decompress(data))
    out = b""
    i = 0
    while i < len(data):
        total = struct.unpack_from(">I", data, i)[0]
        i += 4
        got = b""
        while len(got) < total:
            clen = struct.unpack_from(">I", data, i)[0]
            chunk = data[i + 4 : i + 4 + clen]
            i += 4 + clen
            if codec == 3:
                got += bytes(cramjam.snappy.decompress_raw(chunk))
            else:
                cap = min(total - len(got), 256 * 1024)
                got += bytes(cramjam.lz4.decompress_block(chunk, output_len=cap))
        out += got
    assert len(out) == raw_len
    return out


@dataclass
class Block:
    offset: int
    magic: bytes
    on_disk_size: int
    prev_offset: int
    payload: bytes


@dataclass
class HFile:
    trailer: dict[int, object]
    blocks: list[Block]
    file_info: dict[bytes, bytes]
    root: list[tuple[int, int, bytes]]
    data_index: list[tuple[int, int, bytes]]
    cells: list[tuple[bytes, bytes, bytes, int, int, bytes, bytes, int]] = field(
        default_factory=list
    )


def parse_trailer(d: bytes) -> dict[int, object]:
    t = d[-4096:]
    assert t[:8] == b'TRABLK"$'
    assert t[-4:] == b"\x03\x00\x00\x03"
    n, i = pb_varint(t, 8)
    pb = t[i : i + n]
    assert not any(t[i + n : -4])
    out: dict[int, object] = {}
    j = 0
    while j < len(pb):
        k, j = pb_varint(pb, j)
        if k & 7 == 0:
            v, j = pb_varint(pb, j)
            out[k >> 3] = v
        else:
            ln, j = pb_varint(pb, j)
            out[k >> 3] = pb[j : j + ln]
            j += ln
    return out


def walk_blocks(d: bytes, codec: int) -> list[Block]:
    blocks = []
    off = 0
    end = len(d) - 4096
    while off < end:
        magic = d[off : off + 8]
        odsz, usz, prev = struct.unpack_from(">iiq", d, off + 8)
        ctype = d[off + 24]
        bpc, oddh = struct.unpack_from(">ii", d, off + 25)
        assert ctype == 2 and bpc == 16384
        body = d[off : off + oddh]
        sums = d[off + oddh : off + 33 + odsz]
        want = [crc32c.crc32c(body[k : k + bpc]) for k in range(0, len(body), bpc)]
        assert struct.unpack(f">{len(want)}I", sums) == tuple(want), f"checksum at {off}"
        payload = decompress(codec, d[off + 33 : off + oddh], usz)
        assert len(payload) == usz
        blocks.append(Block(off, magic, 33 + odsz, prev, payload))
        off += 33 + odsz
    assert off == end
    return blocks


def root_entries(p: bytes, n: int) -> tuple[list[tuple[int, int, bytes]], int]:
    out = []
    i = 0
    for _ in range(n):
        o, s = struct.unpack_from(">qi", p, i)
        kl, i = hadoop_vint(p, i + 12)
        out.append((o, s, p[i : i + kl]))
        i += kl
    return out, i


def non_root_entries(p: bytes) -> list[tuple[int, int, bytes]]:
    n = struct.unpack_from(">i", p, 0)[0]
    sec = struct.unpack_from(f">{n + 1}i", p, 4)
    base = 4 + 4 * (n + 1)
    out = []
    for k in range(n):
        a, b = base + sec[k], base + sec[k + 1]
        o, s = struct.unpack_from(">qi", p, a)
        out.append((o, s, p[a + 12 : b]))
    return out


def split_key(key: bytes) -> tuple[bytes, bytes, bytes, int, int]:
    rl = struct.unpack_from(">H", key, 0)[0]
    row = key[2 : 2 + rl]
    fl = key[2 + rl]
    fam = key[3 + rl : 3 + rl + fl]
    qual = key[3 + rl + fl : -9]
    ts = struct.unpack_from(">q", key, len(key) - 9)[0]
    return row, fam, qual, ts, key[-1]


def parse(d: bytes) -> HFile:
    tr = parse_trailer(d)
    codec = int(tr[12])  # type: ignore[call-overload]
    blocks = walk_blocks(d, codec)
    by_off = {b.offset: b for b in blocks}
    lo = by_off[int(tr[2])]  # type: ignore[call-overload]
    assert lo.magic == b"IDXROOT2"
    root, used = root_entries(lo.payload, int(tr[5]))  # type: ignore[call-overload]
    levels = int(tr[8])  # type: ignore[call-overload]
    assert len(lo.payload) == used + (16 if levels > 1 else 0)
    entries = root
    for _ in range(levels - 1):
        nxt = []
        for o, s, _k in entries:
            blk = by_off[o]
            assert blk.on_disk_size == s and blk.magic in (b"IDXINTE2", b"IDXLEAF2")
            nxt.extend(non_root_entries(blk.payload))
        entries = nxt
    fi_block = by_off[int(tr[1])]  # type: ignore[call-overload]
    assert fi_block.magic == b"FILEINF2" and fi_block.payload[:4] == b"PBUF"
    n, i = pb_varint(fi_block.payload, 4)
    pb = fi_block.payload[i : i + n]
    info: dict[bytes, bytes] = {}
    j = 0
    keys = []
    while j < len(pb):
        _, j = pb_varint(pb, j)
        ln, j = pb_varint(pb, j)
        e = pb[j : j + ln]
        j += ln
        a, q = pb_varint(e, 1)
        k = e[q : q + a]
        a2, q2 = pb_varint(e, q + a + 1)
        info[k] = e[q2 : q2 + a2]
        keys.append(k)
    assert keys == sorted(keys)
    hf = HFile(tr, blocks, info, root, entries)
    tags = b"hfile.MAX_TAGS_LEN" in info
    mvcc = info.get(b"KEY_VALUE_VERSION") == b"\x00\x00\x00\x01"
    enc = info.get(b"DATA_BLOCK_ENCODING", b"NONE")
    for o, s, _k in entries:
        blk = by_off[o]
        assert blk.on_disk_size == s
        hf.cells.extend(decode_block(blk, enc, tags, mvcc))
    return hf


def _extras(p: bytes, i: int, tags: bool, mvcc: bool, encoded: bool) -> tuple[bytes, int, int]:
    t = b""
    if tags:
        if encoded:
            tl, i = cint(p, i)
        else:
            tl = struct.unpack_from(">H", p, i)[0]
            i += 2
        t = p[i : i + tl]
        i += tl
    m = 0
    if mvcc:
        m, i = hadoop_vint(p, i)
    return t, m, i


def _none_cells(p: bytes, tags: bool, mvcc: bool) -> list[tuple[bytes, bytes, bytes, int]]:
    out = []
    i = 0
    while i < len(p):
        kl, vl = struct.unpack_from(">ii", p, i)
        key = p[i + 8 : i + 8 + kl]
        val = p[i + 8 + kl : i + 8 + kl + vl]
        t, m, i = _extras(p, i + 8 + kl + vl, tags, mvcc, False)
        out.append((key, val, t, m))
    return out


def decode_block(blk: Block, enc: bytes, tags: bool, mvcc: bool) -> list:  # type: ignore[type-arg]
    if enc == b"NONE":
        assert blk.magic == b"DATABLK*"
        raw = _none_cells(blk.payload, tags, mvcc)
    else:
        assert blk.magic == b"DATABLKE"
        p = blk.payload
        eid = struct.unpack_from(">h", p, 0)[0]
        if enc == b"ROW_INDEX_V1":
            assert eid == 7
            size = struct.unpack_from(">i", p, len(p) - 4)[0]
            raw = _none_cells(p[2 : 2 + size], tags, mvcc)
            nrows = struct.unpack_from(">i", p, 2 + size)[0]
            offs = struct.unpack_from(f">{nrows}i", p, 6 + size)
            assert 2 + size + 4 + 4 * nrows + 4 == len(p)
            starts, pos, prev = [], 0, None
            for key, val, t, _m in raw:
                row = split_key(key)[0]
                if row != prev:
                    starts.append(pos)
                prev = row
                pos += 8 + len(key) + len(val) + (2 + len(t) if tags else 0) + (1 if mvcc else 0)
            if not mvcc or all(r[3] < 128 for r in raw):
                assert list(offs) == starts
        else:
            assert eid == {b"PREFIX": 2, b"DIFF": 3, b"FAST_DIFF": 4}[enc]
            unenc = struct.unpack_from(">i", p, 2)[0]
            raw = _delta_cells(p[6:], enc, tags, mvcc)
            assert unenc == sum(
                8 + len(k) + len(v) + (2 + len(t) if tags else 0) + _vsize(m) * mvcc
                for k, v, t, m in raw
            )
    out = []
    for key, val, t, m in raw:
        row, fam, qual, ts, typ = split_key(key)
        out.append((row, fam, qual, ts, typ, val, t, m))
    return out


def _vsize(v: int) -> int:
    if -112 <= v <= 127:
        return 1
    if v < 0:
        v = ~v
    return 1 + (v.bit_length() + 7) // 8


def _delta_cells(p: bytes, enc: bytes, tags: bool, mvcc: bool) -> list:  # type: ignore[type-arg]
    out = []
    i = 0
    prev_key = b""
    prev_val = b""
    fam_ws = b""
    first = True
    while i < len(p):
        if enc == b"PREFIX":
            kl, i = cint(p, i)
            vl, i = cint(p, i)
            common, i = cint(p, i)
            key = prev_key[:common] + p[i : i + kl]
            i += kl
            val = p[i : i + vl]
            i += vl
        else:
            if enc == b"DIFF" and first:
                fl = p[i]
                fam_ws = p[i : i + 1 + fl]
                i += 1 + fl
            flag = p[i]
            i += 1
            same_k = flag & (1 if enc == b"DIFF" else 8)
            same_v = flag & (2 if enc == b"DIFF" else 16)
            same_t = flag & (4 if enc == b"DIFF" else 32)
            kl = len(prev_key)
            vl = len(prev_val)
            if not same_k:
                kl, i = cint(p, i)
            if not same_v:
                vl, i = cint(p, i)
            common, i = cint(p, i)
            if enc == b"FAST_DIFF" and first:
                key = p[i : i + kl]
                i += kl
                val = p[i : i + vl]
                i += vl
                fam_ws = key[2 + struct.unpack_from(">H", key, 0)[0] :][
                    : 1 + key[2 + struct.unpack_from(">H", key, 0)[0]]
                ]
            else:
                prow_len = struct.unpack_from(">H", prev_key, 0)[0] if prev_key else -1
                if first or common < 2 + prow_len or common < 2:
                    # row differs: rest of u16 rowLen + row, then the family, then qualifier
                    head = prev_key[:common] + p[i : i + max(0, 2 - common)]
                    rl = struct.unpack_from(">H", head, 0)[0]
                    take = 2 + rl - common
                    rowpart = prev_key[:common] + p[i : i + take]
                    i += take
                    qlen = kl - len(rowpart) - len(fam_ws) - 9
                    key_noted = rowpart + fam_ws + p[i : i + qlen]
                    i += qlen
                else:
                    qlen = kl - common - 9
                    key_noted = prev_key[:common] + p[i : i + qlen]
                    i += qlen
                if enc == b"DIFF":
                    nb = ((flag >> 4) & 7) + 1
                    v = int.from_bytes(p[i : i + nb], "little")
                    i += nb
                    if flag & 0x80:
                        v = -v
                    if flag & 8:
                        v = struct.unpack_from(">q", prev_key, len(prev_key) - 9)[0] - v
                    tsb = struct.pack(">q", ((v + 2**63) % 2**64) - 2**63)
                else:
                    tc = flag & 7
                    tsb = prev_key[-9:-1][:tc] + p[i : i + 8 - tc]
                    i += 8 - tc
                if same_t:
                    typ = prev_key[-1:]
                else:
                    typ = p[i : i + 1]
                    i += 1
                key = key_noted + tsb + typ
                if enc == b"FAST_DIFF" and flag & 64:
                    val = prev_val
                else:
                    val = p[i : i + vl]
                    i += vl
        t, m, i = _extras(p, i, tags, mvcc, True)
        out.append((key, val, t, m))
        prev_key, prev_val, first = key, val, False
    return out


def murmur(data: bytes, seed: int) -> int:
    m = 0x5BD1E995
    h = (seed ^ len(data)) & 0xFFFFFFFF
    n4 = len(data) >> 2
    for w in range(n4):
        k = int.from_bytes(data[4 * w : 4 * w + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    rest = data[4 * n4 :]
    if rest:
        for j in range(len(rest) - 1, -1, -1):
            b = rest[j] - 256 if rest[j] > 127 else rest[j]
            h ^= (b << (8 * j)) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def bloom_might_contain(
    hf: HFile, key: bytes, index_key: bytes | None = None, meta_magic: bytes = b"BLMFMET2"
) -> bool:
    meta = next(b for b in hf.blocks if b.magic == meta_magic).payload
    _v, _total, hc, ht, _kc, _mk, nch = struct.unpack_from(">iqiiqqi", meta, 0)
    assert ht == 1
    cl, i = hadoop_vint(meta, 40)
    chunks, _ = root_entries(meta[i + cl :], nch)
    # choose chunk: last whose first key <= key (rows / ROWCOL keys compare as bytes here)
    probe = key if index_key is None else index_key
    idx = 0
    for c, (_o, _s, fk) in enumerate(chunks):
        if fk <= probe:
            idx = c
    by_off = {b.offset: b for b in hf.blocks}
    bits = by_off[chunks[idx][0]].payload
    nbits = len(bits) * 8
    h1 = murmur(key, 0)
    h2 = murmur(key, h1)
    s1 = h1 - 2**32 if h1 >= 2**31 else h1
    s2 = h2 - 2**32 if h2 >= 2**31 else h2
    for k in range(hc):
        comp = ((s1 + k * s2 + 2**31) % 2**32) - 2**31
        pos = abs(int(comp - nbits * int(comp / nbits)))
        if not bits[pos >> 3] & (1 << (pos & 7)):
            return False
    return True

"""Byte-level tests of the HFile building blocks, from HBase's encoder and writer rules.

No real HBase file uses a data block encoding, LZ4/ZSTD, CRC32/NULL checksums or
Murmur3/Jenkins blooms, so the blocks here are built by hand from the rules of the Java
classes named in each test.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pyarrow as pa
import pytest

from cellstore.errors import CorruptFileError, UnsupportedFormatError
from cellstore.storefiles.hfile.blocks import decode_block
from cellstore.storefiles.hfile.bloom import (
    bloom_key,
    chunk_contains,
    jenkins_hash,
    murmur2_hash,
    murmur3_hash,
)
from cellstore.storefiles.hfile.cells import CellFlags, cells_to_table, walk_cells
from cellstore.storefiles.hfile.codecs import decompress
from cellstore.storefiles.hfile.encodings import decode_encoded_block
from cellstore.storefiles.hfile.index import block_range_for_rows, parse_non_root_index
from cellstore.storefiles.hfile.kernels import vlong_size
from cellstore.storefiles.hfile.keys import compare_keys, first_on_row, parse_key, printable_bytes
from cellstore.storefiles.hfile.trailer import parse_trailer
from cellstore.storefiles.hfile.varint import read_cint, read_vlong, vlongs_at

# ---------------------------------------------------------------------------- varints


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b"\x00", 0),
        (b"\x7f", 127),
        (b"\x8f\x80", 128),  # WritableUtils.writeVLong(128)
        (b"\x8e\x01\x00", 256),
        (b"\xff", -1),
        (b"\x90", -112),
        (b"\x87\x70", -113),  # negative: one's complement follows
        (b"\x88" + (2**63 - 1).to_bytes(8, "big"), 2**63 - 1),
    ],
)
def test_hadoop_vlong(data: bytes, value: int) -> None:
    assert read_vlong(data, 0) == (value, len(data))
    buf = np.frombuffer(b"\x00" + data, dtype=np.uint8)
    assert vlong_size(buf[1]) == len(data)
    assert vlongs_at(buf, np.array([1])).tolist() == [value]


def test_compressed_int_is_little_endian_7_bit_groups() -> None:
    # ByteBufferUtils.putCompressedInt(300): 300 = 0b10_0101100 -> ac 02
    assert read_cint(b"\xac\x02", 0) == (300, 2)
    assert read_cint(b"\x05", 0) == (5, 1)


# ---------------------------------------------------------------------------- cells


def kv_key(row: bytes, qual: bytes, ts: int, kind: int, fam: bytes = b"cf") -> bytes:
    """KeyValue key bytes (KeyValue.java layout)."""
    return (
        struct.pack(">H", len(row))
        + row
        + bytes([len(fam)])
        + fam
        + qual
        + struct.pack(">qB", ts, kind)
    )


def vlong(v: int) -> bytes:
    """WritableUtils.writeVLong for the small non-negative values used here."""
    if -112 <= v <= 127:
        return bytes([v & 0xFF])
    n = (v.bit_length() + 7) // 8
    return bytes([(-112 - n) & 0xFF]) + v.to_bytes(n, "big")


# Three cells: two versions-of-a-row-ish cells sharing a value, then a delete marker.
CELLS = [
    (b"row1", b"a", 1000, 4, b"v1", b"\x00\x03\x01xy", 5),
    (b"row1", b"ab", 999, 4, b"v1", b"", 200),
    (b"row2", b"a", 1000, 12, b"", b"", 0),
]
FLAGS = CellFlags(tags=True, mvcc=True)


def none_cells() -> bytes:
    out = b""
    for row, q, ts, kind, value, tags, seq in CELLS:
        key = kv_key(row, q, ts, kind)
        out += struct.pack(">ii", len(key), len(value)) + key + value
        out += struct.pack(">H", len(tags)) + tags + vlong(seq)
    return out


def test_none_cells_vectorized_walk_and_gather() -> None:
    block = none_cells()
    buf = np.frombuffer(block * 3, dtype=np.uint8)  # three identical blocks
    n = len(block)
    layout = walk_cells(buf, np.array([0, n, 2 * n]), np.array([n, 2 * n, 3 * n]), flags=FLAGS)
    assert layout.counts.tolist() == [3, 3, 3]
    assert layout.starts.tolist() == [0, 37, 71, n, n + 37, n + 71, 2 * n, 2 * n + 37, 2 * n + 71]
    table = cells_to_table(buf, layout.starts[:3], flags=FLAGS, with_seq_id=True, with_tags=True)
    assert table.to_pylist() == [
        {
            "row": r,
            "family": "cf",
            "qualifier": q,
            "ts": ts,
            "type": k,
            "value": v,
            "seq_id": s,
            "tags": t,
        }
        for r, q, ts, k, v, t, s in CELLS
    ]


def test_none_cells_overrun_is_corrupt() -> None:
    block = none_cells()[:-3]
    buf = np.frombuffer(block, dtype=np.uint8)
    with pytest.raises(CorruptFileError, match="overruns the data block at offset 4096"):
        walk_cells(
            buf, np.array([0]), np.array([len(block)]), flags=FLAGS, block_offsets=np.array([4096])
        )


def test_one_byte_memstore_ts_when_max_is_zero() -> None:
    # HFileReaderImpl.readMvccVersion: MAX_MEMSTORE_TS_KEY == 0 -> 1 byte, not decoded.
    key = kv_key(b"r", b"q", 1, 4)
    cell = struct.pack(">ii", len(key), 1) + key + b"v" + b"\x00"
    buf = np.frombuffer(cell * 2, dtype=np.uint8)
    flags = CellFlags(mvcc=True, mvcc_one_byte=True)
    layout = walk_cells(buf, np.array([0]), np.array([len(buf)]), flags=flags)
    assert layout.starts.tolist() == [0, len(cell)]


# ---------------------------------------------------------------------------- encodings


def encoded(enc_id: int, body: bytes, unencoded: int | None = None) -> bytes:
    size = len(none_cells()) if unencoded is None else unencoded
    return struct.pack(">hi", enc_id, size) + body


def extras(i: int) -> bytes:
    """BufferedDataBlockEncoder.afterEncodingKeyValue: cint tags length, tags, VLong."""
    _, _, _, _, _, tags, seq = CELLS[i]
    return bytes([len(tags)]) + tags + vlong(seq)


K1, K2, K3 = (kv_key(r, q, ts, k) for r, q, ts, k, *_ in CELLS)


def test_prefix_block() -> None:
    # PrefixKeyDeltaEncoder.internalEncode: cint(klen - common) cint(vlen) cint(common),
    # key minus the common prefix (findCommonPrefixInFlatKey with ts and type), value.
    body = bytes([19, 2, 0]) + K1 + b"v1" + extras(0)
    body += bytes([10, 2, 10]) + K2[10:] + b"v1" + extras(1)  # common: row, family, "a"
    body += bytes([14, 0, 5]) + K3[5:] + extras(2)  # common: row length + "row"
    assert decode_encoded_block(encoded(2, body), flags=FLAGS, where="t") == none_cells()


def test_diff_block() -> None:
    # DiffKeyDeltaEncoder.compressSingleKeyValue. The block starts with the family;
    # flag bits: 1 same klen, 2 same vlen, 4 same type, 8 ts is a diff, 4-6 ts bytes - 1,
    # 128 sign; timestamps are ByteBufferUtils.putLong little-endian.
    body = b"\x02cf"
    body += bytes([0x10, 19, 2, 0]) + b"\x00\x04row1" + b"a" + b"\xe8\x03" + b"\x04" + b"v1"
    body += extras(0)
    # same vlen + same type + diff ts (1000 - 999 = 1 in one byte), qualifier suffix "b"
    body += bytes([0x0E, 20, 10]) + b"b" + b"\x01" + b"v1" + extras(1)
    # ts diff 999 - 1000 = -1: sign bit; row differs after "row"; new type DeleteColumn
    body += bytes([0x88, 19, 0, 5]) + b"2" + b"a" + b"\x01" + b"\x0c" + extras(2)
    assert decode_encoded_block(encoded(3, body), flags=FLAGS, where="t") == none_cells()


def test_fast_diff_block() -> None:
    # FastDiffDeltaEncoder.compressSingleKeyValue: flag bits 0-2 shared leading ts bytes,
    # 8 same klen, 16 same vlen, 32 same type, 64 same value.
    body = bytes([0, 19, 2, 0]) + K1 + b"v1" + extras(0)
    # same vlen, type and value; 7 leading ts bytes shared; klen 20; common 10 -> "b"
    body += bytes([0x77, 20, 10]) + b"b" + b"\xe7" + extras(1)
    # new klen, vlen, type; row differs after "row"; whole qualifier; 7 ts bytes shared
    body += bytes([0x07, 19, 0, 5]) + b"2" + b"a" + b"\xe8" + b"\x0c" + extras(2)
    assert decode_encoded_block(encoded(4, body), flags=FLAGS, where="t") == none_cells()


def test_row_index_v1_block() -> None:
    # RowIndexEncoderV1.write/flush: plain cells, i32 numRows, i32 rowOffsets, i32 size.
    cells = none_cells()
    body = cells + struct.pack(">iiii", 2, 0, 71, len(cells))
    payload = struct.pack(">h", 7) + body
    assert decode_encoded_block(payload, flags=FLAGS, where="t") == cells


def test_encoded_block_errors() -> None:
    with pytest.raises(UnsupportedFormatError, match="id 6"):
        decode_encoded_block(struct.pack(">hi", 6, 0), flags=FLAGS, where="t")
    body = bytes([19, 2, 0]) + K1 + b"v1" + extras(0)
    with pytest.raises(CorruptFileError, match="header says 999"):
        decode_encoded_block(encoded(2, body, 999), flags=FLAGS, where="t")
    with pytest.raises(CorruptFileError, match="overruns"):
        decode_encoded_block(encoded(2, body[:-5]), flags=FLAGS, where="t")


# ---------------------------------------------------------------------------- codecs


def hadoop_frame(raw: bytes, compress: object, pieces: int = 2) -> bytes:
    """Hadoop BlockCompressorStream: [u32 raw_len] ([u32 comp_len][chunk])+."""
    assert callable(compress)
    step = -(-len(raw) // pieces)
    out = struct.pack(">I", len(raw))
    for i in range(0, len(raw), step):
        chunk = bytes(compress(raw[i : i + step]))
        out += struct.pack(">I", len(chunk)) + chunk
    return out


RAW = b"".join(b"hello hfile %d " % i for i in range(2000))


def test_codecs_with_hadoop_block_framing() -> None:
    import cramjam

    snappy = hadoop_frame(RAW, cramjam.snappy.compress_raw)
    lz4 = hadoop_frame(RAW, lambda d: cramjam.lz4.compress_block(d, store_size=False), pieces=3)
    zstd_framed = hadoop_frame(RAW, cramjam.zstd.compress)
    zstd_stream = bytes(cramjam.zstd.compress(RAW))
    gz = zlib.compressobj(6, zlib.DEFLATED, 31)
    gzip_member = gz.compress(RAW) + gz.flush()
    for codec, data in [
        ("SNAPPY", snappy),
        ("LZ4", lz4),
        ("ZSTD", zstd_framed),
        ("ZSTD", zstd_stream),
        ("GZ", gzip_member),
        ("NONE", RAW),
    ]:
        assert decompress(codec, data, size=len(RAW), where="t") == RAW, codec
    with pytest.raises(CorruptFileError, match="does not decompress"):
        decompress("SNAPPY", snappy[:-10], size=len(RAW), where="t")
    with pytest.raises(CorruptFileError, match="header says"):
        decompress("GZ", gzip_member, size=len(RAW) + 1, where="t")
    with pytest.raises(UnsupportedFormatError, match="LZO"):
        decompress("LZO", b"x", size=1, where="t")


# ---------------------------------------------------------------------------- blocks


def block_bytes(payload: bytes, *, checksum: int, per_chunk: int = 16) -> bytes:
    """HFileBlock.Writer.putHeader + ChecksumUtil.generateChecksums (NONE codec)."""
    size = 33 + len(payload)
    chunks = -(-size // per_chunk) if checksum else 0
    header = struct.pack(
        ">8siiqbii",
        b"DATABLK*",
        len(payload) + 4 * chunks,
        len(payload),
        -1,
        checksum,
        per_chunk,
        size,
    )
    body = header + payload
    sums = b""
    for i in range(chunks):
        piece = body[i * per_chunk : (i + 1) * per_chunk]
        value = zlib.crc32(piece) if checksum == 1 else _crc32c(piece)
        sums += struct.pack(">I", value & 0xFFFFFFFF)
    return body + sums


def _crc32c(data: bytes) -> int:
    import crc32c

    return int(crc32c.crc32c(data))


@pytest.mark.parametrize("checksum", [0, 1, 2], ids=["NULL", "CRC32", "CRC32C"])
def test_block_checksums(checksum: int) -> None:
    payload = none_cells()
    data = block_bytes(payload, checksum=checksum)
    block = decode_block(data, 0, offset=0, header_size=33, codec="NONE", where="f")
    assert block.payload == payload
    assert block.header.on_disk_size == len(data)
    damaged = bytearray(data)
    damaged[40] ^= 0xFF
    if checksum == 0:
        decode_block(bytes(damaged), 0, offset=0, header_size=33, codec="NONE", where="f")
    else:
        name = "CRC32C" if checksum == 2 else "CRC32"
        with pytest.raises(
            CorruptFileError,
            match=rf"f: {name} checksum mismatch .* offset 0 \(chunk 2\): expected 0x[0-9a-f]{{8}}, actual",
        ):
            decode_block(bytes(damaged), 0, offset=0, header_size=33, codec="NONE", where="f")


def test_trailer_v1_and_garbage() -> None:
    with pytest.raises(UnsupportedFormatError, match="x: HFile version 1"):
        parse_trailer(b"\x00" * 56 + b"\x00\x00\x00\x01", file_size=60, where="x")
    with pytest.raises(UnsupportedFormatError, match="not a supported HFile"):
        parse_trailer(b"PAR1" * 1024, file_size=4096, where="x")
    with pytest.raises(CorruptFileError, match="bad trailer magic"):
        parse_trailer(b"\x00" * 4092 + b"\x03\x00\x00\x03", file_size=4096, where="x")


def test_encrypted_trailer_is_refused() -> None:
    pb = bytes([0x08, 0x01, 0x6A, 0x02]) + b"ky"  # field 1 varint, field 13 bytes
    body = b'TRABLK"$' + bytes([len(pb)]) + pb
    tail = body + b"\x00" * (4096 - 4 - len(body)) + b"\x03\x00\x00\x03"
    with pytest.raises(UnsupportedFormatError, match="encrypted"):
        parse_trailer(tail, file_size=5000, where="x")


# ---------------------------------------------------------------------------- index


def test_non_root_index_and_row_ranges() -> None:
    keys = [first_on_row(b"b"), first_on_row(b"d"), kv_key(b"f", b"q", 1, 4)]
    entries = b"".join(struct.pack(">qi", 100 * i, 50) + k for i, k in enumerate(keys))
    offsets = [0]
    for k in keys:
        offsets.append(offsets[-1] + 12 + len(k))
    payload = struct.pack(">i", 3) + struct.pack(">4i", *offsets) + entries
    parsed = parse_non_root_index(payload, where="t")
    assert [(e.offset, e.size, e.key) for e in parsed] == [
        (100 * i, 50, k) for i, k in enumerate(keys)
    ]
    rows = [b"b", b"d", b"f"]
    assert block_range_for_rows(rows, start_row=None, stop_row=None) == (0, 3)
    assert block_range_for_rows(rows, start_row=b"d", stop_row=b"e") == (0, 2)
    assert block_range_for_rows(rows, start_row=b"e", stop_row=b"f") == (1, 2)
    assert block_range_for_rows(rows, start_row=b"a", stop_row=b"b") == (0, 0)
    assert block_range_for_rows(rows, start_row=b"z", stop_row=None) == (2, 3)


def test_keys_order_and_print() -> None:
    a = kv_key(b"r", b"q", 5, 4)
    b = kv_key(b"r", b"q", 5, 12)
    assert compare_keys(b, a) == -1  # delete markers first at the same ts
    assert compare_keys(first_on_row(b"r"), a) == -1
    assert compare_keys(kv_key(b"r", b"", 0, 0, fam=b""), a) == 1  # last on row
    assert str(parse_key(kv_key(b"r\x01", b"q", 5, 14))) == "r\\x01/cf:q/5/DeleteFamily"
    assert printable_bytes(b"a\\b") == "a\\x5Cb"


# ---------------------------------------------------------------------------- bloom


def test_hash_functions_match_their_reference_vectors() -> None:
    # MurmurHash3 x86_32 reference: "hello", seed 0 -> 0x248bfa47.
    assert murmur3_hash(b"hello", 0) == 0x248BFA47
    # lookup3 hashlittle's own self-test vectors ("Four score and seven years ago").
    text = b"Four score and seven years ago"
    assert jenkins_hash(text, 0) & 0xFFFFFFFF == 0x17770551
    assert jenkins_hash(text, 1) & 0xFFFFFFFF == 0xCD628161
    # Murmur2 as HBase: empty key with seed 0 hashes to 0; results are Java ints.
    assert murmur2_hash(b"", 0) == 0
    assert -(2**31) <= murmur2_hash(b"\xff\xfe\xfd", 7) < 2**31


def test_bloom_probe_positions_follow_bloomfilterutil() -> None:
    # A chunk with exactly the bits BloomFilterUtil.contains probes for "row".
    bits = 8 * 64
    h1 = murmur2_hash(b"row", 0)
    h2 = murmur2_hash(b"row", h1)
    chunk = bytearray(64)
    for i in range(3):
        composite = (h1 + i * h2 + 2**31) % 2**32 - 2**31
        pos = abs(composite) % bits
        chunk[pos >> 3] |= 1 << (pos & 7)
    assert chunk_contains(bytes(chunk), b"row", hash_count=3, hash_type=1)
    assert not chunk_contains(bytes(64), b"row", hash_count=3, hash_type=1)
    assert (
        bloom_key("ROWCOL", b"r", b"q")
        == b"\x00\x01r\x00q" + (2**63 - 1).to_bytes(8, "big") + b"\xff"
    )
    assert bloom_key("ROWPREFIX_FIXED_LENGTH", b"abcdef", prefix=3) == b"abc"


def test_arrow_schema_of_cells() -> None:
    buf = np.frombuffer(none_cells(), dtype=np.uint8)
    table = cells_to_table(buf, np.array([0, 37]), flags=FLAGS, columns=["ts", "value"])
    assert table.schema == pa.schema(
        [pa.field("ts", pa.int64(), False), pa.field("value", pa.binary(), False)]
    )

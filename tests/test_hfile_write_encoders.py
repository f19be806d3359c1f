"""HFile writer: data block encoders byte by byte, and Hypothesis round trips."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests import hfile_oracle as oracle

from cellstore.storefiles.hfile.encoders import BlockCells, compressed_int, encode_block
from cellstore.storefiles.hfile.serialize import hadoop_vint, vlong_bytes
from cellstore.storefiles.hfile.writer import build_hfile


def key(row: bytes, qual: bytes, ts: int, typ: int = 4, fam: bytes = b"f") -> bytes:
    return (
        struct.pack(">H", len(row))
        + row
        + bytes((len(fam),))
        + fam
        + qual
        + struct.pack(">q", ts)
        + bytes((typ,))
    )


def block(keys: list[bytes], values: list[bytes]) -> BlockCells:
    none = b"".join(
        struct.pack(">ii", len(k), len(v)) + k + v + b"\x00"
        for k, v in zip(keys, values, strict=True)
    )
    sizes = [8 + len(k) + len(v) + 1 for k, v in zip(keys, values, strict=True)]
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    rows = [k[2 : 2 + struct.unpack_from(">H", k)[0]] for k in keys]
    new_row = np.array([i == 0 or rows[i] != rows[i - 1] for i in range(len(keys))])
    return BlockCells(none, offs, keys, values, None, [b"\x00"] * len(keys), new_row)


K1 = key(b"row1", b"a", 0x0102030405060708)
K2 = key(b"row1", b"ab", 0x0102030405060700, 8)
K3 = key(b"rox", b"a", 0x0102030405060708)


def test_varints() -> None:
    assert compressed_int(0) == b"\x00"
    assert compressed_int(300) == b"\xac\x02"
    assert hadoop_vint(128) == b"\x8f\x80" and hadoop_vint(256) == b"\x8e\x01\x00"
    assert hadoop_vint(-1) == b"\xff" and hadoop_vint(-200) == b"\x87\xc7"
    sizes, data = vlong_bytes(np.array([0, 127, 128, -113, 2**40], np.int64))
    want = [hadoop_vint(v) for v in (0, 127, 128, -113, 2**40)]
    assert sizes.tolist() == [len(w) for w in want] and data == b"".join(want)


def test_prefix_block_by_hand() -> None:
    got = encode_block("prefix", block([K1, K2, K3], [b"v", b"", b"w"]))
    unenc = struct.pack(">i", (8 + len(K1) + 1 + 1) + (8 + len(K2) + 1) + (8 + len(K3) + 1 + 1))
    # K2 vs K1: rowLen(2)+row(4)+famLen(1)+fam(1)+'a' common = 9; qualifiers differ in length
    # so the common prefix stops at the qualifier (not running into the timestamp).
    # K3 vs K2: row lengths differ (0x0004 vs 0x0003): 1 common byte.
    want = (
        b"\x00\x02"
        + unenc
        + bytes((len(K1), 1, 0))
        + K1
        + b"v"
        + b"\x00"
        + bytes((len(K2) - 9, 0, 9))
        + K2[9:]
        + b""
        + b"\x00"
        + bytes((len(K3) - 1, 1, 1))
        + K3[1:]
        + b"w"
        + b"\x00"
    )
    assert got == want


def test_diff_block_by_hand() -> None:
    got = encode_block("diff", block([K1, K2], [b"v", b"v"]))
    ts1 = 0x0102030405060708
    # first cell: family, flag (8 ts bytes -> 7 << 4), lengths, common 0, row, qualifier, ts LE, type
    first = (
        b"\x01f"
        + bytes((7 << 4,))
        + bytes((len(K1), 1, 0))
        + K1[:6]
        + b"a"
        + ts1.to_bytes(8, "little")
        + b"\x04"
        + b"v"
        + b"\x00"
    )
    # second: diff 8 fits in 1 byte -> ts stored as diff; same value length; type differs
    second = bytes((0x08 | 0x02,)) + bytes((len(K2), 9)) + b"b" + b"\x08" + b"\x08" + b"v" + b"\x00"
    assert got[6:] == first + second


def test_fast_diff_block_by_hand() -> None:
    got = encode_block("fast_diff", block([K1, K2], [b"v", b"v"]))
    first = b"\x00" + bytes((len(K1), 1, 0)) + K1 + b"v" + b"\x00"
    # same value length+value, 7 common ts bytes, type differs
    second = bytes((16 | 64 | 7,)) + bytes((len(K2), 9)) + b"b" + b"\x00" + b"\x08" + b"\x00"
    assert got[6:] == first + second


def test_row_index_v1_block_by_hand() -> None:
    cells = block([K1, K2, K3], [b"v", b"", b"w"])
    got = encode_block("row_index_v1", cells)
    size = len(cells.none_bytes)
    third = int(cells.cell_offsets[2])
    assert got == (b"\x00\x07" + cells.none_bytes + struct.pack(">iiii", 2, 0, third, size))


cell_rows = st.lists(
    st.tuples(
        st.binary(max_size=140),  # row: > 127 bytes exercises 2-byte index VInts
        st.binary(max_size=5),  # qualifier (often empty)
        st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from([0, 1, 2**63 - 1])),
        st.sampled_from([4, 8, 10, 12, 14]),
        st.binary(max_size=20),  # value (often empty)
        st.integers(0, 2**40),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=cell_rows,
    codec=st.sampled_from(["none", "gz", "snappy", "lz4", "zstd"]),
    encoding=st.sampled_from(["none", "prefix", "diff", "fast_diff", "row_index_v1"]),
    bloom=st.sampled_from(["none", "row", "rowcol"]),
    family=st.sampled_from([b"", b"cf"]),
    tags=st.booleans(),
)
def test_round_trip(
    rows: list, codec: str, encoding: str, bloom: str, family: bytes, tags: bool
) -> None:
    n = len(rows)
    tag_col = [struct.pack(">HB", 2, 7) + b"t" if (tags and i % 2) else b"" for i in range(n)]
    cells = pa.table(
        {
            "row": [r[0] for r in rows],
            "family": [family] * n,
            "qualifier": [r[1] for r in rows],
            "ts": [r[2] for r in rows],
            "type": [r[3] for r in rows],
            "value": [r[4] for r in rows],
            "seq_id": [r[5] for r in rows],
            "tags": tag_col,
        }
    )
    data, summary = build_hfile(
        cells,
        compression=codec,
        encoding=encoding,
        bloom=bloom,
        include_tags=tags or n % 2 == 0,
        block_size=64,
        index_block_max_size=100,
        index_min_entries=2,
    )
    hf = oracle.parse(data)
    order = sorted(
        range(n), key=lambda i: (rows[i][0], family, rows[i][1], -rows[i][2], -rows[i][3], i)
    )
    want = [
        (rows[i][0], family, rows[i][1], rows[i][2], rows[i][3], rows[i][4], tag_col[i], rows[i][5])
        for i in order
    ]
    assert hf.cells == want
    assert len(hf.data_index) == summary.data_blocks
    if bloom == "row":
        assert all(oracle.bloom_might_contain(hf, r[0]) for r in rows)

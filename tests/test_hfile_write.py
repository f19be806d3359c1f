"""HFile writer: byte-identical to HBase on real vectors, readable, bulk-load metadata, blooms."""

from __future__ import annotations

import gzip
import itertools
import struct
import zlib
from pathlib import Path

import pyarrow as pa
import pytest
from tests import hfile_oracle as oracle

from cellstore.errors import BadCellError, InvalidArgumentError
from cellstore.storefiles.hfile import bloomwrite as bw
from cellstore.storefiles.hfile.writer import (
    KV_COMPARATOR,
    build_hfile,
    midpoint_key,
    write_hfile,
)

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "hbase-hfiles"
HUDI = VECTORS / "apache-hudi"
LONG_MAX = 2**63 - 1

needs_vectors = pytest.mark.needs(
    need="vectors", present=VECTORS.is_dir(), reason="shared test vectors absent"
)


def hudi_cells(n: int) -> pa.Table:
    return pa.table(
        {
            "row": [b"hudi-key-%09d" % i for i in range(n)],
            "family": [b""] * n,
            "qualifier": [b""] * n,
            "ts": [LONG_MAX] * n,
            "type": [4] * n,
            "value": [b"hudi-value-%09d" % i for i in range(n)],
        }
    )


def vector_cells(path: Path) -> pa.Table:
    """Cells of a Hudi vector, read with the test oracle (NONE cells, memstore ts 0)."""
    hf = oracle.parse(path.read_bytes())
    rows = [c[0] for c in hf.cells]
    n = len(rows)
    assert all(c[1] == b"" and c[2] == b"" and c[3] == LONG_MAX and c[4] == 4 for c in hf.cells)
    return pa.table(
        {
            "row": rows,
            "family": [b""] * n,
            "qualifier": [b""] * n,
            "ts": [LONG_MAX] * n,
            "type": [4] * n,
            "value": [c[5] for c in hf.cells],
        }
    )


def blocks_of(data: bytes) -> dict[bytes, list[tuple[bytes, bytes]]]:
    """magic -> [(on-disk block bytes, uncompressed payload)] in file order."""
    tr = oracle.parse_trailer(data)
    out: dict[bytes, list[tuple[bytes, bytes]]] = {}
    for b in oracle.walk_blocks(data, int(tr[12])):  # type: ignore[call-overload]
        out.setdefault(b.magic, []).append((data[b.offset : b.offset + b.on_disk_size], b.payload))
    return out


# --------------------------------------------------------------------------------------
# Byte-identical to HBase


@needs_vectors
@pytest.mark.parametrize(
    ("name", "block_size", "codec"),
    [
        ("hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile", 16 * 1024, "none"),
        ("hudi_1_0_hbase_2_4_9_64KB_NONE_5000.hfile", 64 * 1024, "none"),
        ("hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile", 16 * 1024, "gz"),
        ("hudi_1_0_hbase_2_4_9_16KB_GZ_200_20_non_unique.hfile", 16 * 1024, "gz"),
        ("hudi_1_0_hbase_2_4_13_16KB_GZ_20000_fake_first_key.hfile", 16 * 1024, "gz"),
    ],
)
def test_data_blocks_and_root_index_byte_identical_to_hbase(
    name: str, block_size: int, codec: str
) -> None:
    ref = (HUDI / name).read_bytes()
    cells = vector_cells(HUDI / name)
    data, summary = build_hfile(
        cells, block_size=block_size, include_tags=False, bloom="none", compression=codec
    )  # type: ignore[arg-type]
    ours, theirs = blocks_of(data), blocks_of(ref)
    assert [b for b, _ in ours[b"DATABLK*"]] == [b for b, _ in theirs[b"DATABLK*"]]
    # Root data index: same separator keys, offsets and sizes (HBase's getMidpoint).
    assert ours[b"IDXROOT2"][0][1] == theirs[b"IDXROOT2"][0][1]
    assert summary.data_blocks == len(theirs[b"DATABLK*"])
    hf = oracle.parse(data)
    assert hf.file_info[b"hfile.LASTKEY"] == oracle.parse(ref).file_info[b"hfile.LASTKEY"]
    assert hf.file_info[b"hfile.AVG_KEY_LEN"] == oracle.parse(ref).file_info[b"hfile.AVG_KEY_LEN"]


@needs_vectors
def test_two_level_index_byte_identical_to_hbase() -> None:
    name = "hudi_1_0_hbase_2_4_13_1KB_GZ_20000_large_keys.hfile"
    ref = (HUDI / name).read_bytes()
    data, summary = build_hfile(
        vector_cells(HUDI / name),
        block_size=1024,
        include_tags=False,
        bloom="none",
        compression="gz",
    )
    ours, theirs = blocks_of(data), blocks_of(ref)
    assert summary.index_levels == 2
    for magic in (b"DATABLK*", b"IDXLEAF2"):
        assert [b for b, _ in ours[magic]] == [b for b, _ in theirs[magic]]
    # Root payload including the 16-byte mid-key metadata.
    assert ours[b"IDXROOT2"][0][1] == theirs[b"IDXROOT2"][0][1]


@needs_vectors
def test_three_level_index_matches_hbase() -> None:
    """The deep-index vector was written with a 2 KiB index chunk (and min entries < 16)."""
    name = "hudi_1_0_hbase_2_4_13_1KB_GZ_10000_large_keys_deep_index.hfile"
    ref = (HUDI / name).read_bytes()
    data, summary = build_hfile(
        vector_cells(HUDI / name),
        block_size=1024,
        include_tags=False,
        bloom="none",
        compression="gz",
        index_block_max_size=2048,
        index_min_entries=2,
    )
    ours, theirs = blocks_of(data), blocks_of(ref)
    assert summary.index_levels == 3 == oracle.parse_trailer(ref)[8]
    for magic in (b"DATABLK*", b"IDXLEAF2"):
        assert [b for b, _ in ours[magic]] == [b for b, _ in theirs[magic]]
    # Intermediate blocks sit after HBase's meta block there, so compare payloads.
    assert [p for _, p in ours[b"IDXINTE2"]] == [p for _, p in theirs[b"IDXINTE2"]]
    assert ours[b"IDXROOT2"][0][1][-16:] == theirs[b"IDXROOT2"][0][1][-16:]  # mid-key


@needs_vectors
def test_row_bloom_chunk_byte_identical_to_hbase_2_5() -> None:
    """Rows aaa..zzz: HBase 2.5 wrote a 32 KiB folded ROW bloom chunk; ours is identical."""
    ref = gzip.decompress(
        (
            VECTORS / "apache-hbase" / "TestCompaction_HFileWithCorruptBlock.branch-2.5.gz"
        ).read_bytes()
    )
    off = 117717
    assert ref[off : off + 8] == b"BLMFBLK2"
    oddh = struct.unpack_from(">i", ref, off + 29)[0]
    theirs = zlib.decompress(ref[off + 33 : off + oddh], 31)
    rows = [bytes(t) for t in itertools.product(b"abcdefghijklmnopqrstuvwxyz", repeat=3)]
    n = len(rows)
    cells = pa.table(
        {
            "row": rows,
            "family": [b"cf"] * n,
            "qualifier": [b""] * n,
            "ts": [1] * n,
            "type": [4] * n,
            "value": [b"v"] * n,
        }
    )
    data, _ = build_hfile(cells, include_tags=False, compression="gz")
    ours = blocks_of(data)
    assert ours[b"BLMFBLK2"][0][1] == theirs
    hf = oracle.parse(data)
    meta = next(b for b in hf.blocks if b.magic == b"BLMFMET2").payload
    # version, total bytes, hash count, hash type, keys, max keys, chunks (as in the vector)
    assert struct.unpack_from(">iqiiqqi", meta, 0) == (3, 32768, 7, 1, 17576, 27326, 1)


def test_bloom_params_match_hbase_defaults() -> None:
    p = bw.bloom_params(rowcol=False)
    assert (p.byte_size, p.max_keys, p.hash_count) == (131072, 109306, 7)
    assert bw.bloom_params(rowcol=True).max_keys < p.max_keys


# --------------------------------------------------------------------------------------
# Structure and metadata


def sample_cells() -> pa.Table:
    rows = [b"r1", b"r1", b"r1", b"r2", b"r2", b"r3"]
    return pa.table(
        {
            "row": rows,
            "family": [b"cf"] * 6,
            "qualifier": [b"a", b"a", b"b", b"", b"q", b"q"],
            "ts": [20, 10, 5, 7, 9, 3],
            "type": [4, 4, 12, 14, 8, 10],
            "value": [b"x", b"y", b"", b"", b"", b""],
        }
    )


def test_file_info_is_an_hfileoutputformat2_file(tmp_path: Path) -> None:
    out = write_hfile(
        str(tmp_path / "f"),
        sample_cells(),
        bulkload_timestamp=123,
        create_time=456,
        source_task="attempt_1",
    )
    data = (tmp_path / "f").read_bytes()
    assert out.file_size == len(data) and out.entry_count == 6
    hf = oracle.parse(data)
    fi = hf.file_info
    assert set(fi) == {
        b"BLOOM_FILTER_TYPE",
        b"BULKLOAD_SOURCE_TASK",
        b"BULKLOAD_TIMESTAMP",
        b"DELETE_FAMILY_COUNT",
        b"EARLIEST_PUT_TS",
        b"EXCLUDE_FROM_MINOR_COMPACTION",
        b"HISTORICAL",
        b"KEY_VALUE_VERSION",
        b"LAST_BLOOM_KEY",
        b"MAJOR_COMPACTION_KEY",
        b"MAX_MEMSTORE_TS_KEY",
        b"TIMERANGE",
        b"hfile.AVG_KEY_LEN",
        b"hfile.AVG_VALUE_LEN",
        b"hfile.CREATE_TIME_TS",
        b"hfile.LASTKEY",
        b"hfile.MAX_TAGS_LEN",
        b"hfile.TAGS_COMPRESSED",
    }
    assert b"MAX_SEQ_ID_KEY" not in fi
    assert fi[b"BULKLOAD_TIMESTAMP"] == struct.pack(">q", 123)
    assert fi[b"hfile.CREATE_TIME_TS"] == struct.pack(">q", 456)
    assert fi[b"BULKLOAD_SOURCE_TASK"] == b"attempt_1"
    assert fi[b"MAJOR_COMPACTION_KEY"] == b"\xff"
    assert fi[b"EXCLUDE_FROM_MINOR_COMPACTION"] == b"\x00"
    assert fi[b"HISTORICAL"] == b"\x00"
    assert fi[b"hfile.TAGS_COMPRESSED"] == b"\x00"
    assert fi[b"hfile.MAX_TAGS_LEN"] == struct.pack(">i", 0)
    assert fi[b"KEY_VALUE_VERSION"] == struct.pack(">i", 1)
    assert fi[b"MAX_MEMSTORE_TS_KEY"] == struct.pack(">q", 0)
    assert fi[b"BLOOM_FILTER_TYPE"] == b"ROW"
    assert fi[b"LAST_BLOOM_KEY"] == b"r3"
    assert fi[b"DELETE_FAMILY_COUNT"] == struct.pack(">q", 2)  # DeleteFamily + ...Version
    # DeleteColumn/DeleteFamily pull the time range down to 0 (TimeRangeTracker).
    assert fi[b"TIMERANGE"] == struct.pack(">qq", 0, 20)
    assert fi[b"EARLIEST_PUT_TS"] == struct.pack(">q", 10)
    assert fi[b"hfile.LASTKEY"] == b"\x00\x02r3\x02cfq" + struct.pack(">q", 3) + b"\x0a"
    tr = hf.trailer
    assert tr[11] == KV_COMPARATOR.encode()
    assert tr[7] == 6 and tr[8] == 1 and tr[12] == 2 and tr[6] == 0
    # load-on-open: root index, meta index, FileInfo, general bloom, delete-family bloom
    magics = [b.magic for b in hf.blocks]
    lo = magics.index(b"IDXROOT2")
    assert magics[lo:] == [b"IDXROOT2", b"IDXROOT2", b"FILEINF2", b"BLMFMET2", b"DFBLMET2"]
    # totals as HBase computes them
    counted = sum(33 + len(b.payload) for b in hf.blocks if b.offset != tr[2])
    assert tr[4] == counted + 4096
    assert tr[3] == len(next(b for b in hf.blocks if b.offset == tr[2]).payload)


def test_cells_round_trip_in_hbase_order(tmp_path: Path) -> None:
    cells = sample_cells()
    shuffled = cells.take(pa.array([5, 2, 0, 4, 1, 3]))
    write_hfile(str(tmp_path / "f"), shuffled)
    hf = oracle.parse((tmp_path / "f").read_bytes())
    got = [(c[0], c[1], c[2], c[3], c[4], c[5]) for c in hf.cells]
    want = list(
        zip(
            *(
                cells.column(c).to_pylist()
                for c in ("row", "family", "qualifier", "ts", "type", "value")
            ),
            strict=True,
        )
    )
    assert got == want


def test_duplicates_keep_input_order_and_stay_in_one_block() -> None:
    n = 50
    cells = pa.table(
        {
            "row": [b"r"] * n,
            "family": [b"f"] * n,
            "qualifier": [b"q"] * n,
            "ts": [1] * n,
            "type": [4] * n,
            "value": [b"%03d" % i for i in range(n)],
        }
    )
    data, summary = build_hfile(cells, block_size=16)
    assert summary.data_blocks == 1
    assert [c[5] for c in oracle.parse(data).cells] == [b"%03d" % i for i in range(n)]


def test_empty_file() -> None:
    cells = pa.table(
        {
            "row": pa.array([], pa.binary()),
            "qualifier": pa.array([], pa.binary()),
            "ts": pa.array([], pa.int64()),
            "type": pa.array([], pa.int8()),
            "value": pa.array([], pa.binary()),
        }
    )
    data, summary = build_hfile(cells, family=b"cf")
    hf = oracle.parse(data)
    assert summary.entry_count == 0 and hf.cells == []
    assert hf.trailer[9] == 2**64 - 1 and hf.trailer[10] == 2**64 - 1
    assert b"hfile.LASTKEY" not in hf.file_info


def test_memstore_ts_and_tags_round_trip() -> None:
    tag = struct.pack(">HB", 4, 1) + b"abc"
    cells = pa.table(
        {
            "row": [b"a", b"b"],
            "family": [b"f", b"f"],
            "qualifier": [b"", b""],
            "ts": [1, 2],
            "type": [4, 4],
            "value": [b"1", b"2"],
            "seq_id": [0, 300],
            "tags": [b"", tag],
        }
    )
    hf = oracle.parse(build_hfile(cells)[0])
    assert [(c[6], c[7]) for c in hf.cells] == [(b"", 0), (tag, 300)]
    assert hf.file_info[b"MAX_MEMSTORE_TS_KEY"] == struct.pack(">q", 300)
    assert hf.file_info[b"hfile.MAX_TAGS_LEN"] == struct.pack(">i", len(tag))


def test_bad_cells_are_refused() -> None:
    base = sample_cells()
    bad_type = base.set_column(4, "type", pa.array([4, 4, 12, 14, 8, 7]))
    with pytest.raises(BadCellError, match="cell 5: type 7"):
        build_hfile(bad_type)
    with pytest.raises(BadCellError, match="value"):
        build_hfile(base.drop_columns(["value"]))
    with pytest.raises(BadCellError, match="row is 40000 bytes"):
        build_hfile(base.set_column(0, "row", pa.array([b"x" * 40000] * 6)))
    with pytest.raises(InvalidArgumentError):
        build_hfile(base, compression="lzo")  # type: ignore[arg-type]
    with pytest.raises(BadCellError, match="include_tags"):
        build_hfile(base.append_column("tags", pa.array([b"\x00\x01\x01"] * 6)), include_tags=False)


def test_midpoint_keys_follow_hbase() -> None:
    def key(row: bytes, fam: bytes = b"f", qual: bytes = b"", ts: int = 1) -> bytes:
        return (
            struct.pack(">H", len(row))
            + row
            + bytes((len(fam),))
            + fam
            + qual
            + struct.pack(">q", ts)
            + b"\x04"
        )

    latest = b"\x7f\xff\xff\xff\xff\xff\xff\xff\xff"
    assert midpoint_key(None, key(b"abc")) == key(b"abc")
    assert midpoint_key(key(b"aaa"), key(b"aca")) == b"\x00\x02ab\x00" + latest
    assert midpoint_key(key(b"ab"), key(b"abc")) == b"\x00\x03abc\x00" + latest
    assert midpoint_key(key(b"r", qual=b"a"), key(b"r", qual=b"c")) == b"\x00\x01r\x01fb" + latest
    same = key(b"r", qual=b"q", ts=5)
    assert midpoint_key(key(b"r", qual=b"q", ts=9), same) == same


def test_every_row_is_in_the_blooms() -> None:
    n = 3000
    rows = [b"row-%05d" % (i // 3) for i in range(n)]
    quals = [b"q%d" % (i % 3) for i in range(n)]
    types = [14 if i % 97 == 0 else 4 for i in range(n)]
    cells = pa.table(
        {
            "row": rows,
            "family": [b"f"] * n,
            "qualifier": quals,
            "ts": [1] * n,
            "type": types,
            "value": [b"v"] * n,
        }
    )
    hf = oracle.parse(build_hfile(cells, bloom="row", bloom_block_size=256)[0])
    assert sum(b.magic == b"BLMFBLK2" for b in hf.blocks) > 3  # several chunks
    assert all(oracle.bloom_might_contain(hf, r) for r in set(rows))
    misses = sum(oracle.bloom_might_contain(hf, b"absent-%05d" % i) for i in range(2000))
    assert misses < 200
    df_rows = {rows[i] for i in range(n) if types[i] == 14}
    assert all(oracle.bloom_might_contain(hf, r, meta_magic=b"DFBLMET2") for r in df_rows)
    # ROWCOL: RowColBloomHashKey (family omitted) for every row/qualifier
    hf2 = oracle.parse(build_hfile(cells, bloom="rowcol")[0])
    assert hf2.file_info[b"BLOOM_FILTER_TYPE"] == b"ROWCOL"
    assert not any(b.magic == b"DFBLMET2" for b in hf2.blocks)
    for r, q in set(zip(rows, quals, strict=True)):
        hk = struct.pack(">H", len(r)) + r + b"\x00" + q + b"\x7f" + b"\xff" * 8
        assert oracle.bloom_might_contain(hf2, hk)


def test_three_level_index_on_tiny_chunks() -> None:
    n = 4000
    cells = pa.table(
        {
            "row": [b"%06d" % i + b"k" * 130 for i in range(n)],
            "family": [b"f"] * n,
            "qualifier": [b""] * n,
            "ts": [1] * n,
            "type": [4] * n,
            "value": [b"v"] * n,
        }
    )
    data, summary = build_hfile(
        cells, block_size=200, index_block_max_size=600, index_min_entries=2, compression="snappy"
    )
    assert summary.index_levels >= 3
    hf = oracle.parse(data)
    assert len(hf.cells) == n and len(hf.data_index) == summary.data_blocks
    assert [c[0] for c in hf.cells] == cells.column("row").to_pylist()

"""The reader on files from our HFile writer: the paths no real HBase vector covers.

Encodings, LZ4/ZSTD, CRC32/NULL checksums, tags, ROWCOL and DeleteFamily blooms and
deep indexes on small blocks. The writer was written separately from the reader (and is
checked by its own test-only oracle), so agreement here is a cross-check, not a tautology.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from cellstore import hbase
from cellstore.storefiles.hfile import writer

ORDER = [
    ("row", "ascending"),
    ("qualifier", "ascending"),
    ("ts", "descending"),
    ("type", "descending"),
]
KEY = ["row", "qualifier", "ts", "type", "value"]


def sample(n: int = 3000) -> pa.Table:
    i = np.arange(n)
    rows = [b"row%05d" % (k // 6) for k in i]
    quals = [b"q%d" % ((k // 2) % 3) for k in i]
    ts = 1_700_000_000_000 - (i % 2) * 1000 + (i % 7)
    kinds = np.where(i % 11 == 0, 12, 4).astype(np.int8)  # some DeleteColumn markers
    values = [b"v" * int(k % 5) + str(k % 4).encode() for k in i]
    return pa.table(
        {
            "row": rows,
            "family": ["cf"] * n,
            "qualifier": quals,
            "ts": ts,
            "type": kinds,
            "value": values,
        }
    )


def expected(cells: pa.Table) -> pa.Table:
    return cells.sort_by(ORDER).select(KEY)


@pytest.mark.parametrize("encoding", ["none", "prefix", "diff", "fast_diff", "row_index_v1"])
@pytest.mark.parametrize("compression", ["none", "gz", "snappy", "lz4", "zstd"])
def test_encodings_and_codecs(tmp_path: Path, encoding: str, compression: str) -> None:
    cells = sample()
    data, _ = writer.build_hfile(
        cells, encoding=encoding, compression=compression, block_size=2048, include_tags=True
    )
    path = tmp_path / "f"
    path.write_bytes(data)
    table = hbase.read_hfile(path, with_seq_id=True, with_tags=True)
    want = expected(cells)
    assert table.select(KEY).to_pylist() == want.to_pylist()
    info = hbase.hfile_info(path)
    assert info.compression == compression.upper()
    assert info.data_block_encoding == encoding.upper()
    assert info.has_tags
    assert hbase.verify_hfile(path).ok
    # Row ranges through the index agree with filtering the full read.
    part = hbase.read_hfile(path, start_row=b"row00100", stop_row=b"row00123")
    rows = part.column("row").to_pylist()
    assert rows and min(rows) == b"row00100" and max(rows) == b"row00122"
    assert len(rows) == sum(
        1 for r in want.column("row").to_pylist() if b"row00100" <= r < b"row00123"
    )


@pytest.mark.parametrize("checksum", ["crc32", "none"])
def test_other_checksum_types(tmp_path: Path, checksum: str) -> None:
    data, _ = writer.build_hfile(sample(), checksum=checksum, block_size=4096)
    path = tmp_path / "f"
    path.write_bytes(data)
    assert hbase.hfile_info(path).checksum == {"crc32": "CRC32", "none": "NULL"}[checksum]
    assert hbase.read_hfile(path).num_rows == 3000
    assert hbase.verify_hfile(path).ok
    if checksum == "crc32":
        damaged = bytearray(data)
        damaged[200] ^= 1
        path.write_bytes(bytes(damaged))
        report = hbase.verify_hfile(path)
        assert not report.ok and "CRC32 checksum mismatch" in report.problems[0].message


def test_rowcol_and_delete_family_blooms(tmp_path: Path) -> None:
    cells = sample()
    data, _ = writer.build_hfile(cells, bloom="rowcol")
    path = tmp_path / "rowcol"
    path.write_bytes(data)
    reader = hbase.open_hfile(path)
    assert reader.bloom_type == "ROWCOL"
    for r, q in zip(
        cells.column("row").to_pylist(), cells.column("qualifier").to_pylist(), strict=True
    ):
        assert reader.might_contain(r, q)
    misses = sum(reader.might_contain(b"zz%05d" % k, b"q0") for k in range(1000))
    assert misses < 50
    assert reader.might_contain(b"anything")  # a ROWCOL Bloom cannot answer for a row alone

    n = 600
    dels = pa.table(
        {
            "row": [b"d%04d" % k for k in range(n)],
            "family": ["cf"] * n,
            "qualifier": [b""] * n,
            "ts": [5] * n,
            "type": pa.array([14 if k % 3 == 0 else 4 for k in range(n)], pa.int8()),
            "value": [b""] * n,
        }
    )
    data, _ = writer.build_hfile(dels, bloom="row")
    path = tmp_path / "df"
    path.write_bytes(data)
    reader = hbase.open_hfile(path)
    assert reader.delete_family_bloom is not None
    assert all(reader.might_have_delete_family(b"d%04d" % k) for k in range(0, n, 3))
    assert all(reader.might_contain(b"d%04d" % k) for k in range(n))


def test_deep_index_on_small_blocks(tmp_path: Path) -> None:
    cells = sample(20000)
    data, written = writer.build_hfile(
        cells, block_size=256, index_block_max_size=512, index_min_entries=4
    )
    path = tmp_path / "deep"
    path.write_bytes(data)
    info = hbase.hfile_info(path)
    assert info.index_levels == written.index_levels >= 3
    assert info.data_block_count == written.data_blocks
    full = hbase.read_hfile(path)
    assert full.select(KEY).to_pylist() == expected(cells).to_pylist()
    reader = hbase.open_hfile(path)
    assert len(reader.data_blocks(start_row=b"row01000", stop_row=b"row01001")) <= 2
    got = hbase.read_hfile(path, start_row=b"row01000", stop_row=b"row01002")
    assert set(got.column("row").to_pylist()) == {b"row01000", b"row01001"}
    assert got.num_rows == 12

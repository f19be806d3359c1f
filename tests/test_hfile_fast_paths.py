"""The HFile read fast paths agree with the general ones.

* ``dictionary=True`` (what HBase table scans read: rows and qualifiers as dictionaries,
  one compiled pass over the cells) gives the same cells as the plain decode, for every
  encoding, codec, tags and memstore-timestamp setting;
* the batched block check of uncompressed files (headers as arrays, every checksum chunk in
  one pass) accepts exactly the clean blocks: a flipped bit still fails the read with the
  checksum message naming the block;
* readers of an HBase table's files are cached per process, yet a file rewritten in place
  is read afresh.
"""

from __future__ import annotations

import struct
from pathlib import Path

import fsspec
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cellstore.errors import CorruptFileError
from cellstore.hbasefiles.layout import HFileRef
from cellstore.hbasefiles.store import HFileStore, open_hfile
from cellstore.storefiles.hfile.blocks import verified_data_blocks
from cellstore.storefiles.hfile.reader import HFileReader
from cellstore.storefiles.hfile.writer import build_hfile

FS = fsspec.filesystem("file")

cell_rows = st.lists(
    st.tuples(
        st.binary(max_size=12),  # row (empty allowed)
        st.one_of(st.binary(max_size=3), st.binary(min_size=9, max_size=12)),  # qualifier
        st.integers(-(2**40), 2**40),
        st.sampled_from([4, 8, 10, 12, 14]),
        st.binary(max_size=20),
        st.integers(0, 2**40),
    ),
    min_size=1,
    max_size=80,
)


def _cells(rows: list[tuple[bytes, bytes, int, int, bytes, int]], tags: bool) -> pa.Table:
    n = len(rows)
    return pa.table(
        {
            "row": [r[0] for r in rows],
            "family": [b"cf"] * n,
            "qualifier": [r[1] for r in rows],
            "ts": [r[2] for r in rows],
            "type": [r[3] for r in rows],
            "value": [r[4] for r in rows],
            "seq_id": [r[5] for r in rows],
            "tags": [struct.pack(">HB", 2, 7) + b"t" if tags and i % 2 else b"" for i in range(n)],
        }
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=cell_rows,
    codec=st.sampled_from(["none", "gz"]),
    encoding=st.sampled_from(["none", "prefix", "diff", "fast_diff"]),
    tags=st.booleans(),
    mvcc=st.booleans(),
)
def test_dictionary_decode_equals_plain(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[tuple[bytes, bytes, int, int, bytes, int]],
    codec: str,
    encoding: str,
    tags: bool,
    mvcc: bool,
) -> None:
    data, _ = build_hfile(
        _cells(rows, tags),
        compression=codec,  # type: ignore[arg-type]
        encoding=encoding,  # type: ignore[arg-type]
        include_tags=tags,
        include_mvcc=mvcc,
        block_size=96,
    )
    path = tmp_path_factory.mktemp("dict") / "f.hfile"
    path.write_bytes(data)
    reader = HFileReader(FS, str(path))
    for options in ({}, {"with_seq_id": True, "with_tags": True}):
        plain = reader.read(**options)
        coded = reader.read(dictionary=True, **options)
        for name in ("row", "qualifier"):
            assert pa.types.is_dictionary(coded.schema.field(name).type)
        assert coded.cast(plain.schema).equals(plain)
    # Row bounds filter through the dictionary the same way.
    lo, hi = min(rows[0][0], rows[-1][0]), max(rows[0][0], rows[-1][0])
    plain = reader.read(start_row=lo, stop_row=hi)
    coded = reader.read(start_row=lo, stop_row=hi, dictionary=True)
    assert coded.cast(plain.schema).equals(plain)


def test_many_distinct_qualifiers_grow_the_hash_table(tmp_path: Path) -> None:
    """Over 32 distinct qualifiers (the table starts at 64 slots and grows at half full)."""
    quals = [f"q{i:04d}".encode() for i in range(500)]
    rows = [(f"r{r:03d}".encode(), q, 5, 4, q + b"v", 0) for r in range(3) for q in quals]
    data, _ = build_hfile(_cells(rows, False), block_size=4096)
    path = tmp_path / "wide.hfile"
    path.write_bytes(data)
    reader = HFileReader(FS, str(path))
    coded = reader.read(dictionary=True)
    chunk = coded.column("qualifier").chunk(0)
    assert len(chunk.dictionary) == 500
    assert coded.cast(reader.read().schema).equals(reader.read())


def _none_file(tmp_path: Path) -> tuple[Path, bytes]:
    rows = [(f"row{i:05d}".encode(), b"q", 7, 4, bytes([i % 251]) * 40, 0) for i in range(3000)]
    data, _ = build_hfile(_cells(rows, False), block_size=4096, bytes_per_checksum=512)
    path = tmp_path / "none.hfile"
    path.write_bytes(data)
    return path, data


def test_batched_block_check_accepts_clean_blocks(tmp_path: Path) -> None:
    path, data = _none_file(tmp_path)
    reader = HFileReader(FS, str(path))
    entries = reader.data_blocks()
    assert len(entries) > 10
    positions = np.array([e.offset for e in entries], dtype=np.int64)
    sizes = np.array([e.size for e in entries], dtype=np.int64)
    got = verified_data_blocks(data, positions, sizes, header_size=33)
    assert got is not None
    starts, ends = got
    assert np.array_equal(starts, positions + 33)
    assert bool(np.all(ends > starts)) and bool(np.all(ends <= positions + sizes))
    # A wrong size from the index is not "clean": the per-block path decides.
    assert verified_data_blocks(data, positions, sizes + 1, header_size=33) is None


def test_batched_block_check_rejects_a_flipped_bit(tmp_path: Path) -> None:
    path, data = _none_file(tmp_path)
    reader = HFileReader(FS, str(path))
    entries = reader.data_blocks()
    victim = entries[len(entries) // 2]
    damaged = bytearray(data)
    damaged[victim.offset + 33 + 100] ^= 0x10  # inside the block's cells
    positions = np.array([e.offset for e in entries], dtype=np.int64)
    sizes = np.array([e.size for e in entries], dtype=np.int64)
    assert verified_data_blocks(bytes(damaged), positions, sizes, header_size=33) is None
    path.write_bytes(bytes(damaged))
    with pytest.raises(CorruptFileError, match=f"checksum mismatch.*offset {victim.offset}"):
        HFileReader(FS, str(path)).read()
    # Without verification the damaged cells are read (the check is what catches it).
    assert HFileReader(FS, str(path), verify_checksums=False).read().num_rows == 3000


def test_cached_reader_sees_a_file_rewritten_in_place(tmp_path: Path) -> None:
    first = [(b"a", b"q", 1, 4, b"old", 0)]
    second = [(b"a", b"q", 1, 4, b"new!", 0), (b"b", b"q", 1, 4, b"more", 0)]
    path = tmp_path / "store" / "abc"
    path.parent.mkdir()
    path.write_bytes(build_hfile(_cells(first, False), family=b"cf")[0])
    ref = HFileRef(path=str(path), name="abc", size=path.stat().st_size)
    store = HFileStore("cf", (ref,))
    runs, _ = store.read_runs(FS, b"", b"", point_row=None)
    assert runs[0].column("value").to_pylist() == [b"old"]
    assert open_hfile(FS, ref) is open_hfile(FS, ref)  # one reader per file identity
    path.write_bytes(build_hfile(_cells(second, False), family=b"cf")[0])
    ref2 = HFileRef(path=str(path), name="abc", size=path.stat().st_size)
    runs, _ = HFileStore("cf", (ref2,)).read_runs(FS, b"", b"", point_row=None)
    assert runs[0].column("value").to_pylist() == [b"new!", b"more"]

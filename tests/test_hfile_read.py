"""Reading real HBase-written HFiles (shared/testdata/hbase-hfiles, used in place)."""

from __future__ import annotations

import dataclasses
import gzip
import tarfile
import typing
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from cellstore import hbase
from cellstore.errors import CorruptFileError, InvalidArgumentError, UnsupportedFormatError
from cellstore.hbase import HFileReadKwargs, HFileReadOptions
from cellstore.storefiles.hfile.keys import parse_key

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "hbase-hfiles"
HUDI = VECTORS / "apache-hudi"
HBASE = VECTORS / "apache-hbase"

pytestmark = pytest.mark.needs(
    need="vectors", present=VECTORS.is_dir(), reason="HBase test vectors not present"
)

# file -> (cells, data blocks, index levels, row format), from the vectors' README.
HUDI_FILES = {
    "hudi_1_0_hbase_2_4_9_16KB_NONE_5000.hfile": (5000, 18, 1, "hudi-key-{:09d}"),
    "hudi_1_0_hbase_2_4_9_64KB_NONE_5000.hfile": (5000, 5, 1, "hudi-key-{:09d}"),
    "hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile": (20000, 72, 1, "hudi-key-{:09d}"),
    "hudi_1_0_hbase_2_4_9_512KB_GZ_20000.hfile": (20000, 3, 1, "hudi-key-{:09d}"),
    "hudi_1_0_hbase_2_4_13_16KB_GZ_20000_fake_first_key.hfile": (
        20000,
        86,
        1,
        "hudi-key-{:09d}-abcdefghij",
    ),
    "hudi_1_0_hbase_2_4_13_1KB_GZ_20000_large_keys.hfile": (
        20000,
        2858,
        2,
        "hudi-key-" + "a" * 100 + "-{:09d}",
    ),
    "hudi_1_0_hbase_2_4_13_1KB_GZ_10000_large_keys_deep_index.hfile": (
        10000,
        1429,
        3,
        "hudi-key-" + "a" * 100 + "-{:09d}",
    ),
}
DEEP = HUDI / "hudi_1_0_hbase_2_4_13_1KB_GZ_10000_large_keys_deep_index.hfile"


@pytest.mark.parametrize("name", sorted(HUDI_FILES), ids=lambda n: n.removesuffix(".hfile"))
def test_hudi_vectors_decode_to_the_known_cells(name: str) -> None:
    cells, blocks, levels, row_format = HUDI_FILES[name]
    path = HUDI / name
    table = hbase.read_hfile(path, with_seq_id=True, with_tags=True)
    info = hbase.hfile_info(path)
    assert (table.num_rows, info.entry_count) == (cells, cells)
    assert (info.data_block_count, info.index_levels) == (blocks, levels)
    assert info.version == "3.3"
    expected_rows = [row_format.format(i).encode() for i in range(cells)]
    expected_values = [f"hudi-value-{i:09d}".encode() for i in range(cells)]
    assert table.column("row").to_pylist() == expected_rows
    assert table.column("value").to_pylist() == expected_values
    assert set(table.column("qualifier").to_pylist()) == {b""}
    assert set(table.column("family").to_pylist()) == {""}
    assert set(table.column("ts").to_pylist()) == {2**63 - 1}
    assert set(table.column("type").to_pylist()) == {4}
    assert set(table.column("seq_id").to_pylist()) == {0}
    assert set(table.column("tags").to_pylist()) == {b""}
    assert info.first_row == expected_rows[0]
    assert info.last_row == expected_rows[-1]
    assert info.last_key == f"{expected_rows[-1].decode()}/:/LATEST_TIMESTAMP/Put"
    assert info.file_info["hudi_hfile_testing.custom_key"] == "hudi_custom_value"
    assert info.checksum == "CRC32C"
    assert hbase.verify_hfile(path).ok


def test_non_unique_keys_keep_every_duplicate() -> None:
    path = HUDI / "hudi_1_0_hbase_2_4_9_16KB_GZ_200_20_non_unique.hfile"
    table = hbase.read_hfile(path)
    assert table.num_rows == 4200
    counts = pc.value_counts(table.column("row")).to_pylist()
    assert len(counts) == 200
    assert {c["counts"] for c in counts} == {21}
    assert hbase.verify_hfile(path).ok


def test_empty_file_reads_as_empty() -> None:
    path = HUDI / "hudi_1_0_hbase_2_4_9_no_entry.hfile"
    table = hbase.read_hfile(path, with_seq_id=True)
    assert table.num_rows == 0
    assert table.schema.names == ["row", "family", "qualifier", "ts", "type", "value", "seq_id"]
    info = hbase.hfile_info(path)
    assert (info.entry_count, info.data_block_count, info.first_key, info.last_key) == (
        0,
        0,
        None,
        None,
    )
    assert info.comparator == "org.apache.hudi.io.storage.HoodieHBaseKVComparator"
    assert info.trailer.first_data_block_offset == -1
    assert list(hbase.iter_hfile_batches(path)) == []
    assert not hbase.hfile_might_contain(path, b"hudi-key-000000000")
    assert hbase.verify_hfile(path).ok


def test_hfile_v1_is_refused_naming_the_file() -> None:
    path = HBASE / "8e8ab58dcf39412da19833fcd8f687ac.hfile-v1"
    with pytest.raises(UnsupportedFormatError, match="version 1") as err:
        hbase.read_hfile(path)
    assert str(path) in str(err.value)
    assert isinstance(err.value, ValueError)


def _gunzip(name: str, tmp_path: Path) -> Path:
    out = tmp_path / name.removesuffix(".gz")
    out.write_bytes(gzip.decompress((HBASE / name).read_bytes()))
    return out


def test_corrupt_block_raises_naming_offset_and_checksums(tmp_path: Path) -> None:
    path = _gunzip("TestCompaction_HFileWithCorruptBlock.branch-2.5.gz", tmp_path)
    with pytest.raises(CorruptFileError) as err:
        hbase.read_hfile(path)
    message = str(err.value)
    assert str(path) in message
    assert "offset 0" in message
    assert "expected 0xded9f6a6" in message
    assert "actual 0x26c7776a" in message


def test_reading_past_the_corrupt_block_returns_only_good_cells(tmp_path: Path) -> None:
    path = _gunzip("TestCompaction_HFileWithCorruptBlock.branch-2.5.gz", tmp_path)
    table = hbase.read_hfile(path, on_corrupt="skip")
    assert table.num_rows == 15461
    rows = table.column("row").to_pylist()
    # Rows are the 3-letter words aaa..zzz, one cell each, value = row: the good blocks
    # are exactly the last 15461 of them.
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = [f"{a}{b}{c}".encode() for a in letters for b in letters for c in letters]
    assert rows == words[-15461:]
    assert table.column("value").to_pylist() == rows
    assert set(table.column("family").to_pylist()) == {"cf"}
    info = hbase.hfile_info(path)
    assert info.last_key is not None and info.last_key.startswith("zzz/cf:/")
    assert info.first_key is not None and info.first_key.startswith("aaa/cf:/")
    assert (info.entry_count, info.data_block_count, info.bloom_type) == (17576, 9, "ROW")
    report = hbase.verify_hfile(path)
    assert not report.ok
    assert [p.offset for p in report.problems] == [0]
    assert report.cells == 15461


def test_every_row_hits_the_bloom_filter(tmp_path: Path) -> None:
    path = _gunzip("TestCompaction_HFileWithCorruptBlock.branch-2.5.gz", tmp_path)
    reader = hbase.open_hfile(path)
    assert reader.general_bloom is not None
    assert reader.general_bloom.hash_name == "MURMUR"
    cache: dict[int, bytes] = {}
    rows = hbase.read_hfile(path, on_corrupt="skip", columns=["row"]).column("row").to_pylist()
    assert all(reader.might_contain(r, _cache=cache) for r in rows)
    absent = [b"0" + r for r in rows[:2000]]
    false_positives = sum(reader.might_contain(r, _cache=cache) for r in absent)
    assert false_positives < 100  # 1% error rate by default
    assert hbase.hfile_might_contain(path, "zzz")


def test_master_corrupt_vector(tmp_path: Path) -> None:
    path = _gunzip("TestCompaction_HFileWithCorruptBlock.master.gz", tmp_path)
    with pytest.raises(CorruptFileError, match="offset 0"):
        hbase.read_hfile(path)
    assert hbase.read_hfile(path, on_corrupt="skip").num_rows == 0
    info = hbase.hfile_info(path)
    assert info.comparator == "org.apache.hadoop.hbase.InnerStoreCellComparator"
    assert (info.entry_count, info.max_seq_id, info.bloom_type) == (25, 27, "ROW")
    assert info.file_info["MAX_MEMSTORE_TS_KEY"] == 26
    assert info.last_key == "aay/cf:/1740407086033/Put"
    # The cells are unreadable, but the rows aaa..aay are all in the (intact) Bloom.
    reader = hbase.open_hfile(path)
    rows = [f"aa{c}".encode() for c in "abcdefghijklmnopqrstuvwxy"]
    assert all(reader.might_contain(r) for r in rows)
    assert not hbase.verify_hfile(path).ok


def _hfiles_under(root: Path) -> list[Path]:
    """HFiles of an HBase root dir or snapshot: extensionless files under a family dir."""
    out = []
    for p in sorted(root.rglob("*")):
        if not p.is_file() or "." in p.name or p.stat().st_size == 0:
            continue
        parts = set(p.parts)
        if parts & {"hashtable", ".logs", "WALs", "oldWALs", ".oldlogs", "recovered.edits"}:
            continue
        out.append(p)
    return out


def test_bigtable_snapshot_every_hfile(tmp_path: Path) -> None:
    with zipfile.ZipFile(VECTORS / "google-bigtable-hbase" / "EndToEndIT-snapshot.zip") as z:
        z.extractall(tmp_path)
    files = _hfiles_under(tmp_path / "data" / "archive")
    assert len(files) == 40
    codecs: dict[str, set[str]] = {}
    cells: dict[str, dict[bytes, bytes]] = {}
    for path in files:
        table_name = path.parts[-4]
        info = hbase.hfile_info(path)
        codecs.setdefault(table_name, set()).add(info.compression)
        table = hbase.read_hfile(path, with_seq_id=True)
        assert table.num_rows == info.entry_count == 10
        assert set(table.column("family").to_pylist()) == {"cf"}
        assert set(table.column("qualifier").to_pylist()) == {b"a"}
        assert set(table.column("ts").to_pylist()) == {1617828990}
        seq = table.column("seq_id").to_pylist()
        assert min(seq) >= 1 and max(seq) <= info.file_info["MAX_MEMSTORE_TS_KEY"]
        reader = hbase.open_hfile(path)
        for row, value in zip(
            table.column("row").to_pylist(), table.column("value").to_pylist(), strict=True
        ):
            assert value == b"value" + str(int(row)).encode()  # "00" -> value0
            assert reader.might_contain(row)
            cells.setdefault(table_name, {})[row] = value
        assert hbase.verify_hfile(path).ok
    assert codecs == {"test-table": {"NONE"}, "test-snappy-table": {"SNAPPY"}}
    for table_name in codecs:
        assert sorted(cells[table_name]) == [f"{i:02d}".encode() for i in range(100)]


@pytest.mark.parametrize(
    "archive", ["TestNamespaceUpgrade.0.98.tgz", "TestMetaMigrationConvertToPB.tgz"]
)
def test_legacy_v2_root_dirs_every_hfile(archive: str, tmp_path: Path) -> None:
    with tarfile.open(HBASE / archive) as tar:
        tar.extractall(tmp_path, filter="data")
    files = _hfiles_under(tmp_path)
    assert len(files) > 10
    kinds: set[int] = set()
    dfb = 0
    for path in files:
        info = hbase.hfile_info(path)
        assert info.version == "2.0"
        assert info.checksum == "NULL"
        table = hbase.read_hfile(path)
        assert table.num_rows == info.entry_count > 0
        kinds.update(table.column("type").to_pylist())
        last = table.slice(table.num_rows - 1).to_pylist()[0]
        reader = hbase.open_hfile(path)
        assert reader.last_key is not None
        want = parse_key(reader.last_key)
        assert (last["row"], last["qualifier"], last["ts"], last["type"]) == (
            want.row,
            want.qualifier,
            want.ts,
            want.type,
        )
        assert hbase.verify_hfile(path).ok
        dfb += info.delete_family_bloom
    if archive.startswith("TestNamespace"):
        assert {4, 12, 14} <= kinds  # Put, DeleteColumn, DeleteFamily
        assert dfb > 0
    else:
        rows = set()
        for path in files:
            if "TestTable" in path.parts:
                rows.update(hbase.read_hfile(path, columns=["row"]).column("row").to_pylist())
        assert {f"row{i}".encode() for i in range(1, 100)} <= rows


def test_row_range_seeks_through_a_three_level_index() -> None:
    full = hbase.read_hfile(DEEP)
    reader = hbase.open_hfile(DEEP)
    prefix = "hudi-key-" + "a" * 100 + "-"
    start, stop = (prefix + "000005000").encode(), (prefix + "000005010").encode()
    blocks = reader.data_blocks(start_row=start, stop_row=stop)
    assert 1 <= len(blocks) <= 3  # only the blocks around the range, not 1429
    part = hbase.read_hfile(DEEP, start_row=start, stop_row=stop)
    assert part.column("row").to_pylist() == [
        f"{prefix}{i:09d}".encode() for i in range(5000, 5010)
    ]
    rows = full.column("row")
    for lo, hi in [
        (None, prefix + "000000003"),
        (prefix + "000009990", None),
        ("a", "b"),
        ("z", None),
    ]:
        got = hbase.read_hfile(DEEP, start_row=lo, stop_row=hi, columns=["value"])
        mask = pa.array([True] * len(rows))
        if lo:
            mask = pc.and_(mask, pc.greater_equal(rows, pa.scalar(lo.encode(), pa.binary())))
        if hi:
            mask = pc.and_(mask, pc.less(rows, pa.scalar(hi.encode(), pa.binary())))
        assert got.column_names == ["value"]
        assert got.column("value").to_pylist() == full.filter(mask).column("value").to_pylist()


def test_seek_reads_only_the_needed_blocks() -> None:
    """A narrow range touches the index path and a couple of data blocks (counted reads)."""
    reader = hbase.open_hfile(DEEP)
    reads: list[tuple[int, int]] = []
    original = reader._read

    def counting(start: int, end: int) -> bytes:
        reads.append((start, end))
        return original(start, end)

    reader._read = counting  # type: ignore[method-assign]
    prefix = "hudi-key-" + "a" * 100 + "-"
    table = reader.read(
        start_row=(prefix + "000004242").encode(), stop_row=(prefix + "000004243").encode()
    )
    assert table.num_rows == 1
    # 3 levels: an intermediate and a leaf block, then one batch of at most 2 data blocks.
    assert len(reads) <= 4
    assert sum(end - start for start, end in reads) < 5000


def test_iter_batches_is_bounded_and_complete() -> None:
    path = HUDI / "hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile"
    batches = list(hbase.iter_hfile_batches(path, batch_bytes=1))
    assert len(batches) == 72  # one 16 KiB block per batch
    assert pa.concat_tables(batches).equals(hbase.read_hfile(path))


def test_read_hfiles_as_dask_with_divisions() -> None:
    path = HUDI / "hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile"
    df = hbase.read_hfiles([path], partition_bytes=20_000)
    assert df.npartitions > 3
    assert df.known_divisions
    assert df.divisions[0] == b"hudi-key-000000000"
    assert df.divisions[-1] == b"hudi-key-000019999"
    out = df.compute()
    assert len(out) == 20000
    assert out["row"].tolist() == hbase.read_hfile(path).column("row").to_pylist()
    # Every partition's index lies within its divisions.
    for i in range(df.npartitions):
        part = df.get_partition(i).compute()
        assert part.index.min() >= df.divisions[i]
        if i < df.npartitions - 1:
            assert part.index.max() < df.divisions[i + 1]


def test_read_hfiles_many_files_and_columns(tmp_path: Path) -> None:
    with zipfile.ZipFile(VECTORS / "google-bigtable-hbase" / "EndToEndIT-snapshot.zip") as z:
        z.extractall(tmp_path)
    files = [p for p in _hfiles_under(tmp_path / "data" / "archive") if "test-table" in p.parts]
    df = hbase.read_hfiles(files, columns=["value"])
    out = df.compute()
    assert list(out.columns) == ["value"]
    assert len(out) == 200  # 20 files of 10 cells (each row in two files)
    assert not df.known_divisions  # the files' row ranges overlap


def test_read_options_and_their_keyword_overrides_agree() -> None:
    """``HFileReadOptions`` and its TypedDict of overrides: same names, same types."""
    fields = {f.name: f.type for f in dataclasses.fields(HFileReadOptions)}
    hints = typing.get_type_hints(HFileReadKwargs)
    assert list(fields) == list(hints)
    resolved = typing.get_type_hints(HFileReadOptions)
    assert {k: resolved[k] for k in fields} == hints


def test_read_options_object_and_keywords_read_the_same() -> None:
    """An options object, keyword overrides, or both: one meaning for the three readers."""
    path = HUDI / "hudi_1_0_hbase_2_4_9_16KB_GZ_20000.hfile"
    options = HFileReadOptions(start_row="hudi-key-000000100", stop_row=b"hudi-key-000000200")
    assert options.start_row == b"hudi-key-000000100" and options == dataclasses.replace(options)
    by_keywords = hbase.read_hfile(path, start_row="hudi-key-000000100", stop_row=options.stop)
    assert hbase.read_hfile(path, options).equals(by_keywords)
    assert by_keywords.num_rows == 100
    narrowed = hbase.read_hfile(path, options, columns=["row"])
    assert narrowed.column_names == ["row"] and narrowed.num_rows == 100
    batches = list(hbase.iter_hfile_batches(path, options, batch_bytes=1))
    assert pa.concat_tables(batches).equals(by_keywords) and len(batches) >= 1
    df = hbase.read_hfiles([path], options, columns=["value"])
    assert df.compute()["value"].tolist() == by_keywords.column("value").to_pylist()
    with pytest.raises(TypeError, match="unexpected keyword argument 'start'"):
        hbase.read_hfile(path, start=b"a")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="HFileReadOptions"):
        hbase.read_hfile(path, {"start_row": b"a"})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="on_corrupt"):
        HFileReadOptions(on_corrupt="ignore")  # type: ignore[arg-type]
